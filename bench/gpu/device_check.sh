#!/usr/bin/env bash
#===- device_check.sh - The GPU checks and benchmarks on a lent machine ----===#
#
# Usage: bash bench/gpu/device_check.sh BUNDLE_DIR [OUT_DIR] [SECONDS]
#
# Runs on a machine with an NVIDIA GPU, its driver and PyTorch, from the
# archive bench/gpu/device_bundle.sh made (no txlc needed there), within
# SECONDS (default 560; each step is cut off at what is left):
#   1. ptb_small's trained checkpoint: `eval` valid and test against the
#      official eval.json (1e-4 relative; ptb-small-eval-cuda.test), and
#      the bf16 executable's perplexity beside it; the eval's run counters
#      (TXL_PROFILE=counts: no host sync or allocation and the key/value
#      cache's 10 window moves in a steady segment, as
#      run-counts-opencl.test holds on OpenCL);
#   2. every reference case of ../shared/reference: run-segments NLL,
#      memory and gradient against the official implementation
#      (reference-cuda.test's tolerances), then the bf16 kernel's cases
#      (reference-bf16-opencl.test's);
#   3. ptb_small trained from scratch with the model file's [train]
#      settings (8000 updates, as the official run): its step-20 loss
#      against the CPU target's (1e-4), its train loss at 8000 against the
#      official log (5%), then eval of the best checkpoint (valid, test);
#   4. bench_gpu.py attention, enwik8, train and ptb (--prebuilt);
#   5. the same training at --precision=bf16.
# Everything printed goes to OUT_DIR/log.txt; the training logs and the
# benchmark tables to OUT_DIR too.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
bundle=$1
out=${2:-${OUT:-/tmp/txl_device_out}}
budget=${3:-560}
start=$(date +%s)
mkdir -p "$out"
exec > >(tee -a "$out/log.txt") 2>&1

w=/tmp/txl_device
rm -rf "$w" && mkdir -p "$w"
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
  "$bundle/bundle.tar.xz" "$w" || exit 1
cublas=$(ls /usr/local/cuda/lib64/libcublas.so.1[23] 2>/dev/null | head -1)
if [ -z "$cublas" ]; then
  cublas=$(find / -xdev -name 'libcublas.so.1[23]' 2>/dev/null | head -1)
fi
export LD_LIBRARY_PATH="$w/lib:$(dirname "${cublas:-/}"):${LD_LIBRARY_PATH:-}"
export TXL_SHARED=$w/shared PYTHONUNBUFFERED=1
S=$w/shared
B=$w/bin
compare="python3 $root/test/Integration/compare.py"  # unquoted: two words
echo "cuBLAS: ${cublas:-not found}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
  --format=csv 2>&1

# step NAME MAX_SECONDS COMMAND...: runs COMMAND cut off at MAX_SECONDS or
# at what is left of the budget, and reports its status and time.
step() {
  local name=$1 max=$2; shift 2
  local left=$((budget - ($(date +%s) - start) - 5))
  if [ "$left" -lt 5 ]; then echo "=== $name: skipped, no time left"; return; fi
  [ "$max" -gt "$left" ] && max=$left
  echo "=== $name (at most ${max} s)"
  local t0 rc
  t0=$(date +%s%N)
  # A new bash for the shell functions below (exported), so that timeout
  # can stop the whole step.
  timeout "$max" bash -c '"$@"' step "$@"
  rc=$?
  echo "=== $name: exit $rc, $((($(date +%s%N) - t0) / 1000000)) ms"
}

eval_ptb() { # EXE SPLIT LABEL
  "$1" eval --data "$S/data/ptb" --split "$2" \
    --checkpoint "$S/reference/ptb_small/model.safetensors" --batch-size 10 \
    --tgt-len 64 --mem-len 64 --clamp-len -1 --same-length=false --json \
    > "$w/$3.txt" && tail -1 "$w/$3.txt"
}
evals() {
  eval_ptb "$B/ptb_small_f32" valid f32_valid &&
    $compare eval "$w/f32_valid.txt" "$S/reference/ptb_small/eval.json" \
      valid_default --rtol 1e-4
  eval_ptb "$B/ptb_small_f32" test f32_test &&
    $compare eval "$w/f32_test.txt" "$S/reference/ptb_small/eval.json" \
      test_default --rtol 1e-4
  eval_ptb "$B/ptb_small_bf16" valid bf16_valid
}

