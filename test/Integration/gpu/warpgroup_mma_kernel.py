#!/usr/bin/env python3
"""txl.warpgroup_mma on its own, through the OpenCL target: one kernel per
(element type, k_steps, n_blocks) in which a 128-work-item workgroup
stages B into its tile, each work-item holds its A fragments and
accumulators in the registers of the op's contract (TxlKernelOps.td), and
one txl.warpgroup_mma computes D = A B + C for the 64 rows. txl-emulate-mma
lowers it as it does in the attention kernels: each subgroup's m16n8k16
products, B read at the addresses that wgmma's matrix descriptors give.

  warpgroup_mma_kernel.py emit [--bad-staging] [--no-barrier] T:K:N ...
      prints a gpu.module with one kernel wg_<T>_k<K>_n<N> per spec (T is
      bf16 or f16, K the k_steps, N the n_blocks). With --bad-staging each
      kernel stores every 8 x 8 core matrix of B transposed (B(k, n) at
      tile[n / 8][k / 8][k % 8][n % 8], an MN-major tile where the op wants
      K-major); with --no-barrier the barrier between the staging and the
      product is left out: the negative controls.
  warpgroup_mma_kernel.py run --device-lib LIB kernels.mlir kernels.img
      runs every kernel of the image on random A (64 x 16 K), B (16 K x
      8 N) and C and compares D with numpy's product of the operands
      rounded as the kernel rounds them (round to nearest even; sums in
      float64): one line per kernel, "ok" or "FAIL", with the relative
      error ||D - D_ref|| / ||D_ref||; exits 1 if any exceeds --tol
      (default 1e-6: the products of bf16 or f16 operands are exact in f32,
      so only the order of the f32 sums differs) or no kernel ran.
"""

import argparse
import itertools
import re
import sys

import numpy as np

from rel_attention_kernel import Device

WORKGROUP = 128


def emit_kernel(elem, k_steps, n_blocks, bad_staging, barrier):
    """The MLIR of kernel wg_<elem>_k<k_steps>_n<n_blocks>: arguments xa
    [128, K, 4, 2] (each work-item's A fragments, f32), xc [128, N, 2, 2]
    (its accumulators), x [N, 2K, 8, 8] (B as the op's tile, f32) and the
    output o, shaped as xc."""
    name = f"wg_{elem}_k{k_steps}_n{n_blocks}"
    tile = f"{n_blocks}x{2 * k_steps}x8x8"
    xa = f"memref<{WORKGROUP}x{k_steps}x4x2xf32>"
    xc = f"memref<{WORKGROUP}x{n_blocks}x2x2xf32>"
    consts = sorted({0, 1, 2, 3, 8, 64, WORKGROUP, 2 * k_steps, n_blocks * k_steps}
                    | set(range(max(k_steps, n_blocks))))
    lines = [
        f"  gpu.func @{name}(%xa: {xa}, %xc: {xc}, %x: memref<{tile}xf32>, %o: {xc})",
        f"      workgroup(%tile : memref<{tile}x{elem}, 3>)",
        f"      kernel attributes {{known_block_size = array<i32: {WORKGROUP}, 1, 1>}} {{",
        "    %tid = gpu.thread_id x",
    ]
    lines += [f"    %c{v} = arith.constant {v} : index" for v in consts]
    # Staging: element idx = 128 s + tid of the tile, in its row-major order.
    col, row = ("%row", "%col") if bad_staging else ("%col", "%row")
    lines += [
        f"    scf.for %s = %c0 to %c{n_blocks * k_steps} step %c1 {{",
        f"      %base = arith.muli %s, %c{WORKGROUP} : index",
        "      %idx = arith.addi %base, %tid : index",
        "      %col = arith.remui %idx, %c8 : index",
        "      %i8 = arith.divui %idx, %c8 : index",
        "      %row = arith.remui %i8, %c8 : index",
        "      %i64 = arith.divui %idx, %c64 : index",
        f"      %kb = arith.remui %i64, %c{2 * k_steps} : index",
        f"      %nb = arith.divui %i64, %c{2 * k_steps} : index",
        f"      %f = memref.load %x[%nb, %kb, %row, %col] : memref<{tile}xf32>",
        f"      %h = arith.truncf %f : f32 to {elem}",
        f"      memref.store %h, %tile[%nb, %kb, {row}, {col}] : memref<{tile}x{elem}, 3>",
        "    }",
    ] + (["    gpu.barrier"] if barrier else [])
    def load(name, memref, memref_type, shape, rounded):
        """Loads each element [i, j, k] of the work-item's slice of
        `memref` into %<name><i>_<j>_<k> (rounded to `elem` when
        `rounded`); returns the names, in order."""
        names = []
        for index in itertools.product(*map(range, shape)):
            v = name + "_".join(map(str, index))
            at = ", ".join(f"%c{i}" for i in index)
            loaded = f"%f{v}" if rounded else f"%{v}"
            lines.append(f"    {loaded} = memref.load %{memref}[%tid, {at}] : {memref_type}")
            if rounded:
                lines.append(f"    %{v} = arith.truncf {loaded} : f32 to {elem}")
            names.append(f"%{v}")
        return names

    a_names = load("a", "xa", xa, (k_steps, 4, 2), True)
    c_names = load("c", "xc", xc, (n_blocks, 2, 2), False)
    a_type = f"vector<{k_steps}x4x2x{elem}>"
    c_type = f"vector<{n_blocks}x2x2xf32>"
    lines += [
        f"    %a = vector.from_elements {', '.join(a_names)} : {a_type}",
        f"    %acc = vector.from_elements {', '.join(c_names)} : {c_type}",
        f"    %d = txl.warpgroup_mma %a, %tile, %acc : {a_type}, "
        f"memref<{tile}x{elem}, 3>, {c_type}",
    ]
    for nb, r, e in itertools.product(range(n_blocks), range(2), range(2)):
        v = f"d{nb}_{r}_{e}"
        lines.append(f"    %{v} = vector.extract %d[{nb}, {r}, {e}] : f32 from {c_type}")
        lines.append(f"    memref.store %{v}, %o[%tid, %c{nb}, %c{r}, %c{e}] : {xc}")
    lines += ["    gpu.return", "  }"]
    return "\n".join(lines)


