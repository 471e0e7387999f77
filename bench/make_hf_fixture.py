#!/usr/bin/env python3
"""Makes test/Tools/Inputs/hf_adaptive: a small Hugging Face TransfoXLLMHeadModel
with adaptive softmax over two tail clusters, saved as that library saves it,
and the library's own per-token log-probabilities on three segments with the
memory carried, so that test/Tools/txl-convert-hf.test checks txl-convert
against the library without needing torch or transformers.

Needs torch and transformers 4.35.2 (the last release with TransfoXL), in the
benchmark environment:
    bench/setup_venv.sh VENV && VENV/bin/pip install transformers==4.35.2
    VENV/bin/python bench/make_hf_fixture.py test/Tools/Inputs/hf_adaptive

Writes, into OUT:
  pytorch_model.bin, config.json   save_pretrained(safe_serialization=False):
                                   the legacy pickle a hub checkpoint holds,
                                   tied output layers left out
  data.npy, target.npy             int64 [n_seg, tgt_len, bsz] (run-segments'
                                   layout, time-major as the official code)
  nll.npy                          float32 [n_seg, tgt_len, bsz]: minus the
                                   target's entry of `prediction_scores`, the
                                   model's log-probabilities, segments run in
                                   order with `mems` carried from an empty
                                   memory
"""

import argparse
import os

import numpy as np
import torch
import transformers
from transformers import TransfoXLConfig, TransfoXLLMHeadModel

N_SEG, TGT_LEN, BSZ = 3, 8, 2


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    args = parser.parse_args()
    assert transformers.__version__ == "4.35.2", transformers.__version__
    torch.manual_seed(0)
    config = TransfoXLConfig(
        vocab_size=300, cutoffs=[50, 120], div_val=2, d_model=32, d_embed=32,
        n_head=4, d_head=8, d_inner=64, n_layer=2, mem_len=8, tgt_len=TGT_LEN,
        clamp_len=-1, same_length=False, untie_r=True, proj_share_all_but_first=True,
        adaptive=True, dropout=0.0, dropatt=0.0, pre_lnorm=False, init_std=0.2,
        proj_init_std=0.2)
    model = TransfoXLLMHeadModel(config).eval()
    # The library's initialisation leaves the biases at zero and the cluster
    # rows tiny; random values everywhere make every column order visible.
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    os.makedirs(args.out, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=False)
    os.remove(os.path.join(args.out, "generation_config.json"))

    rng = np.random.default_rng(0)
    # Every cluster in every segment: the shortlist [0, 50), tail 1
    # [50, 120) and tail 2 [120, 300).
    stream = rng.integers(0, 300, size=(BSZ, N_SEG * TGT_LEN + 1))
    stream[0, :6] = [10, 60, 200, 49, 50, 120]
    data = np.stack([stream[:, s * TGT_LEN:(s + 1) * TGT_LEN] for s in range(N_SEG)])
    target = np.stack([stream[:, s * TGT_LEN + 1:(s + 1) * TGT_LEN + 1] for s in range(N_SEG)])
    # The first segment starts from an empty memory, as the official code's
    # (the library's own default, mems=None, is mem_len rows of zeros that
    # the first segments attend to).
    nll = []
    mems = [torch.zeros(0, BSZ, config.d_model) for _ in range(config.n_layer)]
    with torch.no_grad():
        for s in range(N_SEG):
            out = model(torch.from_numpy(data[s]), mems=mems)   # [bsz, tgt_len]
            mems = out.mems
            logp = out.prediction_scores                         # [bsz, tgt_len, vocab]
            tok = torch.from_numpy(target[s]).unsqueeze(-1)
            nll.append(-logp.gather(-1, tok).squeeze(-1).numpy())
    # Time-major [n_seg, tgt_len, bsz], as run-segments reads and writes.
    np.save(os.path.join(args.out, "data.npy"), data.transpose(0, 2, 1).astype(np.int64))
    np.save(os.path.join(args.out, "target.npy"), target.transpose(0, 2, 1).astype(np.int64))
    np.save(os.path.join(args.out, "nll.npy"),
            np.stack(nll).transpose(0, 2, 1).astype(np.float32))
    print(f"wrote {args.out}: transformers {transformers.__version__}, torch {torch.__version__}")


if __name__ == "__main__":
    main()
