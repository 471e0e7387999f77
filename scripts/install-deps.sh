#!/usr/bin/env bash
#===- install-deps.sh - Install every dependency txlc needs (idempotent) --===#
#
# Debian 12 (bookworm) + bookworm-security, run as root (or with sudo).
# LLVM/MLIR 22 come from bookworm-security; everything else from bookworm.
# Python packages for lit and the reference tooling come from PyPI.
set -euo pipefail

PKGS=(
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22
  libtomlplusplus-dev libfmt-dev libgtest-dev libgmock-dev libopenblas-dev libcli11-dev nlohmann-json3-dev
  cmake ninja-build python3 python3-pip python3-numpy gnuplot-nox
  ocl-icd-libopencl1
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
echo "install-deps: ok"
