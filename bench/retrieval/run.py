#!/usr/bin/env python3
"""Retrieval benchmark: does `code-intel search` put the file that answers a
developer's request first?

Hand-written requests (queries/<repo>.jsonl: change requests, bug reports,
questions, in English and Japanese) over real public repositories pinned by
commit (repos.json). For every request and mode (lexical, semantic, hybrid)
the script runs `code-intel search --json` as a user would and scores the
ranked files against the request's primary file:

- R@1, R@5: share of requests whose primary file is in the top 1 / 5 files;
- MRR: mean reciprocal rank of the primary file within the top 10 files;
- any@5: share whose primary file or one of its supporting files is in the top 5;
- sym@5: share where a hit among the top 5 chunks is in the primary file and
  names one of the request's symbols.

Hits are read in order and counted once per file (a file's rank is the rank of
its first hit). Next to code-intel, a whole-file BM25 baseline with identifier
splitting, computed in the same run over the same files, answers every request
too. Off-topic and gibberish requests (queries/offtopic.jsonl) are sent to every
repository: each should answer "no confident match".

    python3 bench/retrieval/run.py                 # prepare, index, measure
    python3 bench/retrieval/run.py --repos starlette --modes hybrid
    python3 bench/retrieval/run.py --git-url 'file:///mirrors/{owner}+{name}/repo'

With `--modes shared` (and CODE_INTEL_SHARED_STORE set, e.g. from
`scripts/pg start`), every repository is first published to the shared store
(`code-intel index --force`, which reuses the local vectors) and each request
is also asked of organisation-wide search (`code-intel search --shared`), the
hits of every published repository together: a file of another repository
counts as a miss. `--modes shared-own` asks organisation-wide search limited
to the request's own repository (`--shared --repository NAME`), which should
rank as the local index does. Off-topic requests are asked in hybrid mode (or
the first local mode) and in each shared mode.

Repositories are cloned into --work (default ~/.cache/code-intel/bench/retrieval)
at their pinned commit and kept; `code-intel index` brings each index up to
date (--cold rebuilds it and reports the time). Results are printed as
Markdown tables and written as JSON to --out.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MODES = ("lexical", "semantic", "hybrid")
# Not a default: needs a shared store (see the docstring).
SHARED = "shared"
# Organisation-wide search limited to the request's own repository.
SHARED_OWN = "shared-own"
TOP = 10


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load_jsonl(path: Path) -> list[dict]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"error: {path}:{n}: not JSON ({e})")
    return rows


# --- preparing the repositories -------------------------------------------------


def prepare(repo: dict, work: Path, url_template: str) -> Path:
    """Clones `repo` at its pinned commit into work/<name> (kept between runs)."""
    dest = work / repo["name"]
    owner, name = repo["repo"].split("/")
    url = url_template.format(owner=owner, name=name)
    if (dest / ".git").exists():
        head = subprocess.run(["git", "-C", dest, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        if head == repo["commit"]:
            return dest
        log(f"==> {repo['name']}: at {head[:12]}, checking out {repo['commit'][:12]}")
    else:
        log(f"==> {repo['name']}: cloning {url}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        run(["git", "clone", "--quiet", "--no-checkout", url, str(dest)])
    fetched = subprocess.run(["git", "-C", dest, "cat-file", "-e", repo["commit"] + "^{commit}"], capture_output=True)
    if fetched.returncode != 0:
        run(["git", "-C", str(dest), "fetch", "--quiet", "origin", repo["commit"]])
    run(["git", "-C", str(dest), "-c", "advice.detachedHead=false", "checkout", "--quiet", "--force", repo["commit"]])
    return dest


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr.strip()}")
    return p


def index(binary: str, path: Path, cold: bool) -> dict:
    if cold and (path / ".code-intel").exists():
        keep = path / ".code-intel" / "config.json"
        saved = keep.read_bytes() if keep.exists() else None
        shutil.rmtree(path / ".code-intel")
        if saved is not None:
            keep.parent.mkdir()
            keep.write_bytes(saved)
    started = time.monotonic()
    p = run([binary, "index", "--json", str(path)])
    seconds = time.monotonic() - started
    try:
        report = json.loads(p.stdout)
    except json.JSONDecodeError:
        report = {}
    report["seconds"] = round(seconds, 1)
    return report


def publish(binary: str, repo: dict, path: Path) -> str:
    """Publishes `repo` to the shared store (CODE_INTEL_SHARED_STORE) under
    its GitHub name, whatever its clone's remote is (a local mirror's path
    would name every repository alike), with its chunk lists and vectors,
    embedding nothing the local index has. Returns the published name."""
    config_file = path / ".code-intel" / "config.json"
    config = json.loads(config_file.read_text()) if config_file.exists() else {}
    if config.get("shared_repository") != f"github.com/{repo['repo']}":
        config["shared_repository"] = f"github.com/{repo['repo']}"
        config_file.parent.mkdir(exist_ok=True)
        config_file.write_text(json.dumps(config, indent=2) + "\n")
    report = json.loads(run([binary, "index", "--force", "--json", str(path)]).stdout)
    shared = report.get("shared") or {}
    if not shared.get("repository") or shared.get("errors"):
        sys.exit(f"error: {repo['name']} was not published to the shared store: {shared}")
    log(f"==> {repo['name']}: published as {shared['repository']}: {shared.get('repository_chunks')} chunks, "
        f"{shared.get('vectors_published')} vectors sent")
    return shared["repository"]


# --- asking code-intel ----------------------------------------------------------


def ask(binary: str, repo: Path, query: str, mode: str, env: dict | None = None, published: str | None = None) -> dict:
    if mode == SHARED:
        how = ["--shared"]
    elif mode == SHARED_OWN:
        how = ["--shared", "--repository", published or ""]
    else:
        how = ["--mode", mode]
    p = subprocess.run(
        [binary, "search", "--json", *how, "-n", str(TOP), "--repo", str(repo), query],
        capture_output=True,
        text=True,
        env=env,
    )
    if p.returncode != 0:
        raise RuntimeError(f"code-intel search failed ({p.returncode}) for {query!r}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def hits_of(response: dict, own: str | None = None) -> list[dict]:
    """The hits in order; with `own` (organisation-wide search), a hit in
    another repository is named `repository:path`, so it never matches."""
    def name(h: dict) -> str:
        repo = h.get("repository")
        return h["path"] if own is None or repo in (None, own) else f"{repo}:{h['path']}"
    return [{"file": name(h), "name": h.get("name"), "qualified_name": h.get("qualified_name")} for h in response.get("results", [])]


def ranked_files(response: dict, own: str | None = None) -> list[str]:
    files: list[str] = []
    for hit in hits_of(response, own):
        if hit["file"] not in files:
            files.append(hit["file"])
    return files


# --- the whole-file BM25 baseline -------------------------------------------------

WORD = re.compile(r"[A-Za-z0-9_]+|[^\W\d_A-Za-z]+", re.UNICODE)
CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def words(text: str) -> list[str]:
    """Lower-cased words, identifiers also split (camelCase, snake_case)."""
    out: list[str] = []
    for w in WORD.findall(text):
        low = w.lower()
        out.append(low)
        if w.isascii():
            parts = [p.lower() for piece in w.split("_") for p in CAMEL.findall(piece)]
            if len(parts) > 1:
                out.extend(parts)
    return out


class Bm25:
    """Okapi BM25 (k1 1.2, b 0.75) over whole files: path and content."""

    def __init__(self, root: Path, paths: list[str]):
        self.paths = paths
        self.tf: list[Counter] = []
        self.df: Counter = Counter()
        for rel in paths:
            try:
                text = (root / rel).read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            c = Counter(words(rel + "\n" + text))
            self.tf.append(c)
            self.df.update(c.keys())
        self.lens = [sum(c.values()) for c in self.tf]
        self.avg = (sum(self.lens) / len(self.lens)) if self.lens else 1.0

    def search(self, query: str, k: int = TOP) -> list[str]:
        n = len(self.paths)
        terms = set(words(query))
        scores = []
        for i, c in enumerate(self.tf):
            s = 0.0
            for t in terms:
                f = c.get(t)
                if not f:
                    continue
                idf = math.log(1 + (n - self.df[t] + 0.5) / (self.df[t] + 0.5))
                s += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * self.lens[i] / self.avg))
            if s > 0:
                scores.append((s, self.paths[i]))
        scores.sort(key=lambda x: (-x[0], x[1]))
        return [p for _, p in scores[:k]]


def baseline_files(repo: Path) -> list[str]:
    """The repository's tracked text files (what a simple script would read)."""
    listed = run(["git", "-C", str(repo), "ls-files", "-z"]).stdout.split("\0")
    out = []
    for rel in listed:
        if not rel:
            continue
        p = repo / rel
        try:
            if p.is_file() and p.stat().st_size <= 1_000_000 and b"\0" not in p.read_bytes()[:8192]:
                out.append(rel)
        except OSError:
            pass
    return out


