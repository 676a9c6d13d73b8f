"""sentence-transformers throughput on the same texts as the candle bench.

python bench/embed_throughput_st.py MODEL_DIR TEXTS.jsonl
Prints JSON: real (unpadded, truncated) tokens/s and chunks/s on CPU with
as many torch threads as the machine has cores.
"""

import json
import os
import sys
import time

import torch
from sentence_transformers import SentenceTransformer


def main() -> None:
    model_dir, texts_path = sys.argv[1], sys.argv[2]
    texts = [json.loads(line) for line in open(texts_path, encoding="utf-8")]
    torch.set_num_threads(os.cpu_count() or 1)
    model = SentenceTransformer(model_dir, device="cpu")
    tokens = sum(
        min(len(ids), model.max_seq_length)
        for ids in model.tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]
    )
    model.encode(texts[:16], batch_size=32)
    started = time.perf_counter()
    model.encode(texts, batch_size=32, normalize_embeddings=True)
    secs = time.perf_counter() - started
    print(json.dumps({
        "engine": f"sentence-transformers {__import__('sentence_transformers').__version__} / torch {torch.__version__}",
        "threads": torch.get_num_threads(),
        "chunks": len(texts),
        "tokens": tokens,
        "seconds": secs,
        "tokens_per_s": tokens / secs,
        "chunks_per_s": len(texts) / secs,
        "max_tokens": model.max_seq_length,
    }))


if __name__ == "__main__":
    main()
