#!/usr/bin/env python3
"""The device ABI's matrix product (txl_device_sgemm, txl/device.h) against
numpy, on the OpenCL device (CLBlast, or on a CPU device the host's BLAS on
the mapped buffers: TXL_OPENCL_GEMM picks): every transpose pair, leading
dimensions wider than the matrix, offsets into a shared buffer, strided
batches (including a broadcast operand with batch stride 0), beta 0 over
garbage and beta 1 accumulating, k = 0 and empty products. These are the
descriptors cuBLAS receives on CUDA (txl/rt/device/Gemm.h converts both the same
way), so a wrong swap of m/n, A/B or a leading dimension fails here.

Prints the device line first (it names where the products run); each case
prints its largest error; the test fails above 1e-4 relative.

usage: gemm_device.py LIBTXL_DEVICE TEST_DIR
"""

import ctypes
import sys

import numpy as np

sys.path.insert(0, sys.argv[2])
import txl_device  # noqa: E402

lib = txl_device.load(sys.argv[1])
error = ctypes.create_string_buffer(512)
# txl_backend_t (txl/runtime.h): TXL_BACKEND_OPENCL = 2.
if lib.txl_device_open(2, 0, error, len(error)) != 0:
    sys.exit("txl_device_open: " + error.value.decode())
print("device:", lib.txl_device_description().decode())

rng = np.random.default_rng(7)


class Matrices:
    """A batch of row-major matrices placed in one device buffer at
    `offset` elements, rows `ld` apart and matrices `stride` apart; the
    gaps hold NaN, so a read outside the described elements shows."""

    def __init__(self, batch, rows, cols, ld, offset, stride, values=None):
        self.rows, self.cols, self.ld = rows, cols, ld
        self.offset, self.stride, self.batch = offset, stride, batch
        span = offset + max(0, batch - 1) * stride + rows * ld + 1
        self.host = np.full(span, np.nan, dtype=np.float32)
        self.values = np.zeros((batch, rows, cols), np.float32)
        for b in range(batch):
            if values is not None:
                v = values
            elif b == 0 or stride != 0:  # stride 0: one matrix for all b
                v = rng.standard_normal((rows, cols)).astype(np.float32)
            self.values[b] = v
            start = offset + b * stride
            for r in range(rows):
                self.host[start + r * ld:start + r * ld + cols] = v[r]
        self.buffer = lib.mgpuMemAlloc(self.host.nbytes, None, False)
        self.base = 0  # where `host` starts in the buffer, in elements
        lib.txl_device_write(self.buffer, 0, self.host.ctypes.data,
                             self.host.nbytes)

    def move_into(self, buffer, base):
        """Places these matrices (and their NaN gaps) at element `base` of
        `buffer`, which other Matrices share, as a generated workspace
        holds several operands of one product."""
        self.buffer, self.base = buffer, base
        lib.txl_device_write(buffer, base * 4, self.host.ctypes.data,
                             self.host.nbytes)

    def view(self, flat, b):
        start = self.offset + b * self.stride
        rows = [flat[start + r * self.ld:start + r * self.ld + self.cols]
                for r in range(self.rows)]
        return np.stack(rows) if rows else np.zeros((0, self.cols))

    def read(self):
        flat = np.empty_like(self.host)
        lib.txl_device_read(flat.ctypes.data, self.buffer, self.base * 4,
                            flat.nbytes)
        return flat, np.stack([self.view(flat, b) for b in range(self.batch)])

    def args(self):
        return [self.buffer, self.base + self.offset, self.ld, self.stride]


