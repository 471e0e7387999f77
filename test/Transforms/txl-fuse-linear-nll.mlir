// RUN: txl-opt %s --split-input-file --txl-fuse-linear-nll | FileCheck %s
// RUN: txl-opt %s --split-input-file --txl-fuse-linear-nll="block=256" | FileCheck %s --check-prefix=B256
// RUN: not txl-opt %s --txl-fuse-linear-nll="block=0" 2>&1 | FileCheck %s --check-prefix=BAD

// A forward-only output layer: txl.nll of a txl.linear nothing else reads
// becomes one txl.linear_nll (the bias, when there is one, last).
// CHECK-LABEL: func.func @eval
// CHECK-SAME: (%[[H:[^:]+]]: tensor<?x?x32xf32>, %[[W:[^:]+]]: tensor<1000x32xf32>, %[[B:[^:]+]]: tensor<1000xf32>, %[[T:[^:]+]]: tensor<?x?xi64>)
// CHECK-NEXT: %[[N:.+]] = txl.linear_nll %[[H]], %[[W]], %[[T]], %[[B]] : tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>, tensor<1000xf32> -> tensor<?x?xf32>
// CHECK-NEXT: return %[[N]]
func.func @eval(%h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %b: tensor<1000xf32>, %t: tensor<?x?xi64>) -> tensor<?x?xf32> {
  %l = txl.linear %h, %w, %b : tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<1000xf32> -> tensor<?x?x1000xf32>
  %n = txl.nll %l, %t : tensor<?x?x1000xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// CHECK-LABEL: func.func @eval_no_bias
// CHECK-NEXT: txl.linear_nll %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}} : tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
// CHECK-NEXT: return
func.func @eval_no_bias(%h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<?x?xi64>) -> tensor<?x?xf32> {
  %l = txl.linear %h, %w : tensor<?x?x32xf32>, tensor<1000x32xf32> -> tensor<?x?x1000xf32>
  %n = txl.nll %l, %t : tensor<?x?x1000xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

// With its generated backward: the forward keeps lse and the logits in
// ⌈1000 / 512⌉ = 2 slabs of 512 columns; the adjoint replaces nll_grad and
// the linear's three adjoints.
// CHECK-LABEL: func.func @train
// CHECK-SAME: (%[[H:[^:]+]]: tensor<?x?x32xf32>, %[[W:[^:]+]]: tensor<1000x32xf32>, %[[B:[^:]+]]: tensor<1000xf32>, %[[T:[^:]+]]: tensor<?x?xi64>, %[[G:[^:]+]]: tensor<?x?xf32>)
// CHECK-NEXT: %[[N:.+]], %[[LSE:.+]], %[[L:.+]] = txl.linear_nll_fwd %[[H]], %[[W]], %[[T]], %[[B]] {block = 512 : i64} : {{.+}} -> tensor<?x?xf32>, tensor<?xf32>, tensor<2x?x512xf32>
// CHECK-NEXT: %[[DH:.+]], %[[DW:.+]], %[[DB:.+]] = txl.linear_nll_grad %[[G]], %[[H]], %[[W]], %[[T]], %[[LSE]], %[[L]] {block = 512 : i64} : {{.+}} -> tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<1000xf32>
// CHECK-NEXT: return %[[N]], %[[DH]], %[[DW]], %[[DB]]
// B256-LABEL: func.func @train
// B256: txl.linear_nll_fwd {{.+}} {block = 256 : i64} : {{.+}} -> tensor<?x?xf32>, tensor<?xf32>, tensor<4x?x256xf32>
// B256: txl.linear_nll_grad {{.+}} {block = 256 : i64}
// B256: return
func.func @train(%h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %b: tensor<1000xf32>, %t: tensor<?x?xi64>, %g: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<1000xf32>) {
  %l = txl.linear %h, %w, %b : tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<1000xf32> -> tensor<?x?x1000xf32>
  %n = txl.nll %l, %t : tensor<?x?x1000xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  %dl = txl.nll_grad %g, %l, %t : tensor<?x?xf32>, tensor<?x?x1000xf32>, tensor<?x?xi64>
  %dh = txl.linear_input_grad %dl, %w : tensor<?x?x1000xf32>, tensor<1000x32xf32> -> tensor<?x?x32xf32>
  %dw = txl.linear_weight_grad %dl, %h : tensor<?x?x1000xf32>, tensor<?x?x32xf32> -> tensor<1000x32xf32>
  %db = txl.sum_leading %dl : tensor<?x?x1000xf32> -> tensor<1000xf32>
  return %n, %dh, %dw, %db : tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<1000xf32>
}

// -----

// Static [qlen, batch] gives static rows (4·2 = 8); an adjoint the backward
// did not ask for (no input gradient) is simply not used.
// CHECK-LABEL: func.func @train_static_no_input_grad
// CHECK: txl.linear_nll_fwd {{.+}} -> tensor<4x2xf32>, tensor<8xf32>, tensor<2x8x512xf32>
// CHECK: %{{.+}}, %[[DW:.+]], %{{.+}} = txl.linear_nll_grad
// CHECK-NOT: txl.nll
// CHECK: return %{{.+}}, %[[DW]]
func.func @train_static_no_input_grad(%h: tensor<4x2x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<4x2xi64>, %g: tensor<4x2xf32>)
    -> (tensor<4x2xf32>, tensor<1000x32xf32>) {
  %l = txl.linear %h, %w : tensor<4x2x32xf32>, tensor<1000x32xf32> -> tensor<4x2x1000xf32>
  %n = txl.nll %l, %t : tensor<4x2x1000xf32>, tensor<4x2xi64> -> tensor<4x2xf32>
  %dl = txl.nll_grad %g, %l, %t : tensor<4x2xf32>, tensor<4x2x1000xf32>, tensor<4x2xi64>
  %dw = txl.linear_weight_grad %dl, %h : tensor<4x2x1000xf32>, tensor<4x2x32xf32> -> tensor<1000x32xf32>
  return %n, %dw : tensor<4x2xf32>, tensor<1000x32xf32>
}

// -----

// Left alone: logits with another reader (returned), d_logits with another
// reader, and nll / nll_grad of different targets.
// CHECK-LABEL: func.func @logits_read_elsewhere
// CHECK: txl.linear
// CHECK-NEXT: txl.nll
// CHECK-NOT: txl.linear_nll
// CHECK: return
func.func @logits_read_elsewhere(%h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<?x?xi64>) -> (tensor<?x?xf32>, tensor<?x?x1000xf32>) {
  %l = txl.linear %h, %w : tensor<?x?x32xf32>, tensor<1000x32xf32> -> tensor<?x?x1000xf32>
  %n = txl.nll %l, %t : tensor<?x?x1000xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n, %l : tensor<?x?xf32>, tensor<?x?x1000xf32>
}

// CHECK-LABEL: func.func @dlogits_read_elsewhere
// CHECK: txl.nll_grad
// CHECK-NOT: txl.linear_nll
// CHECK: return
func.func @dlogits_read_elsewhere(%h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<?x?xi64>, %g: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<?x?x1000xf32>) {
  %l = txl.linear %h, %w : tensor<?x?x32xf32>, tensor<1000x32xf32> -> tensor<?x?x1000xf32>
  %n = txl.nll %l, %t : tensor<?x?x1000xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  %dl = txl.nll_grad %g, %l, %t : tensor<?x?xf32>, tensor<?x?x1000xf32>, tensor<?x?xi64>
  %dh = txl.linear_input_grad %dl, %w : tensor<?x?x1000xf32>, tensor<1000x32xf32> -> tensor<?x?x32xf32>
  return %n, %dh, %dl : tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<?x?x1000xf32>
}

// CHECK-LABEL: func.func @targets_differ
// CHECK: txl.nll_grad
// CHECK-NOT: txl.linear_nll
// CHECK: return
func.func @targets_differ(%h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<?x?xi64>, %u: tensor<?x?xi64>, %g: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<1000x32xf32>) {
  %l = txl.linear %h, %w : tensor<?x?x32xf32>, tensor<1000x32xf32> -> tensor<?x?x1000xf32>
  %n = txl.nll %l, %t : tensor<?x?x1000xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  %dl = txl.nll_grad %g, %l, %u : tensor<?x?xf32>, tensor<?x?x1000xf32>, tensor<?x?xi64>
  %dw = txl.linear_weight_grad %dl, %h : tensor<?x?x1000xf32>, tensor<?x?x32xf32> -> tensor<1000x32xf32>
  return %n, %dw : tensor<?x?xf32>, tensor<1000x32xf32>
}

// BAD: error: txl-fuse-linear-nll: block must be positive
