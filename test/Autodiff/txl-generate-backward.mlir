// RUN: txl-opt %s --split-input-file --txl-generate-backward=save-activations=false --verify-diagnostics | FileCheck %s
// RUN: txl-opt %s --split-input-file --txl-generate-backward --verify-diagnostics | FileCheck %s --check-prefix=SAVE

// The mean of the first result is differentiated with respect to every
// txl.param argument: the seed is 1/numel (linalg.fill), txl.scale scales
// it, and the non-parameter %x gets none. The forward results come first,
// then one gradient per parameter; the gradient function keeps the C
// interface (it is an entry point of the executable).
// CHECK-LABEL: func.func @segment(
// CHECK-LABEL: func.func @segment_grad
// CHECK-SAME: (%[[W:[^:]+]]: tensor<?x4xf32> {txl.param = "w"}, %[[X:[^:]+]]: tensor<?x4xf32>)
// CHECK-SAME: -> (tensor<?x4xf32>, tensor<?x4xf32>) attributes {llvm.emit_c_interface}
// CHECK: %[[S:.+]] = txl.scale %[[W]] {factor = 3.000000e+00 : f32}
// CHECK: %[[Y:.+]] = txl.add %[[S]], %[[X]]
// CHECK: %[[N:.+]] = arith.sitofp
// CHECK: %[[INV:.+]] = arith.divf %{{.+}}, %[[N]] : f32
// CHECK: %[[SEED:.+]] = linalg.fill ins(%[[INV]] : f32) outs(%{{.+}} : tensor<?x4xf32>)
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
// buffer (txl.buffer, e.g. pos_emb.inv_freq) is not a parameter and gets no
// gradient; a parameter no gradient reaches gets zeros; extra results (the
// new memory) pass through before the gradients.
// CHECK-LABEL: func.func @segment_grad
// CHECK-SAME: (%[[A:[^:]+]]: tensor<2x3xf32> {txl.param = "a"}, %[[B:[^:]+]]: tensor<2x3xf32> {txl.param = "b"}, %[[F:[^:]+]]: tensor<2x3xf32> {txl.buffer, txl.param = "f"}, %[[M:[^:]+]]: tensor<2x3xf32>)
// CHECK-SAME: -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
// CHECK: %[[SG:.+]] = txl.stop_gradient %[[M]]
// CHECK: %[[L:.+]] = txl.add %{{.+}}, %[[SG]]
// CHECK: %[[SEED:.+]] = linalg.fill
// CHECK: %[[SUM:.+]] = txl.add %[[SEED]], %[[SEED]] : tensor<2x3xf32>
// CHECK: %[[ZB:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2x3xf32>)
// CHECK-NEXT: return %[[L]], %[[B]], %[[SUM]], %[[ZB]]
func.func @segment(%a: tensor<2x3xf32> {txl.param = "a"}, %b: tensor<2x3xf32> {txl.param = "b"},
                   %f: tensor<2x3xf32> {txl.param = "f", txl.buffer},
                   %m: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %t = txl.add %a, %a : tensor<2x3xf32>
  %u = txl.add %t, %f : tensor<2x3xf32>
  %sg = txl.stop_gradient %m : tensor<2x3xf32>
  %l = txl.add %u, %sg : tensor<2x3xf32>
  return %l, %b : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// A call is differentiated through @<callee>_grad(args..., result grads...),
// which (without save-activations) recomputes the callee and returns the
// gradients of the arguments that are active at the call site: layer 1's
// input depends on a parameter (through layer 0), layer 0's input does not,
// so the two calls get two specializations. %c (not computed from a
// parameter) never gets a gradient.
// With save-activations (the default) the adjoints read the relu output
// instead of recomputing it; it is the layer's result, so the forward calls
// stay calls of @layer and their results are passed (no @layer_fwd).
// SAVE-LABEL: func.func private @layer_grad_0
// SAVE-SAME: (%[[H:[^:]+]]: tensor<?x4xf32>, %{{[^:]+}}: tensor<?x4xf32>, %{{[^:]+}}: tensor<4x4xf32> {txl.param = "w"}, %[[R:[^:]+]]: tensor<?x4xf32>, %[[DR:[^:]+]]: tensor<?x4xf32>) -> tensor<4x4xf32>
// SAVE-NOT: txl.linear %
// SAVE-NOT: txl.relu %
// SAVE: %[[DZ:.+]] = txl.relu_grad %[[DR]], %[[R]]
// SAVE: txl.linear_weight_grad %[[DZ]], %[[H]]
// SAVE-LABEL: func.func @segment_grad
// SAVE-NOT: @layer_fwd
// SAVE: %[[H1:.+]] = call @layer(
// SAVE: %[[H2:.+]] = call @layer(%[[H1]]
// SAVE: %[[G1:.+]]:2 = call @layer_grad(%[[H1]], %{{.+}}, %{{.+}}, %[[H2]], %{{.+}})
// SAVE: call @layer_grad_0(%{{.+}}, %{{.+}}, %{{.+}}, %[[H1]], %[[G1]]#0)
// CHECK-LABEL: func.func private @layer_grad_0
// CHECK-SAME: (%[[H:[^:]+]]: tensor<?x4xf32>, %{{[^:]+}}: tensor<?x4xf32>, %[[W:[^:]+]]: tensor<4x4xf32> {txl.param = "w"}, %[[DR:[^:]+]]: tensor<?x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[R:.+]] = txl.relu
// CHECK: %[[DZ:.+]] = txl.relu_grad %[[DR]], %[[R]]
// CHECK-NOT: txl.linear_input_grad
// CHECK: %[[DW:.+]] = txl.linear_weight_grad %[[DZ]], %[[H]]
// CHECK: return %[[DW]] : tensor<4x4xf32>
// CHECK-LABEL: func.func private @layer_grad(
// CHECK-SAME: -> (tensor<?x4xf32>, tensor<4x4xf32>)
// CHECK: txl.relu_grad
// CHECK: txl.linear_input_grad
// CHECK: txl.linear_weight_grad
// CHECK-LABEL: func.func @segment_grad
// CHECK: %[[H0:.+]] = txl.scale
// CHECK: %[[H1:.+]] = call @layer(%[[H0]]
// CHECK: %[[H2:.+]] = call @layer(%[[H1]]
// CHECK: %[[SEED:.+]] = linalg.fill
// CHECK: %[[G1:.+]]:2 = call @layer_grad(%[[H1]], %{{.+}}, %{{.+}}, %[[SEED]])
// CHECK: %[[G0:.+]] = call @layer_grad_0(%[[H0]], %{{.+}}, %{{.+}}, %[[G1]]#0)
// CHECK: return %[[H2]], %[[G0]], %[[G1]]#1
func.func private @layer(%h: tensor<?x4xf32>, %c: tensor<?x4xf32>, %w: tensor<4x4xf32> {txl.param = "w"}) -> tensor<?x4xf32> {
  %y = txl.linear %h, %w : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %z = txl.add %y, %c : tensor<?x4xf32>
  %r = txl.relu %z : tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
func.func @segment(%w0: tensor<4x4xf32> {txl.param = "layers.0.w"}, %w1: tensor<4x4xf32> {txl.param = "layers.1.w"},
                   %x: tensor<?x4xf32>, %c: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %h0 = txl.scale %x {factor = 2.0 : f32} : tensor<?x4xf32>
  %h1 = call @layer(%h0, %c, %w0) : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %h2 = call @layer(%h1, %c, %w1) : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  return %h2 : tensor<?x4xf32>
}

// -----

// Saved activations that the layer does not return come from @layer_fwd,
// the layer returning them after its result; a view an adjoint reads (the
// expand_shape) is recomputed from the saved tensor it views, not saved.
// Without save-activations, @mlp_grad recomputes the layer.
// CHECK-LABEL: func.func private @mlp_grad
// CHECK: txl.linear %
// CHECK: txl.relu %
// CHECK: txl.relu_grad
// CHECK-LABEL: func.func @segment_grad
// CHECK: call @mlp(
// CHECK: call @mlp_grad(
// SAVE-LABEL: func.func private @mlp_fwd
// SAVE-SAME: -> (tensor<?x1x4xf32>, tensor<?x8xf32>)
// SAVE: %[[A:.+]] = txl.relu
// SAVE: return %{{.+}}, %[[A]]
// SAVE-LABEL: func.func private @mlp_grad
// SAVE-SAME: (%[[H:[^:]+]]: tensor<?x4xf32>, %{{[^:]+}}: tensor<8x4xf32> {txl.param = "w1"}, %{{[^:]+}}: tensor<4x8xf32> {txl.param = "w2"}, %[[A:[^:]+]]: tensor<?x8xf32>, %[[DY:[^:]+]]: tensor<?x1x4xf32>)
// SAVE-NOT: txl.relu %
// SAVE: %[[V:.+]] = tensor.expand_shape %[[A]]
// SAVE: txl.linear_weight_grad %[[DY]], %[[V]]
// SAVE: txl.relu_grad %{{.+}}, %[[A]]
// SAVE-LABEL: func.func @segment_grad
// SAVE: %[[F:.+]]:2 = call @mlp_fwd(
// SAVE: call @mlp_grad(%{{.+}}, %{{.+}}, %{{.+}}, %[[F]]#1, %{{.+}})
// SAVE-NOT: call @mlp(
// SAVE: return %[[F]]#0
func.func private @mlp(%h: tensor<?x4xf32>, %w1: tensor<8x4xf32> {txl.param = "w1"},
                       %w2: tensor<4x8xf32> {txl.param = "w2"}) -> tensor<?x1x4xf32> {
  %y = txl.linear %h, %w1 : tensor<?x4xf32>, tensor<8x4xf32> -> tensor<?x8xf32>
  %a = txl.relu %y : tensor<?x8xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x8xf32>
  %v = tensor.expand_shape %a [[0, 1], [2]] output_shape [%n, 1, 8] : tensor<?x8xf32> into tensor<?x1x8xf32>
  %o = txl.linear %v, %w2 : tensor<?x1x8xf32>, tensor<4x8xf32> -> tensor<?x1x4xf32>
  return %o : tensor<?x1x4xf32>
}
func.func @segment(%w1: tensor<8x4xf32> {txl.param = "w1"}, %w2: tensor<4x8xf32> {txl.param = "w2"},
                   %x: tensor<?x4xf32>) -> tensor<?x1x4xf32> {
  %h = call @mlp(%x, %w1, %w2) : (tensor<?x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<?x1x4xf32>
  return %h : tensor<?x1x4xf32>
}

// -----

// An op on the gradient path without an adjoint is named: the backward ops
// themselves have none (no second derivatives).
func.func @segment(%w: tensor<?x?x8xf32> {txl.param = "w"}, %y: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'txl.relu_grad' op has no adjoint: txl-generate-backward cannot differentiate through it}}
  %d = txl.relu_grad %w, %y : tensor<?x?x8xf32>
  return %d : tensor<?x?x8xf32>
}

// -----

// Ops with regions on a gradient path are rejected.
func.func @segment(%w: tensor<4xf32> {txl.param = "w"}) -> tensor<4xf32> {
  // expected-error @+1 {{'scf.execute_region' op has regions: txl-generate-backward differentiates straight-line code only}}
  %r = scf.execute_region -> tensor<4xf32> {
    scf.yield %w : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// A called function must have a body.
// expected-error @+1 {{'func.func' op txl-generate-backward: a called function must have a body of one block}}
func.func private @external(tensor<4xf32>) -> tensor<4xf32>
func.func @segment(%w: tensor<4xf32> {txl.param = "w"}) -> tensor<4xf32> {
  %r = call @external(%w) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// expected-error @+1 {{txl-generate-backward: the first result of @segment must be a float tensor (the loss)}}
func.func @segment(%w: tensor<4xf32> {txl.param = "w"}) -> index {
  %c = arith.constant 0 : index
  return %c : index
}

// -----

// Gradients of disjoint slices of one tensor (the q, k and v parts of
// qkv_net's output) are written into one zero-filled tensor; overlapping
// slices are added.
// CHECK-LABEL: func.func @segment_grad
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<4x4xf32>)
// CHECK-NEXT: %[[A:.+]] = tensor.insert_slice %{{.+}} into %[[Z]][0, 2] [4, 2] [1, 1]
// CHECK-NEXT: %[[B:.+]] = tensor.insert_slice %{{.+}} into %[[A]][0, 0] [4, 2] [1, 1]
// CHECK-NOT: txl.add
// CHECK: return %{{.+}}, %[[B]]
func.func @segment(%w: tensor<4x4xf32> {txl.param = "w"}) -> tensor<4x2xf32> {
  %a = tensor.extract_slice %w[0, 0] [4, 2] [1, 1] : tensor<4x4xf32> to tensor<4x2xf32>
  %b = tensor.extract_slice %w[0, 2] [4, 2] [1, 1] : tensor<4x4xf32> to tensor<4x2xf32>
  %s = txl.add %a, %b : tensor<4x2xf32>
  return %s : tensor<4x2xf32>
}

// -----

// CHECK-LABEL: func.func @segment_grad
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, 1] [4, 2] [1, 1]
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [4, 2] [1, 1]
// CHECK: %[[S:.+]] = txl.add %{{.+}}, %{{.+}} : tensor<4x4xf32>
// CHECK: return %{{.+}}, %[[S]]
func.func @segment(%w: tensor<4x4xf32> {txl.param = "w"}) -> tensor<4x2xf32> {
  %a = tensor.extract_slice %w[0, 0] [4, 2] [1, 1] : tensor<4x4xf32> to tensor<4x2xf32>
  %b = tensor.extract_slice %w[0, 1] [4, 2] [1, 1] : tensor<4x4xf32> to tensor<4x2xf32>
  %s = txl.add %a, %b : tensor<4x2xf32>
  return %s : tensor<4x2xf32>
}
