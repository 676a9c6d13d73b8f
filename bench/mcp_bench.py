#!/usr/bin/env python3
"""Benchmarks of `code-intel serve` over stdio.

Measures, on a generated 5,000-file Python/PHP tree:
  1. time from process start to the `initialize` response (goal < 100 ms,
     warm plugin cache: the first start is discarded);
  2. per-tool latency over stdio, p50/p95;
  3. `search_text` next to `rg` on the same patterns in the same run
     (goal <= 1.5x rg).

Usage:
  python3 bench/mcp_bench.py [--bin PATH] [--files 5000] [--runs 30] [--keep DIR]

The binary defaults to $CODE_INTEL_BIN, else $CARGO_TARGET_DIR/release/code-intel.
`rg` must be on PATH (Debian: apt-get install ripgrep).
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
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def default_bin() -> str:
    if os.environ.get("CODE_INTEL_BIN"):
        return os.environ["CODE_INTEL_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    return str(Path(target) / "release" / "code-intel")


def generate_tree(root: Path, files: int) -> None:
    """A mixed Python/PHP project: models, services and controllers that call each other."""
    for i in range(files):
        pkg = root / ("app" if i % 2 == 0 else "src") / f"module{i % 100:03d}"
        pkg.mkdir(parents=True, exist_ok=True)
        if i % 2 == 0:
            methods = "\n".join(
                f"    def action_{j}(self, value):\n"
                f"        \"\"\"Action {j} of service {i}.\"\"\"\n"
                f"        return helper_{(i + j) % 97}(value) + self.base_{j % 3}(value)\n"
                for j in range(8)
            )
            helpers = "\n".join(f"def helper_{i % 97}_{k}(value):\n    return value * {k}\n" for k in range(4))
            (pkg / f"service_{i}.py").write_text(
                f'"""Service {i}."""\n\nfrom app.common import helper_{i % 97}\n\n\n'
                f"class Service{i}:\n    \"\"\"Does things for record {i}.\"\"\"\n\n{methods}\n\n{helpers}\n"
            )
        else:
            methods = "\n".join(
                f"    public function handle{j}(Request $request): Response\n    {{\n"
                f"        return $this->service->action{j}($request->input('id'), {i});\n    }}\n"
                for j in range(8)
            )
            (pkg / f"Controller{i}.php").write_text(
                f"<?php\n\nnamespace App\\Http\\Module{i % 100};\n\nuse App\\Services\\Service{i - 1};\n\n"
                f"class Controller{i}\n{{\n    public function __construct(private Service{i - 1} $service)\n    {{\n    }}\n\n{methods}}}\n"
            )


class Server:
    def __init__(self, binary: str, repo: Path, *extra: str):
        env = dict(os.environ, CODE_INTEL_LOG="warn")
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [binary, "serve", "--repo", str(repo), *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
        )
        self.responses: dict = {}
        self.cond = threading.Condition()
        self.next_id = 0
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self):
        for line in self.proc.stdout:
            msg = json.loads(line)
            if "id" in msg:
                with self.cond:
                    self.responses[msg["id"]] = (time.perf_counter(), msg)
                    self.cond.notify_all()

    def send(self, method: str, params: dict) -> int:
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        return self.next_id

    def wait(self, id: int, timeout: float = 600) -> tuple[float, dict]:
        with self.cond:
            if not self.cond.wait_for(lambda: id in self.responses, timeout):
                raise TimeoutError(id)
            return self.responses.pop(id)

    def call(self, method: str, params: dict) -> tuple[float, dict]:
        start = time.perf_counter()
        done, msg = self.wait(self.send(method, params))
        return done - start, msg

    def initialize(self) -> tuple[float, dict]:
        id = self.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
        done, msg = self.wait(id)
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()
        return done - self.t0, msg

    def tool(self, name: str, args: dict) -> tuple[float, dict]:
        elapsed, msg = self.call("tools/call", {"name": name, "arguments": args})
        if "error" in msg or msg["result"].get("isError"):
            raise RuntimeError(f"{name} failed: {msg}")
        return elapsed, msg["result"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(30)


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    k = max(0, min(len(values) - 1, round(p / 100 * (len(values) - 1))))
    return values[k]


def fmt(values: list[float]) -> str:
    return f"p50 {pct(values, 50) * 1000:7.2f} ms   p95 {pct(values, 95) * 1000:7.2f} ms"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=default_bin())
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--keep", type=Path, help="generate the tree here and keep it")
    args = ap.parse_args()
    if not shutil.which("rg"):
        print("error: rg (ripgrep) is needed for the comparison; install it (apt-get install ripgrep)", file=sys.stderr)
        return 2

    tmp = None
    if args.keep:
        repo = args.keep
        if not repo.exists():
            generate_tree(repo, args.files)
    else:
        tmp = tempfile.TemporaryDirectory()
        repo = Path(tmp.name) / "tree"
        generate_tree(repo, args.files)
    print(f"tree: {repo} ({args.files} files)")

    # Index once (the start-up sync), then time cold-process starts.
    server = Server(args.bin, repo)
    server.initialize()
    t, result = server.tool("sync_index", {})
    print(f"initial sync: {t:.1f} s  {json.dumps(result['structuredContent'])[:200]}")
    server.close()

    starts = []
    for i in range(args.runs + 1):
        s = Server(args.bin, repo, "--no-sync")
        elapsed, _ = s.initialize()
        s.close()
        if i > 0:  # the first start warms the page cache and the plugin cache
            starts.append(elapsed)
    print(f"\nprocess start -> initialize answered ({args.runs} runs): {fmt(starts)}")

    server = Server(args.bin, repo, "--no-sync")
    server.initialize()
    cases = [
        ("search_text", {"pattern": "helper_42\\(", "max_results": 50}),
        ("search_text", {"pattern": "handle3", "literal": True, "file_types": ["php"], "max_results": 50}),
        ("find_definitions", {"symbol": "Service1234"}),
        ("find_definitions", {"symbol": "Servce1234", "match": "fuzzy"}),
        ("find_references", {"symbol": "Service1234"}),
        ("analyze_structure", {"path": "app/module042"}),
        ("get_function_at_line", {"path": "app/module042/service_42.py", "line": 12}),
        ("semantic_search", {"query": "controller that handles requests for record 77", "n_results": 10}),
        ("repo_map", {"max_tokens": 1024}),
        ("index_status", {}),
    ]
    print("\nper-tool latency over stdio:")
    for name, tool_args in cases:
        times = [server.tool(name, tool_args)[0] for _ in range(args.runs)]
        label = f"{name} {json.dumps(tool_args)[:60]}"
        print(f"  {label:<80} {fmt(times)}")

    print("\nsearch_text vs rg (same pattern, whole tree, same run):")
    for pattern, literal in [("helper_42_3", True), (r"def action_\d\(self, value\)", False), ("ZZZ_no_such_text", True)]:
        ours = [server.tool("search_text", {"pattern": pattern, "literal": literal, "case": "sensitive", "max_results": 1000})[0] for _ in range(args.runs)]
        rg_args = ["rg", "--no-heading", "-n", "--max-columns", "300"] + (["-F"] if literal else []) + [pattern, str(repo)]
        theirs = []
        for _ in range(args.runs):
            start = time.perf_counter()
            subprocess.run(rg_args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            theirs.append(time.perf_counter() - start)
        ratio = pct(ours, 50) / pct(theirs, 50)
        count = subprocess.run(rg_args[:1] + ["-c", "--no-filename"] + rg_args[1:], capture_output=True, text=True).stdout
        total = sum(int(n) for n in count.split() if n.isdigit())
        caveat = " (search_text stopped at max_results=1000: not comparable)" if total > 1000 else ""
        print(f"  {pattern!r:<34} {total:>6} matches  search_text {fmt(ours)} | rg {fmt(theirs)} | ratio p50 {ratio:.2f}x{caveat}")
    server.close()
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
