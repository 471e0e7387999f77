// The output layers whose row kernels linear-nll-opencl.test runs: one per
// subgroup count and bias form of txl-linear-nll-to-gpu (33 columns: 1
// subgroup; 204, enwik8's vocabulary: 2; 300: 3; 1000 without a bias: 8;
// 10000, ptb_small's: 8).
func.func @v33(%h: tensor<?x?x16xf32>, %w: tensor<33x16xf32>, %t: tensor<?x?xi64>, %b: tensor<33xf32>) -> tensor<?x?xf32> {
  %0 = txl.linear_nll %h, %w, %t, %b : tensor<?x?x16xf32>, tensor<33x16xf32>, tensor<?x?xi64>, tensor<33xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
func.func @v204(%h: tensor<?x?x16xf32>, %w: tensor<204x16xf32>, %t: tensor<?x?xi64>, %b: tensor<204xf32>) -> tensor<?x?xf32> {
  %0 = txl.linear_nll %h, %w, %t, %b : tensor<?x?x16xf32>, tensor<204x16xf32>, tensor<?x?xi64>, tensor<204xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
func.func @v300(%h: tensor<?x?x16xf32>, %w: tensor<300x16xf32>, %t: tensor<?x?xi64>, %b: tensor<300xf32>) -> tensor<?x?xf32> {
  %0 = txl.linear_nll %h, %w, %t, %b : tensor<?x?x16xf32>, tensor<300x16xf32>, tensor<?x?xi64>, tensor<300xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
func.func @v1000(%h: tensor<?x?x16xf32>, %w: tensor<1000x16xf32>, %t: tensor<?x?xi64>) -> tensor<?x?xf32> {
  %0 = txl.linear_nll %h, %w, %t : tensor<?x?x16xf32>, tensor<1000x16xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
func.func @v10000(%h: tensor<?x?x16xf32>, %w: tensor<10000x16xf32>, %t: tensor<?x?xi64>, %b: tensor<10000xf32>) -> tensor<?x?xf32> {
  %0 = txl.linear_nll %h, %w, %t, %b : tensor<?x?x16xf32>, tensor<10000x16xf32>, tensor<?x?xi64>, tensor<10000xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
// Training pairs: the row kernel's _lse form and the d_logits kernel, with
// a bias (300 columns: the last workgroup of a row partly used) and
// without (1000).
func.func @pair300(%h: tensor<?x?x16xf32>, %w: tensor<300x16xf32>, %t: tensor<?x?xi64>, %b: tensor<300xf32>, %g: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?x16xf32>, tensor<300x16xf32>, tensor<300xf32>) {
  %nll, %lse, %logits = txl.linear_nll_fwd %h, %w, %t, %b {block = 512 : i64} : tensor<?x?x16xf32>, tensor<300x16xf32>, tensor<?x?xi64>, tensor<300xf32> -> tensor<?x?xf32>, tensor<?xf32>, tensor<1x?x512xf32>
  %dh, %dw, %db = txl.linear_nll_grad %g, %h, %w, %t, %lse, %logits {block = 512 : i64} : tensor<?x?xf32>, tensor<?x?x16xf32>, tensor<300x16xf32>, tensor<?x?xi64>, tensor<?xf32>, tensor<1x?x512xf32> -> tensor<?x?x16xf32>, tensor<300x16xf32>, tensor<300xf32>
  return %nll, %dh, %dw, %db : tensor<?x?xf32>, tensor<?x?x16xf32>, tensor<300x16xf32>, tensor<300xf32>
}
func.func @pair1000(%h: tensor<?x?x16xf32>, %w: tensor<1000x16xf32>, %t: tensor<?x?xi64>, %g: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?x16xf32>, tensor<1000x16xf32>, tensor<1000xf32>) {
  %nll, %lse, %logits = txl.linear_nll_fwd %h, %w, %t {block = 512 : i64} : tensor<?x?x16xf32>, tensor<1000x16xf32>, tensor<?x?xi64> -> tensor<?x?xf32>, tensor<?xf32>, tensor<2x?x512xf32>
  %dh, %dw, %db = txl.linear_nll_grad %g, %h, %w, %t, %lse, %logits {block = 512 : i64} : tensor<?x?xf32>, tensor<?x?x16xf32>, tensor<1000x16xf32>, tensor<?x?xi64>, tensor<?xf32>, tensor<2x?x512xf32> -> tensor<?x?x16xf32>, tensor<1000x16xf32>, tensor<1000xf32>
  return %nll, %dh, %dw, %db : tensor<?x?xf32>, tensor<?x?x16xf32>, tensor<1000x16xf32>, tensor<1000xf32>
}
