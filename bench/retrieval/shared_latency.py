#!/usr/bin/env python3
"""Organisation-wide search latency on the retrieval benchmark's store.

Asks every request of bench/retrieval/queries (or --queries) of
organisation-wide search, one at a time, and prints the p50, p90 and mean of
`query_ms` (the store's part after the query was embedded) for each build
given with --bin, the builds alternating request by request, and whether
they found the same files:

- `--via cli`: `code-intel search --shared --json` in each repository's
  clone, a process per request (the models load in each);
- `--via mcp`: `semantic_search` with `shared` on one `code-intel serve` per
  repository and build, the models loaded first (three warm-up requests).

Needs CODE_INTEL_SHARED_STORE, a store where `run.py --modes shared` has
published the repositories, and their clones under --work (run.py's). The
MCP driver is the end-to-end tests' (`tests/e2e/conftest.py`): run it with
their Python environment (`~/.cache/code-intel/venv/bin/python`).

    python3 bench/retrieval/shared_latency.py --bin OLD --bin NEW --via cli
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def requests(folder: Path, repos):
    for repo in repos:
        for line in (folder / f"{repo}.jsonl").read_text().splitlines():
            if line.strip():
                yield repo, json.loads(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True, help="a code-intel binary (repeatable)")
    ap.add_argument("--work", default=os.path.expanduser("~/.cache/code-intel/bench/retrieval"))
    ap.add_argument("--repos", default="starlette,koel,bookstack,pelican")
    ap.add_argument("--queries", default=str(HERE / "queries"))
    ap.add_argument("--via", choices=["cli", "mcp"], default="cli")
    args = ap.parse_args()
    if not os.environ.get("CODE_INTEL_SHARED_STORE"):
        sys.exit("error: set CODE_INTEL_SHARED_STORE to the store run.py --modes shared published to")
    repos = args.repos.split(",")
    times = {b: [] for b in args.bin}
    files = {b: {} for b in args.bin}
    if args.via == "cli":
        for repo, q in requests(Path(args.queries), repos):
            for b in args.bin:
                out = subprocess.run([b, "search", "--shared", "--json", "-n", "10", q["query"]],
                                     cwd=Path(args.work) / repo, capture_output=True, text=True, check=True)
                answer = json.loads(out.stdout)
                times[b].append(answer["shared"]["query_ms"])
                files[b][q["id"]] = [h["path"] for h in answer["results"]]
    else:
        sys.path.insert(0, str(HERE.parent.parent / "tests" / "e2e"))
        from conftest import RawServer  # noqa: E402

        for repo in repos:
            servers = {b: RawServer(b, Path(args.work) / repo) for b in args.bin}
            ask = lambda srv, text: srv.call(  # noqa: E731
                "tools/call", {"name": "semantic_search", "arguments": {"query": text, "shared": True, "n_results": 10}},
                timeout=300)["result"]
            for srv in servers.values():
                srv.initialize()
                for _ in range(3):
                    ask(srv, "warm up the model please")
            for r, q in requests(Path(args.queries), [repo]):
                for b, srv in servers.items():
                    result = ask(srv, q["query"])
                    answer = result.get("structuredContent") or json.loads(result["content"][0]["text"])
                    times[b].append(answer["shared"]["query_ms"])
                    files[b][q["id"]] = [h.get("path") for h in answer.get("results", [])]
            for srv in servers.values():
                srv.close()
    for b, v in times.items():
        v = sorted(v)
        print(f"{b}: {len(v)} requests, query_ms p50 {v[len(v) // 2]:.1f}, p90 {v[int(len(v) * 0.9)]:.1f}, "
              f"mean {statistics.mean(v):.1f}")
    first = args.bin[0]
    for b in args.bin[1:]:
        differ = [i for i in files[first] if files[first][i] != files[b].get(i)]
        print(f"requests whose files differ from {first}'s: {len(differ)} {differ[:10]}")


if __name__ == "__main__":
    main()
