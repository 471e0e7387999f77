# -*- Python -*-
# lit configuration for txlc: lit tests of the dialect, passes and driver,
# end-to-end numerics against ../shared/reference, and GoogleTest binaries
# (test/Unit) run from the same `check` target.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "TXL"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".toml.test"]
config.excludes = ["Unit", "CMakeLists.txt", "Inputs", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.txl_obj_root, "test")

# The shared reference data sits next to the checkout; missing data must fail
# the numeric tests, never skip them.
config.shared_dir = os.path.abspath(os.path.join(config.txl_src_root, "..", "shared"))
config.substitutions.append(("%shared", config.shared_dir))
config.substitutions.append(("%txl_src", config.txl_src_root))
config.substitutions.append(("%txl_lib", config.txl_lib_dir))
# The C++ compiler of the build (tests that compile a runtime source alone).
config.substitutions.append(("%cxx", config.txl_cxx))
# Sanitizer builds (TXL_SANITIZE): fatal reports, and Python runs with the
# sanitizer runtime preloaded.
import sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "sanitizers"))
import lit_sanitizers
config.substitutions.append(
    ("%python", lit_sanitizers.configure(config, config.txl_sanitize)))

# The readers' libFuzzer targets: the plain build's (test/Fuzz), which
# carry AddressSanitizer of their own; the sanitizer builds leave them out.
if getattr(config, "txl_fuzzers", "ON") == "ON":
    config.available_features.add("fuzzers")

config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
llvm_config.use_default_substitutions()
# txl-opt and txlc are found on PATH (the build's bin/ first) rather than by
# substitution, which would also rewrite `--emit=txl-opt`.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.txl_tools_dir, append_path=True)
# `txlc` is test/tools/txlc, ahead of the build's: the build's txlc, with the
# executables it writes shared between the tests of this lit run (the cache
# is emptied when lit starts; what it serves and what it never does is in
# that file). Set TXL_TEST_COMPILE_CACHE to an empty value to turn it off.
llvm_config.with_environment(
    "PATH", os.path.join(config.txl_src_root, "test", "tools"),
    append_path=True)
config.environment["TXL_TEST_TXLC"] = os.path.join(config.txl_tools_dir, "txlc")
# The wrapper's --cpu-vector-bits=256 on CPUs without AVX-512 (its file
# comment); TXL_TEST_ONE_CPU_WIDTH=0 turns it off.
if "TXL_TEST_ONE_CPU_WIDTH" in os.environ:
    config.environment["TXL_TEST_ONE_CPU_WIDTH"] = os.environ["TXL_TEST_ONE_CPU_WIDTH"]
if os.environ.get("TXL_TEST_COMPILE_CACHE", None) == "":
    config.environment["TXL_TEST_COMPILE_CACHE"] = ""
else:
    config.compile_cache = os.path.join(config.test_exec_root, "compile-cache")
    shutil.rmtree(config.compile_cache, ignore_errors=True)
    config.environment["TXL_TEST_COMPILE_CACHE"] = config.compile_cache

# OPENBLAS_CORETYPE reaches the tests when set (lit passes only the
# variables it knows), so that a run can emulate a CPU whose BLAS falls back
# to other kernels: `OPENBLAS_CORETYPE=Prescott bash .ci/run` runs every
# BLAS product of the suite on the SSE3 kernels Debian's OpenBLAS 0.3.21
# falls back to on CPUs newer than it (issue #47). The executables then
# keep those kernels and warn once per start (CpuBlas.cpp).
if "OPENBLAS_CORETYPE" in os.environ:
    config.environment["OPENBLAS_CORETYPE"] = os.environ["OPENBLAS_CORETYPE"]

# CPUs with AVX512-BF16 run the runtime's own bf16 product
# (runtime/src/device/host/Bf16Dot.cpp); the tests of it need one.
with open("/proc/cpuinfo") as cpuinfo:
    if "avx512_bf16" in cpuinfo.read().split():
        config.available_features.add("avx512bf16")

