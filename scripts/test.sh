#!/usr/bin/env bash
#===- test.sh - Install, build and run every txlc test -------------------===#
#
# README command 2 (and what .ci/run calls): installs the dependencies,
# builds, and runs the `check` target: lit tests of the dialect, passes and
# driver, GoogleTest unit tests, and end-to-end numerics against
# ../shared/reference; then every libFuzzer target of the readers for a
# bounded time (scripts/fuzz.sh, TXL_FUZZ_SECONDS each, default 60; 0 skips
# it). Ends with the line "fuzz: ..." and then "tests: N passed, N failed";
# a crash found by the fuzzing fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build
log=$(mktemp)
set +e
cmake --build build --target check -j "${TXL_JOBS:-2}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# lit's summary: "  Passed: 71 (100.00%)", "  Failed:  3 (4.23%)", ...
passed=$(awk -F: '/^ *Passed *:/ {s += $2} END {print s + 0}' "$log")
failed=$(awk -F: '/^ *(Failed|Unresolved|Timed Out|Unexpectedly Passed) *:/ {s += $2} END {print s + 0}' "$log")
rm -f "$log"
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
fuzz_seconds=${TXL_FUZZ_SECONDS:-60}
if [ "$fuzz_seconds" -gt 0 ]; then
  set +e
  # A fresh working corpus: the run starts from the committed seeds only.
  fuzz_work=$(mktemp -d)
  bash scripts/fuzz.sh --time "$fuzz_seconds" --work "$fuzz_work"
  fuzz_status=$?
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
echo "tests: $passed passed, $failed failed"
exit "$status"
