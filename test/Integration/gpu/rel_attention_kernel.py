#!/usr/bin/env python3
"""Runs the rel_attention GPU kernels of txl-rel-attention-to-gpu, compiled
to SPIR-V, through the runtime's device layer (libtxl_device.so, the ABI
compiled host code calls) on an OpenCL device (this machine's CPU in CI),
and compares them
with the official Transformer-XL attention math in numpy: the four terms
(AC + BD), BD rel-shifted with the official pad + reshape + slice, the
official dec_attn_mask (causal with memory, same_length), softmax over keys,
then P·V.

usage: rel_attention_kernel.py --device-lib LIB [--tol T] KERNELS.mlir KERNELS.img [...]

Every case runs unsplit and over its keys in parts (grid z, then
rel_attention_combine, as the host code launches them); split, each part's
log-sum-exp is also checked against the keys of its range, so that a kernel
that walks every key in every part fails.

The tensor-core kernels (rel_attention_bf16_d<d_head>, _f16_, and their
_dropatt_ forms) run to the looser --mma-tol.

A kernel's dropatt form (rel_attention_dropatt_d<d_head>) runs evaluating
(the identity) and training, against masks from the numpy Philox of
dropout.py (txl.dropout's layout, over [qlen, klen, batch, n_head]).

Each KERNELS.mlir is IR after txl-rel-attention-to-gpu (it gives each
kernel's query tile and block size, so that the harness launches the grid
the host code does), KERNELS.img the same gpu.module as the OpenCL kernel
image the runtime loads (txl-translate --kernels-to-opencl-image). Runs every case whose d_head has a
kernel in a pair, prints one line per case with its max abs error, and
exits 1 if any case exceeds the tolerance or no case ran.
"""

import argparse
import ctypes
import math
import os
import re
import sys

import numpy as np

import txl_device

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lib"))
from dropout import keep_mask  # noqa: E402
from official_attention import (dec_attn_mask, probabilities,  # noqa: E402,F401
                                rel_shift, scores)


def dropatt_multiplier(shape, dropatt):
    """The dropatt multiplier M [qlen, klen, batch, n_head] (1 / (1 - rate)
    where kept, else 0) of the txl.dropout Philox layout (dropout.py) by
    batch column (batch_dim 2) from global column `column`, or 1 without
    `dropatt` (rate, seed, offset, stream, column)."""
    if dropatt is None:
        return 1.0
    rate, seed, offset, stream, column = dropatt
    keep = keep_mask(shape, seed, offset, stream, rate, batch_dim=2, column=column)
    return np.where(keep, np.float64(np.float32(1.0 / (1.0 - rate))), 0.0)


def dropatt_args(dropatt, training):
    """The trailing arguments of a dropatt kernel: seed, offset, stream,
    column, minKept (0 when evaluating), scale (1 when evaluating)."""
    rate, seed, offset, stream, column = dropatt
    min_kept = math.ceil(math.ldexp(rate, 24)) if training else 0
    scale = np.float32(1.0 / (1.0 - rate)) if training else np.float32(1.0)
    return [ctypes.c_int64(seed), ctypes.c_int64(offset), ctypes.c_int64(stream),
            ctypes.c_int64(column), ctypes.c_int32(min_kept), ctypes.c_float(scale)]


def reference(q, k, v, r, u, vb, mem_len, same_length, scale, dropatt=None):
    prob = probabilities(scores(q, k, r, u, vb, mem_len, same_length, scale))
    v = v.astype(np.float64)
    prob = prob * dropatt_multiplier(prob.shape, dropatt)
    return np.einsum("ijbn,jbnd->ibnd", prob, v)


def kernel_layouts(mlir_text):
    """{kernel name: (workgroup tile shapes, block size)} from the IR."""
    kernels = {}
    for m in re.finditer(r"gpu\.func @(\w+)\((.*?)\)(?: workgroup\((.*?)\))? kernel"
                         r" attributes \{[^}]*known_block_size = array<i32: (\d+)",
                         mlir_text):
        tiles = [tuple(int(x) for x in t.split("x"))
                 for t in re.findall(r"memref<(\d+x\d+)xf32, 3>", m.group(3) or "")]
        kernels[m.group(1)] = (tiles, int(m.group(4)))
    return kernels


