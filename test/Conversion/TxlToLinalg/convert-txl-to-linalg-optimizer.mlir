// RUN: txl-opt %s --split-input-file --convert-txl-to-linalg --canonicalize | FileCheck %s

// An update is one elementwise generic: the gradient is its input and the
// parameter and states are its inits, read through the block's out
// arguments, so an in-place caller (@optimizer_step) updates their buffers.
// Adam's bias corrections are f64 scalars computed once, outside the loop.
// CHECK-LABEL: func.func @adam
// CHECK-SAME: (%[[P:[^:]+]]: tensor<4x2xf32>, %[[G:[^:]+]]: tensor<4x2xf32>, %[[M:[^:]+]]: tensor<4x2xf32>, %[[V:[^:]+]]: tensor<4x2xf32>, %{{.+}}: f64, %[[STEP:[^:]+]]: i64, %[[S:[^:]+]]: f32)
// CHECK: %[[T:.+]] = arith.sitofp %[[STEP]] : i64 to f64
// CHECK: math.powf %{{.+}}, %[[T]] : f64
// CHECK: %[[R:.+]]:3 = linalg.generic {{.+}} iterator_types = ["parallel", "parallel"]} ins(%[[G]] : tensor<4x2xf32>) outs(%[[P]], %[[M]], %[[V]] : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>)
// CHECK-NEXT: ^bb0(%[[GI:.+]]: f32, %[[PI:.+]]: f32, %[[MI:.+]]: f32, %[[VI:.+]]: f32):
// CHECK-NEXT: %[[GS:.+]] = arith.mulf %[[GI]], %[[S]] : f32
// CHECK-NEXT: arith.subf %[[GS]], %[[MI]] : f32
// CHECK: %[[NEWM:.+]] = arith.addf %[[MI]], %{{.+}} : f32
// CHECK: arith.mulf %[[VI]], %{{.+}} : f32
// CHECK: %[[NEWP:.+]] = arith.addf %[[PI]], %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[NEWP]], %[[NEWM]], %{{.+}} : f32, f32, f32
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @adam(%p: tensor<4x2xf32>, %g: tensor<4x2xf32>, %m: tensor<4x2xf32>, %v: tensor<4x2xf32>, %lr: f64, %step: i64, %scale: f32)
    -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
  %p1, %m1, %v1 = txl.adam_update %p, %g, %m, %v, %lr, %step, %scale
      {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64} : tensor<4x2xf32>
  return %p1, %m1, %v1 : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// SGD and Adagrad: the same form with one state.
// CHECK-LABEL: func.func @sgd_adagrad
// CHECK-SAME: (%[[P:[^:]+]]: tensor<3xf32>, %[[G:[^:]+]]: tensor<3xf32>, %[[B:[^:]+]]: tensor<3xf32>
// CHECK: linalg.generic {{.+}} ins(%[[G]] : tensor<3xf32>) outs(%[[P]], %[[B]] : tensor<3xf32>, tensor<3xf32>)
// CHECK: linalg.generic {{.+}} ins(%[[G]] : tensor<3xf32>) outs(%[[P]], %[[B]] : tensor<3xf32>, tensor<3xf32>)
// CHECK: math.sqrt
// CHECK-NOT: txl.
func.func @sgd_adagrad(%p: tensor<3xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %lr: f64, %scale: f32)
    -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %p1, %b1 = txl.sgd_update %p, %g, %b, %lr, %scale {momentum = 0.9 : f64} : tensor<3xf32>
  %p2, %s2 = txl.adagrad_update %p, %g, %b, %lr, %scale {eps = 1.0e-10 : f64} : tensor<3xf32>
  return %p1, %b1, %p2, %s2 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// squared_norm: one reduction over the flattened tensor whose addition may
// be reassociated (vector partial sums), each element squared and summed in
// f64 and the sum rounded to f32 once; a 0-d input is expanded to [1].
// CHECK-LABEL: func.func @norm
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape %arg0 {{\[}}[0, 1]] : tensor<4x2xf32> into tensor<8xf32>
// CHECK: %[[SUM:.+]] = linalg.generic {{.+}} iterator_types = ["reduction"]} ins(%[[FLAT]] : tensor<8xf32>) outs(%{{.+}} : tensor<f64>)
// CHECK: %[[WIDE:.+]] = arith.extf %{{.+}} : f32 to f64
// CHECK: arith.mulf %[[WIDE]], %[[WIDE]] : f64
// CHECK-NEXT: arith.addf %{{.+}}, %{{.+}} fastmath<reassoc> : f64
// CHECK: %[[S:.+]] = tensor.extract %[[SUM]][] : tensor<f64>
// CHECK: %[[R:.+]] = arith.truncf %[[S]] : f64 to f32
// CHECK: return %[[R]]
// CHECK-LABEL: func.func @norm_scalar
// CHECK: tensor.expand_shape %arg0 [] output_shape [1] : tensor<f32> into tensor<1xf32>
// CHECK: fastmath<reassoc>
func.func @norm(%g: tensor<4x2xf32>) -> f32 {
  %s = txl.squared_norm %g : tensor<4x2xf32>
  return %s : f32
}
func.func @norm_scalar(%g: tensor<f32>) -> f32 {
  %s = txl.squared_norm %g : tensor<f32>
  return %s : f32
}
