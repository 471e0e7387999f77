"""End-to-end check of `eval --dataset lm1b`: writes a small One Billion Word
layout (a 50-word 1b_word_vocab.txt and a held-out file), builds the
segments the official LMShuffledIterator(shuffle=False) gives eval.py
(sentences framed <S> ... <S>, unknown words -> <UNK>, official
stream_iterator filling `bsz` columns of `bptt` rows, stopping at the first
segment it cannot fill), and writes them as data/target .npy blocks so that
`run-segments` over them must give the mean NLL `eval` reports.

  lm1b_eval_check.py make DIR BSZ BPTT
  lm1b_eval_check.py compare EVAL.json NLL.npy
"""
import json
import os
import sys

import numpy as np

from train_lm1b import stream_iterator


def make(out, bsz, bptt):
    data_dir = os.path.join(out, "lm1b")
    os.makedirs(data_dir, exist_ok=True)
    words = ["<S>", "<UNK>"] + [f"w{i}" for i in range(48)]
    with open(os.path.join(data_dir, "1b_word_vocab.txt"), "w") as f:
        for i, w in enumerate(words):
            f.write(f"{w}\t{1000 - i}\n")
    rng = np.random.default_rng(7)
    sentences = []
    for _ in range(40):
        n = int(rng.integers(1, 12))
        sent = [f"w{int(rng.integers(0, 55))}" for _ in range(n)]  # w48+ unknown
        sentences.append(" ".join(sent))
    for split in ("valid.txt", "test.txt"):
        with open(os.path.join(data_dir, split), "w") as f:
            f.write("\n".join(sentences) + "\n")
    index = {w: i for i, w in enumerate(words)}
    encoded = [[index["<S>"]] + [index.get(w, index["<UNK>"]) for w in s.split()] +
               [index["<S>"]] for s in sentences]
    # Official stream_iterator (ext_len = 0), sentences in file order.
    blocks = list(stream_iterator(encoded, bsz, bptt))
    blocks_d = [d for d, _ in blocks]
    blocks_t = [t for _, t in blocks]
    np.save(os.path.join(out, "data.npy"), np.stack(blocks_d))
    np.save(os.path.join(out, "target.npy"), np.stack(blocks_t))
    print(f"segments {len(blocks_d)}")


def compare(eval_json, nll_path):
    result = json.load(open(eval_json))
    nll = np.load(nll_path).astype(np.float64)
    mean = nll.mean()
    print(f"eval loss {result['loss']:.6f} tokens {result['tokens']}; "
          f"run-segments mean {mean:.6f} tokens {nll.size}")
    if result["tokens"] != nll.size or abs(result["loss"] - mean) > 1e-5:
        sys.exit("FAIL: eval and run-segments disagree")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        compare(sys.argv[2], sys.argv[3])
