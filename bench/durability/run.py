#!/usr/bin/env python3
"""Durability of `code-intel index` under kill -9 and under concurrency, with
the real binary.

Two working copies of one source tree: W, the one that is attacked, and R, the
reference, which receives the same file edits and is only ever indexed to the
end, one process at a time. After every attempt W's index must be whole
(`PRAGMA integrity_check`, `foreign_key_check`, the full-text index's own
check, run by `code-intel status --check` when Python's SQLite is older than
3.43) and hold exactly what R's holds: the same files (path, hash, size,
chunker, status) and the same chunks (every stored field but row ids and
times), the same plugin failures and the same cross-file links. A lexical
`code-intel search` for a few words must answer the same on both. With an
embedding model, every chunk of W must have its vector once the recovery run
is done.

Scenarios (`--kills`, `--concurrent`):

- kill: edit some files (change, add, delete) in both copies; index R; start
  `code-intel index` on W and send it SIGKILL after a random delay up to the
  time that run should take (the last run that finished before its kill, at
  first R's run of the same edits scaled by what embedding adds); then index
  W again, which must
  finish (a run that does not within the time limit is a hang) and exit 0.
  Every third kill hits a cold index (W's `.code-intel/` removed first), the
  longest run there is. With a model, the runs embed, so kills land in the
  middle of embedding too.
- concurrent: edit a few files in both copies; index R; start two `code-intel
  index` processes on W a random 0-300 ms apart (every other pair: one of them
  `--force`; every third pair on a cold index, so both create the database);
  both must exit 0.
- serve (`--serve-kills`): on a fresh copy of fixtures/mini-repo, drive a
  MODIFY session over stdio (start_session ... submit_understanding,
  check_write_target, record_outcome success) and SIGKILL `code-intel serve`
  0-30 ms after sending one of its ten calls, chosen at random; start serve
  again: the session, its recorded tool calls, the READY phase and a closed
  session must be there if the client was told so. The client then sends the
  call again if its answer was lost and finishes the workflow; at the end
  there must be exactly one outcome, one agreement (row and file) and its map
  entry.

Usage:
  python3 bench/durability/run.py [--bin PATH] [--source DIR | --files N]
      [--kills N] [--concurrent N] [--seed S] [--model-dir DIR] [--json OUT]
      [--serve-kills N]
  python3 bench/durability/run.py --quick     # CI: 200 generated files, 5 kills, 3 pairs, 5 serve kills

The binary defaults to $CODE_INTEL_BIN, else $CARGO_TARGET_DIR/release/code-intel.
Without --model-dir the runs use --no-embed. Exit status 1 when any attempt
failed; each failure is printed with the seed and attempt that reproduce it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

try:  # A newer SQLite, when installed, also runs the full-text index's own check.
    import pysqlite3.dbapi2 as sqlite3  # type: ignore[import-not-found]
except ImportError:
    import sqlite3

# `contentless_delete` full-text tables need SQLite 3.43 to be opened; older
# ones still read every other table and the full-text shadow tables.
FTS_READABLE = sqlite3.sqlite_version_info >= (3, 43, 0)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from mcp_bench import generate_tree  # noqa: E402

SKIP_DIRS = {".git", ".code-intel", "node_modules", "vendor", ".venv"}


def default_bin() -> str:
    if os.environ.get("CODE_INTEL_BIN"):
        return os.environ["CODE_INTEL_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    return str(Path(target) / "release" / "code-intel")


# ---------------------------------------------------------------------------
# Trees


def copy_tree(source: Path, dest: Path) -> None:
    """The source's files (no VCS or index state), as a fresh git repository."""
    shutil.copytree(source, dest, ignore=lambda d, names: [n for n in names if n in SKIP_DIRS], symlinks=True)
    subprocess.run(["git", "init", "-q", str(dest)], check=True)


def text_files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if p.is_symlink() or not p.is_file():
                continue
            if p.suffix in {".py", ".php", ".js", ".ts", ".vue", ".md", ".css", ".json", ".go", ".java", ".html", ".txt"}:
                out.append(p)
    return out


