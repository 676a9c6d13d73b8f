# MCP Inspector CLI for tests/e2e/test_inspector.py, with the Node.js it
# needs (Inspector 2.x requires Node >= 22.19; the npm package `node@22`
# provides one without touching the system's Node). Installed into a private
# prefix, never globally. Sourced by scripts/test after scripts/lib/setup.sh;
# idempotent and fast when done.

INSPECTOR_VERSION="${INSPECTOR_VERSION:-2.12.0}"
INSPECTOR_NODE_MAJOR="${INSPECTOR_NODE_MAJOR:-22}"
INSPECTOR_PREFIX="${CODE_INTEL_INSPECTOR_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/code-intel/npm-inspector}/inspector-$INSPECTOR_VERSION-node$INSPECTOR_NODE_MAJOR"

# Exports CODE_INTEL_INSPECTOR_NODE (the Node.js binary) and
# CODE_INTEL_INSPECTOR (the Inspector's entry script).
setup_inspector() {
    local node="$INSPECTOR_PREFIX/node_modules/node/bin/node"
    local entry="$INSPECTOR_PREFIX/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
    if [ ! -x "$node" ] || [ ! -f "$entry" ] || ! "$node" "$entry" --cli --version 2>/dev/null | grep -q "$INSPECTOR_VERSION"; then
        if ! command -v npm >/dev/null; then
            echo "error: npm not found; install Node.js 18 or newer (https://nodejs.org) to run the MCP Inspector end-to-end test" >&2
            exit 1
        fi
        echo "==> installing MCP Inspector $INSPECTOR_VERSION and Node.js $INSPECTOR_NODE_MAJOR from npm into $INSPECTOR_PREFIX"
        mkdir -p "$INSPECTOR_PREFIX"
        # `allowScripts`: npm 11.19+ runs no dependency install script
        # unless the project allows it, and `node` fetches its binary in one.
        cat > "$INSPECTOR_PREFIX/package.json" <<JSON
{
  "private": true,
  "dependencies": {
    "node": "$INSPECTOR_NODE_MAJOR",
    "@modelcontextprotocol/inspector": "$INSPECTOR_VERSION"
  },
  "allowScripts": {
    "node": true
  }
}
JSON
        (cd "$INSPECTOR_PREFIX" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
        if [ ! -x "$node" ] || [ ! -f "$entry" ]; then
            echo "error: the MCP Inspector install in $INSPECTOR_PREFIX is incomplete (no $node or $entry)" >&2
            exit 1
        fi
    fi
    CODE_INTEL_INSPECTOR_NODE="$node"
    CODE_INTEL_INSPECTOR="$entry"
    export CODE_INTEL_INSPECTOR_NODE CODE_INTEL_INSPECTOR
}
