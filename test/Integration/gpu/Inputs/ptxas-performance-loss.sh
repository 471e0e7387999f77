#!/bin/sh
# ptxas-budgets.test's negative control: runs the real ptxas ($REAL_PTXAS)
# with the arguments given, then prints the line ptxas 13 printed for
# lm1b_large's rel_attention_bf16_d80 at sm_90a until its products skipped
# the zero-padded columns (its wgmma serialized), naming ptb_small's
# tensor-core forward instead.
"$REAL_PTXAS" "$@"
status=$?
echo "ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient register resources for the wgmma pipeline in the function 'rel_attention_bf16_d32'" >&2
exit $status