def part_ranges(qlen, klen, mem_len, same_length, query_tile, parts,
                aligned=False):
    """{(query tile, part): [begin, end)} of the keys each workgroup of a
    launch over `parts` key parts walks: the tile's visible keys
    (KernelBodyBuilder::decoderMask) in runs of whole 32-key tiles, from a
    multiple of 32 when `aligned` (the kernels of packed operands)."""
    mlen, mask_len = klen - qlen, klen - mem_len
    shift = qlen - mask_len if mask_len > 0 else qlen
    ranges = {}
    for t in range(-(-qlen // query_tile)):
        i0 = t * query_tile
        begin = max(0, i0 - shift + 1) if same_length else 0
        if aligned:
            begin -= begin % 32
        end = min(klen, i0 + query_tile + mlen)
        key_tiles = -(-max(end - begin, 0) // 32)
        part_keys = -(-key_tiles // parts) * 32
        for z in range(parts):
            b = begin + z * part_keys
            ranges[t, z] = (b, min(end, b + part_keys))
    return ranges


def part_lse_reference(score, query_tile, ranges, parts):
    """[parts, batch, n_head, qlen]: each row's log-sum-exp over the keys of
    its workgroup's part (-inf for a part without visible keys)."""
    qlen, _, batch, n_head = score.shape
    want = np.full((parts, batch, n_head, qlen), -np.inf)
    for (t, z), (b, e) in ranges.items():
        for i in range(t * query_tile, min(qlen, (t + 1) * query_tile)):
            s = score[i, b:max(b, e)]  # [keys, batch, n_head]
            if s.size and np.isfinite(s).any():
                top = s.max(axis=0)
                want[z, :, :, i] = top + np.log(np.exp(s - top).sum(axis=0))
    return want


COMBINE_THREADS = 128


def launch_attention(dev, name, grid_xy, block, args, out, out_desc,
                     lse_desc=None, parts=1):
    """Launches the f32 kernel `name` with `args` (all but its workspace) as
    the host code does over `parts` key parts: the workspace (empty for one
    part), grid z = parts, then rel_attention_combine[_lse] into `out`
    (and the lse) when parts > 1. Returns the workspace's part_lse and its
    buffer."""
    qlen, batch, n_head, d_head = out.shape
    slices = parts if parts > 1 else 0
    part_out = np.full((slices, qlen, batch, n_head, d_head), np.nan, np.float32)
    part_lse = np.full((slices, batch, n_head, qlen), np.nan, np.float32)
    _, po = dev.memref(part_out)
    pl_buf, pl = dev.memref(part_lse)
    dev.launch(dev.kernel(name), (*grid_xy, parts), (block, 1, 1), args + po + pl)
    if parts > 1:
        combine = "rel_attention_combine" + ("_lse" if lse_desc else "")
        dev.launch(dev.kernel(combine), (-(-out.size // COMBINE_THREADS), 1, 1),
                   (COMBINE_THREADS, 1, 1), po + pl + out_desc + (lse_desc or []))
    return part_lse, pl_buf


PACK_KEYS = 32  # kMmaPackKeys: klen padded to the key tile


def narrow_bits(x, mma):
    """The bf16 or f16 bits (uint16) of float32 `x` rounded to nearest even,
    as cvt.rn.bf16.f32 / cvt.rn.f16.f32 (finite values)."""
    if mma == "f16":
        return x.astype(np.float16).view(np.uint16)
    u = x.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def rounded(x, mma):
    """float32 `x` rounded to bf16 or f16 (narrow_bits) and widened back."""
    bits = np.ascontiguousarray(narrow_bits(np.ascontiguousarray(x), mma))
    if mma == "f16":
        return bits.view(np.float16).astype(np.float32)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def launch_pack(dev, name, block, heads, k, v, r, mma):
    """Launches the pack kernel `name` on k and v (views of `heads`) and r
    as the host code does: grid (klenPad / 32, batch * n_head), klenPad
    klen rounded up to 32 and one tile more (the attention's walk copies
    the tile after its last one, unread). Returns the
    descriptors of the packed k, v (each key tile the forward kernel's
    core matrices) and r, a check that reads
    them back and returns what differs from numpy's rounding of the
    operands (None when every bit matches, padding zeros included), and a
    function that launches the kernel again on the same buffers."""
    klen, batch, n_head, d_head = k.shape
    d_pad = next((w for w in (32, 64, 128) if w >= d_head), -(-d_head // 16) * 16)
    klen_pad = (-(-klen // PACK_KEYS) + 1) * PACK_KEYS
    want = []
    for x in (k, v):
        padded = np.zeros((klen_pad, batch, n_head, d_pad), np.float32)
        padded[:klen, :, :, :d_head] = x
        # [key tile, key block, key, batch, n_head, d block, d]
        blocks = padded.reshape(klen_pad // PACK_KEYS, PACK_KEYS // 8, 8,
                                batch, n_head, d_pad // 8, 8)
        if x is k:
            # Each key tile's core matrices [4, d_pad / 8, 8, 8], K as B(d,
            # j) ...
            packed = blocks.transpose(3, 4, 0, 1, 5, 2, 6)
        else:
            # ... and [d_pad / 8, 4, 8, 8], V as B(j, d).
            packed = blocks.transpose(3, 4, 0, 5, 1, 6, 2)
        # [batch, n_head, klen_pad / 32, 32 d_pad / 8, 8]: 16-byte chunks.
        packed = packed.reshape(batch, n_head, klen_pad // PACK_KEYS,
                                PACK_KEYS * d_pad // 8, 8)
        want.append(narrow_bits(np.ascontiguousarray(packed), mma))
    padded = np.zeros((klen_pad, n_head, d_pad), np.float32)
    padded[:klen, :, :d_head] = r
    want.append(narrow_bits(np.ascontiguousarray(padded.transpose(1, 0, 2)), mma))
    got = [np.full(w.shape, 0xFFFF, np.uint16) for w in want]
    bufs, descs = zip(*(dev.memref(g) for g in got))
    args = []
    for x in (k, v):
        args += dev.memref(x, heads)[1]
    args += dev.memref(r)[1]
    for desc in descs:
        args += desc
    kernel = dev.kernel(name)

    def launch():
        dev.launch(kernel, (klen_pad // PACK_KEYS, batch * n_head, 1),
                   (block, 1, 1), args)
    launch()

    def check():
        bad = []
        for what, g, w, buf in zip(("k", "v", "r"), got, want, bufs):
            dev.read(g, buf)
            if not np.array_equal(g, w):
                bad.append(f"{what}: {int(np.sum(g != w))} of {w.size} differ")
        return "; ".join(bad) or None
    return descs, check, launch


class Device:
    """The runtime's device layer (libtxl_device.so, txl/device.h), driven
    through the ABI that compiled host code uses: mgpuModuleLoad,
    mgpuModuleGetFunction, mgpuMemAlloc, mgpuLaunchKernel with one pointer
    per argument of the expanded memref descriptors."""

    def __init__(self, library, image, backend="opencl"):
        lib = txl_device.load(library)
        error = ctypes.create_string_buffer(512)
        # txl_backend_t (txl/runtime.h).
        code = {"cuda": 1, "opencl": 2}[backend]
        if lib.txl_device_open(code, 0, error, len(error)) != 0:
            raise SystemExit("txl_device_open: " + error.value.decode())
        print("device:", lib.txl_device_description().decode())
        self.lib = lib
        self.image = ctypes.create_string_buffer(image, len(image))
        self.module = lib.mgpuModuleLoad(self.image, len(image))
        self.buffers = []

    def kernel(self, name):
        return self.lib.mgpuModuleGetFunction(self.module, name.encode())

    def memref(self, array, base=None):
        """A device copy of `base` (a contiguous array, or `array`
        itself) and the expanded descriptor of `array` as a view of it:
        buffer, buffer, offset, sizes, strides (in elements)."""
        base = array if base is None else base
        host = np.ascontiguousarray(base)
        buf = self.lib.mgpuMemAlloc(host.nbytes, None, False)
        self.lib.txl_device_write(buf, 0, host.ctypes.data, host.nbytes)
        self.buffers.append(buf)
        item = array.itemsize
        offset = (array.__array_interface__["data"][0]
                  - base.__array_interface__["data"][0]) // item
        return buf, [ctypes.c_void_p(buf), ctypes.c_void_p(buf), ctypes.c_int64(offset)] + \
            [ctypes.c_int64(s) for s in array.shape] + \
            [ctypes.c_int64(s // item) for s in array.strides]

    def launch(self, kernel, grid, block, args):
        params = (ctypes.c_void_p * len(args))(
            *[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
        self.lib.mgpuLaunchKernel(kernel, *grid, *block, 0, None, params, None, len(args))

    def read(self, out, buf):
        self.lib.txl_device_sync()
        self.lib.txl_device_read(out.ctypes.data, buf, 0, out.nbytes)

    def free(self):
        for buf in self.buffers:
            self.lib.mgpuMemFree(buf, None)
        self.buffers = []


def run_case(dev, layouts, case, rng, tol, dropatt=None, training=False,
             parts=1, mma=None, key_scales=None):
    """One launch of the kernel for `case` over `parts` key parts (then
    the combine, and each part's log-sum-exp checked against its key range);
    with `dropatt` (rate, seed, offset, stream), of its dropatt form,
    training (the masks drawn) or not (the identity); with `mma` ("bf16" or
    "f16"), of the tensor-core kernel; with `key_scales`, the keys of key
    tile t (32 keys) scaled by key_scales[t] (the last for the tiles
    after), so that a row's maximum score jumps from tile to tile."""
    qlen, mlen, batch, n_head, d_head, same_length, mem_len = case
    klen = qlen + mlen
    form = "_dropatt" if dropatt else ""
    name = f"rel_attention{f'_{mma}' if mma else ''}{form}_d{d_head}"
    tiles, block = layouts[name]
    scale = np.float32(1.0 / np.sqrt(d_head))
    # q, k, v as views of one [klen, batch, n_head, 3 * d_head] projection
    # (strided operands, q offset by mlen rows), like the model's qkv split.
    heads = rng.standard_normal((klen, batch, n_head, 3 * d_head)).astype(np.float32)
    if key_scales:
        tile_scale = np.array(key_scales, np.float32)[
            np.minimum(np.arange(klen) // PACK_KEYS, len(key_scales) - 1)]
        heads[:, :, :, d_head:2 * d_head] *= tile_scale[:, None, None, None]
    q = heads[mlen:, :, :, :d_head]
    k = heads[:, :, :, d_head:2 * d_head]
    v = heads[:, :, :, 2 * d_head:]
    r = rng.standard_normal((klen, n_head, d_head)).astype(np.float32)
    u = rng.standard_normal((n_head, d_head)).astype(np.float32)
    vb = rng.standard_normal((n_head, d_head)).astype(np.float32)
    out = np.full((qlen, batch, n_head, d_head), np.nan, np.float32)

    args = []
    pack = f"rel_attention_pack_{mma}_d{d_head}" if mma else None
    if pack in layouts:
        # The packed form: key, value and pos_key packed by the pack kernel
        # first (as the host code launches it), then klen after out.
        _, desc = dev.memref(q, heads)
        args += desc
        packed_descs, packed_check, _ = launch_pack(dev, pack, layouts[pack][1],
                                                    heads, k, v, r, mma)
        for desc in packed_descs:
            args += desc
    else:
        packed_check = None
        for x in (q, k, v):
            _, desc = dev.memref(x, heads)
            args += desc
        _, desc = dev.memref(r)
        args += desc
    for x in (u, vb):
        _, desc = dev.memref(x)
        args += desc
    out_buf, desc = dev.memref(out)
    args += desc
    if packed_check:
        args += [ctypes.c_int64(klen)]
    args += [ctypes.c_int64(mem_len), ctypes.c_int32(same_length),
             ctypes.c_float(scale)]
    if dropatt:
        args += dropatt_args(dropatt, training)
    query_tile = tiles[0][0]
    part_lse, part_lse_buf = launch_attention(
        dev, name, (-(-qlen // query_tile), batch * n_head), block, args, out,
        desc, parts=parts)
    dev.read(out, out_buf)
    if parts > 1:
        dev.read(part_lse, part_lse_buf)
    pack_err = packed_check() if packed_check else None
    dev.free()

    # Scaled keys are the scores' largest factor: the reference takes them
    # as the packing rounds them, so that the comparison measures the
    # kernel more than that rounding times the scale.
    if key_scales and mma:
        k = rounded(k, mma)
    want = reference(q, k, v, r, u, vb, mem_len, same_length, float(scale),
                     dropatt if training else None)
    err = float(np.max(np.abs(out - want)))
    undropped_err = None
    if dropatt and training:
        # The masks matter at this tolerance: the output is far from the
        # undropped attention's.
        undropped = reference(q, k, v, r, u, vb, mem_len, same_length, float(scale))
        undropped_err = float(np.max(np.abs(out - undropped)))
        if undropped_err <= 10 * tol:
            err = float("inf")
    if parts > 1:
        # Each part walked its own keys only: its lse is that of its range
        # (a kernel walking every key in every part would still combine to
        # the right output).
        ranges = part_ranges(qlen, klen, mem_len, same_length, query_tile, parts,
                             aligned=packed_check is not None)
        part_want = part_lse_reference(
            scores(q, k, r, u, vb, mem_len, same_length, float(scale)),
            query_tile, ranges, parts)
        finite = np.isfinite(part_want)
        if not np.array_equal(finite, np.isfinite(part_lse)):
            err = float("inf")
        else:
            err = max(err, float(np.max(np.abs(part_lse[finite] - part_want[finite])
                                        / np.maximum(1.0, np.abs(part_want[finite])),
                                        initial=0.0)))
    if pack_err:
        err = float("inf")
    ok = err <= tol
    mode = f" dropatt={dropatt[0]} training={int(training)}" if dropatt else ""
    if key_scales:
        mode += " key_scales=" + ",".join(f"{x:g}" for x in key_scales)
    mode += f" parts={parts}"
    tail = ("" if undropped_err is None
            else f" (the undropped attention: {undropped_err:.3g})")
    if pack_err:
        tail += f" (packed operands: {pack_err})"
    print(f"{'ok  ' if ok else 'FAIL'} {name} qlen={qlen} mlen={mlen} batch={batch} "
          f"n_head={n_head} same_length={int(same_length)} mem_len={mem_len}{mode}: "
          f"max abs err {err:.3g}{tail}")
    return ok


# (qlen, mlen, batch, n_head, d_head, same_length, mem_len)
CASES = [
    (8, 0, 2, 4, 32, False, 0),       # no memory yet
    (37, 23, 3, 4, 32, False, 23),    # tiles cut at neither qlen nor klen
    (64, 64, 2, 4, 32, False, 64),    # ptb_small's eval shape
    (64, 64, 2, 4, 32, True, 64),     # same_length
    (40, 100, 1, 2, 32, True, 100),   # same_length, longer memory
    (48, 16, 1, 2, 32, True, 64),     # same_length, memory still filling
    (33, 70, 2, 2, 64, False, 70),
    (33, 70, 2, 2, 64, True, 70),
    (21, 40, 1, 3, 80, False, 40),    # d_head not a multiple of 32
    (30, 45, 2, 2, 41, True, 45),     # wt103_base's odd d_head
    (17, 35, 2, 2, 128, True, 35),    # narrower query tile
    (40, 150, 1, 2, 128, False, 150), # 6 key tiles: the r ring wraps
    (24, 40, 2, 2, 16, False, 40),    # d_head 16 (train_tiny): padded to 32
    (24, 40, 2, 2, 16, True, 40),
    # d_head 12 (tiny_d24): rows of 3 16-byte vectors, no padding; 12 does
    # not divide the workgroup's 128 work-items (the unchecked staging
    # walks elements).
    (16, 16, 1, 2, 12, False, 16),
    (37, 40, 2, 2, 12, True, 40),
]


# Cases of the tensor-core kernels whose keys are scaled per key tile
# (run_case's key_scales): from the first tile to the second a row's
# maximum score jumps by about 9 (base 2), mostly more than the kernel's
# rescale threshold (8), so that its O is rescaled (txl.rescale: d_head
# 32 and 64), and from the second on by less, so that probabilities
# up to 2^8 accumulate against the maximum a row keeps.
SCALED_CASES = [
    ((64, 32, 2, 4, 32, False, 32), (0.3, 3.0, 3.5)),
    ((33, 70, 2, 2, 64, False, 70), (0.3, 3.0, 3.0, 3.5)),
]


# The numbers of key parts the cases run in after their unsplit run: two
# and three parts, more parts than some cases have key tiles (empty parts),
# and the runtime's largest choice.
PARTS = [2, 3, 5, 16]


# (rate, seed, offset, stream, column) of the dropatt cases: a seed and
# offset using both 32-bit words of each, the batch from global column 3.
DROPATT = (0.15, 0x1234_5678_9ABC_DEF0, (7 << 32) + 11, 40, 3)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pairs", nargs="+", help="KERNELS.mlir KERNELS.img ...")
    parser.add_argument("--device-lib", required=True, help="libtxl_device.so")
    parser.add_argument("--tol", type=float, default=1e-5)
    parser.add_argument("--mma-tol", type=float, default=0.05,
                        help="the tensor-core kernels' tolerance")
    args = parser.parse_args()
    if len(args.pairs) % 2:
        parser.error("expected KERNELS.mlir KERNELS.img pairs")
    rng = np.random.default_rng(0)
    results = []
    for mlir, image in zip(args.pairs[::2], args.pairs[1::2]):
        layouts = kernel_layouts(open(mlir).read())
        dev = Device(args.device_lib, open(image, "rb").read())
        # Each case unsplit, then over the keys in parts (PARTS, in turn).
        for n, case in enumerate(CASES):
            if f"rel_attention_d{case[4]}" in layouts:
                for parts in (1, PARTS[n % len(PARTS)]):
                    results.append(run_case(dev, layouts, case, rng, args.tol,
                                            parts=parts))
        # The tensor-core kernels (their mma emulated on OpenCL), to the
        # looser --mma-tol, unsplit and in 3 parts; their dropatt forms
        # evaluating and training, against the same masks.
        for mma in ("bf16", "f16"):
            for case in CASES:
                if f"rel_attention_{mma}_d{case[4]}" in layouts:
                    for parts in (1, 3):
                        results.append(run_case(dev, layouts, case, rng,
                                                args.mma_tol, parts=parts,
                                                mma=mma))
                if f"rel_attention_{mma}_dropatt_d{case[4]}" in layouts:
                    for training, parts in ((False, 1), (True, 1), (True, 3)):
                        results.append(run_case(dev, layouts, case, rng,
                                                args.mma_tol, DROPATT, training,
                                                parts, mma))
            for case, key_scales in SCALED_CASES:
                if f"rel_attention_{mma}_d{case[4]}" in layouts:
                    for parts in (1, 3):
                        results.append(run_case(dev, layouts, case, rng,
                                                args.mma_tol, parts=parts,
                                                mma=mma, key_scales=key_scales))
        # The dropatt kernels: evaluating (the identity) and training (the
        # masks of txl.dropout's Philox layout), the latter in 3 parts too.
        for case in CASES:
            if f"rel_attention_dropatt_d{case[4]}" in layouts:
                for training, parts in ((False, 1), (True, 1), (True, 3)):
                    results.append(run_case(dev, layouts, case, rng, args.tol,
                                            DROPATT, training, parts))
        dev.lib.txl_device_close()
    if not results:
        print("no kernel to run")
        return 1
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
