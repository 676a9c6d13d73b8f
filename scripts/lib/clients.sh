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

# Gemini CLI and Codex CLI from npm, for tests/e2e/test_clients.py (their
# `mcp list` commands check the configuration `init --client` writes).
# Exports CODE_INTEL_GEMINI_BIN and CODE_INTEL_CODEX_BIN.
GEMINI_CLI_VERSION="${GEMINI_CLI_VERSION:-0.61.0}"
CODEX_CLI_VERSION="${CODEX_CLI_VERSION:-0.171.0}"

npm_client() { # package version bin-name -> path of the binary
    local package="$1" version="$2" name="$3"
    local prefix="$CLIENTS_PREFIX/$name-$version"
    local bin="$prefix/node_modules/.bin/$name"
    if [ ! -x "$bin" ]; then
        if ! command -v npm >/dev/null; then
            echo "error: npm not found; install Node.js 20 or newer (https://nodejs.org) to run the MCP client end-to-end tests" >&2
            exit 1
        fi
        echo "==> installing $package@$version from npm into $prefix" >&2
        mkdir -p "$prefix"
        npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "$package@$version" >/dev/null
    fi
    echo "$bin"
}

setup_other_clients() {
    CODE_INTEL_GEMINI_BIN="$(npm_client @google/gemini-cli "$GEMINI_CLI_VERSION" gemini)"
    CODE_INTEL_CODEX_BIN="$(npm_client @openai/codex "$CODEX_CLI_VERSION" codex)"
    export CODE_INTEL_GEMINI_BIN CODE_INTEL_CODEX_BIN
}
