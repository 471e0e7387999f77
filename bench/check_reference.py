#!/usr/bin/env python3
"""Check bench/reference_txl.py against the official per-token NLL.

Asserts max |NLL - reference| <= 1e-5 on rel_basic (and, as a bonus, on the
other reference cases without cutoffs: untied weights, the official small
init, and growing memory + same_length + clamp_len + pre_lnorm).  Prints the
max error of each.

    python3 bench/check_reference.py [--reference-dir ../shared/reference]
"""

import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_txl  # noqa: E402

CASES = ["rel_basic", "rel_untied", "rel_basic_smallinit",
         "rel_grow_same_length_clamp_prelnorm"]
TOL = 1e-5


def check_case(case_dir):
    model = reference_txl.load_model(os.path.join(case_dir, "model.toml"),
                                     os.path.join(case_dir, "weights.safetensors"))
    data = torch.from_numpy(np.load(os.path.join(case_dir, "data.npy")))
    target = torch.from_numpy(np.load(os.path.join(case_dir, "target.npy")))
    ref = np.load(os.path.join(case_dir, "nll.npy"))
    with torch.inference_mode():
        nll = reference_txl.run_segments(model, data, target).numpy()
    assert nll.shape == ref.shape, (nll.shape, ref.shape)
    err = float(np.abs(nll.astype(np.float64) - ref).max())

    # The memory too, where the reference stored it.
    mem_err = None
    mems_path = os.path.join(case_dir, "mems.safetensors")
    if os.path.exists(mems_path):
        from safetensors.numpy import load_file
        ref_mems = load_file(mems_path)
        mems, mem_err = tuple(), 0.0
        with torch.inference_mode():
            for s in range(data.shape[0]):
                ret = model(data[s], target[s], *mems)
                mems = tuple(ret[1:])
                for l, m in enumerate(mems):
                    r = ref_mems[f"seg{s}.layer{l}"]
                    assert m.shape == r.shape, (s, l, m.shape, r.shape)
                    mem_err = max(mem_err, float(np.abs(m.numpy() - r).max()))
    return err, mem_err


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference-dir",
                    default=os.path.join(here, "..", "..", "shared", "reference"))
    args = ap.parse_args()
    torch.set_num_threads(2)

    ok = True
    for case in CASES:
        err, mem_err = check_case(os.path.join(args.reference_dir, case))
        good = err <= TOL
        ok &= good
        extra = "" if mem_err is None else f"  max |mem err| {mem_err:.3e}"
        print(f"{case:40s} max |NLL err| {err:.3e}{extra}  "
              f"{'OK' if good else 'FAIL'}")
    assert ok, f"reference_txl differs from the official NLL by more than {TOL}"
    print(f"all cases within {TOL}")


if __name__ == "__main__":
    main()