references() { # SUFFIX (empty or _bf16)
  local c R exe
  for R in "$S"/reference/*/; do
    c=$(basename "$R")
    exe=$B/ref_$c$1
    [ -x "$exe" ] || continue
    echo "-- $c$1"
    if [ -z "$1" ]; then
      "$exe" run-segments --checkpoint "$R/weights.safetensors" \
        --inputs "$R/data.npy" --targets "$R/target.npy" \
        --dump-nll "$w/$c.nll.npy" --dump-mems "$w/$c.mems.safetensors" \
        --grad-segment 1 --dump-grads "$w/$c.grads.safetensors" > /dev/null
      $compare nll "$w/$c.nll.npy" "$R/nll.npy" --atol 1e-5
      [ -e "$R/mems.safetensors" ] &&
        $compare mems "$w/$c.mems.safetensors" "$R/mems.safetensors" \
          --atol 1e-5 --rtol 1e-5
      $compare grads "$w/$c.grads.safetensors" "$R/grads.safetensors" \
        --rtol 1e-5
    else
      "$exe" run-segments --checkpoint "$R/weights.safetensors" \
        --inputs "$R/data.npy" --targets "$R/target.npy" \
        --dump-nll "$w/$c.nll16.npy" --dump-mems "$w/$c.mems16.safetensors" \
        > /dev/null
      $compare nll "$w/$c.nll16.npy" "$R/nll.npy" --atol 0.05
      $compare mems "$w/$c.mems16.safetensors" "$R/mems.safetensors" --atol 0.05
    fi
  done
}

train() { # PRECISION
  local d=$w/train_$1
  # Logged every 20 updates for the step-20 record; no gnuplot there.
  "$B/ptb_small_$1" train --data "$S/data/ptb" --work-dir "$d" \
    --log-interval 20
  if [ "$1" = f32 ]; then
    python3 "$root/test/Integration/gpu/train_targets.py" close "$d" \
      "$w/cpu20" 20 1e-4
  fi
  for split in valid test; do
    "$B/ptb_small_$1" eval --data "$S/data/ptb" --split "$split" \
      --checkpoint "$d/best.safetensors" --json | tail -1
  done
  python3 "$root/test/Integration/train_check.py" "$d" \
    "$S/reference/ptb_small/train_log.txt" 8000 -
}

counts() { # issue 51's run counters on CUDA: no sync, no allocation, no serial launch
  TXL_PROFILE=counts "$B/ptb_small_f32" eval --data "$S/data/ptb" \
    --split valid --checkpoint "$S/reference/ptb_small/model.safetensors" \
    --batch-size 10 --tgt-len 64 --mem-len 64 2> "$out/counts.log" &&
    python3 "$root/test/Integration/gpu/run_counts.py" "$out/counts.log" \
      --steady 3 --max syncs=0,allocations=0,frees=0,device_copies=10,serial_launches=0
}

profile() { # 100 updates of ptb_small with TXL_PROFILE's table
  TXL_PROFILE=1 "$B/ptb_small_f32" train --data "$S/data/ptb" \
    --work-dir "$w/profile" --max-step 100 --eval-interval 1000 \
    2>&1 | grep -v "^| epoch"
}

bench() { # WHAT [bench_gpu.py options]
  local what=$1; shift
  python3 "$root/bench/gpu/bench_gpu.py" "$what" --prebuilt --workdir "$w/gpu" \
    --device-lib "$w/lib/libtxl_device.so" --gpu-arch sm_90a --repeat 2 \
    --precision f32,bf16 --json "$out/bench_$what.json" "$@"
}

keep_training() {
  tar -C "$w" -czf "$out/train.tar.gz" --exclude='*.safetensors' \
    $(cd "$w" && ls -d train_* 2>/dev/null) 2>/dev/null
}

export w S B compare root out
export -f eval_ptb evals counts references train bench profile

# TXL_DEVICE_STEPS: the steps to run (default all, in this order).
steps=${TXL_DEVICE_STEPS:-"evals counts references references_bf16 train_f32 attention attention_eval enwik8 train_enwik8 train_bf16 ptb profile"}
for s in $steps; do
  case $s in
    evals) step "eval ptb_small" 60 evals ;;
    counts) step "run counts ptb_small eval" 30 counts ;;
    references) step "reference cases f32" 90 references "" ;;
    references_bf16) step "reference cases bf16" 60 references _bf16 ;;
    train_f32) step "train ptb_small f32" 200 train f32; keep_training ;;
    train_bf16) step "train ptb_small bf16" 200 train bf16; keep_training ;;
    attention) step "bench attention" 40 bench attention ;;
    # The paper's enwik8 evaluation shape: the kernel unsplit and in the
    # key parts the runtime chooses for this GPU.
    attention_eval) step "bench attention 80/2100" 40 bench attention \
      --attention-shape 80,2100,4 --json "$out/bench_attention_eval.json" ;;
    enwik8) step "bench enwik8" 120 bench enwik8 ${TXL_BENCH_OPTIONS:-} ;;
    # enwik8-base training (run_enwik8_base.sh's 512/512, batch 22) against
    # PyTorch eager, AMP and compile; the attention's forward + backward.
    train_enwik8) step "bench train enwik8" 240 bench train \
      ${TXL_BENCH_OPTIONS:-} ;;
    ptb) step "bench ptb" 90 bench ptb ${TXL_BENCH_OPTIONS:-} ;;
    profile) step "profile ptb_small f32" 30 profile ;;
    *) echo "device_check: unknown step $s" ;;
  esac
done
echo "device_check: done in $(($(date +%s) - start)) s"
