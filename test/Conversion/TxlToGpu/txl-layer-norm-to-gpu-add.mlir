// RUN: txl-opt %s --split-input-file --txl-layer-norm-to-gpu | FileCheck %s

// The residual connection's txl.add goes into the norm's launch: the
// kernel reads both addends (layer_norm_add_d128), and no txl.add is left.
// CHECK-LABEL: func.func @add(
// CHECK-SAME: %[[A:[^:]+]]: tensor<?x?x128xf32>, %[[R:[^:]+]]: tensor<?x?x128xf32>,
// CHECK-NOT: txl.add
// CHECK: %[[A2:.+]] = tensor.collapse_shape %[[A]]
// CHECK: %[[AB:.+]] = bufferization.to_buffer %[[A2]]
// CHECK: %[[R2:.+]] = tensor.collapse_shape %[[R]]
// CHECK: %[[RB:.+]] = bufferization.to_buffer %[[R2]]
// CHECK: gpu.launch_func @txl_kernels::@layer_norm_add_d128 {{.+}} args(%[[AB]] : {{.+}}, %[[RB]] : {{.+}}, %{{.+}} : memref<128xf32, {{.+}}>, %{{.+}} : memref<128xf32, {{.+}}>, %{{.+}} : memref<?x128xf32, {{.+}}>, %{{.+}} : f32)
// CHECK-NOT: txl.add
// CHECK: return
// Each pass over the row reads x + r, added once per element.
// CHECK: gpu.func @layer_norm_add_d128(%[[KX:[^:]+]]: memref<?x128xf32, strided<[?, 1], offset: ?>>, %[[KR:[^:]+]]: memref<?x128xf32, strided<[?, 1], offset: ?>>, %{{.+}}: memref<128xf32, strided<[?], offset: ?>>, %{{.+}}: memref<128xf32, strided<[?], offset: ?>>, %[[KY:[^:]+]]: memref<?x128xf32, strided<[?, 1], offset: ?>>, %{{.+}}: f32)
// CHECK: %[[X0:.+]] = memref.load %[[KX]]
// CHECK-NEXT: %[[R0:.+]] = memref.load %[[KR]]
// CHECK-NEXT: arith.addf %[[X0]], %[[R0]]
// CHECK: %[[X1:.+]] = memref.load %[[KX]]
// CHECK-NEXT: %[[R1:.+]] = memref.load %[[KR]]
// CHECK-NEXT: arith.addf %[[X1]], %[[R1]]
// CHECK: %[[X2:.+]] = memref.load %[[KX]]
// CHECK-NEXT: %[[R2:.+]] = memref.load %[[KR]]
// CHECK-NEXT: arith.addf %[[X2]], %[[R2]]
// CHECK-NOT: memref.store %{{.+}}, %[[KX]]
// CHECK: memref.store %{{.+}}, %[[KY]]
// CHECK: gpu.return
func.func @add(%a: tensor<?x?x128xf32>, %r: tensor<?x?x128xf32>, %g: tensor<128xf32>, %b: tensor<128xf32>) -> tensor<?x?x128xf32> {
  %s = txl.add %a, %r : tensor<?x?x128xf32>
  %y = txl.layer_norm %s, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x?x128xf32>, tensor<128xf32>, tensor<128xf32>
  return %y : tensor<?x?x128xf32>
}

// -----

