"""The tiled CPU attention kernel alone (txl-rel-attention-to-cpu), one
thread: one txl.rel_attention (f32; 8 heads, d_head 64: enwik8_base's,
unless --n-head / --d-head say otherwise) in a @segment compiled through
the CPU pipeline (test/lib/txlrun.py) and called from numpy, each
variant's calls interleaved with the others'.

Shapes: `cache`, the key/value cache's segment at the enwik8 paper setting
(80 queries over 2,180 keys, batch 4, mem_len 2,100, same_length),
`long` (1,024 queries over 2,048 keys, batch 1, no same_length) and `ptb`
(a ptb_small eval slice: 64 queries over 128 keys, batch 5; with --n-head
4 --d-head 32). Reports the median time of a call and the useful work's
rate: 3 products (AC, BD, P·V) of 2·d_head FLOP for each visible (query,
key) pair, per head and batch column (the window's extra BD columns,
masked scores and the softmax not counted).

A variant is NAME=PIPELINE[@BINDIR]: the pass pipeline given to txl-opt
(`--pass-pipeline`'s body), with the txl-opt of BINDIR (default build/bin),
so that two builds can be compared in one run:

  python3 bench/cpu_attention_kernel.py
  python3 bench/cpu_attention_kernel.py --variant \\
      'old=txl-rel-attention-to-cpu{vector-bits=512},txl-cpu-pipeline@/tmp/old' \\
      'new=txl-rel-attention-to-cpu{vector-bits=512},txl-cpu-pipeline'

No torch needed; nothing here runs in CI.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_variants  # noqa: E402

N_HEAD, D_HEAD = 8, 64  # enwik8_base's; --n-head, --d-head
# name: (qlen, klen, batch, mem_len, same_length)
SHAPES = {"cache": (80, 2180, 4, 2100, True),
          "long": (1024, 2048, 1, 1024, False),
          # A ptb_small eval slice (batch 10 on 2 threads; run with
          # --n-head 4 --d-head 32).
          "ptb": (64, 128, 5, 64, False)}
DEFAULT_VARIANTS = [
    "v256=builtin.module(txl-rel-attention-to-cpu{vector-bits=256},"
    "txl-cpu-pipeline)",
    "v512=builtin.module(txl-rel-attention-to-cpu{vector-bits=512},"
    "txl-cpu-pipeline)",
]

MODULE = """func.func @segment(%q: tensor<?x?x{h}x{d}xf32>,
    %k: tensor<?x?x{h}x{d}xf32>, %v: tensor<?x?x{h}x{d}xf32>,
    %r: tensor<?x{h}x{d}xf32>, %u: tensor<{h}x{d}xf32>,
    %w: tensor<{h}x{d}xf32>, %m: index, %s: i1)
    -> tensor<?x?x{h}x{d}xf32> attributes {{llvm.emit_c_interface, txl.entry = "txl_segment_forward"}} {{
  %o = txl.rel_attention %q, %k, %v, %r, %u, %w, %m, %s {{scale = 0.125 : f32}}
    : tensor<?x?x{h}x{d}xf32>, tensor<?x?x{h}x{d}xf32>,
      tensor<?x?x{h}x{d}xf32>, tensor<?x{h}x{d}xf32>, tensor<{h}x{d}xf32>,
      tensor<{h}x{d}xf32> -> tensor<?x?x{h}x{d}xf32>
  return %o : tensor<?x?x{h}x{d}xf32>
}}
"""


def visible_pairs(qlen, klen, mem_len, same_length):
    """Pairs (i, j) of dec_attn_mask's visible keys: j <= i + mlen and, with
    same_length, j > i - shift (the official mask)."""
    mlen = klen - qlen
    i = np.arange(qlen)[:, None]
    j = np.arange(klen)[None, :]
    visible = j <= i + mlen
    if same_length:
        mask_len = klen - mem_len
        shift = qlen - mask_len if mask_len > 0 else qlen
        visible &= j > i - shift
    return int(visible.sum())


def main():
    global N_HEAD, D_HEAD  # noqa: PLW0603 (the shapes' heads, set once)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    kernel_variants.add_arguments(ap, DEFAULT_VARIANTS, SHAPES,
                                  march_help="txlc's --mcpu; ")
    ap.add_argument("--workdir", help="keep the compiled variants here "
                    "(for perf annotate; default a temporary directory)")
    ap.add_argument("--layers", type=int, default=12,
                    help="distinct keys and values called in turn (default "
                    "12, enwik8_base's layers)")
    ap.add_argument("--n-head", type=int, default=8)
    ap.add_argument("--d-head", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=24,
                    help="calls per variant and shape (interleaved)")
    args = ap.parse_args()
    N_HEAD, D_HEAD = args.n_head, args.d_head
    os.environ["OMP_NUM_THREADS"] = "1"
    src = MODULE.format(h=N_HEAD, d=D_HEAD)
    segments = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or tmp
        mlir = os.path.join(work, "segment.mlir")
        with open(mlir, "w") as f:
            f.write(src)
        for spec in args.variant:
            name, segment = kernel_variants.compile_variant(
                spec, mlir, os.path.join(work, spec.split("=", 1)[0]),
                args.march)
            segments[name] = segment
        rng = np.random.RandomState(0)
        for shape in args.shape:
            qlen, klen, batch, mem_len, same_length = SHAPES[shape]
            q = rng.randn(qlen, batch, N_HEAD, D_HEAD).astype(np.float32)
            k = rng.randn(klen, batch, N_HEAD, D_HEAD).astype(np.float32)
            v = rng.randn(klen, batch, N_HEAD, D_HEAD).astype(np.float32)
            r = rng.randn(klen, N_HEAD, D_HEAD).astype(np.float32)
            u = rng.randn(N_HEAD, D_HEAD).astype(np.float32)
            w = rng.randn(N_HEAD, D_HEAD).astype(np.float32)
            # --layers distinct copies of k and v, called in turn: each call
            # reads its keys and values from memory, as the layers of a
            # segment do (12 layers at the cache shape: 428 MB), not from
            # the last level cache.
            kvs = [(k, v)] + [(k.copy(), v.copy())
                              for _ in range(args.layers - 1)]
            inputs = [q, k, v, r, u, w, mem_len, same_length]
            result = [(qlen, batch, N_HEAD, D_HEAD)]
            flop = (3 * 2 * D_HEAD * N_HEAD * batch *
                    visible_pairs(qlen, klen, mem_len, same_length))
            times = {name: [] for name in segments}
            outputs = {}
            for name, seg in segments.items():  # warm-up, outputs compared
                outputs[name] = seg(inputs, result)[0]
            # The copy changes with every call, not every round: a round's
            # variants reading one copy would find it cached after the
            # first (which alone paid the memory reads: 1.2x slower at the
            # cache shape on the model 167 Xeon, whatever ran first).
            calls = 0
            for n in range(args.repeat):
                for name, seg in segments.items():
                    inputs[1:3] = kvs[calls % len(kvs)]
                    calls += 1
                    t0 = time.perf_counter()
                    seg(inputs, result)
                    times[name].append(time.perf_counter() - t0)
            first = next(iter(segments))
            base = statistics.median(times[first])
            print("%s: qlen %d, klen %d, batch %d, %d heads x %d, "
                  "%.2f GFLOP useful" % (shape, qlen, klen, batch, N_HEAD,
                                         D_HEAD, flop / 1e9))
            for name in segments:
                t = statistics.median(times[name])
                diff = np.abs(outputs[name] - outputs[first]).max()
                print("  %-12s %8.2f ms  %6.1f GFLOP/s  %.2fx %s  "
                      "max |diff| %.1e" % (name, t * 1e3, flop / t / 1e9,
                                           base / t, first, diff))


if __name__ == "__main__":
    main()
