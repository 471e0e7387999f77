"""Compares `generate --json` output with a library's greedy continuation.

usage: check_generate.py GENERATE.json EXPECTED.json LABEL

EXPECTED.json (bench/make_hf_generate_fixture.py) holds prompt_ids, tokens
and log_probs. The prompt ids and every generated token must be equal and
each token's log-probability within 5e-5 (both sides compute in float32 in
other orders; 7e-6 was the largest seen on 2026-11-26, over 16 tokens);
prints one line, and exits 1 with FAIL on the first difference.
"""
import json
import sys


def main():
    got = json.load(open(sys.argv[1]))
    want = json.load(open(sys.argv[2]))
    label = sys.argv[3]
    if got["prompt"] != want["prompt_ids"]:
        print(f"FAIL: {label}: prompt ids {got['prompt']}, the library's "
              f"{want['prompt_ids']}")
        sys.exit(1)
    for i, (a, b) in enumerate(zip(got["tokens"], want["tokens"])):
        if a != b:
            print(f"FAIL: {label}: new token {i} is {a}, the library's {b} "
                  f"(txlc {got['tokens']}, library {want['tokens']})")
            sys.exit(1)
    if len(got["tokens"]) != len(want["tokens"]):
        print(f"FAIL: {label}: {len(got['tokens'])} tokens, the library "
              f"{len(want['tokens'])}")
        sys.exit(1)
    worst = max(abs(a - b) for a, b in zip(got["log_probs"], want["log_probs"]))
    if worst > 5e-5:
        print(f"FAIL: {label}: log-probabilities differ by {worst:.2e}")
        sys.exit(1)
    print(f"{label}: {len(want['tokens'])} greedy tokens equal to the "
          f"library's, log-prob max |diff| {worst:.1e}")


if __name__ == "__main__":
    main()
