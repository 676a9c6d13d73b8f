#!/usr/bin/env bash
# Measures the shared store's goal on a real repository: a second checkout
# (another path, empty local index, empty code-intel cache) indexing a
# repository that was already published, against a cold local index of the
# same repository, in the same run:
#   cold     a fresh clone indexed without a store (plugins compiled, every
#            chunk embedded): the baseline;
#   publish  the same checkout indexed again with the store and --force: its
#            chunk lists, vectors and repository are published (what CI's own
#            cold run with the store configured publishes, without embedding
#            everything a second time here);
#   second   another fresh clone at another path, with an empty cache folder,
#            indexed with the store.
#
#   bash bench/shared_store.sh REPO [BIN]
#
# REPO: a git repository (cloned three times into a temporary folder).
# BIN: the code-intel binary (default: the release build). The model is
# CODE_INTEL_MODEL_DIR (default: the models folder's multilingual-e5-small).
# Starts its own PostgreSQL + pgvector with scripts/pg and stops it after.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo="$(cd "${1:?usage: bench/shared_store.sh REPO [BIN]}" && pwd)"
bin="${2:-${CARGO_TARGET_DIR:-$root/target}/release/code-intel}"
[ -x "$bin" ] || { echo "error: no code-intel binary at $bin; build it (cargo build --release) or give its path" >&2; exit 1; }
export CODE_INTEL_MODEL_DIR="${CODE_INTEL_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/code-intel/models/intfloat--multilingual-e5-small}"
unset CODE_INTEL_SHARED_STORE CODE_INTEL_EMBEDDING_ENDPOINT

eval "$(bash "$root/scripts/pg" start)"
work="$(mktemp -d)"
trap 'bash "$root/scripts/pg" stop "$PG_DIR"; rm -rf "$work"' EXIT

run() { # name, checkout, store URL or empty, extra arguments
    local name="$1" checkout="$2" store="$3"
    shift 3
    [ -d "$work/$checkout" ] || git clone --quiet "$repo" "$work/$checkout" 2>/dev/null
    mkdir -p "$work/cache-$checkout"
    local start end
    start="$(date +%s.%N)"
    CODE_INTEL_CACHE_DIR="$work/cache-$checkout" CODE_INTEL_SHARED_STORE="$store" \
        "$bin" index --json "$@" "$work/$checkout" >"$work/$name.json" 2>/dev/null
    end="$(date +%s.%N)"
    python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$end" >"$work/$name.time"
    python3 - "$name" "$start" "$end" "$work/$name.json" <<'PY'
import json, sys
name, start, end, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
r = json.load(open(path))
e, s = r["embedding"], r.get("shared", {})
print(f"{name:>8}: {end - start:7.2f} s wall; {r['total_files']} files, {r['total_chunks']} chunks; "
      f"embedded {e.get('embedded_chunks', 0)} distinct texts ({e.get('tokens', 0)} tokens); "
      f"from store: {s.get('files_from_store', 0)} files, {s.get('chunks_from_store', 0)} chunks, {s.get('vectors_from_store', 0)} vectors; "
      f"published: {s.get('chunk_lists_published', 0)} chunk lists, {s.get('vectors_published', 0)} vectors; store {s.get('status')}")
PY
}

echo "repository: $repo ($(git -C "$repo" rev-parse --short HEAD)); model: $CODE_INTEL_MODEL_DIR"
run cold first ""
run publish first "$PG_URL" --force
run second second "$PG_URL"
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
cold, second = (json.load(open(f"{w}/{n}.json")) for n in ("cold", "second"))
texts = cold["embedding"]["embedded_chunks"]
again = second["embedding"]["embedded_chunks"]
t_cold, t_second = (float(open(f"{w}/{n}.time").read()) for n in ("cold", "second"))
print(f"second checkout re-embedded {again} of {texts} distinct texts ({100 * again / max(texts, 1):.2f} %)")
print(f"second checkout {t_second:.2f} s vs cold local index {t_cold:.2f} s: {t_cold / t_second:.1f}x faster")
PY