# The GPU kernels' numerics run on this CPU through SPIR-V and Intel's OpenCL
# CPU runtime, which scripts/install-deps.sh installs with an ICD file in
# this folder. Missing, the tests must fail, never skip.
config.opencl_vendors = os.environ.get(
    "TXL_OPENCL_VENDORS", "/opt/txlc/intel-opencl/vendors")
if not os.path.isfile(os.path.join(config.opencl_vendors, "intel-cpu.icd")):
    lit_config.fatal("no OpenCL CPU runtime in %s: run scripts/install-deps.sh"
                     % config.opencl_vendors)
config.environment["OCL_ICD_VENDORS"] = config.opencl_vendors
# The tests share one OpenCL program cache (ProgramCache.h), emptied when
# lit starts: each kernel is built from SPIR-V by the first run in this lit
# run that launches it, and loaded from the cache by the later ones, in any
# test whose image has the same kernel.
# Integration/gpu/program-cache.test checks both paths on a cache of its
# own.
config.opencl_cache = os.path.join(config.test_exec_root, "opencl-cache")
shutil.rmtree(config.opencl_cache, ignore_errors=True)
config.environment["TXL_OPENCL_CACHE_DIR"] = config.opencl_cache
# The OpenCL runs of the suite (the kernel-numerics harnesses and the
# executables) have the driver build their kernels without its optimizer
# (clBuildProgram's -cl-opt-disable, TXL_OPENCL_BUILD_OPTIONS): most of them
# run a small model for a few segments or updates, so their time goes to
# Intel's compiler building each kernel they launch, and the optimizer is
# most of that (on an AMD Zen 3, cold program cache: rel_untied at
# --precision=bf16, one forward run, 23 s to 3.6 s with the same NLL;
# train-opencl.test's dropatt model, 20 f32 updates, 22 s to 9 s). Intel's vectorizer, which makes the subgroups,
# must stay on for it (CL_CONFIG_CPU_O0_VECTORIZATION: without it a
# subgroup is one work-item and the shuffles of the tensor-core layouts
# read the wrong lanes). The runs whose time goes to running the kernels
# (ptb_small's whole splits) keep the optimized build: they are prefixed
# %opencl_opt (the options are part of the program cache's key: the two
# builds share no entry, so a test keeps one executable's runs on one of
# them where it can). Integration/gpu/program-cache.test checks that the
# options are part of the key, and rel-attention-opencl.test runs a
# tensor-core kernel built by the optimizer (txl-emulate-mma works around
# it).
config.environment["CL_CONFIG_CPU_O0_VECTORIZATION"] = "True"
config.environment["TXL_OPENCL_BUILD_OPTIONS"] = "-cl-opt-disable"
config.substitutions.append(("%opencl_opt", "env TXL_OPENCL_BUILD_OPTIONS="))
# CLBlast builds its kernels from source in every process (3 to 5 s of each
# OpenCL executable's run on Intel's CPU runtime, which has no driver cache
# as a GPU's has): test/tools/cl_program_cache.c, preloaded, keeps them for
# the tests of this lit run (emptied when lit starts). The sanitizer builds
# do not build it (their halves run no OpenCL executable).
if not config.txl_sanitize:
    config.cl_program_cache_lib = os.path.join(
        config.txl_lib_dir, "libtxl_test_cl_program_cache.so")
    if not os.path.isfile(config.cl_program_cache_lib):
        lit_config.fatal("no %s: build the check target's dependencies"
                         % config.cl_program_cache_lib)
    config.environment["LD_PRELOAD"] = config.cl_program_cache_lib
    config.available_features.add("cl-program-cache")
    config.clblast_cache = os.path.join(config.test_exec_root, "clblast-cache")
    shutil.rmtree(config.clblast_cache, ignore_errors=True)
    os.makedirs(config.clblast_cache)
    config.environment["TXL_TEST_CL_CACHE"] = config.clblast_cache
