"""Writes a model of multilingual-e5-small's shape for the throughput benches.

python bench/e5_shaped_model.py MODEL_DIR OUT_DIR

multilingual-e5-small (the default model) has 12 layers of all-MiniLM-L6-v2's
width (hidden 384, 12 heads, FFN 1536); it cannot be downloaded everywhere,
so the benches use all-MiniLM-L6-v2's six layers repeated to twelve: real
weights and tokenizer, e5-small's cost per token. (e5-small's 250k-token
vocabulary only changes the embedding lookup.) Needs `safetensors` and
`torch` (the sentence-transformers venv has both).
"""

import json
import shutil
import sys
from pathlib import Path

from safetensors.torch import load_file, save_file


def main() -> None:
    source, out = Path(sys.argv[1]), Path(sys.argv[2])
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
    save_file(tensors, str(out / "model.safetensors"))
    config["num_hidden_layers"] = 2 * layers
    (out / "config.json").write_text(json.dumps(config, indent=2))
    print(out)


if __name__ == "__main__":
    main()
