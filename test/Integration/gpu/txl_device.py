"""ctypes prototypes of the runtime's device ABI (runtime/include/txl/
device.h) in libtxl_device.so, shared by the tests that drive compiled
kernels from Python."""

import ctypes
import os


def load(path):
    """libtxl_device.so at `path`, with the prototypes the tests use.

    The kernels these tests launch run a few small cases each, so their time
    goes to the OpenCL driver's build: unless TXL_OPENCL_BUILD_OPTIONS is
    set (even empty, for the driver's optimized build), the driver builds
    them with -cl-opt-disable, about 4x faster for the emulated tensor-core
    kernels, with the same results, and with
    CL_CONFIG_CPU_O0_VECTORIZATION=True (as test/lit.cfg.py sets it):
    without it such a build runs a subgroup as one work-item and the
    kernels' shuffles read garbage (a run outside lit, such as
    bench/gpu/bench_gpu.py's on OpenCL, got NaN from the f32 attention
    kernel)."""
    if "TXL_OPENCL_BUILD_OPTIONS" not in os.environ:
        os.environ["TXL_OPENCL_BUILD_OPTIONS"] = "-cl-opt-disable"
        os.environ.setdefault("CL_CONFIG_CPU_O0_VECTORIZATION", "True")
    lib = ctypes.CDLL(path)
    ptr, size = ctypes.c_void_p, ctypes.c_size_t
    # txl_backend_t (an int), ordinal, error buffer, its size.
    lib.txl_device_open.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, size]
    lib.txl_device_description.restype = ctypes.c_char_p
    lib.txl_device_write.argtypes = [ptr, size, ptr, size]
    lib.txl_device_read.argtypes = [ptr, ptr, size, size]
    lib.mgpuModuleLoad.restype = ptr
    lib.mgpuModuleLoad.argtypes = [ptr, size]
    lib.mgpuModuleGetFunction.restype = ptr
    lib.mgpuModuleGetFunction.argtypes = [ptr, ctypes.c_char_p]
    lib.mgpuMemAlloc.restype = ptr
    lib.mgpuMemAlloc.argtypes = [ctypes.c_uint64, ptr, ctypes.c_bool]
    lib.mgpuMemFree.argtypes = [ptr, ptr]
    lib.mgpuLaunchKernel.argtypes = [ptr] + [ctypes.c_ssize_t] * 6 + [
        ctypes.c_int32, ptr, ctypes.POINTER(ptr), ptr, size]
    i64 = ctypes.c_int64
    matrix = [ptr, i64, i64, i64]  # buffer, offset, ld, batch stride
    for gemm in (lib.txl_device_sgemm, lib.txl_device_sgemm_bf16,
                 lib.txl_device_sgemm_f16):
        gemm.argtypes = (
            [ctypes.c_int32, ctypes.c_int32, i64, i64, i64, ctypes.c_float]
            + matrix + matrix + [ctypes.c_float] + matrix + [i64])
    return lib