// The sum also used after the norm (training saves it): the kernel writes
// it to a second buffer in its first pass (layer_norm_add_sum_d128), whose
// tensor replaces the add's result.
// CHECK-LABEL: func.func @add_sum(
// CHECK-NOT: txl.add
// CHECK: %[[OUT:.+]] = memref.alloc(%{{.+}}) : memref<?x128xf32>
// CHECK: %[[SUM:.+]] = memref.alloc(%{{.+}}) : memref<?x128xf32>
// CHECK: %[[SUMV:.+]] = memref.cast %[[SUM]]
// CHECK: %[[OUTV:.+]] = memref.cast %[[OUT]]
// CHECK: gpu.launch_func @txl_kernels::@layer_norm_add_sum_d128 {{.+}} args(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[SUMV]] : {{.+}}, %[[OUTV]] : {{.+}}, %{{.+}} : f32)
// CHECK: %[[Y2:.+]] = bufferization.to_tensor %[[OUT]]
// CHECK: %[[Y:.+]] = tensor.expand_shape %[[Y2]]
// CHECK: %[[S2:.+]] = bufferization.to_tensor %[[SUM]]
// CHECK: %[[S:.+]] = tensor.expand_shape %[[S2]]
// CHECK: return %[[Y]], %[[S]]
// CHECK: gpu.func @layer_norm_add_sum_d128(%{{.+}}: memref<?x128xf32, strided<[?, 1], offset: ?>>, %{{.+}}: memref<?x128xf32, strided<[?, 1], offset: ?>>, %{{.+}}: memref<128xf32, strided<[?], offset: ?>>, %{{.+}}: memref<128xf32, strided<[?], offset: ?>>, %[[KS:[^:]+]]: memref<?x128xf32, strided<[?, 1], offset: ?>>, %[[KY:[^:]+]]: memref<?x128xf32, strided<[?, 1], offset: ?>>, %{{.+}}: f32)
// CHECK: %[[E:.+]] = arith.addf
// CHECK-NEXT: memref.store %[[E]], %[[KS]]
// CHECK: memref.store %{{.+}}, %[[KY]]
func.func @add_sum(%a: tensor<?x?x128xf32>, %r: tensor<?x?x128xf32>, %g: tensor<128xf32>, %b: tensor<128xf32>) -> (tensor<?x?x128xf32>, tensor<?x?x128xf32>) {
  %s = txl.add %a, %r : tensor<?x?x128xf32>
  %y = txl.layer_norm %s, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x?x128xf32>, tensor<128xf32>, tensor<128xf32>
  return %y, %s : tensor<?x?x128xf32>, tensor<?x?x128xf32>
}

// -----

// An addend that is a product with a bias, used by the add alone (the
// feed-forward's second linear): the product loses its bias (no bias fill
// before it) and the kernel adds it, (x + lb) + r, in that order, as the
// product's beta = 1 onto the bias and then txl.add round.
// CHECK-LABEL: func.func @add_bias(
// CHECK-SAME: %[[H:[^:]+]]: tensor<?x?x512xf32>, %[[W:[^:]+]]: tensor<128x512xf32>, %[[LB:[^:]+]]: tensor<128xf32>, %[[R:[^:]+]]: tensor<?x?x128xf32>,
// CHECK: %[[L:.+]] = txl.linear %[[H]], %[[W]] : tensor<?x?x512xf32>, tensor<128x512xf32> -> tensor<?x?x128xf32>
// CHECK-NOT: txl.add
// CHECK: tensor.collapse_shape %[[L]]
// CHECK: tensor.collapse_shape %[[R]]
// CHECK: %[[LBB:.+]] = bufferization.to_buffer %[[LB]]
// CHECK: gpu.launch_func @txl_kernels::@layer_norm_add_bias_d128 {{.+}} args(%{{.+}} : memref<?x128xf32, {{.+}}>, %{{.+}} : memref<?x128xf32, {{.+}}>, %[[LBB]] : memref<128xf32, {{.+}}>, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : f32)
// CHECK: gpu.func @layer_norm_add_bias_d128(%[[KX:[^:]+]]: memref<?x128xf32, strided<[?, 1], offset: ?>>, %[[KR:[^:]+]]: memref<?x128xf32, strided<[?, 1], offset: ?>>, %[[KLB:[^:]+]]: memref<128xf32, strided<[?], offset: ?>>,
// CHECK: %[[X:.+]] = memref.load %[[KX]]
// CHECK-NEXT: %[[B:.+]] = memref.load %[[KLB]]
// CHECK-NEXT: %[[XB:.+]] = arith.addf %[[X]], %[[B]]
// CHECK-NEXT: %[[RV:.+]] = memref.load %[[KR]]
// CHECK-NEXT: arith.addf %[[XB]], %[[RV]]
func.func @add_bias(%h: tensor<?x?x512xf32>, %w: tensor<128x512xf32>, %lb: tensor<128xf32>, %r: tensor<?x?x128xf32>, %g: tensor<128xf32>, %b: tensor<128xf32>) -> tensor<?x?x128xf32> {
  %l = txl.linear %h, %w, %lb : tensor<?x?x512xf32>, tensor<128x512xf32>, tensor<128xf32> -> tensor<?x?x128xf32>
  %s = txl.add %r, %l : tensor<?x?x128xf32>
  %y = txl.layer_norm %s, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x?x128xf32>, tensor<128xf32>, tensor<128xf32>
  return %y : tensor<?x?x128xf32>
}

