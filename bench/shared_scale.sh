#!/usr/bin/env bash
# Organisation-wide search at scale: publishes the chunks of repositories
# that already have a local index (read without writing to it) to a fresh
# shared store (scripts/pg), with vectors from a deterministic hashing
# stand-in encoder instead of a model, then times the store's search over
# all of them (host/crates/shared/examples/org_search_scale.rs).
#
#   bash bench/shared_scale.sh REPO... [-- QUERY...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
specs=()
work="$(mktemp -d)"
eval "$(bash "$root/scripts/pg" start)"
trap 'bash "$root/scripts/pg" stop "$PG_DIR"; rm -rf "$work"' EXIT
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    repo="$(cd "$1" && pwd)"; name="$(basename "$repo")"; shift
    python3 - "$repo/.code-intel/index.db" "$work/$name.jsonl" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?immutable=1", uri=True)
cols = ["path", "chunk_id", "kind", "name", "qualified_name", "start_line", "end_line", "content_hash", "content", "aliases"]
with open(sys.argv[2], "w") as out:
    for row in db.execute("SELECT f.path, c.chunk_id, c.kind, c.name, c.qualified_name, c.start_line, c.end_line, "
                          "c.content_hash, c.content, json_extract(c.metadata, '$.aliases') FROM chunks c JOIN files f ON f.id = c.file_id "
                          "ORDER BY f.path, c.start_line"):
        row = list(row)
        row[-1] = json.loads(row[-1]) if row[-1] else []
        out.write(json.dumps(dict(zip(cols, row))) + "\n")
PY
    specs+=("$name=$work/$name.jsonl")
done
(cd "$root" && cargo build --release --locked --example org_search_scale >&2)
"$target/release/examples/org_search_scale" "$PG_URL" "${specs[@]}" "$@"
