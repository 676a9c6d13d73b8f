#!/usr/bin/env bash
# Times organisation-wide search (`code-intel search --shared`) over
# repositories that already have a local index with vectors: each is copied
# (without .git, so it is published under its folder's name), re-indexed
# with --force against a fresh store (scripts/pg), which publishes it without
# embedding it again, then every query runs three times.
#
#   MODEL=<multilingual-e5-small folder> bash bench/shared_search.sh REPO... [-- QUERY...]
#
# The model is placed in a temporary models folder under its hub name, so
# its key matches indexes built with the default `embedding_model`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${CODE_INTEL_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/code-intel}"
model="${MODEL:?set MODEL to the multilingual-e5-small model folder}"
repos=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do repos+=("$(cd "$1" && pwd)"); shift; done
[ $# -gt 0 ] && shift
queries=("$@")
[ ${#queries[@]} -gt 0 ] || queries=("where are cookies signed" "RateLimiter" "how do I render a template with context" \
    "unicode slug for article titles" "playlist songs shuffle" "websocket close code")

eval "$(bash "$root/scripts/pg" start)"
work="$(mktemp -d)"
trap 'bash "$root/scripts/pg" stop "$PG_DIR"; rm -rf "$work"' EXIT
mkdir -p "$work/xdg/code-intel/models"
ln -s "$model" "$work/xdg/code-intel/models/intfloat--multilingual-e5-small"
cat >"$work/report.py" <<'PY'
import json, statistics, sys
mode = sys.argv[1]
if mode == "published":
    r = json.load(open(sys.argv[2]))
    s = r["shared"]
    print(f"published {s.get('repository')}: {s['repository_chunks']} chunks, "
          f"{r['embedding'].get('embedded_chunks', 0)} texts embedded, {s['vectors_published']} vectors published")
elif mode == "query":
    r = json.load(open(sys.argv[2]))
    s = r["shared"]
    top = r["results"][0] if r["results"] else {}
    open(sys.argv[4], "a").write(f"{s['query_ms']}\n")
    print(f"{sys.argv[3]!r}: {s['query_ms']:.1f} ms over {s['repositories']} repositories "
          f"(vectors {s['vector_search']}); top: {top.get('repository')} {top.get('path')}")
else:
    ms = sorted(float(line) for line in open(sys.argv[2]))
    print(f"{len(ms)} searches: p50 {statistics.median(ms):.1f} ms, max {ms[-1]:.1f} ms (after the query is embedded)")
PY
export XDG_CACHE_HOME="$work/xdg" CODE_INTEL_SHARED_STORE="$PG_URL"
unset CODE_INTEL_MODEL_DIR CODE_INTEL_EMBEDDING_ENDPOINT
for repo in "${repos[@]}"; do
    name="$(basename "$repo")"
    cp -r "$repo" "$work/$name"
    rm -rf "$work/$name/.git"
    "$bin" index --force --json "$work/$name" >"$work/$name.json" 2>/dev/null
    python3 "$work/report.py" published "$work/$name.json"
done
cd "$work/$(basename "${repos[0]}")"
: >"$work/ms"
for q in "${queries[@]}"; do
    for _ in 1 2 3; do
        "$bin" search --shared --json -n 10 "$q" >"$work/q.json"
        python3 "$work/report.py" query "$work/q.json" "$q" "$work/ms"
    done
done
python3 "$work/report.py" summary "$work/ms"