def case(name, trans_a, trans_b, m, n, k, batch=1, pad=0, offset=0,
         beta=0.0, a_stride=None, c_init=np.nan, plain=False, entry="",
         one_buffer=False):
    """plain: batch 1 with every batch stride 0, as generated code passes
    a linalg.matmul. entry "_bf16" / "_f16": through txl_device_sgemm_bf16 /
    txl_device_sgemm_f16 (--precision=bf16 / fp16), which on OpenCL are the
    f32 product (CLBlast has no such modes). one_buffer: A, B and C in
    one buffer, one after the other."""
    shape_a = (k, m) if trans_a else (m, k)
    shape_b = (n, k) if trans_b else (k, n)

    def place(shape, stride):
        ld = max(1, shape[1] + pad)  # BLAS: ld >= 1 even for k = 0
        if plain:
            stride = 0
        elif stride is None:
            stride = shape[0] * ld + 3
        return Matrices(batch, shape[0], shape[1], ld, offset, stride)

    a = place(shape_a, a_stride)
    b = place(shape_b, None)
    c = Matrices(batch, m, n, n + pad, offset,
                 0 if plain else m * (n + pad) + 5,
                 values=np.full((m, n), c_init, np.float32))
    if one_buffer:
        total = a.host.size + b.host.size + c.host.size
        shared = lib.mgpuMemAlloc(total * 4, None, False)
        a.move_into(shared, 0)
        b.move_into(shared, a.host.size)
        c.move_into(shared, a.host.size + b.host.size)
    before = c.values.copy()
    gemm = getattr(lib, "txl_device_sgemm" + entry)
    gemm(trans_a, trans_b, m, n, k, 1.0, *a.args(), *b.args(), beta,
         *c.args(), batch)
    flat, got = c.read()
    opa = np.swapaxes(a.values, 1, 2) if trans_a else a.values
    opb = np.swapaxes(b.values, 1, 2) if trans_b else b.values
    want = (opa.astype(np.float64) @ opb.astype(np.float64)).astype(np.float32)
    if beta != 0.0:
        want = want + beta * before
    err = float(np.max(np.abs(got - want) / (1 + np.abs(want)))) if got.size else 0.0
    # Nothing outside C's matrices was written.
    mask = np.ones(flat.shape, bool)
    for bb in range(batch):
        for r in range(m):
            start = c.offset + bb * c.stride + r * c.ld
            mask[start:start + n] = False
    outside = flat[mask]
    untouched = bool(np.all(np.isnan(outside) | (outside == c.host[mask])))
    ok = err <= 1e-4 and untouched
    print(f"{name}: {'ok' if ok else 'FAIL'} err={err:.1e}"
          f"{'' if untouched else ' wrote outside C'}")
    return ok


results = [
    case("NN", 0, 0, 37, 29, 41),
    case("NT", 0, 1, 37, 29, 41),
    case("TN", 1, 0, 37, 29, 41),
    case("TT", 1, 1, 37, 29, 41),
    case("NT-wide-ld-offset", 0, 1, 16, 64, 48, pad=5, offset=11),
    case("TN-wide-ld-offset", 1, 0, 16, 64, 48, pad=5, offset=11),
    case("plain-strides-0", 0, 1, 64, 128, 128, plain=True),
    case("batched-NN", 0, 0, 20, 12, 8, batch=5, pad=2, offset=3),
    case("batched-NT", 0, 1, 20, 12, 8, batch=5, pad=2, offset=3),
    case("batched-TT", 1, 1, 20, 12, 8, batch=3, pad=1),
    case("batched-broadcast-A", 0, 0, 9, 10, 11, batch=4, a_stride=0),
    case("beta1-accumulates", 0, 1, 13, 17, 19, beta=1.0, c_init=0.5),
    case("k0-beta0-zeroes", 0, 0, 6, 7, 0, batch=2, pad=3),
    case("k0-beta1-keeps", 0, 0, 6, 7, 0, beta=1.0, c_init=2.0),
    case("empty-m", 0, 0, 0, 7, 5),
    case("large", 0, 1, 256, 384, 200),
    case("one-buffer-batched-TN", 1, 0, 20, 12, 8, batch=3, pad=2, offset=5,
         one_buffer=True),
    case("bf16-entry-batched-NT", 0, 1, 20, 12, 8, batch=3, pad=2,
         entry="_bf16"),
    case("f16-entry-batched-TN", 1, 0, 20, 12, 8, batch=3, pad=2,
         entry="_f16"),
]
lib.txl_device_close()
print("all ok" if all(results) else "FAILED")
sys.exit(0 if all(results) else 1)
