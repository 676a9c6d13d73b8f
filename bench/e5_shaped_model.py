"""Writes a model of multilingual-e5-small's shape for the throughput benches.

python bench/e5_shaped_model.py MODEL_DIR OUT_DIR [--vocab 250037]

multilingual-e5-small (the default model) has 12 layers of all-MiniLM-L6-v2's
width (hidden 384, 12 heads, FFN 1536); it cannot be downloaded everywhere,
so the benches use all-MiniLM-L6-v2's six layers repeated to twelve: real
weights and tokenizer, e5-small's cost per token. (e5-small's 250k-token
vocabulary only changes the embedding lookup; `--vocab 250037` pads the word
embeddings with random rows to its size, 470 MB of weights, for load-time
benches.) Needs `safetensors` and `torch` (the sentence-transformers venv
has both).
"""

import argparse
import json
import shutil
from pathlib import Path

from safetensors.torch import load_file, save_file


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--vocab", type=int, help="pad the word embeddings to this many rows")
    args = ap.parse_args()
    source, out = Path(args.model_dir), Path(args.out_dir)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(source, out)
    tensors = load_file(str(source / "model.safetensors"))
    config = json.loads((source / "config.json").read_text())
    layers = config["num_hidden_layers"]
    for name, tensor in list(tensors.items()):
        marker = "encoder.layer."
        if marker in name:
            head, rest = name.split(marker, 1)
            index, tail = rest.split(".", 1)
            copy = f"{head}{marker}{int(index) + layers}.{tail}"
            tensors[copy] = tensor.clone()
    if args.vocab:
        import torch

        name = next(n for n in tensors if n.endswith("embeddings.word_embeddings.weight"))
        words = tensors[name]
        extra = torch.randn(args.vocab - words.shape[0], words.shape[1], generator=torch.Generator().manual_seed(5)) * 0.05
        tensors[name] = torch.cat([words, extra.to(words.dtype)])
        config["vocab_size"] = args.vocab
    save_file(tensors, str(out / "model.safetensors"))
    config["num_hidden_layers"] = 2 * layers
    (out / "config.json").write_text(json.dumps(config, indent=2))
    print(out)


if __name__ == "__main__":
    main()
