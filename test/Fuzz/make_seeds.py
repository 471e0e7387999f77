#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora and dictionaries (test/Fuzz/corpus/<target>/
and test/Fuzz/dict/<target>.dict). Deterministic; rerun after changing a
format, then commit what it writes. Inputs that once crashed a target live
next to the seeds as regression-<what>, written by hand, never by this script.

Usage: make_seeds.py [OUT_DIR]   (default: the directory of this script)
"""
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else HERE
REPO = os.path.dirname(os.path.dirname(HERE))


def write(target, name, data):
    folder = os.path.join(OUT, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def npy_bytes(array, version=(1, 0)):
    """numpy.save's bytes for `array` in format `version`."""
    from io import BytesIO
    from numpy.lib import format as npf
    buf = BytesIO()
    npf.write_array(buf, array, version=version)
    return buf.getvalue()


def safetensors_bytes(tensors, metadata=None):
    """A safetensors file: (name, dtype, shape, raw bytes) in order."""
    header, offset, blobs = {}, 0, []
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def mt19937_text(seed):
    """libstdc++'s `operator<<` text of std::mt19937 in numpy's state for
    `seed` (624 words, then the position)."""
    _, key, pos, _, _ = np.random.RandomState(seed).get_state()
    return " ".join(str(int(k)) for k in key) + " " + str(pos)


def npy_seeds():
    write("npy", "f32-2d", npy_bytes(np.arange(6, dtype="<f4").reshape(2, 3)))
    write("npy", "i64-1d", npy_bytes(np.array([3, 1, 4, 1, 5], dtype="<i8")))
    write("npy", "f32-0d", npy_bytes(np.array(1.5, dtype="<f4")))
    write("npy", "i64-empty", npy_bytes(np.zeros((0, 4), dtype="<i8")))
    write("npy", "f32-v2", npy_bytes(np.ones((2, 2), dtype="<f4"), (2, 0)))


def safetensors_seeds():
    f32 = np.arange(4, dtype="<f4").tobytes()
    i64 = np.array([7, 8], dtype="<i8").tobytes()
    write("safetensors", "f32-i64-meta", safetensors_bytes(
        [("a", "F32", (2, 2), f32), ("b", "I64", (2,), i64)],
        {"format": "pt"}))
    write("safetensors", "bf16", safetensors_bytes(
        [("w", "BF16", (2,), b"\x80\x3f\x00\x40")]))
    write("safetensors", "empty", safetensors_bytes([], {}))
    write("safetensors", "zero-size", safetensors_bytes(
        [("z", "F32", (0, 3), b""), ("x", "F32", (1,), f32[:4])]))


def checkpoint_seeds():
    meta = {
        "format": "txlc-train-1", "model": "train_tiny", "dataset": "ptb",
        "step": "20", "epoch": "1", "batch_in_epoch": "20",
        "iterator_row": "160", "lr": (0.00025).hex(), "best_val_loss": "none",
        "interval_loss": (12.5).hex(), "interval_steps": "5",
        "eval_count": "0", "plateau_best": "inf", "plateau_bad": "0",
        "mem_rows": "2", "batch_size": "4", "batch_chunk": "2",
        "numpy_rng": mt19937_text(1111) + " 0 0x0p+0",
        "seed": "1111", "threads": "2"}
    mems = np.zeros((2, 2, 4), dtype="<f4").tobytes()
    tensors = [("train.mems.chunk0.layer0", "F32", (2, 2, 4), mems)]
    write("checkpoint", "f32-run", safetensors_bytes(tensors, meta))
    scaled = dict(meta, loss_scale_log2="16", loss_scale_clean_steps="3",
                  skipped_steps="1", best_val_loss=(5.25).hex(),
                  numpy_rng=mt19937_text(7) + " 1 -0x1.8p-1")
    write("checkpoint", "fp16-run", safetensors_bytes(tensors, scaled))


def model_file_seeds():
    for name in ("ptb_small", "enwik8_base", "wt103_base", "lm1b_base"):
        with open(os.path.join(REPO, "models", name + ".toml"), "rb") as f:
            write("model-file", name, f.read())


