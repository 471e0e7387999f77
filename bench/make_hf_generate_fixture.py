#!/usr/bin/env python3
"""Makes test/Tools/Inputs/hf_generate: a small Hugging Face
TransfoXLLMHeadModel (no adaptive softmax), saved as that library saves it,
with the library's own greedy continuation of a prompt, so that
test/Tools/txl-convert-hf-generate.test checks that a converted model's
`generate --temperature 0` continues the prompt as the library's `generate`
does, without needing torch or transformers.

Needs torch and transformers 4.35.2 (the last release with TransfoXL), in the
benchmark environment:
    bench/setup_venv.sh VENV && VENV/bin/pip install transformers==4.35.2
    VENV/bin/python bench/make_hf_generate_fixture.py test/Tools/Inputs/hf_generate

The model has mem_len 0, so the library's generate() runs the whole growing
sequence at every step (its default with a memory would start from mem_len
rows of zeros, which the official code and txlc never attend to; see
docs/converter.md). With every earlier position in view, that is what txlc
computes both ways the test runs it: with the model file's mem_len 0 and a
window (tgt_len) longer than the text, and with a memory longer than the
text, the prompt in segments and then one token at a time.

Writes, into OUT:
  pytorch_model.bin, config.json   save_pretrained(safe_serialization=False)
  1b_word_vocab.txt                a 50-symbol vocabulary ("<S>", "<UNK>",
                                   w0 .. w47) for `generate --dataset lm1b`,
                                   whose reader frames the prompt "<S> ..."
  generate.json                    the prompt's text and ids, and the
                                   library's greedy tokens and their
                                   log-probabilities (`scores` of
                                   generate(output_scores=True): the model's
                                   log_softmax output)
"""

import argparse
import json
import os

import numpy as np
import torch
import transformers
from transformers import TransfoXLConfig, TransfoXLLMHeadModel

PROMPT = "w3 w17 w5 w40 w22 w9"
NEW_TOKENS = 16
# Weight scale and embedding row norm: with these the 16 greedy tokens vary
# (smaller weights, or larger rows, repeat one or two tokens) and no step is
# a near-tie (the smallest top-2 log-probability margin is 0.008).
SCALE = 0.5
ROW_NORM = 2.0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    args = parser.parse_args()
    assert transformers.__version__ == "4.35.2", transformers.__version__
    torch.manual_seed(0)
    config = TransfoXLConfig(
        vocab_size=50, cutoffs=[], div_val=1, d_model=32, d_embed=32,
        n_head=4, d_head=8, d_inner=64, n_layer=2, mem_len=0, tgt_len=32,
        clamp_len=-1, same_length=False, untie_r=True, adaptive=True,
        dropout=0.0, dropatt=0.0, pre_lnorm=False, init_std=0.2,
        eos_token_id=None)
    model = TransfoXLLMHeadModel(config).eval()
    # The library leaves the biases at zero; random values everywhere make
    # every parameter matter (LayerNorm gains near 1, and weights large
    # enough that the continuation depends on the context instead of
    # repeating one token).
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm.weight" in name:
                p.normal_(1.0, 0.1)
            elif name.endswith("bias"):
                p.normal_(0.0, 0.1)
            else:
                p.normal_(0.0, SCALE)
        # Rows of one norm in the (tied) embedding, so that no token wins
        # by the size of its row alone.
        emb = model.transformer.word_emb.emb_layers[0].weight
        emb.mul_(ROW_NORM / emb.norm(dim=1, keepdim=True))
    os.makedirs(args.out, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=False)
    generation_config = os.path.join(args.out, "generation_config.json")
    if os.path.exists(generation_config):
        os.remove(generation_config)

    words = ["<S>", "<UNK>"] + [f"w{i}" for i in range(48)]
    with open(os.path.join(args.out, "1b_word_vocab.txt"), "w") as f:
        f.write("".join(f"{w}\t{1000 - i}\n" for i, w in enumerate(words)))
    index = {w: i for i, w in enumerate(words)}
    prompt_ids = [index["<S>"]] + [index[w] for w in PROMPT.split()]

    with torch.no_grad():
        out = model.generate(torch.tensor([prompt_ids]),
                             max_new_tokens=NEW_TOKENS, do_sample=False,
                             num_beams=1, eos_token_id=None, pad_token_id=0,
                             output_scores=True, return_dict_in_generate=True)
    tokens = out.sequences[0, len(prompt_ids):].tolist()
    log_probs = [float(step[0, t]) for step, t in zip(out.scores, tokens)]
    # The scores are the model's log-probabilities: each step sums to 1.
    # Greedy choices must not be near-ties that float rounding could flip.
    margin = float("inf")
    for step in out.scores:
        assert abs(float(step[0].exp().sum()) - 1.0) < 1e-5
        top2 = step[0].topk(2).values
        margin = min(margin, float(top2[0] - top2[1]))
    assert margin > 1e-3, margin
    with open(os.path.join(args.out, "generate.json"), "w") as f:
        json.dump({"prompt": PROMPT, "prompt_ids": prompt_ids,
                   "tokens": tokens, "log_probs": log_probs,
                   "transformers": transformers.__version__,
                   "torch": torch.__version__}, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}: prompt {prompt_ids} -> {tokens} (smallest "
          f"top-2 log-prob margin {margin:.3f})")


if __name__ == "__main__":
    main()