def fragment_positions(operand, steps):
    """The matrix position of each fragment element, as (rows, columns)
    index arrays that broadcast to [128, steps, R, 2]: for `xa` (operand "a", R = 4):
    xa[tid, s, r, e] = A(16 w + g + 8 (r & 1), 16 s + 2 t + e + 8 (r >> 1)),
    or for `xc` (operand "c", R = 2, also D's layout): xc[tid, nb, r, e] =
    C(16 w + g + 8 r, 8 nb + 2 t + e); w is the work-item's subgroup and
    4 g + t its lane."""
    regs = 4 if operand == "a" else 2
    tid, s, r, e = np.ix_(np.arange(WORKGROUP), np.arange(steps),
                          np.arange(regs), np.arange(2))
    w, g, t = tid // 32, tid % 32 // 4, tid % 4
    if operand == "a":
        return 16 * w + g + 8 * (r & 1), 16 * s + 2 * t + e + 8 * (r >> 1)
    return 16 * w + g + 8 * r, 8 * s + 2 * t + e


def to_fragments(matrix, operand, steps):
    rows, cols = fragment_positions(operand, steps)
    return np.ascontiguousarray(matrix[rows, cols], dtype=np.float32)


def from_fragments_c(xc, n_blocks):
    rows, cols = fragment_positions("c", n_blocks)
    c = np.empty((64, 8 * n_blocks), np.float32)
    c[rows, cols] = xc
    return c


def to_tile(b, k_steps, n_blocks):
    """x[n / 8][k / 8][n % 8][k % 8] = B(k, n)."""
    return np.ascontiguousarray(
        b.reshape(2 * k_steps, 8, n_blocks, 8).transpose(2, 0, 3, 1))


def round_to(x, elem):
    """`x` (float32) rounded to bf16 or f16, round to nearest even, as float64."""
    if elem == "f16":
        return x.astype(np.float16).astype(np.float64)
    bits = x.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def run(args):
    specs = re.findall(r"gpu\.func @(wg_(bf16|f16)_k(\d+)_n(\d+))\(",
                       open(args.kernels).read())
    dev = Device(args.device_lib, open(args.image, "rb").read())
    rng = np.random.default_rng(2019)
    failed = not specs
    for name, elem, k_steps, n_blocks in specs:
        k_steps, n_blocks = int(k_steps), int(n_blocks)
        a = rng.uniform(-1, 1, (64, 16 * k_steps)).astype(np.float32)
        b = rng.uniform(-1, 1, (16 * k_steps, 8 * n_blocks)).astype(np.float32)
        c = rng.uniform(-1, 1, (64, 8 * n_blocks)).astype(np.float32)
        out = np.zeros((WORKGROUP, n_blocks, 2, 2), np.float32)
        bufs = [dev.memref(x) for x in (to_fragments(a, "a", k_steps),
                                        to_fragments(c, "c", n_blocks),
                                        to_tile(b, k_steps, n_blocks), out)]
        dev.launch(dev.kernel(name), (1, 1, 1), (WORKGROUP, 1, 1),
                   [arg for _, desc in bufs for arg in desc])
        dev.read(out, bufs[3][0])
        dev.free()
        d = from_fragments_c(out, n_blocks).astype(np.float64)
        ref = round_to(a, elem) @ round_to(b, elem) + c
        err = np.linalg.norm(d - ref) / np.linalg.norm(ref)
        ok = err <= args.tol
        failed |= not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: M 64 N {8 * n_blocks} "
              f"K {16 * k_steps}: relative error {err:.3g}")
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    emit = sub.add_parser("emit")
    emit.add_argument("--bad-staging", action="store_true")
    emit.add_argument("--no-barrier", action="store_true")
    emit.add_argument("specs", nargs="+", help="T:K:N (bf16|f16, k_steps, n_blocks)")
    go = sub.add_parser("run")
    go.add_argument("--device-lib", required=True)
    go.add_argument("--tol", type=float, default=1e-6)
    go.add_argument("kernels")
    go.add_argument("image")
    args = parser.parse_args()
    if args.command == "run":
        return run(args)
    kernels = []
    for spec in args.specs:
        elem, k_steps, n_blocks = spec.split(":")
        kernels.append(emit_kernel(elem, int(k_steps), int(n_blocks),
                                   args.bad_staging, not args.no_barrier))
    print("gpu.module @txl_kernels {\n" + "\n".join(kernels) + "\n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
