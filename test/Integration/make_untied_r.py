"""Writes an untie_r = true variant of a reference case: the model file with
`untie_r = true` and a checkpoint whose model-level r_w_bias / r_r_bias are
copied into every layer as layers.<l>.dec_attn.r_w_bias / r_r_bias (the
naming of the official layers built with r_w_bias=None and of Hugging Face's
TransfoXL). Such a model computes exactly what the tied one does.

  make_untied_r.py CASE_DIR OUT_DIR
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from compare import load_safetensors  # noqa: E402


def save_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    case, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    lines = open(os.path.join(case, "model.toml")).read().splitlines()
    index = lines.index("[model]")
    lines.insert(index + 1, "untie_r = true")
    open(os.path.join(out, "model.toml"), "w").write("\n".join(lines) + "\n")
    weights = load_safetensors(os.path.join(case, "weights.safetensors"))
    n_layer = 1 + max(int(k.split(".")[1]) for k in weights if k.startswith("layers."))
    for bias in ("r_w_bias", "r_r_bias"):
        value = weights.pop(bias)
        for layer in range(n_layer):
            weights[f"layers.{layer}.dec_attn.{bias}"] = value
    save_safetensors(os.path.join(out, "weights.safetensors"), weights)


if __name__ == "__main__":
    main()
