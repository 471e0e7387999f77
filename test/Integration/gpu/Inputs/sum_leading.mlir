// The bias gradients whose split column sums sum-leading-opencl.test runs
// (txl-sum-leading-to-gpu): 33 columns (one partly used workgroup of
// columns), 512 (ptb_small's feed-forward bias: 2), 10000 (its output
// layer's bias: 40) and [n_head, d_head] = [4, 32] (the attention's
// r_w_bias and r_r_bias gradients: 128 columns).
func.func @c33(%dy: tensor<?x?x33xf32>) -> tensor<33xf32> {
  %0 = txl.sum_leading %dy : tensor<?x?x33xf32> -> tensor<33xf32>
  return %0 : tensor<33xf32>
}
func.func @c512(%dy: tensor<?x?x512xf32>) -> tensor<512xf32> {
  %0 = txl.sum_leading %dy : tensor<?x?x512xf32> -> tensor<512xf32>
  return %0 : tensor<512xf32>
}
func.func @c10000(%dy: tensor<?x10000xf32>) -> tensor<10000xf32> {
  %0 = txl.sum_leading %dy : tensor<?x10000xf32> -> tensor<10000xf32>
  return %0 : tensor<10000xf32>
}
func.func @heads(%dq: tensor<?x?x4x32xf32>) -> tensor<4x32xf32> {
  %0 = txl.sum_leading %dq : tensor<?x?x4x32xf32> -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}
