#!/usr/bin/env bash
#===- test.sh - Install, build and run every txlc test -------------------===#
#
# Usage: scripts/test.sh [--sanitize[=address,undefined|thread]] [--fast]
#        scripts/test.sh --host-only
#        scripts/test.sh --all
#
# README command 2 (.ci/run calls it with --all). Without options: installs the
# dependencies, builds (build/), and runs the `check` target: lit tests of
# the dialect, passes and driver, GoogleTest unit tests, and end-to-end
# numerics against ../shared/reference; then every libFuzzer target of the
# readers for a bounded time (scripts/fuzz.sh, TXL_FUZZ_SECONDS each,
# default 60; 0 skips it; a crash fails the run).
#
# --sanitize (= address,undefined): the same suite on a build with
#   AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/: compiler,
#   runtime, tests and the executables txlc links); --fast runs its fast
#   half only: every test but the GPU targets' (test/Integration/gpu,
#   Driver/gpu-targets.test), the full compiles of the paper's models
#   (Driver/paper-models.test), ptb_small's long numeric runs
#   (Integration/train-ptb-small.test, 200 updates, and
#   Integration/ptb-small-eval.test) and the numeric comparisons whose
#   runtime paths the half's other tests run (attention types, the Al-Rfou
#   objective's gradients, fused vs decomposed, the reference cases but
#   rel_basic and rel_adaptive_div2, the converter's end-to-end runs, the
#   numerics of the generated CPU attention and output-layer kernels and
#   of the bf16 products: ASan sees neither generated code nor oneMKL),
#   and the tests of the compiled code's structure (entry parts,
#   --input-ir, the x86-64-v4 clones).
# --sanitize=thread: ThreadSanitizer on the runtime (build-tsan/, the
#   runtime and its unit tests only): the unit tests, then executables
#   compiled by build/'s txlc against that runtime, run with several
#   threads (test/sanitizers/tsan_executables.py). Needs build/.
# --host-only: the runtime and its unit tests built with the host backend
#   only (build-host/: -DTXL_ENABLE_CUDA=OFF -DTXL_ENABLE_OPENCL=OFF), the
#   GPU backends' CMake options off.
# --all (what .ci/run runs): the plain run, then --sanitize --fast, then
#   --sanitize=thread, then --host-only, then a table of each part's wall
#   time.
# Every part (install, build, lit, fuzzing, each sanitizer's build and run)
# prints "time: PART Mm SSs" when it ends, and each lit run its 15 slowest
# tests (from lit --time-tests).
# docs/sanitizers.md. Ends with the line "tests: N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=""
fast=0
host_only=0
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize="address,undefined" ;;
    --sanitize=*) sanitize="${arg#--sanitize=}" ;;
    --fast) fast=1 ;;
    --host-only) host_only=1 ;;
    --all)
      overall=0
      summary=$(mktemp)
      TXL_TIMES_FILE=$(mktemp); export TXL_TIMES_FILE
      all_start=$(date +%s)
      for mode in "" "--sanitize --fast" "--sanitize=thread" "--host-only"; do
        out=$(mktemp)
        set +e
        # shellcheck disable=SC2086
        bash "$0" $mode 2>&1 | tee "$out"
        status=${PIPESTATUS[0]}
        set -e
        tail -1 "$out" >> "$summary"
        rm -f "$out"
        if [ "$status" -ne 0 ]; then overall=1; fi
      done
      echo "times (all):"; sed 's/^time: /  /' "$TXL_TIMES_FILE"
      total=$(( $(date +%s) - all_start ))
      printf '  %-40s %3dm%02ds\n' total $((total / 60)) $((total % 60))
      echo "tests (all):"; sed 's/^/  /' "$summary"
      rm -f "$summary" "$TXL_TIMES_FILE"
      exit "$overall" ;;
    -h|--help) sed -n 3,43p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
jobs=${TXL_JOBS:-2}
# The tests --sanitize --fast leaves out (a lit --filter-out expression).
# Chosen by what AddressSanitizer adds (the runtime, the readers, the
# threads; docs/sanitizers.md): the GPU targets' kernels it cannot see into,
# the long numeric runs, and the numeric comparisons whose runtime paths
# (eval, run-segments, train, generate) other tests of the half run.
fast_skip='Integration/gpu/|Driver/gpu-targets|Driver/paper-models|Integration/train-ptb-small\.test|Integration/ptb-small-eval\.test'
fast_skip+='|Integration/attention-types-memory|Integration/alrfou-objective|Integration/fused-vs-decomposed'
fast_skip+='|Integration/reference-(?!rel_basic\.|rel_adaptive_div2\.)|Tools/txl-convert-reference|Tools/txl-convert-hf-generate'
# The generated kernels' numerics (the tiled CPU attention, forward and
# backward, and its memory bound; the output layer's kernel) and the bf16
# products' numerics against the reference cases: AddressSanitizer sees
# neither generated code nor oneMKL, the compiler paths they take run in
# the half's conversion tests, and the runtime's bf16 products in its unit
# test (Bf16GemmTest).
fast_skip+='|Integration/rel-attention-cpu|Integration/rel-attention-grad-cpu|Integration/attention-memory|Integration/bf16-cpu'
fast_skip+='|Integration/linear-nll-cpu'
# The compiled code's structure (entries cut into parts, IR resumed at each
# stage, the x86-64-v4 clones): compiles through the instrumented compiler,
# whose executables' runtime paths the half's other tests run.
fast_skip+='|Integration/entry-parts|Driver/entry-structure|Driver/input-ir|Integration/cpu-variants'
lit=/usr/lib/llvm-22/bin/lit

