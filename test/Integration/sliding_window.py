"""`eval --sliding-window` against windows run by hand.

The model is a reference case (../shared/reference/<case>, n_token 50 = the
ptb-char vocabulary of ../shared/data/ptb). The test encodes the ptb-char
valid split itself (docs/datasets.md: `<eos>` first, then the characters by
count over train + valid + test, ties by first occurrence), builds for every
prediction t the window of the tgt_len tokens before it (the t tokens at the
start) and runs each through `run-segments --mem-len 0`, keeping the NLL at
the window's last position. The executable's `eval --sliding-window
--dump-nll` must give the same NLL per token (1e-5) and the mean as its
loss; windows one token late (a negative control) must not agree.

  sliding_window.py EXE CASE_DIR PTB_DIR OUT_DIR TGT_LEN MAX_TOKENS BATCH
"""
import os
import re
import subprocess
import sys
from collections import Counter

import numpy as np


def ptb_char(line):
    words = line.strip().split()
    return list("_".join(words)) + ["<eos>"]


def encode(ptb):
    n, splits = encode_splits(ptb)
    return n, splits["valid"]


def encode_splits(ptb):
    """The ptb-char vocabulary size and every split as token ids, as the
    runtime's reader builds them."""
    texts = {}
    counter = Counter()
    for split in ("train", "valid", "test"):
        with open(os.path.join(ptb, split + ".txt"), encoding="utf-8") as f:
            texts[split] = [sym for line in f for sym in ptb_char(line)]
        counter.update(texts[split])
    vocab = ["<eos>"] + [s for s, _ in counter.most_common() if s != "<eos>"]
    index = {s: i for i, s in enumerate(vocab)}
    return len(vocab), {split: np.array([index[s] for s in text])
                        for split, text in texts.items()}


def run_window(exe, case, out, tokens, predict_at, length):
    """NLL of tokens[t] from tokens[t - length : t] for every t of
    `predict_at` (one segment, one column per t)."""
    data = np.stack([tokens[t - length:t] for t in predict_at], 1)[None]
    target = np.stack([tokens[t - length + 1:t + 1] for t in predict_at], 1)[None]
    np.save(os.path.join(out, "w.npy"), data)
    np.save(os.path.join(out, "t.npy"), target)
    subprocess.run([exe, "run-segments", "--checkpoint",
                    os.path.join(case, "weights.safetensors"), "--inputs",
                    os.path.join(out, "w.npy"), "--targets",
                    os.path.join(out, "t.npy"), "--mem-len", "0",
                    "--dump-nll", os.path.join(out, "w_nll.npy")],
                   check=True, stdout=subprocess.DEVNULL)
    return np.load(os.path.join(out, "w_nll.npy"))[0, -1]


def main():
    exe, case, ptb, out = sys.argv[1:5]
    tgt_len, max_tokens, batch = map(int, sys.argv[5:8])
    n_token, stream = encode(ptb)
    print("ptb-char symbols:", n_token)
    dump = os.path.join(out, "sliding.npy")
    result = subprocess.run(
        [exe, "eval", "--dataset", "ptb-char", "--data", ptb, "--split",
         "valid", "--checkpoint", os.path.join(case, "weights.safetensors"),
         "--sliding-window", "--tgt-len", str(tgt_len), "--max-tokens",
         str(max_tokens), "--batch-size", str(batch), "--dump-nll", dump],
        check=True, capture_output=True, text=True)
    print(result.stdout.strip())
    ours = np.load(dump)
    print("predictions:", ours.shape[0])

    # Prediction t (1-based in the text) from the window before it: the
    # shorter windows at the start one by one, then the full ones at once.
    ref = [run_window(exe, case, out, stream, [t], t)[0]
           for t in range(1, min(tgt_len, max_tokens + 1))]
    full = list(range(tgt_len, max_tokens + 1))
    ref.extend(run_window(exe, case, out, stream, full, tgt_len))
    ref = np.array(ref, dtype=np.float32)
    err = np.abs(ours - ref).max()
    print(f"per-token NLL against windows by hand: max |diff| {err:.2e}: "
          f"{'ok' if err <= 1e-5 else 'FAILED'}")
    loss = float(re.search(r"loss\s+([0-9.]+)", result.stdout).group(1))
    print("loss is the mean:", abs(loss - ours.mean()) < 0.01)
    # Negative control: the full windows one token late (each includes the
    # token it should predict and predicts the next).
    late = run_window(exe, case, out, stream, [t + 1 for t in full], tgt_len)
    print("windows one token late disagree:",
          bool(np.abs(ours[tgt_len - 1:] - late).max() > 1e-3))

if __name__ == "__main__":
    main()