# --- scoring -------------------------------------------------------------------


def score(request: dict, files: list[str], hits: list[dict] | None) -> dict:
    primary = request["primary"]
    rank = files.index(primary) + 1 if primary in files[:TOP] else None
    relevant = {primary, *request.get("supporting", [])}
    sym = None
    if hits is not None:
        names = set(request.get("symbols", []))
        sym = any(
            h["file"] == primary and (h.get("name") in names or (h.get("qualified_name") or "").split("::")[-1].split(".")[-1] in names)
            for h in hits[:5]
        )
    return {
        "r1": rank == 1,
        "r5": rank is not None and rank <= 5,
        "rr": 1.0 / rank if rank else 0.0,
        "any5": any(f in relevant for f in files[:5]),
        "sym5": sym,
        "rank": rank,
    }


def summarize(rows: list[dict]) -> dict:
    if not rows:
        return {}
    n = len(rows)
    out = {
        "n": n,
        "R@1": sum(r["r1"] for r in rows) / n,
        "R@5": sum(r["r5"] for r in rows) / n,
        "MRR": sum(r["rr"] for r in rows) / n,
        "any@5": sum(r["any5"] for r in rows) / n,
    }
    syms = [r["sym5"] for r in rows if r["sym5"] is not None]
    if syms:
        out["sym@5"] = sum(syms) / len(syms)
    return out


