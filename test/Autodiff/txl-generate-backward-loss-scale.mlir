// RUN: txl-opt %s --split-input-file --txl-generate-backward=loss-scale=true | FileCheck %s
// RUN: txl-opt %s --split-input-file --txl-generate-backward | FileCheck %s --check-prefix=PLAIN

// loss-scale: @segment_grad takes a trailing f32 %loss_scale (txl.loss_scale)
// and the seed 1/numel is multiplied by it, so every gradient carries the
// scale from the start of the backward (dynamic loss scaling). Without the
// option the arguments are @segment's (txl-generate-backward.mlir).
// CHECK-LABEL: func.func @segment_grad
// CHECK-SAME: (%[[W:[^:]+]]: tensor<?x4xf32> {txl.param = "w"}, %{{[^:]+}}: tensor<?x4xf32>, %[[SCALE:[^:]+]]: f32 {txl.loss_scale})
// CHECK: %[[INV:.+]] = arith.divf %{{.+}}, %{{.+}} : f32
// CHECK: %[[SEED:.+]] = arith.mulf %[[INV]], %[[SCALE]] : f32
// CHECK: linalg.fill ins(%[[SEED]] : f32)
// PLAIN-LABEL: func.func @segment_grad
// PLAIN-SAME: (%{{[^:]+}}: tensor<?x4xf32> {txl.param = "w"}, %{{[^:]+}}: tensor<?x4xf32>)
// PLAIN-NOT: txl.loss_scale
// PLAIN: return
func.func @segment(%w: tensor<?x4xf32> {txl.param = "w"}, %x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %s = txl.scale %w {factor = 3.0 : f32} : tensor<?x4xf32>
  %y = txl.add %s, %x : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// An f64 loss (the f64 test models): the f32 scale is widened first.
// CHECK-LABEL: func.func @segment_grad
// CHECK-SAME: %[[SCALE:[^:]+]]: f32 {txl.loss_scale})
// CHECK: %[[INV:.+]] = arith.divf %{{.+}}, %{{.+}} : f64
// CHECK: %[[WIDE:.+]] = arith.extf %[[SCALE]] : f32 to f64
// CHECK: %[[SEED:.+]] = arith.mulf %[[INV]], %[[WIDE]] : f64
// CHECK: linalg.fill ins(%[[SEED]] : f64)
func.func @segment(%w: tensor<?x4xf64> {txl.param = "w"}) -> tensor<?x4xf64> {
  %s = txl.scale %w {factor = 3.0 : f32} : tensor<?x4xf64>
  return %s : tensor<?x4xf64>
}