def corpus_seeds():
    # FuzzedDataProvider: strings from the front (a backslash and another
    # byte end one), integers and choices from the back.
    word = ("the cat sat on the mat\n a <unk> N \n\\x"
            "the cat\n\\xon the mat\n\\x\x01\x02\x03\x00")
    write("corpus-word", "ptb", word)
    write("corpus-word", "wt2", word[:-1] + "\x01")
    write("corpus-char", "prepared",
          "104 101 108 108 111\n32 119\n\\x104 101\n\\x108 111\n\\x"
          "\x01\x02\x01\x08")
    write("corpus-char", "raw", "hello world, hello text\n" * 4 + "\x00\x08")
    write("corpus-lm1b", "shards",
          "<S> 0\n</S> 0\n<UNK> 0\nthe 9\ncat 5\nsat 3\n\\x"
          "the cat sat\nthe dog\n\\xcat sat the\n\\x\x01\x02\x03")


def dictionaries():
    folder = os.path.join(OUT, "dict")
    os.makedirs(folder, exist_ok=True)
    words = {
        "model-file": ["[model]", "[segment]", "[eval]", "[train]", "[data]",
                       "n_token", "n_layer", "d_model", "n_head", "d_head",
                       "d_inner", "d_embed", "attn_type", "pre_lnorm",
                       "dropout", "dropatt", "tie_weight", "div_val",
                       "cutoffs", "tie_projs", "same_length", "clamp_len",
                       "untie_r", "tgt_len", "mem_len", "ext_len",
                       "batch_size", "batch_chunk", "optim", "lr", "mom",
                       "scheduler", "warmup_step", "max_step", "eta_min",
                       "lr_min", "decay_rate", "patience", "clip",
                       "clip_nonemb", "init", "init_std", "init_range",
                       "emb_init", "emb_init_range", "proj_init_std", "seed",
                       "log_interval", "eval_interval", "max_eval_steps",
                       "varlen", "dataset", "path", "\"adam\"", "\"cosine\"",
                       "\"ptb\"", "true", "false", "inf", "nan", "= ", "[]",
                       "1e400", "-1", "9223372036854775808"],
        "npy": [b"\x93NUMPY", "'descr'", "'<f4'", "'<i8'", "'fortran_order'",
                "'shape'", "True", "False", "None", "(", ")", "{", "}"],
        "safetensors": ["\"dtype\"", "\"shape\"", "\"data_offsets\"",
                        "\"F32\"", "\"I64\"", "\"BF16\"", "\"__metadata__\"",
                        "18446744073709551615", "[", "]", "{", "}"],
        "checkpoint": ["\"step\"", "\"epoch\"", "\"mem_rows\"",
                       "\"numpy_rng\"", "\"batch_chunk\"", "\"threads\"",
                       "\"loss_scale_log2\"", "\"lr\"", "\"plateau_best\"",
                       "\"inf\"", "\"nan\"", "\"-1\"", "\"0x1p+1024\"",
                       "\"9223372036854775808\""],
    }
    # The corpus targets' strings end at a backslash and another byte.
    words["corpus-word"] = ["<unk>", "<eos>", "\n", "  ", "\\x", "\u00e9",
                            "\u2028", b"\xff"]
    words["corpus-char"] = ["32 ", "10", "255 ", "_", "\n", "\\x", "\u00e9",
                            b"\xff"]
    words["corpus-lm1b"] = ["<S>", "</S>", "<UNK>", " 0\n", "\n", "\\x"]
    for target, entries in words.items():
        with open(os.path.join(folder, target + ".dict"), "w") as f:
            for entry in entries:
                f.write('"%s"\n' % dict_escape(entry))


def dict_escape(entry):
    """libFuzzer's dictionary spelling: printable ASCII as itself, `"` and
    `\\` escaped, every other byte (of the UTF-8 encoding) as \\xNN."""
    raw = entry if isinstance(entry, bytes) else entry.encode()
    out = ""
    for byte in raw:
        char = chr(byte)
        if char in '"\\':
            out += "\\" + char
        elif 32 <= byte < 127:
            out += char
        else:
            out += "\\x%02x" % byte
    return out


if __name__ == "__main__":
    npy_seeds()
    safetensors_seeds()
    checkpoint_seeds()
    model_file_seeds()
    corpus_seeds()
    dictionaries()
