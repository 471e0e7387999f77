// RUN: txl-opt %s --split-input-file --txl-generate-backward --verify-diagnostics | FileCheck %s

// The mean of the first result is differentiated with respect to every
// txl.param argument: the seed is 1/numel, txl.scale scales it, a value used
// twice (%w feeds both the add and, scaled, the result) accumulates its two
// contributions with txl.add, and the non-parameter %x gets none. The
// forward results come first, then one gradient per parameter.
// CHECK-LABEL: func.func @segment(
// CHECK-LABEL: func.func @segment_grad
// CHECK-SAME: (%[[W:[^:]+]]: tensor<?x4xf32> {txl.param = "w"}, %[[X:[^:]+]]: tensor<?x4xf32>)
// CHECK-SAME: -> (tensor<?x4xf32>, tensor<?x4xf32>)
// CHECK-NOT: llvm.emit_c_interface
// CHECK: %[[S:.+]] = txl.scale %[[W]] {factor = 3.000000e+00 : f32}
// CHECK: %[[Y:.+]] = txl.add %[[S]], %[[X]]
// CHECK: %[[D0:.+]] = tensor.dim %[[Y]], %c0
// CHECK: %[[D1:.+]] = tensor.dim %[[Y]], %c1
// CHECK: %[[N:.+]] = arith.sitofp
// CHECK: %[[INV:.+]] = arith.divf %{{.+}}, %[[N]] : f32
// CHECK: %[[SEED:.+]] = tensor.splat %[[INV]][%{{.+}}] : tensor<?x4xf32>
// CHECK: %[[DS:.+]] = txl.scale %[[SEED]] {factor = 3.000000e+00 : f32}
// CHECK: return %[[Y]], %[[DS]] : tensor<?x4xf32>, tensor<?x4xf32>
func.func @segment(%w: tensor<?x4xf32> {txl.param = "w"}, %x: tensor<?x4xf32>) -> tensor<?x4xf32>
    attributes {llvm.emit_c_interface} {
  %s = txl.scale %w {factor = 3.0 : f32} : tensor<?x4xf32>
  %y = txl.add %s, %x : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// A parameter used twice sums its contributions (tied weights, residuals);
// stop_gradient passes nothing (the memory is a constant, paper §3.2); a
// parameter no gradient reaches gets zeros; extra results (the new memory)
// pass through before the gradients.
// CHECK-LABEL: func.func @segment_grad
// CHECK-SAME: (%[[A:[^:]+]]: tensor<2x3xf32> {txl.param = "a"}, %[[B:[^:]+]]: tensor<2x3xf32> {txl.param = "b"}, %[[M:[^:]+]]: tensor<2x3xf32> {txl.param = "m"})
// CHECK: %[[SG:.+]] = txl.stop_gradient %[[M]]
// CHECK: %[[L:.+]] = txl.add %[[T:.+]], %[[SG]]
// CHECK: %[[SEED:.+]] = tensor.splat
// CHECK: %[[SUM:.+]] = txl.add %[[SEED]], %[[SEED]] : tensor<2x3xf32>
// CHECK: %[[ZB:.+]] = tensor.splat %{{.+}} : tensor<2x3xf32>
// CHECK: %[[ZM:.+]] = tensor.splat %{{.+}} : tensor<2x3xf32>
// CHECK: return %[[L]], %[[B]], %[[SUM]], %[[ZB]], %[[ZM]]
func.func @segment(%a: tensor<2x3xf32> {txl.param = "a"}, %b: tensor<2x3xf32> {txl.param = "b"},
                   %m: tensor<2x3xf32> {txl.param = "m"}) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %t = txl.add %a, %a : tensor<2x3xf32>
  %sg = txl.stop_gradient %m : tensor<2x3xf32>
  %l = txl.add %t, %sg : tensor<2x3xf32>
  return %l, %b : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// An op on the gradient path without an adjoint is named.
func.func @segment(%w: tensor<?x4xf32> {txl.param = "w"}) -> tensor<?x4xf32> {
  // expected-error @+1 {{'txl.relu' op has no adjoint: txl-generate-backward cannot differentiate @segment through it}}
  %r = txl.relu %w : tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// expected-error @+1 {{txl-generate-backward: the first result of @segment must be a float tensor (the loss)}}
func.func @segment(%w: tensor<4xf32> {txl.param = "w"}) -> index {
  %c = arith.constant 0 : index
  return %c : index
}
