#!/bin/sh
# Builds every reference case of ../shared/reference (attn_type 0 to 3) for
# one GPU target and runs it from an empty memory (run-segments), then
# compares the per-token NLL (1e-5 absolute), every memory tensor (1e-5
# absolute + 1e-5 relative; the cases without memory have none) and the
# gradient of segment 1's mean NLL (the generated
# backward segment, --grad-segment 1: 1e-5 relative norm per parameter)
# with the official implementation's. Prints, per case, its
# name, the executable's stderr (the device and device-memory lines;
# not the BLAS kernel warning nor the counters), whether the device-memory check's need covers the peak the run measured,
# compare.py's verdicts, and the run's serial launches (TXL_PROFILE=counts:
# launches of a generic kernel whose work-items each walk more than 64 loop
# steps over device memory on fewer than 132 workgroups, txl/device.h);
# stops at the first failure.
#
# usage: reference_cases.sh TARGET SHARED_DIR COMPARE_PY OUT_DIR
set -eu
target=$1 shared=$2 compare=$3 out=$4
for c in rel_basic rel_basic_smallinit rel_grow_same_length_clamp_prelnorm \
         rel_untied rel_adaptive_div2 rel_adaptive_proj_div1 shaw_attn1 \
         vaswani_attn2_nomem alrfou_attn3_nomem; do
  R=$shared/reference/$c
  txlc "$R/model.toml" --target="$target" -o "$out/$c"
  TXL_PROFILE=counts "$out/$c" run-segments --checkpoint "$R/weights.safetensors" \
    --inputs "$R/data.npy" --targets "$R/target.npy" \
    --dump-nll "$out/$c.nll.npy" --dump-mems "$out/$c.mems.safetensors" \
    --grad-segment 1 --dump-grads "$out/$c.grads.safetensors" \
    > "$out/$c.out" 2> "$out/$c.err"
  echo "$c"
  # Without the BLAS warning a forced generic kernel prints
  # (OPENBLAS_CORETYPE=Prescott, the slow-machine emulation of issue 47;
  # Driver/native-executable.test checks that warning).
  grep -v -e '^[^ ]*: warning: OpenBLAS runs its ' -e '^counts: ' "$out/$c.err" || true
  need=$(sed -n 's/.*the run needs [0-9.]* MiB (\([0-9]*\) bytes).*/\1/p' "$out/$c.err")
  peak=$(sed -n 's/.*peak [0-9.]* MiB (\([0-9]*\) bytes).*/\1/p' "$out/$c.err")
  if [ -n "$need" ] && [ -n "$peak" ] && [ "$need" -ge "$peak" ]; then
    echo "memory: the need covers the peak"
  else
    echo "memory: need '$need' bytes, peak '$peak' bytes: FAIL"
  fi
  python3 "$compare" nll "$out/$c.nll.npy" "$R/nll.npy" --atol 1e-5
  if [ -e "$R/mems.safetensors" ]; then
    python3 "$compare" mems "$out/$c.mems.safetensors" "$R/mems.safetensors" \
      --atol 1e-5 --rtol 1e-5
  fi
  python3 "$compare" grads "$out/$c.grads.safetensors" "$R/grads.safetensors" \
    --rtol 1e-5
  sed -n 's/^counts: segment .*, \([0-9]*\) serial launches,.*$/\1/p' "$out/$c.err" |
    awk '{ n += $1 } END { print "serial launches: " n + 0 " in " NR " segments" }'
done
