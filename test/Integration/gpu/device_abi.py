#!/usr/bin/env python3
"""What the device ABI (libtxl_device.so, txl/device.h) tells a user when
something is wrong: each case runs in its own process (a failing mgpu* call
exits the process with status 2) and prints its exit status and the last
line of its output.

usage: device_abi.py LIBTXL_DEVICE IMAGE EMPTY_VENDORS_DIR WIDE_TILE_IMAGE
"""

import os
import subprocess
import sys
import textwrap

PRELUDE = textwrap.dedent("""
    import ctypes, sys
    sys.path.insert(0, sys.argv[3])
    import txl_device
    lib = txl_device.load(sys.argv[1])
    image = open(sys.argv[2], "rb").read()
    error = ctypes.create_string_buffer(512)
    # txl_backend_t (txl/runtime.h): TXL_BACKEND_CUDA 1, TXL_BACKEND_OPENCL 2.
    def open_device(backend=2, ordinal=0):
        status = lib.txl_device_open(backend, ordinal, error, len(error))
        print("txl_device_open:", status, error.value.decode())
        return status
    def load(data):
        buf = ctypes.create_string_buffer(data, len(data))
        load.keep.append(buf)
        return lib.mgpuModuleLoad(buf, len(data))
    load.keep = []
""")

CASES = {
    # No OpenCL implementation: txl_device_open returns TXL_UNAVAILABLE (5)
    # with one line; nothing exits.
    "no-platform": "open_device()",
    "unknown-backend": "open_device(7)",
    "cpu-backend": "open_device(0)",
    "no-such-device": "open_device(ordinal=7)",
    # No GPU here: the CUDA backend says which library is missing.
    "no-cuda-driver": "open_device(1)",
    # A module is only loaded on first use, so a bad image fails there.
    "bad-magic": """
        open_device()
        m = load(b"NOTANIMG" + bytes(16))
        print("loaded lazily")
        lib.mgpuModuleGetFunction(m, b"rel_attention_d32")
    """,
    "truncated": """
        open_device()
        lib.mgpuModuleGetFunction(load(image[:40]), b"rel_attention_d32")
    """,
    "no-such-kernel": """
        open_device()
        lib.mgpuModuleGetFunction(load(image), b"softmax")
    """,
    "wrong-argument-count": """
        open_device()
        f = lib.mgpuModuleGetFunction(load(image), b"rel_attention_d32")
        params = (ctypes.c_void_p * 3)()
        lib.mgpuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, None, params, None, 3)
    """,
    # A kernel with more workgroup memory than the device has: refused when
    # it is created, naming the kernel and both sizes.
    "too-much-local": """
        open_device()
        wide = open(sys.argv[4], "rb").read()
        lib.mgpuModuleGetFunction(load(wide), b"wide_tile")
    """,
    "free-unknown": """
        open_device()
        lib.mgpuMemFree(ctypes.c_void_p(12345), None)
    """,
    "no-device-open": """
        lib.mgpuMemAlloc(16, None, False)
    """,
    # A malformed product: the descriptor as the libraries would get it.
    "gemm-bad-ld": """
        open_device()
        b = lib.mgpuMemAlloc(64, None, False)
        lib.txl_device_sgemm(0, 0, 2, 3, 4, 1.0, b, 0, 2, 0, b, 0, 3, 0,
                             0.0, b, 0, 3, 0, 1)
    """,
    "alloc-free": """
        open_device()
        b = lib.mgpuMemAlloc(0, None, False)
        lib.mgpuMemFree(b, None)
        print("empty buffer allocated and freed")
    """,
    # What the ABI holds: in use now, and the high-water mark.
    "memory-accounting": """
        open_device()
        size = ctypes.c_size_t
        def memory():
            v = [size(0) for _ in range(4)]
            lib.txl_device_memory(*[ctypes.byref(x) for x in v])
            return [x.value for x in v]
        a = lib.mgpuMemAlloc(1000, None, False)
        b = lib.mgpuMemAlloc(3000, None, False)
        lib.mgpuMemFree(a, None)
        total, free, in_use, peak = memory()
        print(f"in use {in_use}, peak {peak}, free <= total: {free <= total}")
    """,
    # A dry run: a terabyte is counted, not allocated; a real buffer keeps
    # its contents through a dry write, a dry read gives zeros, a launch
    # with no arguments (which a real one refuses) does nothing; the end
    # drops the dry handles still held and returns the peak, and the real
    # peak is as before.
    "dry-run": """
        open_device()
        size = ctypes.c_size_t
        lib.txl_device_end_dry_run.restype = size
        ptr = ctypes.c_void_p
        lib.mgpuMemcpy.argtypes = [ptr, ptr, size, ptr]
        lib.mgpuMemset32.argtypes = [ptr, ctypes.c_uint, size, ptr]
        def memory():
            v = [size(0) for _ in range(4)]
            lib.txl_device_memory(*[ctypes.byref(x) for x in v])
            return [x.value for x in v]
        real = lib.mgpuMemAlloc(16, None, False)
        ones = (ctypes.c_float * 4)(1, 1, 1, 1)
        lib.txl_device_write(real, 0, ones, 16)
        lib.txl_device_begin_dry_run()
        big = lib.mgpuMemAlloc(1 << 40, None, False)
        small = lib.mgpuMemAlloc(100, None, False)
        lib.mgpuMemFree(big, None)
        twos = (ctypes.c_float * 4)(2, 2, 2, 2)
        lib.txl_device_write(real, 0, twos, 16)
        lib.mgpuMemcpy(real, twos, 16, None)
        lib.mgpuMemset32(real, 0, 4, None)
        lib.txl_device_read(twos, real, 0, 16)
        dry_read = list(twos)
        module = load(image)
        kernel = lib.mgpuModuleGetFunction(module, b"no_such_kernel")
        lib.mgpuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, None, None, None, 0)
        in_dry = memory()[2]
        peak = lib.txl_device_end_dry_run()
        total, free, in_use, real_peak = memory()
        lib.txl_device_read(ones, real, 0, 16)
        print(f"dry peak {peak}, in use during {in_dry}, after {in_use}, "
              f"real peak {real_peak}, dry read {dry_read}, "
              f"buffer {list(ones)}")
    """,
}


def main():
    library, image, empty_vendors, wide_image = sys.argv[1:5]
    for name, body in CASES.items():
        env = None
        if name == "no-platform":
            env = dict(os.environ, OCL_ICD_VENDORS=empty_vendors)
        run = subprocess.run(
            [sys.executable, "-u", "-c", PRELUDE + textwrap.dedent(body), library, image,
             os.path.dirname(os.path.abspath(__file__)), wide_image],
            capture_output=True, text=True, env=env)
        lines = (run.stdout + run.stderr).strip().splitlines()
        print(f"{name}: exit {run.returncode}: {lines[-1] if lines else ''}")
        if name == "bad-magic":  # the line printed before the failing call
            print(f"{name}: {lines[-2] if len(lines) > 1 else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
