#!/usr/bin/env python3
"""Path escapes through `code-intel serve`: every path argument of every tool,
given every way out of the repository we know of, must never show anything
from outside it.

A copy of `fixtures/mini-repo` gets, beside it, a folder `outside/` holding
`secret.py` (a definition, a marker string) and a file named like a second
marker and, inside the repository, `escape` (a
symlink to `outside/`) and `escape.py` (a symlink to the secret file). The runner starts `serve`, opens a MODIFY session
(so the session tools take paths too), and calls each tool whose input schema
has a path argument (`path`, `paths`, `file`, `files`, `file_path`, `focus`,
...; found in `tools/list`, not listed here) with each variant below in that
argument and sample values in the others. A leak: an answer (result or
error, any field) holding a marker, the outside folder's path (the symlinks'
target), or a line of `/etc/passwd`, unless the argument itself held it (a
refusal may repeat what it was given). The server must also answer
every call and stay up.

    python3 bench/durability/escapes.py               # all tools x all variants
    python3 bench/durability/escapes.py --json FILE   # the figures as JSON

The binary is `$CODE_INTEL_BIN`, else `$CARGO_TARGET_DIR/release/code-intel`
(or `--bin`). Exit status 1 when anything leaked or went unanswered.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import ROOT, Runner, Serve, default_bin  # noqa: E402

MARKER = "OUTSIDE_SECRET_7f3a"
CONTENT = "OUTSIDE_CONTENT_91c2"
PATH_NAMES = re.compile(r"^(path|paths|file|files|file_path|file_paths|focus|dir|directory|target|targets)$")


def variants(outside: Path) -> list[str]:
    o = str(outside)
    return [
        "..", "../", "../outside", "../outside/secret.py", "../../", "../../../../../../etc/passwd",
        "app/../../outside/secret.py", "./../outside/secret.py", "app/./../../outside", "app/..//../outside/secret.py",
        o, o + "/secret.py", o + "/", "/etc/passwd", "/etc", "/", "//etc/passwd", "/proc/self/environ",
        "escape", "escape/", "escape/secret.py", "escape.py", "escape/../escape/secret.py", "./escape/secret.py",
        "%2e%2e/outside/secret.py", "..%2foutside%2fsecret.py", "%2e%2e%2f", "..\\outside\\secret.py",
        "app\\..\\..\\outside", "\u2025/outside/secret.py", "\uff0e\uff0e/outside/secret.py", "..\u2215outside",
        "app/\x00../../outside/secret.py", "app\x00", "\x00", "../outside/secret.py\x00.py",
        "~", "~/", "~root/.bashrc", "file:///etc/passwd", "file://" + o + "/secret.py", "$HOME", "${HOME}/.bashrc",
        "`id`", "$(cat /etc/passwd)", "*", "../*", "**/../../outside", "{..,app}", "app/[.][.]/../outside",
        "." * 300, "a/" * 2000 + "../" * 2001 + "outside/secret.py", "...", "....//outside",
        ".code-intel", ".code-intel/index.db", ".git/config", "app/../.code-intel/../../outside/secret.py",
        MARKER + ".py",
    ]


def sample(name: str, schema: dict) -> object:
    """A plausible value for a non-path argument."""
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "integer" or kind == "number":
        return max(1, int(schema.get("minimum", 1)))
    if kind == "boolean":
        return False
    if kind == "array":
        return [sample(name, schema.get("items", {"type": "string"}))]
    if kind == "object":
        return {}
    return {"pattern": "load_user", "symbol": "load_user", "query": "load the user", "name": "load_user"}.get(name, "load_user")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=default_bin())
    ap.add_argument("--json", type=Path)
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    a = ap.parse_args()

    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="code-intel-escapes-"))
    repo = work / "repo"
    shutil.copytree(ROOT / "fixtures" / "mini-repo", repo, ignore=shutil.ignore_patterns(".code-intel"))
    outside = work / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text(f"def load_user():\n    return '{CONTENT}'\n")
    (outside / f"{MARKER}.py").write_text(f"{CONTENT} = 1\n")
    os.symlink(outside, repo / "escape")
    os.symlink(outside / "secret.py", repo / "escape.py")
    forbidden = {MARKER, CONTENT, str(outside), str(outside.resolve()), "root:x:0:0"}

    runner = Runner(a.bin, None)
    serve = Serve(runner, repo)
    tools = serve.request("tools/list", {})["tools"]
    serve.tool("sync_index", {}) if any(t["name"] == "sync_index" for t in tools) else None
    session = serve.tool("start_session", {"intent": "MODIFY", "query": "rename load_user in the user model"})
    sid = session.get("session_id")

    targets = []
    for t in tools:
        props = t.get("inputSchema", {}).get("properties", {})
        for arg in props:
            if PATH_NAMES.match(arg):
                targets.append((t["name"], arg, props, set(t.get("inputSchema", {}).get("required", []))))
    calls, leaks, unanswered, errors, accepted = 0, [], [], 0, []
    by_argument: dict[str, int] = {}
    for tool, arg, props, required in targets:
        for v in variants(outside):
            args = {}
            for name, schema in props.items():
                if name == arg:
                    args[name] = [v] if schema.get("type") == "array" else v
                elif name == "session_id" and sid:
                    args[name] = sid
                elif name in required:
                    args[name] = sample(name, schema)
            rid = serve.start("tools/call", {"name": tool, "arguments": args})
            msg = serve.answer(rid, 60)
            calls += 1
            by_argument[f"{tool}.{arg}"] = by_argument.get(f"{tool}.{arg}", 0) + 1
            if msg is None:
                unanswered.append(f"{tool}.{arg}={v[:60]!r}")
                if serve.proc.poll() is not None:
                    print(f"serve exited ({serve.proc.returncode}) after {tool}.{arg}={v[:60]!r}", flush=True)
                    serve = Serve(runner, repo)
                continue
            text = json.dumps(msg, ensure_ascii=False)
            refused = bool(msg.get("error") or msg.get("result", {}).get("isError"))
            errors += refused
            if not refused:
                accepted.append(f"{tool}.{arg}={v[:40]!r}")
            # What the call itself named may be echoed in its refusal.
            found = [f for f in forbidden if f in text and f not in v]
            if found:
                leaks.append(f"{tool}.{arg}={v[:60]!r}: {found}")
                print(f"LEAK {tool}.{arg}={v[:60]!r}: {found}: {text[:300]}", flush=True)
    # Control: the same check sees the marker when it is inside the repository.
    (repo / "inside.py").write_text(f"X = '{CONTENT}'\n")
    control = json.dumps(serve.request("tools/call", {"name": "search_text", "arguments": {"pattern": CONTENT}}))
    if CONTENT not in control:
        leaks.append(f"control: search_text did not show the marker placed inside the repository: {control[:300]}")
    serve.kill()
    summary = {
        "binary": a.bin, "tools": len({t for t, *_ in targets}), "path_arguments": len(targets),
        "variants": len(variants(outside)), "calls": calls, "refused": errors, "accepted": len(accepted), "leaks": len(leaks),
        "unanswered": len(unanswered), "by_argument": by_argument, "leak_cases": leaks[:50],
        "unanswered_cases": unanswered[:50], "accepted_cases": accepted, "total_seconds": round(time.monotonic() - started, 1),
    }
    print(json.dumps(summary, indent=2))
    if a.json:
        a.json.write_text(json.dumps(summary, indent=2) + "\n")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"kept {work}")
    return 1 if leaks or unanswered else 0


if __name__ == "__main__":
    sys.exit(main())
