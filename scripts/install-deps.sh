#!/usr/bin/env bash
#===- install-deps.sh - Install every dependency txlc needs (idempotent) --===#
#
# Debian 12 (bookworm) + bookworm-security, run as root (or with sudo).
# LLVM/MLIR 22 come from bookworm-security; everything else from bookworm.
# Python packages for lit and the reference tooling come from PyPI.
set -euo pipefail

PKGS=(
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22 libclang-rt-22-dev
  libopenmpi-dev openmpi-bin libtomlplusplus-dev libfmt-dev libgtest-dev libgmock-dev libopenblas-dev libcli11-dev nlohmann-json3-dev
  cmake ninja-build python3 python3-pip python3-numpy gnuplot-nox
  ocl-icd-libopencl1 opencl-c-headers spirv-tools libclblast1 libclblast-dev
)

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# lit drives the test suite; the llvm-22 tools ship FileCheck/not/count but not always lit itself.
if ! python3 -c "import lit" 2>/dev/null; then
  python3 -m pip install -q lit
fi
if ! python3 -c "import numpy" 2>/dev/null; then
  python3 -m pip install -q numpy
fi
# atheris: libFuzzer for Python, the fuzzer of txl-convert's readers
# (test/Fuzz/converter_fuzzer.py).
if ! python3 -c "import atheris" 2>/dev/null; then
  python3 -m pip install -q atheris
fi

# The OpenCL execution engine of the tests: the `opencl` target's kernels run
# on this CPU through SPIR-V. Debian's PoCL 3.1 has no SPIR-V, so it is
# Intel's CPU runtime from PyPI (intel-opencl-rt; its libimf/libsvml come in
# intel-cmplr-lib-rt, which it does not declare). Installed once under
# TXL_OPENCL_PREFIX; pip keeps the downloaded wheels in its cache. Pinned to
# the release the tests were last run with (a kernel that one release
# compiles, another may not). The
# wheel's own .icd names a placeholder path, so the ICD file the tests use
# (OCL_ICD_VENDORS=$prefix/vendors) names the library by its absolute path.
ocl_prefix=${TXL_OPENCL_PREFIX:-/opt/txlc/intel-opencl}
if [ ! -f "$ocl_prefix/lib/libintelocl.so" ]; then
  echo "install-deps: installing Intel's OpenCL CPU runtime into $ocl_prefix"
  $SUDO python3 -m pip install -q --root-user-action=ignore --prefix "$ocl_prefix" \
    intel-opencl-rt==2026.2.0 intel-cmplr-lib-rt==2026.2.0
fi
$SUDO mkdir -p "$ocl_prefix/vendors"
echo "$ocl_prefix/lib/libintelocl.so" | $SUDO tee "$ocl_prefix/vendors/intel-cpu.icd" >/dev/null
# cuobjdump (PyPI's nvidia-cuda-cuobjdump; the toolkit here has ptxas and
# fatbinary but not it): the tests list the cubins and PTX a --target=cuda
# executable embeds. nvdisasm (nvidia-cuda-nvdisasm), which cuobjdump -sass
# runs: the tests read kernels' machine code
# (test/Integration/gpu/sass_loops.py). Both pinned to the same release,
# installed once under TXL_CUDA_TOOLS_PREFIX, each with a stable link in
# its bin/ (the tests put it on PATH).
cuda_tools=${TXL_CUDA_TOOLS_PREFIX:-/opt/txlc/cuda-tools}
install_cuda_tool() { # TOOL PACKAGE
  [ -x "$cuda_tools/bin/$1" ] && return 0
  echo "install-deps: installing $1 into $cuda_tools"
  $SUDO python3 -m pip install -q --root-user-action=ignore --prefix "$cuda_tools" "$2"
  local found
  found=$(find "$cuda_tools" -type f -name "$1" | head -n 1)
  if [ -z "$found" ]; then
    echo "install-deps: $2 installed no $1" >&2
    exit 1
  fi
  $SUDO chmod +x "$found"
  $SUDO mkdir -p "$cuda_tools/bin"
  $SUDO ln -sf "$found" "$cuda_tools/bin/$1"
}
install_cuda_tool cuobjdump nvidia-cuda-cuobjdump==13.5.37
install_cuda_tool nvdisasm nvidia-cuda-nvdisasm==13.5.37
# oneMKL (PyPI's mkl, pinned): the CPU target's bf16 products
# (--precision=bf16; runtime/include/txl/rt/device/Bf16Gemm.h), its
# cblas_gemm_bf16bf16f32 running on AMX or AVX512-BF16 where the CPU has
# them. The libraries only (--no-deps: the runtime takes oneMKL's sequential
# layer, which needs neither Intel OpenMP nor TBB), installed once under
# /opt/txlc/mkl, where the runtime looks after the loader's path. Without
# it, bf16 products are emulated (rounded operands through OpenBLAS).
mkl_prefix=/opt/txlc/mkl
if [ ! -f "$mkl_prefix/lib/libmkl_rt.so.3" ]; then
  echo "install-deps: installing oneMKL into $mkl_prefix"
  $SUDO python3 -m pip install -q --root-user-action=ignore --no-deps --prefix "$mkl_prefix" \
    mkl==2026.2.1
fi
echo "install-deps: ok"
