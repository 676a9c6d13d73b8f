# MCP clients the end-to-end tests drive for real. Sourced by scripts/test
# after scripts/lib/setup.sh. Each step is idempotent and fast when done.

# Claude Code from npm, in a private prefix (never a global install). The
# version is pinned: the tests speak its hook protocol and its headless
# mode. Exports CODE_INTEL_CLAUDE_BIN for tests/e2e/test_claude_code.py.
CLAUDE_CODE_VERSION="${CLAUDE_CODE_VERSION:-2.1.332}"
CLIENTS_PREFIX="${CODE_INTEL_CLIENTS_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/code-intel/npm}"

setup_claude_code() {
    local prefix="$CLIENTS_PREFIX/claude-code-$CLAUDE_CODE_VERSION"
    local bin="$prefix/node_modules/.bin/claude"
    if [ ! -x "$bin" ] || ! "$bin" --version 2>/dev/null | grep -q "^$CLAUDE_CODE_VERSION"; then
        if ! command -v npm >/dev/null; then
            echo "error: npm not found; install Node.js 18 or newer (https://nodejs.org) to run the Claude Code end-to-end test" >&2
            exit 1
        fi
        echo "==> installing Claude Code $CLAUDE_CODE_VERSION from npm into $prefix"
        mkdir -p "$prefix"
        npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
            "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" >/dev/null
    fi
    CODE_INTEL_CLAUDE_BIN="$bin"
    export CODE_INTEL_CLAUDE_BIN
}
