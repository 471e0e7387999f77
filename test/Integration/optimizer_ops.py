"""Checks the compiled optimizer updates (txl.adam_update, txl.sgd_update,
txl.adagrad_update) and txl.squared_norm against a numpy transcription of
PyTorch's torch.optim.Adam / SGD(momentum) / Adagrad single-tensor updates
and of clip_grad_norm_'s norm, over three consecutive steps with a clipping
coefficient applied to the gradient."""

import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import txlrun  # noqa: E402
from torch_optim import torch_adagrad, torch_adam, torch_sgd  # noqa: E402

SHAPE = (3, 5)
T = "tensor<3x5xf32>"
MODULE = f"""
func.func @segment(%p: {T}, %g: {T}, %m: {T}, %v: {T}, %b: {T}, %s: {T},
                   %lr: f64, %step: i64, %scale: f32)
    -> ({T}, {T}, {T}, {T}, {T}, {T}, {T}, tensor<1xf32>)
    attributes {{llvm.emit_c_interface, txl.entry = "txl_segment_forward"}} {{
  %p1, %m1, %v1 = txl.adam_update %p, %g, %m, %v, %lr, %step, %scale
      {{beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64}} : {T}
  %q1, %b1 = txl.sgd_update %p, %g, %b, %lr, %scale {{momentum = 0.5 : f64}} : {T}
  %r1, %s1 = txl.adagrad_update %p, %g, %s, %lr, %scale {{eps = 1.0e-10 : f64}} : {T}
  %n = txl.squared_norm %g : {T}
  %nt = tensor.from_elements %n : tensor<1xf32>
  return %p1, %m1, %v1, %q1, %b1, %r1, %s1, %nt
      : {T}, {T}, {T}, {T}, {T}, {T}, {T}, tensor<1xf32>
}}
"""

f32 = np.float32


def main():
    rng = np.random.RandomState(0)
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "opt.mlir")
        with open(path, "w") as f:
            f.write(MODULE)
        seg = txlrun.Segment(txlrun.compile_module(path, work))
        p = rng.randn(*SHAPE).astype(f32)
        ours = {"adam": (p, np.zeros(SHAPE, f32), np.zeros(SHAPE, f32)),
                "sgd": (p, np.zeros(SHAPE, f32)), "adagrad": (p, np.zeros(SHAPE, f32))}
        ref = dict(ours)
        worst = 0.0
        for step in (1, 2, 3):
            g = rng.randn(*SHAPE).astype(f32)
            # lr is a Python float (f64), as the schedule hands it to torch.
            lr, scale = 1e-2 * step / 3, f32(0.75)
            gs = g * scale
            # Each optimizer advances its own parameter copy: run one call per
            # optimizer with its own state, reading only that optimizer's outputs.
            pa, ma, va = ours["adam"]
            out = seg([pa, g, ma, va, np.zeros(SHAPE, f32), np.zeros(SHAPE, f32), lr, step, scale],
                      [SHAPE] * 7 + [(1,)])
            ours["adam"] = tuple(out[0:3])
            ps, bs = ours["sgd"]
            out_s = seg([ps, g, ma, va, bs, np.zeros(SHAPE, f32), lr, step, scale], [SHAPE] * 7 + [(1,)])
            ours["sgd"] = (out_s[3], out_s[4])
            pg, sg = ours["adagrad"]
            out_g = seg([pg, g, ma, va, np.zeros(SHAPE, f32), sg, lr, step, scale], [SHAPE] * 7 + [(1,)])
            ours["adagrad"] = (out_g[5], out_g[6])
            rp, rm, rv = ref["adam"]
            ref["adam"] = torch_adam(rp, gs, rm, rv, lr, step)
            rp, rb = ref["sgd"]
            ref["sgd"] = torch_sgd(rp, gs, rb, lr, mom=0.5)
            rp, rs = ref["adagrad"]
            ref["adagrad"] = torch_adagrad(rp, gs, rs, lr)
            norm = float(out[7][0])
            want = float(np.sum(g.astype(np.float64) ** 2))
            if not abs(norm - want) <= 1e-6 * want:
                print(f"FAIL: squared_norm {norm} vs {want}")
                sys.exit(1)
            for name in ("adam", "sgd", "adagrad"):
                for k, (a, b) in enumerate(zip(ours[name], ref[name])):
                    err = np.max(np.abs(a - b) / (np.abs(b) + 1e-6))
                    worst = max(worst, err)
                    if not err <= 1e-5:
                        print(f"FAIL: {name} output {k} at step {step}: rel err {err:.3g}")
                        sys.exit(1)
        print(f"optimizers ok over 3 steps, worst relative error {worst:.2e}")


if __name__ == "__main__":
    main()