// -----

// Not fused: the sum is used before the norm (the kernel's sum would come
// too late): a plain layer_norm_d128 of the add, which stays.
// CHECK-LABEL: func.func @used_before(
// CHECK: %[[S:.+]] = txl.add
// CHECK: txl.relu %[[S]]
// CHECK: tensor.collapse_shape %[[S]]
// CHECK: gpu.launch_func @txl_kernels::@layer_norm_d128
// CHECK-NOT: layer_norm_add
func.func @used_before(%a: tensor<?x?x128xf32>, %r: tensor<?x?x128xf32>, %g: tensor<128xf32>, %b: tensor<128xf32>) -> (tensor<?x?x128xf32>, tensor<?x?x128xf32>) {
  %s = txl.add %a, %r : tensor<?x?x128xf32>
  %t = txl.relu %s : tensor<?x?x128xf32>
  %y = txl.layer_norm %s, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x?x128xf32>, tensor<128xf32>, tensor<128xf32>
  return %y, %t : tensor<?x?x128xf32>, tensor<?x?x128xf32>
}

// -----

// The add fused, not the product's bias: the product is also returned
// (its value with the bias is needed), so it keeps its bias.
// CHECK-LABEL: func.func @linear_used_twice(
// CHECK: %[[L:.+]] = txl.linear %{{.+}}, %{{.+}}, %{{.+}} : tensor<?x?x512xf32>, tensor<128x512xf32>, tensor<128xf32> -> tensor<?x?x128xf32>
// CHECK: gpu.launch_func @txl_kernels::@layer_norm_add_d128
// CHECK: return %{{.+}}, %[[L]]
func.func @linear_used_twice(%h: tensor<?x?x512xf32>, %w: tensor<128x512xf32>, %lb: tensor<128xf32>, %r: tensor<?x?x128xf32>, %g: tensor<128xf32>, %b: tensor<128xf32>) -> (tensor<?x?x128xf32>, tensor<?x?x128xf32>) {
  %l = txl.linear %h, %w, %lb : tensor<?x?x512xf32>, tensor<128x512xf32>, tensor<128xf32> -> tensor<?x?x128xf32>
  %s = txl.add %l, %r : tensor<?x?x128xf32>
  %y = txl.layer_norm %s, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x?x128xf32>, tensor<128xf32>, tensor<128xf32>
  return %y, %l : tensor<?x?x128xf32>, tensor<?x?x128xf32>
}

// -----

// Not fused: the add is in another block than the norm.
// CHECK-LABEL: func.func @other_block(
// CHECK: %[[S:.+]] = txl.add
// CHECK: scf.if
// CHECK: tensor.collapse_shape %[[S]]
// CHECK: gpu.launch_func @txl_kernels::@layer_norm_d128
// CHECK-NOT: layer_norm_add
// CHECK: gpu.func @layer_norm_d128(
func.func @other_block(%a: tensor<?x?x128xf32>, %r: tensor<?x?x128xf32>, %g: tensor<128xf32>, %b: tensor<128xf32>, %c: i1) -> tensor<?x?x128xf32> {
  %s = txl.add %a, %r : tensor<?x?x128xf32>
  %y = scf.if %c -> tensor<?x?x128xf32> {
    %n = txl.layer_norm %s, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x?x128xf32>, tensor<128xf32>, tensor<128xf32>
    scf.yield %n : tensor<?x?x128xf32>
  } else {
    scf.yield %a : tensor<?x?x128xf32>
  }
  return %y : tensor<?x?x128xf32>
}
