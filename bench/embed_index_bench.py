#!/usr/bin/env python3
"""Indexing with embeddings: cold index of a repository, then re-index after
a one-line change.

On a copy of a git repository (default: this one; tracked files only):
  1. cold `code-intel index --json` with the embedding model: wall time,
     chunks embedded, real tokens, tokens/s and chunks/s of the embedding pass;
  2. `index` with nothing changed (the fixed cost of a run: process start,
     plugin and model load, scan);
  3. re-index after changing one line inside a function, --runs times
     (alternating two versions of the line): wall time end to end (process
     start to exit) p50/p95, and how many chunks were embedded again
     (goal: only the chunks holding the line, < 500 ms).

Usage:
  python3 bench/embed_index_bench.py [--bin PATH] [--model DIR] [--repo DIR]
      [--file REL_PATH --line-contains TEXT] [--runs 10] [--keep DIR [--reuse]]

--keep DIR keeps the indexed copy in DIR; --reuse then skips the copy and the
cold index on a later run (steps 2 and 3 only).

The binary defaults to $CODE_INTEL_BIN, else $CARGO_TARGET_DIR/release/code-intel;
the model to $CODE_INTEL_MODEL_DIR.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_bench import default_bin  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def copy_tracked(repo: Path, dest: Path) -> int:
    files = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], capture_output=True, check=True).stdout.split(b"\0")
    n = 0
    for f in files:
        if not f:
            continue
        src = repo / f.decode()
        if not src.is_file():
            continue
        target = dest / f.decode()
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
        n += 1
    subprocess.run(["git", "init", "-q", str(dest)], check=True)
    return n


def index(binary: str, root: Path, env: dict) -> tuple[float, dict]:
    start = time.perf_counter()
    out = subprocess.run([binary, "index", str(root), "--json"], capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"index failed ({out.returncode}): {out.stderr}")
    return elapsed, json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=default_bin())
    ap.add_argument("--model", default=os.environ.get("CODE_INTEL_MODEL_DIR"))
    ap.add_argument("--repo", default=str(ROOT))
    ap.add_argument("--file", default="host/crates/vector/src/index.rs")
    ap.add_argument("--line-contains", default="let want = k.saturating_add(self.dead());")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--keep")
    ap.add_argument("--reuse", action="store_true", help="with --keep: reuse an indexed copy left by an earlier run")
    args = ap.parse_args()
    if args.reuse and not (args.keep and (Path(args.keep) / ".code-intel").is_dir()):
        sys.exit("--reuse needs --keep DIR naming a copy indexed by an earlier run")
    if not args.model:
        sys.exit("give --model DIR or set CODE_INTEL_MODEL_DIR")
    env = dict(os.environ, CODE_INTEL_MODEL_DIR=args.model)

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ci-embed-bench-"))
    if work.exists() and not args.reuse:
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    try:
        files = sum(1 for p in work.rglob("*") if p.is_file() and not {".git", ".code-intel"} & set(p.parts)) if args.reuse else copy_tracked(Path(args.repo), work)
        # Checked before the (minutes-long) cold index.
        if args.line_contains not in (work / args.file).read_text():
            sys.exit(f"{args.file} has no line containing {args.line_contains!r}; pass --file and --line-contains")
        load = os.getloadavg()
        print(f"repository copy: {files} files; load average {load[0]:.2f} on {os.cpu_count()} cores")

        cold_s, cold = index(args.bin, work, env)
        emb = cold.get("embedding", {})
        if emb.get("status") != "ready":
            sys.exit(f"embedding did not run: {emb}")
        secs = max(emb["elapsed_ms"], 1) / 1000
        if args.reuse:
            print(f"reused copy: first index {cold_s * 1000:.0f} ms, {emb['embedded_chunks']} chunks embedded")
        else:
            print(
                f"cold index: {cold_s:.1f} s wall; {emb['embedded_chunks']} chunks / {emb['tokens']} tokens embedded "
                f"in {secs:.1f} s ({emb['tokens'] / secs:.0f} tokens/s, {emb['embedded_chunks'] / secs:.1f} chunks/s); "
                f"{emb['coverage']['embedded_chunks']}/{emb['coverage']['total_chunks']} chunks have vectors"
            )

        noop = [index(args.bin, work, env)[0] for _ in range(5)]
        print(f"index, nothing changed: p50 {statistics.median(noop) * 1000:.0f} ms")

        path = work / args.file
        text = path.read_text()
        if args.line_contains not in text:
            sys.exit(f"{args.file} has no line containing {args.line_contains!r}")
        variants = [text, text.replace(args.line_contains, args.line_contains + " // tuned", 1)]
        times, embedded, sync_ms, embed_ms = [], [], [], []
        for i in range(args.runs):
            path.write_text(variants[(i + 1) % 2])
            elapsed, report = index(args.bin, work, env)
            times.append(elapsed * 1000)
            e = report["embedding"]
            embedded.append(e["embedded_chunks"])
            embed_ms.append(e["elapsed_ms"])
            sync_ms.append(report.get("elapsed_ms", 0))
        print(
            f"re-index after a one-line change ({args.runs} runs): end to end p50 {pct(times, 50):.0f} ms, "
            f"p95 {pct(times, 95):.0f} ms; chunks embedded again per run: {sorted(set(embedded))}; "
            f"embedding pass p50 {pct(embed_ms, 50):.0f} ms; sync p50 {pct(sync_ms, 50):.0f} ms"
        )
        print(json.dumps({
            "files": files,
            "cold_s": cold_s,
            "cold_embedding": {k: emb[k] for k in ("embedded_chunks", "tokens", "elapsed_ms")},
            "noop_ms": [round(t * 1000) for t in noop],
            "reindex_ms": [round(t) for t in times],
            "reindex_embedded": embedded,
            "reindex_embed_ms": embed_ms,
            "reindex_sync_ms": sync_ms,
        }))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
