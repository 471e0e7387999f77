#!/usr/bin/env bash
#===- fuzz.sh - Run the libFuzzer targets of the readers for a bounded time -===#
#
# Usage: scripts/fuzz.sh [--time SECONDS] [--build-dir DIR] [--work DIR]
#                        [TARGET...]
#
# Runs each target (default: all of test/Fuzz/CMakeLists.txt's, named
# without the txl-fuzz- prefix: npy safetensors checkpoint model-file
# corpus-word corpus-char corpus-lm1b; and converter, txl-convert's readers
# under atheris, test/Fuzz/converter_fuzzer.py) for SECONDS (default 60) of wall
# time, TXL_JOBS (default 2) targets at a time (each fuzzer is one process
# on one core), starting from its seeds (test/Fuzz/corpus/
# <target>, never written) and a working corpus that grows across runs
# (WORK/<target>, default <build-dir>/fuzz-work), with its dictionary.
# Inputs that crash go to WORK/artifacts/<target>/. Prints one line per
# target and a total; exits 1 when any target crashed. docs/fuzzing.md.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=60
build=build
work=""
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --time) seconds=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    -h|--help) sed -n 3,15p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  targets=(npy safetensors checkpoint model-file corpus-word corpus-char
           corpus-lm1b converter)
fi
work=${work:-$build/fuzz-work}
mkdir -p "$work"
cmake --build "$build" --target txl-fuzzers -j "${TXL_JOBS:-2}" >/dev/null

# Checks every target, then runs one: writes "runs rate units status" to
# WORK/<target>.result.
for t in "${targets[@]}"; do
  if { [ "$t" != converter ] && [ ! -x "$build/bin/txl-fuzz-$t" ]; } ||
     [ ! -d "test/Fuzz/corpus/$t" ]; then
    echo "fuzz.sh: no target '$t' ($build/bin/txl-fuzz-$t, test/Fuzz/corpus/$t)" >&2
    exit 2
  fi
done
run_target() {
  local t=$1 exe=("$build/bin/txl-fuzz-$1")
  # txl-convert's readers are Python: the atheris target.
  if [ "$t" = converter ]; then exe=(python3 test/Fuzz/converter_fuzzer.py); fi
  mkdir -p "$work/$t" "$work/artifacts/$t"
  local dict=()
  if [ -f "test/Fuzz/dict/$t.dict" ]; then dict=(-dict="test/Fuzz/dict/$t.dict"); fi
  local log="$work/$t.log" status=0
  # TMPDIR: the targets' scratch files (test/Fuzz/FuzzUtil.h) stay in WORK.
  TMPDIR="$work" "${exe[@]}" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/$t/" "${dict[@]}" \
    "$work/$t" "test/Fuzz/corpus/$t" >"$log" 2>&1 || status=$?
  local runs rate units
  runs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log")
  rate=$(awk '/stat::average_exec_per_sec:/ {print $2}' "$log")
  units=$(find "$work/$t" -type f | wc -l)
  echo "${runs:-?} ${rate:-?} $units $status" >"$work/$t.result"
}
jobs=${TXL_JOBS:-2}
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
  run_target "$t" &
  running=$((running + 1))
done
wait

total_runs=0
crashed=0
printf '%-12s %12s %9s %8s  %s\n' target executions exec/s corpus result
for t in "${targets[@]}"; do
  read -r runs rate units status <"$work/$t.result"
  result=ok
  if [ "$status" -ne 0 ]; then
    result="CRASH (status $status; $work/$t.log, $work/artifacts/$t/)"
    crashed=$((crashed + 1))
  fi
  if [ "$runs" != "?" ]; then total_runs=$((total_runs + runs)); fi
  printf '%-12s %12s %9s %8s  %s\n' "$t" "$runs" "$rate" "$units" "$result"
done
echo "fuzz: ${#targets[@]} targets, ${seconds} s each, $total_runs executions, $crashed crashed"
[ "$crashed" -eq 0 ]
