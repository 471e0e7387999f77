#!/usr/bin/env bash
#===- build.sh - Configure and build txlc (Release, clang-22, Ninja) -----===#
# Usage: scripts/build.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
JOBS=${TXL_JOBS:-2}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22
fi
cmake --build "$BUILD_DIR" -j "$JOBS"