# Parts: `part_start`, then `part_end NAME` prints and records (for --all's
# table) the wall time since.
part_start() { part_t0=$(date +%s); }
part_end() {
  local s=$(( $(date +%s) - part_t0 ))
  local line
  line=$(printf 'time: %-40s %3dm%02ds' "$1" $((s / 60)) $((s % 60)))
  echo "$line"
  if [ -n "${TXL_TIMES_FILE:-}" ]; then echo "$line" >> "$TXL_TIMES_FILE"; fi
}
# The 15 slowest tests of the lit run whose output is in LOG (lit
# --time-tests lists them, slowest first, under "Slowest Tests:"; lit's
# .lit_test_times.txt would also hold tests this run did not run).
slowest() {
  echo "slowest tests ($1):"
  awk '/^Slowest Tests:/ {on = 1; next}
       on && /^[0-9.]+s: / {printf "  %s\n", $0; if (++n == 15) exit; next}
       on && n > 0 {exit}' "$2"
}
run_label="${sanitize:-plain}"
if [ "$fast" -eq 1 ]; then run_label="$run_label, fast half"; fi
if [ "$host_only" -eq 1 ]; then run_label="host backend only"; fi

part_start
bash scripts/install-deps.sh
part_end "install ($run_label)"

# lit's summary ("  Passed: 71 (100.00%)", "  Failed:  3 (4.23%)", ...) to
# "passed failed" counts.
count() {
  local passed failed
  passed=$(awk -F: '/^ *Passed *:/ {s += $2} END {print s + 0}' "$1")
  failed=$(awk -F: '/^ *(Failed|Unresolved|Timed Out|Unexpectedly Passed) *:/ {s += $2} END {print s + 0}' "$1")
  echo "$passed $failed"
}

configure() { # BUILD_DIR [cmake args...]
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -G Ninja -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 "$@"
  fi
}

log=$(mktemp)
set +e
if [ "$host_only" -eq 1 ]; then
  part_start
  configure build-host -DTXL_ENABLE_CUDA=OFF -DTXL_ENABLE_OPENCL=OFF
  cmake --build build-host --target txl_runtime txl_runtime_main \
    TxlRuntimeTests -j "$jobs" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  part_end "build (host backend only)"
  if [ "$status" -eq 0 ]; then
    part_start
    "$lit" -sv build-host/test/Unit 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    part_end "unit tests (host backend only)"
  fi
  sanitize=skip
fi
case "$sanitize" in
  skip) ;;
  "")
    part_start
    bash scripts/build.sh build
    part_end "build"
    part_start
    "$lit" -sv --time-tests build/test build/test/Unit 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    part_end "lit"
    slowest build "$log"
    ;;
  address,undefined)
    part_start
    configure build-asan -DTXL_SANITIZE=address,undefined
    cmake --build build-asan -j "$jobs" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    part_end "build (ASan+UBSan)"
    if [ "$status" -eq 0 ]; then
      part_start
      if [ "$fast" -eq 1 ]; then
        "$lit" -sv --time-tests --filter-out "$fast_skip" build-asan/test build-asan/test/Unit
      else
        "$lit" -sv --time-tests build-asan/test build-asan/test/Unit
      fi 2>&1 | tee "$log"
      status=${PIPESTATUS[0]}
      part_end "lit (ASan+UBSan$([ "$fast" -eq 1 ] && echo ", fast half"))"
      slowest build-asan "$log"
    fi
    ;;
  thread)
    part_start
    configure build-tsan -DTXL_SANITIZE=thread
    { bash scripts/build.sh build &&
      cmake --build build-tsan --target txl_runtime txl_runtime_main \
        TxlRuntimeTests -j "$jobs"; } 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    part_end "build (TSan)"
    if [ "$status" -eq 0 ]; then
      part_start
      { "$lit" -sv build-tsan/test/Unit &&
        python3 test/sanitizers/tsan_executables.py build/bin/txlc \
          build-tsan/lib; } 2>&1 | tee "$log"
      status=${PIPESTATUS[0]}
      part_end "unit tests and executables (TSan)"
    fi
    ;;
  *) echo "test.sh: --sanitize must be address,undefined or thread" >&2; exit 2 ;;
esac
set -e
read -r passed failed < <(count "$log")
rm -f "$log"
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi

fuzz_seconds=${TXL_FUZZ_SECONDS:-60}
if [ -z "$sanitize" ] && [ "$host_only" -eq 0 ] && [ "$fuzz_seconds" -gt 0 ]; then
  set +e
  # A fresh working corpus: the run starts from the committed seeds only.
  fuzz_work=$(mktemp -d)
  part_start
  bash scripts/fuzz.sh --time "$fuzz_seconds" --work "$fuzz_work"
  fuzz_status=$?
  part_end "fuzzing"
  set -e
  if [ "$fuzz_status" -ne 0 ]; then
    echo "fuzz: crash inputs kept in $fuzz_work/artifacts"
    failed=$((failed + 1)); status=1
  else
    rm -rf "$fuzz_work"
  fi
fi
if [ "$passed" -eq 0 ]; then
  echo "tests: no test ran"; exit 1
fi
label=""
if [ "$host_only" -eq 1 ]; then
  label=" (host backend only)"
elif [ -n "$sanitize" ]; then
  half=""
  if [ "$fast" -eq 1 ]; then half=", fast half"; fi
  label=" (sanitize=$sanitize$half)"
fi
echo "tests$label: $passed passed, $failed failed"
exit "$status"
