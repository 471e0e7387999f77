#!/usr/bin/env bash
# Create the benchmark's Python environment (PyTorch eager baseline).
# Benchmark only: nothing in CI needs it.  Usage: bench/setup_venv.sh [VENV_DIR]
#
# PyPI has no CPU-only torch wheel for Linux x86-64 (the CPU wheels live on
# download.pytorch.org, which may be unreachable).  The PyPI wheel cannot be
# installed with --no-deps: libtorch_cuda.so / libtorch_python.so link
# libcufile, libcusparseLt, libnvshmem_host, libcudart, libcublas, libcudnn ...
# and `import torch` fails ("libcufile.so.0: cannot open shared object file").
# So the wheel is installed with its nvidia-* dependencies (~4.9 GB in the
# venv; about 40 s from PyPI here).  No GPU is used: torch.cuda.is_available()
# is False and everything runs on the CPU (MKL + oneDNN).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${1:-$here/../../bench-scratch/venv}"
torch_version="${TORCH_VERSION:-2.15.0}"

python3 -m venv "$venv"
"$venv/bin/pip" install --upgrade pip
"$venv/bin/pip" install --no-cache-dir "torch==$torch_version" numpy safetensors
"$venv/bin/python" -c "import torch; print('torch', torch.__version__, 'cuda available:', torch.cuda.is_available())"
echo "now run: $venv/bin/python $here/check_reference.py && $venv/bin/python $here/bench.py all"