config.substitutions.append(("%models", os.path.join(config.txl_src_root, "models")))

# Execution tests of lowered MLIR (mlir-runner): the BLAS the runtime links
# (the first library of CMake's BLAS_LIBRARIES) and MLIR's printF32.
config.substitutions.append(
    ("%blas_lib", config.blas_libraries.split(";")[0]))
config.substitutions.append(
    ("%mlir_c_runner_utils",
     os.path.join(config.llvm_lib_dir, "libmlir_c_runner_utils.so")))

# ptxas of the CUDA toolkit checks the CUDA target's PTX (no GPU needed).
config.ptxas = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas")
if not os.access(config.ptxas, os.X_OK):
    lit_config.fatal("no ptxas at %s (set CUDA_HOME)" % config.ptxas)
config.substitutions.append(("%ptxas", config.ptxas))
config.cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
config.substitutions.append(("%cuda_home", config.cuda_home))

# cuobjdump lists what a --target=cuda executable embeds (scripts/
# install-deps.sh installs it from PyPI).
config.cuobjdump = os.environ.get(
    "TXL_CUOBJDUMP", "/opt/txlc/cuda-tools/bin/cuobjdump")
if not os.access(config.cuobjdump, os.X_OK):
    lit_config.fatal("no cuobjdump at %s (run scripts/install-deps.sh or set "
                     "TXL_CUOBJDUMP)" % config.cuobjdump)
config.substitutions.append(("%cuobjdump", config.cuobjdump))
# cuobjdump -sass runs nvdisasm from PATH: install-deps.sh links it beside
# cuobjdump.
_nvdisasm = os.path.join(os.path.dirname(config.cuobjdump), "nvdisasm")
if not os.access(_nvdisasm, os.X_OK):
    lit_config.fatal("no nvdisasm at %s (run scripts/install-deps.sh)" % _nvdisasm)
llvm_config.with_environment("PATH", os.path.dirname(config.cuobjdump),
                             append_path=True)


def _cuda_device_count():
    """The CUDA devices a driver that loads and initializes sees (0 without
    one): with one, the tests marked `REQUIRES: cuda-device` run, with two
    or more also those marked `REQUIRES: cuda-multi-device` (data-parallel
    training on NCCL); otherwise lit reports them as unsupported."""
    import ctypes
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    count = ctypes.c_int(0)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


config.cuda_devices = _cuda_device_count()
if config.cuda_devices >= 1:
    config.available_features.add("cuda-device")
if config.cuda_devices >= 2:
    config.available_features.add("cuda-multi-device")

# Data-parallel training (Integration/train-data-parallel*.test) runs under
# Open MPI's mpirun, which scripts/install-deps.sh installs (openmpi-bin).
# Missing, the tests must fail, never skip. CI runs as root, which mpirun
# refuses unless told otherwise.
config.mpirun = shutil.which("mpirun")
if not config.mpirun:
    lit_config.fatal("no mpirun on PATH: run scripts/install-deps.sh")
config.mpirun_command = config.mpirun + " --oversubscribe --bind-to none"
# AddressSanitizer builds: no leak check in the ranks. Open MPI dlcloses its
# components in MPI_Finalize, so what they keep for the process's lifetime
# is reported from unknown modules, which no suppression can name; every
# single-process test still checks the runtime's own leaks.
if "ASAN_OPTIONS" in config.environment:
    config.mpirun_command += " -x ASAN_OPTIONS=" + config.environment[
        "ASAN_OPTIONS"].replace("detect_leaks=1", "detect_leaks=0")
config.substitutions.append(("%mpirun", config.mpirun_command))
config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
# Ranks on one machine talk through shared memory and loopback TCP.
config.environment["OMPI_MCA_btl"] = "self,vader,tcp"
config.environment["OMPI_MCA_btl_tcp_if_include"] = "lo"
config.environment["OMPI_MCA_oob_tcp_if_include"] = "lo"
