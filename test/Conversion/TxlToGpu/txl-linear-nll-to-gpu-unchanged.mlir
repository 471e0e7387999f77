// RUN: txl-opt %s --txl-linear-nll-to-gpu | FileCheck %s --implicit-check-not=gpu

// Not covered, left to the generic column-block sweep of txl-to-linalg: f64
// (the gradient checks' element type), a dynamic n_token and one above
// 32,768 columns (whose whole [rows, n_token] logits the rewrite would
// keep), and a training forward whose block-major logits something other
// than its txl.linear_nll_grad reads (here the return). Nothing of the gpu dialect appears: no launch, no kernel module,
// no gpu.container_module attribute.
// CHECK: module {
// CHECK-LABEL: func.func @f64(
// CHECK: txl.linear_nll %{{.+}} : tensor<?x?x16xf64>, tensor<100x16xf64>, tensor<?x?xi64> -> tensor<?x?xf64>
// CHECK-LABEL: func.func @dynamic(
// CHECK: txl.linear_nll %{{.+}} : tensor<?x?x16xf32>, tensor<?x16xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
// CHECK-LABEL: func.func @wide(
// CHECK: txl.linear_nll %{{.+}} : tensor<?x?x16xf32>, tensor<32769x16xf32>, tensor<?x?xi64>, tensor<32769xf32> -> tensor<?x?xf32>
// CHECK-LABEL: func.func @logits_read(
// CHECK: txl.linear_nll_fwd
// CHECK: txl.linear_nll_grad
// CHECK: return
func.func @f64(%h: tensor<?x?x16xf64>, %w: tensor<100x16xf64>, %t: tensor<?x?xi64>) -> tensor<?x?xf64> {
  %0 = txl.linear_nll %h, %w, %t : tensor<?x?x16xf64>, tensor<100x16xf64>, tensor<?x?xi64> -> tensor<?x?xf64>
  return %0 : tensor<?x?xf64>
}
func.func @dynamic(%h: tensor<?x?x16xf32>, %w: tensor<?x16xf32>, %t: tensor<?x?xi64>) -> tensor<?x?xf32> {
  %0 = txl.linear_nll %h, %w, %t : tensor<?x?x16xf32>, tensor<?x16xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
func.func @wide(%h: tensor<?x?x16xf32>, %w: tensor<32769x16xf32>, %t: tensor<?x?xi64>, %b: tensor<32769xf32>) -> tensor<?x?xf32> {
  %0 = txl.linear_nll %h, %w, %t, %b : tensor<?x?x16xf32>, tensor<32769x16xf32>, tensor<?x?xi64>, tensor<32769xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
func.func @logits_read(%h: tensor<?x?x16xf32>, %w: tensor<300x16xf32>, %t: tensor<?x?xi64>, %g: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<300x16xf32>, tensor<1x?x512xf32>) {
  %nll, %lse, %logits = txl.linear_nll_fwd %h, %w, %t {block = 512 : i64} : tensor<?x?x16xf32>, tensor<300x16xf32>, tensor<?x?xi64> -> tensor<?x?xf32>, tensor<?xf32>, tensor<1x?x512xf32>
  %dh, %dw, %db = txl.linear_nll_grad %g, %h, %w, %t, %lse, %logits {block = 512 : i64} : tensor<?x?xf32>, tensor<?x?x16xf32>, tensor<300x16xf32>, tensor<?x?xi64>, tensor<?xf32>, tensor<1x?x512xf32> -> tensor<?x?x16xf32>, tensor<300x16xf32>, tensor<300xf32>
  return %nll, %dw, %logits : tensor<?x?xf32>, tensor<300x16xf32>, tensor<1x?x512xf32>
}