def edit(rng: random.Random, copies: list[Path], attempt: int, count: int) -> list[str]:
    """The same edits in every copy: change, add or delete `count` files."""
    files = [p.relative_to(copies[0]) for p in text_files(copies[0])]
    done = []
    for k in range(count):
        action = rng.choice(["change", "change", "change", "add", "delete"]) if files else "add"
        if action == "change":
            rel = rng.choice(files)
            lines_in_first = (copies[0] / rel).read_text(errors="replace").split("\n")
            at = rng.randrange(len(lines_in_first) + 1)
            for c in copies:
                p = c / rel
                text = p.read_text(errors="replace")
                lines = text.split("\n")
                marker = "#" if rel.suffix == ".py" else "//"
                if rel.suffix in {".md", ".txt", ".json", ".html", ".css"}:
                    marker = ""
                lines.insert(at, f"{marker} durability edit {attempt}.{k}" if marker else f"durability edit {attempt} {k}")
                p.write_text("\n".join(lines))
            done.append(f"changed {rel}")
        elif action == "add":
            rel = Path("durability") / f"added_{attempt}_{k}.py"
            for c in copies:
                (c / rel).parent.mkdir(parents=True, exist_ok=True)
                (c / rel).write_text(
                    f'"""Added by attempt {attempt}."""\n\n\nclass Added{attempt}x{k}:\n    def run(self, value):\n'
                    f"        return value + {k}\n\n\ndef helper_{attempt}_{k}():\n    return Added{attempt}x{k}().run(1)\n"
                )
            done.append(f"added {rel}")
        else:
            rel = rng.choice(files)
            files.remove(rel)
            for c in copies:
                (c / rel).unlink()
            done.append(f"deleted {rel}")
    return done


# ---------------------------------------------------------------------------
# The binary


