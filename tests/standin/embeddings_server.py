"""An OpenAI-compatible embeddings server for tests: `POST /v1/embeddings`
computed from a sentence-transformers BERT folder in float32 with numpy.

    python embeddings_server.py --model-dir DIR [--port 0] [--api-key KEY]
                                [--fail-first N] [--max-batch N] [--delay-ms N]

It serves what TEI, vLLM, Ollama and infinity serve on that route, as a
plain stand-in: the model's own forward pass (BERT, mean pooling, L2
normalisation), written independently of code-intel's encoder, so a test can
compare the vectors code-intel gets through it with local embedding. It adds
no prompts: the client sends the text to embed, as with TEI's OpenAI route.

Knobs that make a test able to fail:
- `--api-key KEY`: requests without `Authorization: Bearer KEY` get 401.
- `--fail-first N`: the first N embedding requests get 503 (retries).
- `--max-batch N`: a request with more inputs gets 413, as TEI answers
  past its `--max-client-batch-size`.
- `--delay-ms N`: every embedding request waits N ms first (timeouts).

The first line on stdout is `listening on http://127.0.0.1:PORT`. `GET
/stats` answers the counts of requests, inputs and failures served. Needs
numpy and tokenizers; nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# One BLAS thread per request thread: the stand-in shares two cores with the
# process under test, and oversubscribed BLAS threads were 5x slower.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise SystemExit(f"{path}: tensor {name} is {info['dtype']}; this stand-in reads F32 only")
        start, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data, dtype="<f4", count=(end - start) // 4, offset=base + start).reshape(info["shape"])
    return tensors


def erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7).
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return sign * y


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


class Bert:
    def __init__(self, model_dir: Path):
        config = json.loads((model_dir / "config.json").read_text())
        self.heads = config["num_attention_heads"]
        self.layers = config["num_hidden_layers"]
        self.eps = config.get("layer_norm_eps", 1e-12)
        self.w = load_safetensors(model_dir / "model.safetensors")
        if "bert.embeddings.word_embeddings.weight" in self.w:
            self.w = {k.removeprefix("bert."): v for k, v in self.w.items()}
        max_len = config["max_position_embeddings"]
        st = model_dir / "sentence_bert_config.json"
        if st.exists():
            max_len = min(max_len, json.loads(st.read_text()).get("max_seq_length") or max_len)
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_len)
        self.dim = self.w["embeddings.word_embeddings.weight"].shape[1]
        # Linear layers' weights transposed once, contiguous for BLAS.
        self.t = {k.removesuffix(".weight"): np.ascontiguousarray(v.T) for k, v in self.w.items() if k.startswith("encoder.") and v.ndim == 2}

    def embed_one(self, ids: list[int]) -> np.ndarray:
        w = self.w
        n = len(ids)
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n] + w["embeddings.token_type_embeddings.weight"][0]
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        hd = self.dim // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            lin = lambda t, name: t @ self.t[p + name] + w[p + name + ".bias"]  # noqa: E731
            heads = lambda t: np.ascontiguousarray(t.reshape(n, self.heads, hd).transpose(1, 0, 2))  # noqa: E731
            q = heads(lin(x, "attention.self.query"))
            k = heads(lin(x, "attention.self.key"))
            v = heads(lin(x, "attention.self.value"))
            scores = q @ np.ascontiguousarray(k.transpose(0, 2, 1)) / np.sqrt(hd)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ v).transpose(1, 0, 2).reshape(n, self.dim)
            x = layer_norm(x + lin(ctx, "attention.output.dense"), w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], self.eps)
            h = gelu(lin(x, "intermediate.dense"))
            x = layer_norm(x + lin(h, "output.dense"), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)
        pooled = x.mean(0)
        norm = np.linalg.norm(pooled)
        return pooled / norm if norm > 0 else pooled

    def embed(self, texts: list[str]) -> tuple[list[np.ndarray], int]:
        encodings = self.tokenizer.encode_batch(texts)
        tokens = sum(len(e.ids) for e in encodings)
        return [self.embed_one(e.ids) for e in encodings], tokens


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    model: Bert
    model_name = ""
    api_key: str | None = None
    fail_first = 0
    max_batch = 0
    delay_ms = 0
    lock = threading.Lock()
    stats = {"requests": 0, "inputs": 0, "failed": 0, "unauthorized": 0, "too_large": 0}

    def log_message(self, *args):
        pass

    def reply(self, code: int, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def error(self, code: int, message: str, headers: dict | None = None) -> None:
        self.reply(code, {"error": {"message": message, "type": "invalid_request_error", "code": code}}, headers)

    def do_GET(self):
        if self.path == "/stats":
            with self.lock:
                self.reply(200, dict(self.stats))
        elif self.path in ("/health", "/"):
            self.reply(200, {"status": "ok"})
        elif self.path == "/v1/models":
            self.reply(200, {"object": "list", "data": [{"id": self.model_name, "object": "model"}]})
        else:
            self.error(404, f"no route {self.path}")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path not in ("/v1/embeddings", "/embeddings"):
            self.error(404, f"no route {self.path}")
            return
        if self.api_key is not None and self.headers.get("Authorization") != f"Bearer {self.api_key}":
            with self.lock:
                self.stats["unauthorized"] += 1
            self.error(401, "Incorrect API key provided")
            return
        if self.delay_ms:
            time.sleep(self.delay_ms / 1000)
        with self.lock:
            self.stats["requests"] += 1
            fail = self.stats["requests"] <= self.fail_first
            if fail:
                self.stats["failed"] += 1
        if fail:
            self.error(503, "model is overloaded, try again", {"Retry-After": "0"})
            return
        try:
            req = json.loads(raw or b"{}")
        except ValueError:
            self.error(400, "body is not JSON")
            return
        if req.get("model") != self.model_name:
            self.error(404, f"model {req.get('model')!r} not found; this server serves {self.model_name!r}")
            return
        inputs = req.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs or not all(isinstance(t, str) for t in inputs):
            self.error(400, "'input' must be a string or a non-empty array of strings")
            return
        if self.max_batch and len(inputs) > self.max_batch:
            with self.lock:
                self.stats["too_large"] += 1
            self.error(413, f"batch size {len(inputs)} > maximum allowed batch size {self.max_batch}")
            return
        vectors, tokens = self.model.embed(inputs)
        with self.lock:
            self.stats["inputs"] += len(inputs)
        data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(vectors)]
        self.reply(200, {"object": "list", "data": data, "model": self.model_name, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", required=True, type=Path)
    ap.add_argument("--model-name", default="intfloat/multilingual-e5-small")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--api-key")
    ap.add_argument("--fail-first", type=int, default=0)
    ap.add_argument("--max-batch", type=int, default=0)
    ap.add_argument("--delay-ms", type=int, default=0)
    a = ap.parse_args()
    Handler.model = Bert(a.model_dir)
    Handler.model_name = a.model_name
    Handler.api_key = a.api_key
    Handler.fail_first = a.fail_first
    Handler.max_batch = a.max_batch
    Handler.delay_ms = a.delay_ms
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