def table(title: str, groups: dict[str, dict]) -> str:
    cols = ["n", "R@1", "R@5", "MRR", "any@5", "sym@5"]
    lines = [f"### {title}", "", "| | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, s in groups.items():
        cells = [str(s.get("n", 0))] + [f"{s[c]:.2f}" if c in s else "" for c in cols[1:]]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def evaluate(binary: str, repo: Path, requests: list[dict], modes: list[str], jobs: int = 2, env: dict | None = None) -> dict:
    """Scores of every request in every mode: {mode: [score, ...]} (request order)."""
    pairs = [(r, m) for r in requests for m in modes]
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        answers = list(pool.map(lambda rm: ask(binary, repo, rm[0]["query"], rm[1], env), pairs))
    out: dict[str, list] = defaultdict(list)
    for (r, m), resp in zip(pairs, answers):
        out[m].append({"id": r["id"], "lang": r["lang"], "refused": bool(resp.get("no_confident_match")),
                       **score(r, ranked_files(resp), hits_of(resp))})
    return out


# --- main -----------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=None, help="code-intel binary (default: the release build)")
    ap.add_argument("--work", default=os.path.expanduser("~/.cache/code-intel/bench/retrieval"))
    ap.add_argument("--git-url", default="https://github.com/{owner}/{name}.git", help="clone URL template")
    ap.add_argument("--repos", default=None, help="comma-separated repository names (default: all)")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--queries", default=str(HERE / "queries"), help="folder of <repo>.jsonl request files")
    ap.add_argument("--cold", action="store_true", help="rebuild each index from scratch and report its time")
    ap.add_argument("--no-index", action="store_true", help="use the indexes as they are")
    ap.add_argument("--no-publish", action="store_true",
                    help="shared modes: the repositories are already published under their GitHub names")
    ap.add_argument("--prepare-only", action="store_true", help="clone the repositories and stop")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=None, help="write every answer and score as JSON here")
    args = ap.parse_args()

    binary = args.bin or str(Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "code-intel")
    if not args.prepare_only and not Path(binary).exists():
        sys.exit(f"error: no code-intel binary at {binary}; build it (cargo build --release -p code-intel) or pass --bin")
    repos = json.loads((HERE / "repos.json").read_text())
    if args.repos:
        wanted = set(args.repos.split(","))
        unknown = wanted - {r["name"] for r in repos}
        if unknown:
            sys.exit(f"error: unknown repositories {sorted(unknown)}; repos.json has {[r['name'] for r in repos]}")
        repos = [r for r in repos if r["name"] in wanted]
    modes = [m for m in args.modes.split(",") if m]
    unknown_modes = set(modes) - {*MODES, SHARED, SHARED_OWN}
    if unknown_modes:
        sys.exit(f"error: unknown modes {sorted(unknown_modes)}; use {', '.join(MODES)}, {SHARED} or {SHARED_OWN}")
    shared_modes = {SHARED, SHARED_OWN} & set(modes)
    if shared_modes and not os.environ.get("CODE_INTEL_SHARED_STORE"):
        sys.exit(f"error: --modes {','.join(sorted(shared_modes))} needs a shared store: set CODE_INTEL_SHARED_STORE "
                 "(for a throw-away one: eval \"$(bash scripts/pg start)\"; export CODE_INTEL_SHARED_STORE=$PG_URL)")
    qdir = Path(args.queries)
    offtopic = load_jsonl(qdir / "offtopic.jsonl") if (qdir / "offtopic.jsonl").exists() else []
    work = Path(args.work)

    results: dict = {"repos": {}, "requests": [], "offtopic": []}
    per: dict[tuple, list] = defaultdict(list)  # (system, repo, lang) -> scores
    if args.prepare_only:
        for repo in repos:
            print(prepare(repo, work, args.git_url))
        return
    # Every repository is published before any is asked: organisation-wide
    # search then answers each request over all of them.
    if shared_modes and args.no_publish:
        names = {repo["name"]: f"github.com/{repo['repo']}" for repo in repos}
    elif shared_modes:
        names = {repo["name"]: publish(binary, repo, prepare(repo, work, args.git_url)) for repo in repos}
    else:
        names = {}
    for repo in repos:
        requests = load_jsonl(qdir / f"{repo['name']}.jsonl")
        path = prepare(repo, work, args.git_url)
        for r in requests:
            for f in [r["primary"], *r.get("supporting", [])]:
                if not (path / f).is_file():
                    sys.exit(f"error: {r['id']}: {f} is not a file of {repo['repo']} at {repo['commit'][:12]}")
        info = {} if args.no_index else index(binary, path, args.cold)
        published = names.get(repo["name"])
        log(f"==> {repo['name']}: indexed in {info.get('seconds', '-')} s; {len(requests)} requests")
        t0 = time.monotonic()
        bm25 = Bm25(path, baseline_files(path))
        results["repos"][repo["name"]] = {"index": info, "baseline_files": len(bm25.paths)}
        jobs = [(r, m) for r in requests for m in modes]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            answers = list(pool.map(lambda rm: ask(binary, path, rm[0]["query"], rm[1], published=published), jobs))
            local = [m for m in modes if m not in shared_modes]
            off_modes = (["hybrid" if "hybrid" in modes else local[0]] if local else []) + [m for m in modes if m in shared_modes]
            off_jobs = [(o, m) for m in off_modes for o in offtopic]
            off = list(pool.map(lambda om: ask(binary, path, om[0]["query"], om[1], published=published), off_jobs))
        for (r, m), resp in zip(jobs, answers):
            own = published if m in shared_modes else None
            s = score(r, ranked_files(resp, own), hits_of(resp, own))
            per[(m, repo["name"], r["lang"])].append(s)
            ms = (resp.get("shared") or {}).get("query_ms") if m in shared_modes else resp.get("query_ms")
            results["requests"].append({"id": r["id"], "mode": m, **s, "files": ranked_files(resp, own)[:TOP], "query_ms": ms,
                                        "refused": bool(resp.get("no_confident_match"))})
        for r in requests:
            files = bm25.search(r["query"])
            s = score(r, files, None)
            per[("bm25", repo["name"], r["lang"])].append(s)
            results["requests"].append({"id": r["id"], "mode": "bm25", **s, "files": files[:TOP]})
        for (o, m), resp in zip(off_jobs, off):
            results["offtopic"].append({"repo": repo["name"], "id": o["id"], "mode": m, "refused": bool(resp.get("no_confident_match")),
                                        "top": ranked_files(resp)[:1]})
        log(f"    answered in {time.monotonic() - t0:.0f} s")

    systems = ["bm25", *modes]
    langs = sorted({k[2] for k in per})
    out = ["## Retrieval benchmark", ""]
    overall = {}
    for lang in langs:
        for sysname in systems:
            rows = [s for (m, _, l), v in per.items() if m == sysname and l == lang for s in v]
            overall[f"{lang} {sysname}"] = summarize(rows)
    out.append(table("By language (all repositories)", overall))
    for repo in repos:
        groups = {}
        for sysname in systems:
            rows = [s for (m, rn, _), v in per.items() if m == sysname and rn == repo["name"] for s in v]
            groups[sysname] = summarize(rows)
            for lang in langs:
                groups[f"{sysname} {lang}"] = summarize(per.get((sysname, repo["name"], lang), []))
        out.append(table(f"{repo['name']} ({repo['repo']} @ {repo['commit'][:12]})", groups))
    for mode in dict.fromkeys(o["mode"] for o in results["offtopic"]):
        asked = [o for o in results["offtopic"] if o["mode"] == mode]
        refused = sum(o["refused"] for o in asked)
        out.append(f"Off-topic requests refused (no confident match) in {mode} mode: {refused} of {len(asked)}\n")
    for mode in modes:
        real = [x["id"] for x in results["requests"] if x["mode"] == mode and x.get("refused")]
        out.append(f"Real requests refused in {mode} mode: {len(real)}{' (' + ', '.join(real) + ')' if real else ''}\n")
    for name, r in results["repos"].items():
        idx = r["index"]
        out.append(f"- {name}: index {idx.get('seconds', '-')} s, {idx.get('files', idx.get('files_indexed', '-'))} files; baseline reads {r['baseline_files']} files")
    ms = sorted(x["query_ms"] for x in results["requests"] if x.get("query_ms") is not None)
    if ms:
        out.append(f"- server-side query time p50 {ms[len(ms) // 2]:.1f} ms, p95 {ms[int(len(ms) * 0.95)]:.1f} ms")
    print("\n".join(out))
    results["summary"] = {"overall": overall}
    if args.out:
        Path(args.out).write_text(json.dumps(results, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
