#!/usr/bin/env bash
#===- device_bundle.sh - Everything a lent GPU machine needs, as one archive -===#
#
# Usage: bench/gpu/device_bundle.sh [OUT_DIR]   (default .devrun, git-ignored)
#
# A lent GPU machine has the CUDA driver, cuBLAS and PyTorch but neither
# txlc's LLVM/MLIR nor ../shared. This compiles here every executable that
# bench/gpu/device_check.sh runs there (--target=cuda, default --gpu-arch,
# f32 and bf16), the attention kernels' PTX (f32, bf16) for bench_gpu.py --prebuilt,
# and packs them with the shared libraries they load (OpenBLAS), the
# runtime's device ABI library, ../shared's PTB data and reference cases,
# and a CPU run of ptb_small's first 20 updates (the step-20 comparison) into
# OUT_DIR/bundle.tar.xz. Carry OUT_DIR; on the machine run
# `bash bench/gpu/device_check.sh OUT_DIR`.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.devrun}
shared=../shared
txlc=build/bin/txlc
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$out" "$stage/bin" "$stage/lib" "$stage/gpu" "$stage/shared/data" \
  "$stage/shared/reference"

compile() { # NAME MODEL_FILE [txlc options...]
  local name=$1 toml=$2; shift 2
  echo "compile $name"
  "$txlc" "$toml" --target=cuda "$@" -o "$stage/bin/$name"
}
compile ptb_small_f32 models/ptb_small.toml
compile ptb_small_bf16 models/ptb_small.toml --precision=bf16
for c in "$shared"/reference/*/; do
  c=$(basename "$c")
  [ "$c" = ptb_small ] && continue
  compile "ref_$c" "$shared/reference/$c/model.toml"
  case $c in # the tensor-core kernel's cases (reference-bf16-opencl.test)
    rel_*) compile "ref_${c}_bf16" "$shared/reference/$c/model.toml" \
             --precision=bf16 --backward=false ;;
  esac
done
# bench_gpu.py --prebuilt: its executables and kernel image, named as it
# names them in its work directory.
python3 - "$stage/gpu/enwik8_base.toml" <<'PY'
import sys
sys.path.insert(0, "bench")
import bench
open(sys.argv[1], "w").write(bench.ENWIK8_TOML)
PY
python3 - "$stage/gpu/enwik8_train.toml" <<'PY'
import sys
sys.path.insert(0, "bench/gpu")
import bench_gpu
open(sys.argv[1], "w").write(bench_gpu.train_model_file(512, 512, 22))
PY
for p in f32 bf16; do
  "$txlc" "$stage/gpu/enwik8_base.toml" --target=cuda --precision=$p \
    --backward=false --gpu-arch=sm_90a -o "$stage/gpu/enwik8_base_cuda_$p"
  "$txlc" "$stage/gpu/enwik8_train.toml" --target=cuda --precision=$p \
    --gpu-arch=sm_90a -o "$stage/gpu/enwik8_train_cuda_$p"
  "$txlc" models/ptb_small.toml --target=cuda --precision=$p \
    --backward=false --gpu-arch=sm_90a -o "$stage/gpu/ptb_small_cuda_$p"
done
"$txlc" models/enwik8_base.toml --emit=txl-opt -o "$stage/gpu/enwik8_base.txl"
for p in f32 bf16; do
  stem="$stage/gpu/enwik8_base_attention$([ $p = f32 ] || echo _$p)"
  build/bin/txl-opt "$stage/gpu/enwik8_base.txl" \
    --txl-rel-attention-to-gpu=precision=$p -o "$stem.mlir"
  { build/bin/txl-translate --kernels-to-ptx --ptx-chip=sm_90a "$stem.mlir"
    printf '\0'; } > "$stem.sm_90a.ptx"
done

# The libraries the executables load that a CUDA image may lack.
for l in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0; do
  cp -L "/lib/x86_64-linux-gnu/$l" "$stage/lib/"
done
cp -L build/lib/libtxl_device.so "$stage/lib/"

cp -r "$shared/data/ptb" "$stage/shared/data/"
cp -r "$shared/reference/." "$stage/shared/reference/"

# ptb_small's first 20 updates on the CPU target, one thread (the device's
# dropout counters): the device's step-20 loss is compared with this.
"$txlc" models/ptb_small.toml -o "$stage/cpu_ptb_small"
"$stage/cpu_ptb_small" train --data "$shared/data/ptb" --work-dir "$stage/cpu20" \
  --max-step 20 --log-interval 10 --eval-interval 20 --max-eval-steps 4 \
  --threads 1 > /dev/null
find "$stage/cpu20" -type f ! -name metrics.jsonl -delete
rm "$stage/cpu_ptb_small"

tar -C "$stage" -cf - . | xz -T2 -6 > "$out/bundle.tar.xz"
ls -la "$out/bundle.tar.xz"
