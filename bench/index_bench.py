#!/usr/bin/env python3
"""Benchmarks of `code-intel index` and lexical `search`.

Measures, on a generated 5,000-file mixed Python/PHP tree (the same generator
as mcp_bench.py) and on a copy of this repository:
  1. full index: wall time, files/s, MB/s, peak RSS (/usr/bin/time -v);
  2. the I/O floor in the same run: `rg --files` + reading every file it
     lists (cold-ish: the tree was just written, so both read from page cache);
     reported as index time / floor time;
  3. re-sync after touching one file, end to end (process start to exit),
     p50/p95 over --runs runs (goal < 100 ms);
  4. lexical search latency over the 5,000-file index, in-process time as
     reported by `search --json` (`query_ms`) and end to end, p50/p95
     (goal p50 < 10 ms).

Usage:
  python3 bench/index_bench.py [--bin PATH] [--files 5000] [--runs 20] [--repo DIR] [--keep DIR]

The binary defaults to $CODE_INTEL_BIN, else $CARGO_TARGET_DIR/release/code-intel.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_bench import default_bin, generate_tree  # noqa: E402

# The lexical query mix: identifiers in several spellings, camelCase and
# snake_case parts, prose phrases of common words (the costly kind: they match
# most chunks) and queries that match nothing.
QUERIES = [
    "action_3",            # snake_case identifier, 2,500 definitions
    "Service42",           # CamelCase class name
    "helper value",        # prose, both words in ~half of all chunks
    "getRecord",           # camelCase identifier, no match
    "base_1",              # identifier only called, never defined
    "does things record",  # docstring prose
    "return value",        # prose of the commonest words
    "module042",           # path component
    "handle request",      # prose: no chunk holds both, any-word fallback
    "service 17",          # split identifier parts
    "Controller1235",      # CamelCase class name, one definition
    "helper_17_2",         # snake_case identifier, 25 definitions
    "handleRequest",       # camelCase spelling of a phrase, no match
    "request input",       # prose over method calls (`$request->input`)
    "zebra unicorn",       # prose, no match
]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and ".code-intel" not in p.parts)


def timed_index(binary: str, root: Path, force: bool = False) -> tuple[float, int, dict]:
    """Runs `index --json` under /usr/bin/time -v; returns (seconds, peak KiB, report)."""
    args = ["/usr/bin/time", "-v", binary, "index", str(root), "--json"] + (["--force"] if force else [])
    start = time.perf_counter()
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - start
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1))
    return elapsed, peak, json.loads(out.stdout)


def io_floor(root: Path) -> float:
    """`rg --files` plus reading every listed file, in one process pipeline."""
    start = time.perf_counter()
    files = subprocess.run(["rg", "--files", str(root)], capture_output=True, text=True, check=True).stdout.split("\n")
    total = 0
    for f in files:
        if f:
            with open(f, "rb") as fh:
                total += len(fh.read())
    return time.perf_counter() - start


def full_index(binary: str, root: Path, label: str) -> None:
    shutil.rmtree(root / ".code-intel", ignore_errors=True)
    floor = io_floor(root)
    seconds, peak, report = timed_index(binary, root)
    files = report["total_files"]
    mb = tree_bytes(root) / 1e6
    print(f"\n== {label}: full index")
    print(f"  files {files}, chunks {report['total_chunks']}, {mb:.1f} MB, fallbacks {report['fallbacks']}, "
          f"plugin failures {len(report['plugin_failures'])}, skipped {len(report['skipped'])}")
    print(f"  wall {seconds * 1000:.0f} ms (sync itself {report['elapsed_ms']} ms): "
          f"{files / seconds:.0f} files/s, {mb / seconds:.1f} MB/s, peak RSS {peak / 1024:.1f} MiB")
    print(f"  I/O floor (rg --files + read all): {floor * 1000:.0f} ms -> index/floor = {seconds / floor:.1f}x")
    seconds, peak, report = timed_index(binary, root)
    print(f"  no-change re-sync: {seconds * 1000:.1f} ms end to end ({report['unchanged']} unchanged)")


def resync_one(binary: str, root: Path, runs: int) -> None:
    target = next(p for p in sorted(root.rglob("*.py")) if ".code-intel" not in p.parts)
    original = target.read_text()
    times = []
    for i in range(runs):
        target.write_text(original + f"\n# edit {i}\n")
        start = time.perf_counter()
        out = subprocess.run([binary, "index", str(root), "--json"], capture_output=True, text=True, check=True)
        times.append((time.perf_counter() - start) * 1000)
        report = json.loads(out.stdout)
        assert report["modified"] == 1, report
    target.write_text(original)
    print(f"\n== re-sync after touching one file ({runs} runs, end to end): "
          f"p50 {pct(times, 50):.1f} ms, p95 {pct(times, 95):.1f} ms (goal < 100 ms)")


def search_latency(binary: str, root: Path, runs: int) -> None:
    inproc, e2e = [], []
    for _ in range(max(1, runs // len(QUERIES) + 1)):
        for q in QUERIES:
            start = time.perf_counter()
            out = subprocess.run([binary, "search", q, "--repo", str(root), "--json", "-n", "10"],
                                 capture_output=True, text=True, check=True)
            e2e.append((time.perf_counter() - start) * 1000)
            inproc.append(json.loads(out.stdout)["query_ms"])
    print(f"\n== lexical search ({len(inproc)} queries over {len(QUERIES)} distinct)")
    print(f"  in-process: p50 {pct(inproc, 50):.2f} ms, p95 {pct(inproc, 95):.2f} ms (goal p50 < 10 ms)")
    print(f"  end to end (process start, open, query, print): p50 {pct(e2e, 50):.1f} ms, p95 {pct(e2e, 95):.1f} ms")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=default_bin())
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parent.parent),
                    help="repository to index as the second subject (copied first)")
    ap.add_argument("--keep", help="generate the tree here and keep it")
    args = ap.parse_args()
    if not shutil.which("rg"):
        print("rg not found (apt-get install ripgrep)", file=sys.stderr)
        return 2
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="index-bench-"))
    tree = work / "tree"
    if not tree.exists():
        generate_tree(tree, args.files)
    print(f"binary {args.bin}; {os.cpu_count()} cores")
    full_index(args.bin, tree, f"generated {args.files}-file Python/PHP tree")
    resync_one(args.bin, tree, args.runs)
    search_latency(args.bin, tree, args.runs * 5)

    repo_copy = work / "repo"
    shutil.rmtree(repo_copy, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", args.repo, str(repo_copy)], check=True)
    full_index(args.bin, repo_copy, f"this repository ({args.repo} at HEAD)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