class Runner:
    def __init__(self, binary: str, model_dir: str | None):
        self.binary = binary
        self.env = dict(os.environ)
        self.env["CODE_INTEL_OFFLINE"] = "1"
        self.env.setdefault("CODE_INTEL_LOG", "warn")
        self.embed = bool(model_dir)
        if model_dir:
            self.env["CODE_INTEL_MODEL_DIR"] = model_dir

    def index_args(self, repo: Path, *extra: str, embed: bool | None = None) -> list[str]:
        embed = self.embed if embed is None else embed
        return [self.binary, "index", "--json", *extra, *([] if embed else ["--no-embed"]), str(repo)]

    def index(self, repo: Path, timeout: float, *extra: str, embed: bool | None = None) -> tuple[int | None, float, str]:
        """Exit code (None on timeout: the process is killed), seconds, stderr tail."""
        started = time.monotonic()
        proc = subprocess.Popen(self.index_args(repo, *extra, embed=embed), env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            return None, time.monotonic() - started, err[-2000:]
        return proc.returncode, time.monotonic() - started, err[-2000:]

    def index_killed(self, repo: Path, delay: float) -> tuple[bool, float]:
        """Starts an index and SIGKILLs it after `delay` s: (killed before it
        finished, seconds it ran)."""
        started = time.monotonic()
        proc = subprocess.Popen(self.index_args(repo), env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=delay)
            return False, time.monotonic() - started
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return True, time.monotonic() - started

    def own_check(self, repo: Path) -> list[str]:
        """`code-intel status --check`: SQLite's integrity check and the
        full-text index's own `integrity-check`, run by the binary's SQLite."""
        out = subprocess.run([self.binary, "status", "--check", "--json", str(repo)], env=self.env,
                             capture_output=True, text=True, timeout=600)
        try:
            check = json.loads(out.stdout)["check"]
        except (ValueError, KeyError):
            return [f"full-text index: status --check exited {out.returncode}: {out.stderr.strip()[-300:]}"]
        return [] if check["ok"] else [f"full-text index: {check['problems']}"]

    def search(self, repo: Path, word: str) -> list:
        out = subprocess.run([self.binary, "search", "--json", "--mode", "lexical", "-n", "20", "--repo", str(repo), word],
                             env=self.env, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            return [f"exit {out.returncode}: {out.stderr.strip()[-300:]}"]
        data = json.loads(out.stdout)
        return [(h.get("path"), h.get("start_line"), h.get("name")) for h in data.get("results", [])]


# ---------------------------------------------------------------------------
# Checks


def db_path(repo: Path) -> Path:
    return repo / ".code-intel" / "index.db"


def integrity(repo: Path, runner: "Runner | None" = None) -> list[str]:
    problems = []
    con = sqlite3.connect(f"file:{db_path(repo)}?mode=ro", uri=True)
    try:
        rows = [r[0] for r in con.execute("PRAGMA integrity_check")]
        if rows != ["ok"]:
            problems.append(f"integrity_check: {rows[:5]}")
        fk = con.execute("PRAGMA foreign_key_check").fetchall()
        if fk:
            problems.append(f"foreign_key_check: {fk[:5]}")
    finally:
        con.close()
    if FTS_READABLE:
        # The full-text check writes nothing but needs a writable connection.
        con = sqlite3.connect(db_path(repo))
        try:
            con.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 0)")
        except sqlite3.DatabaseError as e:
            problems.append(f"full-text index: {e}")
        finally:
            con.close()
    elif runner is not None:
        # Python's SQLite is too old: the binary's own SQLite runs the check.
        problems += runner.own_check(repo)
    return problems


SIGNATURE = {
    "files": "SELECT path, sha256, size, chunker, status, coalesce(error, '') FROM files ORDER BY path",
    "chunks": """SELECT f.path, c.chunk_id, c.kind, c.name, coalesce(c.qualified_name, ''), coalesce(c.parent, ''),
                        c.start_line, c.end_line, c.start_byte, c.end_byte, c.content_hash, coalesce(c.signature, ''),
                        coalesce(c.docstring, ''), c.related_symbols, c.refs, c.metadata
                 FROM chunks c JOIN files f ON f.id = c.file_id ORDER BY f.path, c.chunk_id""",
    "plugin_failures": """SELECT f.path, p.plugin, p.kind, p.message FROM plugin_failures p JOIN files f ON f.id = p.file_id
                          ORDER BY 1, 2, 3, 4""",
    "links": "SELECT from_path, coalesce(from_chunk, ''), to_path, coalesce(to_chunk, ''), coalesce(to_line, 0), kind, symbol "
             "FROM links ORDER BY 1, 2, 3, 4, 5, 6, 7",
    # One document-size row per chunk: the full-text index holds every chunk once.
    "fts_rows": "SELECT count(*) FROM chunks_fts_docsize",
    "fts_orphans": "SELECT count(*) FROM chunks_fts_docsize d WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = d.id)",
}


def signature(repo: Path) -> dict[str, list]:
    con = sqlite3.connect(f"file:{db_path(repo)}?mode=ro", uri=True)
    try:
        return {name: con.execute(sql).fetchall() for name, sql in SIGNATURE.items()}
    finally:
        con.close()


def differences(w: dict, r: dict) -> list[str]:
    out = []
    for name in SIGNATURE:
        a, b = set(w[name]), set(r[name])
        if a != b:
            # Rows start with their path (counts are one number): name a few.
            extra = sorted({str(row[0]) for row in a - b})[:3]
            missing = sorted({str(row[0]) for row in b - a})[:3]
            out.append(f"{name}: {len(a - b)} rows only in the attacked copy ({extra}), {len(b - a)} only in the reference ({missing})")
    return out


def unembedded(repo: Path) -> int:
    con = sqlite3.connect(f"file:{db_path(repo)}?mode=ro", uri=True)
    try:
        return con.execute(
            "SELECT count(DISTINCT c.content_hash) FROM chunks c WHERE NOT EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.content_hash = c.content_hash)"
        ).fetchone()[0]
    finally:
        con.close()


def probe_words(repo: Path, rng: random.Random) -> list[str]:
    con = sqlite3.connect(f"file:{db_path(repo)}?mode=ro", uri=True)
    try:
        names = [r[0] for r in con.execute("SELECT DISTINCT name FROM chunks WHERE length(name) > 3 ORDER BY name")]
    finally:
        con.close()
    return rng.sample(names, min(3, len(names)))


def check(runner: Runner, w: Path, r: Path, rng: random.Random) -> list[str]:
    problems = integrity(w, runner)
    if problems:
        return problems
    problems += differences(signature(w), signature(r))
    for word in probe_words(r, rng):
        a, b = runner.search(w, word), runner.search(r, word)
        if a != b:
            problems.append(f"search {word!r}: {a[:3]} != {b[:3]}")
    if runner.embed:
        missing = unembedded(w)
        if missing:
            problems.append(f"{missing} chunk texts without a vector after the recovery run")
    return problems


def self_test(runner: Runner, w: Path, r: Path, rng: random.Random) -> str | None:
    """Damages W's index behind its back (a full-text row lost, a file
    record gone stale) and returns why the checks did not notice, if they
    did not."""
    if check(runner, w, r, rng):
        return "the copies differ before the damage"
    # A page of the full-text index's segments lost (only its own check sees
    # it), then put back.
    con = sqlite3.connect(db_path(w))
    try:
        page = con.execute("SELECT id, block FROM chunks_fts_data WHERE id = (SELECT max(id) FROM chunks_fts_data)").fetchone()
        con.execute("DELETE FROM chunks_fts_data WHERE id = ?", (page[0],))
        con.commit()
        noticed = any(p.startswith("full-text") for p in integrity(w, runner))
        con.execute("INSERT INTO chunks_fts_data (id, block) VALUES (?, ?)", page)
        con.commit()
    finally:
        con.close()
    if not noticed:
        return "a lost page of the full-text index went unnoticed"
    if check(runner, w, r, rng):
        return "the full-text page put back was not whole again"
    # A full-text row lost, then put back.
    con = sqlite3.connect(db_path(w))
    try:
        row = con.execute("SELECT id, sz FROM chunks_fts_docsize WHERE id = (SELECT max(id) FROM chunks_fts_docsize)").fetchone()
        con.execute("DELETE FROM chunks_fts_docsize WHERE id = ?", (row[0],))
        con.commit()
        noticed = bool(check(runner, w, r, rng))
        con.execute("INSERT INTO chunks_fts_docsize (id, sz) VALUES (?, ?)", row)
        con.commit()
    finally:
        con.close()
    if not noticed:
        return "a lost full-text row went unnoticed"
    con = sqlite3.connect(db_path(w))
    try:
        con.execute("UPDATE files SET sha256 = 'stale' WHERE id = (SELECT max(id) FROM files)")
        con.commit()
    finally:
        con.close()
    problems = [p for p in check(runner, w, r, rng) if p.startswith("files:")]
    return None if problems else "a stale file record went unnoticed"


# ---------------------------------------------------------------------------
# `serve` killed during the session workflow


class Serve:
    """`code-intel serve` over stdio, driven with JSON-RPC lines."""

    def __init__(self, runner: Runner, repo: Path):
        self.proc = subprocess.Popen([runner.binary, "serve", "--repo", str(repo)], env=runner.env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.answers: dict[int, dict] = {}
        self.cond = threading.Condition()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "durability", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "id" in msg and ("result" in msg or "error" in msg):
                with self.cond:
                    self.answers[msg["id"]] = msg
                    self.cond.notify_all()

    def send(self, msg: dict) -> None:
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def start(self, method: str, params: dict) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def answer(self, rid: int, timeout: float) -> dict | None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while rid not in self.answers:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)
            return self.answers.pop(rid)

    def request(self, method: str, params: dict, timeout: float = 120) -> dict:
        msg = self.answer(self.start(method, params), timeout)
        if msg is None:
            raise TimeoutError(f"{method}: no answer within {timeout:.0f} s")
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg["result"]

    def tool(self, name: str, args: dict) -> dict:
        result = self.request("tools/call", {"name": name, "arguments": args})
        if result.get("isError"):
            raise RuntimeError(f"{name}: {result.get('content')}")
        return result.get("structuredContent") or {}

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()


QUERY = "When a user is renamed the user service keeps the old name; fix the rename in the user service."
SLOTS = {
    "target_feature": {"value": "user service", "quote": "the user service"},
    "trigger_condition": {"value": "user is renamed", "quote": "When a user is renamed"},
    "observed_issue": {"value": "keeps the old name", "quote": "keeps the old name"},
    "desired_action": {"value": "fix the rename", "quote": "fix the rename"},
}
UNDERSTANDING = {
    "symbols_identified": ["UserService", "User", "UserService.rename"],
    "entry_points": ["UserService.rename"],
    "files_analyzed": ["app/services.py", "app/models.py"],
    "existing_patterns": ["services take the db in __init__ and return model objects"],
}


def workflow(sid: str | None) -> list[tuple[str, dict]]:
    """The steps of a MODIFY session on fixtures/mini-repo, start to outcome."""
    s = {"session_id": sid}
    return [
        ("start_session", {"intent": "MODIFY", "query": QUERY}),
        ("set_query_frame", {**s, "slots": SLOTS}),
        ("sync_index", {}),
        ("find_definitions", {**s, "symbol": "UserService"}),
        ("find_definitions", {**s, "symbol": "User"}),
        ("find_definitions", {**s, "symbol": "UserService.rename"}),
        ("find_references", {**s, "symbol": "UserService"}),
        ("submit_understanding", {**s, **UNDERSTANDING}),
        ("check_write_target", {**s, "path": "app/services.py"}),
        ("record_outcome", {**s, "outcome": "success", "analysis": "rename fixed"}),
    ]


SESSION_TOOLS = {"start_session", "set_query_frame", "submit_understanding", "check_write_target", "record_outcome"}


def serve_attempt(runner: Runner, repo: Path, rng: random.Random, stats: dict) -> tuple[list[str], str]:
    """Runs the workflow, kills serve at a random step a random 0-30 ms after
    sending it, starts serve again and finishes the workflow as a client
    would (a call whose answer was lost is sent again). Returns what was
    lost or wrong, and where the kill landed."""
    steps = len(workflow(None))
    # Most calls answer within a few milliseconds: the delays lean to zero.
    kill_at, delay = rng.randrange(steps), rng.uniform(0.0, 0.03) * rng.random()
    problems: list[str] = []
    server = Serve(runner, repo)
    sid = None
    acknowledged = {"code_calls": 0, "phase": None, "outcome": False}
    step = 0
    where = ""
    while step < steps:
        name, args = workflow(sid)[step]
        if step == kill_at and not where:
            rid = server.start("tools/call", {"name": name, "arguments": args})
            time.sleep(delay)
            answer = server.answer(rid, 0)
            server.kill()
            where = f"step {step} ({name}), {delay * 1000:.0f} ms after sending it, {'answered' if answer else 'unanswered'}"
            if answer is not None and not answer.get("result", {}).get("isError"):
                data = answer["result"].get("structuredContent") or {}
                step = note(acknowledged, name, data, step)
                if name == "start_session":
                    sid = data["session_id"]
            server = Serve(runner, repo)
            if sid:
                problems += verify_acknowledged(server, sid, acknowledged)
            continue
        data = server.tool(name, args)
        if data.get("already_submitted") or data.get("already_recorded"):
            stats["serve_retries_answered"] += 1
        if name == "start_session":
            sid = data["session_id"]
        step = note(acknowledged, name, data, step)
    server.close()
    problems += verify_final(repo, sid)
    return problems, where


def note(ack: dict, name: str, data: dict, step: int) -> int:
    """Records what an answered call established; returns the next step."""
    if name in {"find_definitions", "find_references"}:
        ack["code_calls"] += 1
    elif name == "submit_understanding":
        ack["phase"] = data.get("next_phase")
    elif name == "record_outcome":
        ack["outcome"] = True
    return step + 1


def verify_acknowledged(server: Serve, sid: str, ack: dict) -> list[str]:
    """After a restart: everything the client was told is still there."""
    try:
        status = server.tool("get_session_status", {"session_id": sid})
    except RuntimeError as e:
        return [f"acknowledged session {sid} lost: {e}"]
    problems = []
    if status.get("tool_calls", 0) < ack["code_calls"]:
        problems.append(f"tool calls lost: {status.get('tool_calls')} recorded, {ack['code_calls']} answered")
    if ack["phase"] == "READY" and status.get("phase") != "READY":
        problems.append(f"phase READY acknowledged, {status.get('phase')} after restart")
    if ack["outcome"] and not status.get("closed"):
        problems.append("outcome acknowledged, session open after restart")
    return problems


def verify_final(repo: Path, sid: str | None) -> list[str]:
    """At the end: one outcome, one agreement (row and file) and its map entry."""
    if sid is None:
        return ["no session"]
    con = sqlite3.connect(f"file:{db_path(repo)}?mode=ro", uri=True)
    try:
        outcomes = con.execute("SELECT outcome FROM outcome_log WHERE session_id = ?", (sid,)).fetchall()
        agreements = con.execute("SELECT id, path FROM agreements WHERE session_id = ?", (sid,)).fetchall()
        entries = {r[0] for r in con.execute("SELECT key FROM map_entries")}
        rows = con.execute("PRAGMA integrity_check").fetchall()
    finally:
        con.close()
    problems = []
    if rows != [("ok",)]:
        problems.append(f"integrity_check: {rows[:3]}")
    if outcomes != [("success",)]:
        problems.append(f"outcomes recorded: {outcomes}")
    if len(agreements) != 1:
        problems.append(f"agreement rows: {agreements}")
    for aid, path in agreements:
        if not (repo / path).is_file():
            problems.append(f"agreement file {path} missing")
        if aid not in entries:
            problems.append(f"agreement {aid} has no map entry")
    files = list((repo / ".code-intel" / "agreements").glob("*.md"))
    if len(files) != 1:
        problems.append(f"agreement files: {[f.name for f in files]}")
    return problems


# ---------------------------------------------------------------------------
# Scenarios


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=default_bin())
    ap.add_argument("--source", type=Path, help="a source tree to copy (default: a generated tree of --files files)")
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--kills", type=int, default=30)
    ap.add_argument("--concurrent", type=int, default=10)
    ap.add_argument("--serve-kills", type=int, default=0, help="kill -9 of serve during the session workflow (fixtures/mini-repo)")
    ap.add_argument("--edits", type=int, default=40, help="files edited before each attempt")
    ap.add_argument("--cold-every", type=int, default=3, help="every Nth kill hits a cold index (0: never)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--model-dir", default=None, help="embed with this model (kills then land mid-embedding too)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds after which a run counts as hung")
    ap.add_argument("--keep", type=Path, help="work here and keep the copies")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--quick", action="store_true", help="CI size: 200 generated files, 5 kills, 3 pairs, no model")
    a = ap.parse_args()
    if a.quick:
        a.files, a.kills, a.concurrent, a.serve_kills, a.model_dir, a.source = 200, 5, 3, 5, None, None
    if not os.access(a.bin, os.X_OK):
        print(f"error: no code-intel binary at {a.bin}: build it (cargo build --release) or pass --bin", file=sys.stderr)
        return 2
    if a.source and not a.source.is_dir():
        print(f"error: --source {a.source} is not a directory", file=sys.stderr)
        return 2
    seed = a.seed if a.seed is not None else int(time.time())
    rng = random.Random(seed)
    runner = Runner(a.bin, a.model_dir)
    work = a.keep or Path(tempfile.mkdtemp(prefix="code-intel-durability-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"durability: seed {seed} (replay with --seed {seed}), binary {a.bin}, work in {work}", flush=True)

    source = a.source
    if source is None:
        source = work / "source"
        if source.exists():
            shutil.rmtree(source)
        generate_tree(source, a.files)
    w, r = work / "w", work / "r"
    for c in (w, r):
        if c.exists():
            shutil.rmtree(c)
        copy_tree(source, c)
    started = time.monotonic()
    code, ref_secs, err = runner.index(r, a.timeout, embed=False)
    if code != 0:
        print(f"error: the reference index failed (exit {code}): {err}", file=sys.stderr)
        return 2
    code, cold_secs, err = runner.index(w, a.timeout)
    if code != 0:
        print(f"error: the first index of the working copy failed (exit {code}): {err}", file=sys.stderr)
        return 2
    files = len(signature(r)["files"])
    chunks = len(signature(r)["chunks"])
    print(f"durability: {files} files, {chunks} chunks; cold index {cold_secs:.1f} s"
          f"{' with embedding' if runner.embed else ' (--no-embed)'}, reference {ref_secs:.1f} s", flush=True)

    failures: list[str] = []
    finished_run: float | None = None
    stats = {"kills": 0, "killed_mid_run": 0, "finished_before_kill": 0, "cold_kills": 0, "hangs": 0,
             "integrity_failures": 0, "differences": 0, "recovery_seconds": [],
             "concurrent": 0, "concurrent_cold": 0, "concurrent_failures": 0}

    def fail(kind: str, attempt: int, what: list[str]) -> None:
        failures.append(f"{kind} {attempt} (--seed {seed}): " + "; ".join(what))
        print(f"FAIL {kind} {attempt}: " + "; ".join(what), flush=True)

    for attempt in range(a.kills):
        cold = a.cold_every > 0 and attempt % a.cold_every == a.cold_every - 1
        edits = edit(rng, [w, r], attempt, a.edits)
        code, ref_run, err = runner.index(r, a.timeout, embed=False)
        if code != 0:
            fail("kill", attempt, [f"reference index exit {code}: {err}"])
            continue
        if cold:
            shutil.rmtree(w / ".code-intel")
            stats["cold_kills"] += 1
        # How long W's run should take: the last W run that finished before
        # its kill, else the reference's run of the same edits scaled by what
        # embedding adds (W's cold run against R's), at most 30 s.
        if cold:
            horizon = cold_secs
        elif finished_run is not None:
            horizon = finished_run
        else:
            horizon = min(ref_run * max(1.0, cold_secs / max(ref_secs, 0.01)), 30.0)
        delay = rng.uniform(0.0, horizon)
        killed, ran = runner.index_killed(w, delay)
        if not killed and not cold:
            finished_run = ran
        stats["kills"] += 1
        stats["killed_mid_run" if killed else "finished_before_kill"] += 1
        code, secs, err = runner.index(w, a.timeout)
        stats["recovery_seconds"].append(round(secs, 2))
        if code is None:
            stats["hangs"] += 1
            fail("kill", attempt, [f"recovery index still running after {a.timeout:.0f} s (hang); {edits}"])
            continue
        if code != 0:
            fail("kill", attempt, [f"recovery index exit {code}: {err.strip()}"])
            continue
        problems = check(runner, w, r, rng)
        if problems:
            stats["integrity_failures" if any(p.startswith(("integrity", "foreign", "full-text")) for p in problems) else "differences"] += 1
            fail("kill", attempt, problems + [f"killed after {ran:.2f} s{' (cold)' if cold else ''}; edits: {edits}"])
        else:
            print(f"kill {attempt}: {'killed' if killed else 'finished'} after {ran:.2f} s{' (cold)' if cold else ''}, "
                  f"recovered in {secs:.1f} s, identical", flush=True)

    for attempt in range(a.concurrent):
        edits = edit(rng, [w, r], 1000 + attempt, a.edits)
        code, _, err = runner.index(r, a.timeout, embed=False)
        if code != 0:
            fail("concurrent", attempt, [f"reference index exit {code}: {err}"])
            continue
        force = attempt % 2 == 1
        cold = attempt % 3 == 2
        if cold:
            # Both open a database that does not exist yet.
            shutil.rmtree(w / ".code-intel")
            stats["concurrent_cold"] += 1
        stats["concurrent"] += 1
        procs = []
        t0 = time.monotonic()
        procs.append(subprocess.Popen(runner.index_args(w), env=runner.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        time.sleep(rng.uniform(0.0, 0.3))
        procs.append(subprocess.Popen(runner.index_args(w, *(["--force"] if force else [])), env=runner.env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        problems = []
        for i, p in enumerate(procs):
            try:
                _, err = p.communicate(timeout=a.timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                problems.append(f"process {i} still running after {a.timeout:.0f} s (hang)")
                stats["hangs"] += 1
                continue
            if p.returncode != 0:
                problems.append(f"process {i} exit {p.returncode}: {err.strip()[-500:]}")
        if not problems:
            problems = check(runner, w, r, rng)
        if problems:
            stats["concurrent_failures"] += 1
            fail("concurrent", attempt, problems + [f"{'index + index --force' if force else 'index + index'}{' (cold)' if cold else ''}; edits: {edits}"])
        else:
            print(f"concurrent {attempt}: {'index + index --force' if force else 'index + index'}{' (cold)' if cold else ''} "
                  f"in {time.monotonic() - t0:.1f} s, identical", flush=True)

    stats["serve_kills"] = 0
    stats["serve_failures"] = 0
    stats["serve_killed_before_answer"] = 0
    stats["serve_retries_answered"] = 0
    stats["serve_kills_by_call"] = {}
    for attempt in range(a.serve_kills):
        repo = work / f"serve-{attempt}"
        if repo.exists():
            shutil.rmtree(repo)
        copy_tree(ROOT / "fixtures" / "mini-repo", repo)
        stats["serve_kills"] += 1
        try:
            problems, where = serve_attempt(runner, repo, rng, stats)
        except (RuntimeError, TimeoutError, OSError) as e:
            problems, where = [f"the workflow could not go on: {e}"], "?"
        if "unanswered" in where:
            stats["serve_killed_before_answer"] += 1
        call = where.split("(")[1].split(")")[0] if "(" in where else "?"
        stats["serve_kills_by_call"][call] = stats["serve_kills_by_call"].get(call, 0) + 1
        if problems:
            stats["serve_failures"] += 1
            fail("serve", attempt, problems + [f"killed at {where}"])
        else:
            print(f"serve {attempt}: killed at {where}; nothing lost", flush=True)
        shutil.rmtree(repo, ignore_errors=True)

    # The checks can fail: a chunk removed behind the index's back is seen.
    damaged = self_test(runner, w, r, rng)
    if damaged:
        failures.append(f"self-test: {damaged}")
        print(f"FAIL self-test: {damaged}", flush=True)

    rec = stats["recovery_seconds"]
    summary = {
        "seed": seed, "binary": a.bin, "source": str(a.source or f"generated {a.files} files"), "files": files, "chunks": chunks,
        "embedding": runner.embed, "cold_index_seconds": round(cold_secs, 2),
        **{k: v for k, v in stats.items() if k != "recovery_seconds"},
        "recovery_seconds_median": sorted(rec)[len(rec) // 2] if rec else None,
        "recovery_seconds_max": max(rec) if rec else None,
        "sqlite": sqlite3.sqlite_version, "full_text_own_check": "python" if FTS_READABLE else "code-intel status --check",
        "failures": failures, "total_seconds": round(time.monotonic() - started, 1),
    }
    print(json.dumps(summary, indent=2))
    if a.json:
        a.json.write_text(json.dumps(summary, indent=2) + "\n")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
