"""Compile a txl/linalg module through the CPU pipeline and call it from numpy.

The module must define a public `func.func @segment` with the attributes
`llvm.emit_c_interface` and `txl.entry = "txl_segment_forward"` (the packed
entry txl-emit-packed-entry writes for it) whose arguments are ranked f32/f64/i64
tensors, i64 or index scalars (Python ints), f32 scalars (np.float32), f64
scalars (Python floats or np.float64) or i1 scalars (Python bools), and whose
results are ranked f32 or f64 tensors. Other entry points of the same packed
convention (`txl_optimizer_step`, ...) are called by naming them.
`compile_module` lowers it with `txl-opt --txl-cpu-pipeline`, translates it
to LLVM IR and links a shared object; `Segment.__call__` builds the memref
descriptors the packed entry `txl_segment_forward(void **)` expects (results
are caller allocated, so their shapes and element types are passed in).

Used by lit tests that check lowerings numerically op by op.
"""

import ctypes
import os
import shutil
import subprocess
import tempfile

import numpy as np


def _descriptor_type(rank):
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
              ("offset", ctypes.c_int64)]
    if rank:
        fields += [("sizes", ctypes.c_int64 * rank),
                   ("strides", ctypes.c_int64 * rank)]
    return type("MemRef%dD" % rank, (ctypes.Structure,), {"_fields_": fields})


def _descriptor(array):
    desc = _descriptor_type(array.ndim)()
    desc.allocated = desc.aligned = array.ctypes.data
    desc.offset = 0
    for d in range(array.ndim):
        desc.sizes[d] = array.shape[d]
        desc.strides[d] = array.strides[d] // array.itemsize
    return desc


def compile_module(mlir_path, workdir, pipeline="txl-cpu-pipeline",
                   clang_flags=("-O1",)):
    """Returns the path of a shared object exporting txl_segment_forward
    (clang_flags: how clang compiles the LLVM IR; bench/ passes -O3 and a
    -march)."""
    lowered = os.path.join(workdir, "lowered.mlir")
    llvm_ir = os.path.join(workdir, "module.ll")
    shared = os.path.join(workdir, "module.so")
    # A sanitizer build runs this Python with the sanitizer's runtime
    # preloaded (test/sanitizers/lit_sanitizers.py); the tools, which carry
    # their own, must not inherit it.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    subprocess.run(["txl-opt", "--" + pipeline, mlir_path, "-o", lowered],
                   check=True, env=env)
    subprocess.run(["mlir-translate-22", "--mlir-to-llvmir", lowered, "-o",
                    llvm_ir], check=True, env=env)
    # The runtime's checked allocator (txl_rt_malloc) and its CPU feature
    # byte (txl_rt_x86_64_v4, C++: libstdc++), from the build's
    # libtxl_runtime.a beside the txl-opt on PATH.
    runtime = os.path.join(os.path.dirname(shutil.which("txl-opt")), "..", "lib")
    subprocess.run(["clang-22", *clang_flags, "-shared", "-fPIC", llvm_ir, "-o", shared,
                    "-Wno-override-module", "-L" + runtime, "-ltxl_runtime",
                    "-lopenblas", "-lstdc++", "-lm"], check=True, env=env)
    return shared


class Segment:
    """Calls the compiled @segment with numpy inputs."""

    def __init__(self, shared_object, entry="txl_segment_forward"):
        self.lib = ctypes.CDLL(shared_object)
        self.entry = getattr(self.lib, entry)
        self.entry.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        self.entry.restype = None

    def __call__(self, inputs, result_shapes, result_dtypes=None,
                 scalar_result=None):
        """Returns one array per result shape, of the matching dtype in
        `result_dtypes` (float32 for every result when it is None). Array
        inputs keep their dtype, which must be the argument's element type;
        C-contiguous ones are passed without a copy, so a function that
        updates an argument in place updates that array. With
        `scalar_result` (a ctypes type, e.g. ctypes.c_double) the entry
        returns one scalar instead (txl-emit-packed-entry: through the
        pointer after the arguments'), and so does this call."""
        if result_dtypes is None:
            result_dtypes = [np.float32] * len(result_shapes)
        if len(result_dtypes) != len(result_shapes):
            raise ValueError("one dtype per result shape")
        keep = []
        pointers = []
        for value in inputs:
            if isinstance(value, np.float32):
                scalar = ctypes.c_float(float(value))
                keep.append(scalar)
                pointers.append(ctypes.cast(ctypes.byref(scalar), ctypes.c_void_p))
                continue
            if isinstance(value, (float, np.float64)):
                scalar = ctypes.c_double(float(value))
                keep.append(scalar)
                pointers.append(ctypes.cast(ctypes.byref(scalar), ctypes.c_void_p))
                continue
            if isinstance(value, (bool, np.bool_)):
                # An i1 argument is loaded as one byte.
                scalar = ctypes.c_bool(bool(value))
                keep.append(scalar)
                pointers.append(ctypes.cast(ctypes.byref(scalar), ctypes.c_void_p))
                continue
            if isinstance(value, (int, np.integer)):
                scalar = ctypes.c_int64(int(value))
                keep.append(scalar)
                pointers.append(ctypes.cast(ctypes.byref(scalar), ctypes.c_void_p))
                continue
            array = np.ascontiguousarray(value)
            desc = _descriptor(array)
            keep += [array, desc]
            pointers.append(ctypes.cast(ctypes.byref(desc), ctypes.c_void_p))
        results = [np.full(shape, np.nan, dtype=dtype)
                   for shape, dtype in zip(result_shapes, result_dtypes)]
        for array in results:
            desc = _descriptor(array)
            keep.append(desc)
            pointers.append(ctypes.cast(ctypes.byref(desc), ctypes.c_void_p))
        if scalar_result is not None:
            out = scalar_result(float("nan"))
            pointers.append(ctypes.cast(ctypes.byref(out), ctypes.c_void_p))
        packed = (ctypes.c_void_p * len(pointers))(*pointers)
        self.entry(packed)
        return out.value if scalar_result is not None else results


def run(mlir_path, inputs, result_shapes, result_dtypes=None):
    with tempfile.TemporaryDirectory() as workdir:
        return Segment(compile_module(mlir_path, workdir))(
            inputs, result_shapes, result_dtypes)
