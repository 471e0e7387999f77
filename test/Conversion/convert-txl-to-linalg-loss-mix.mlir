// RUN: txl-opt %s --split-input-file --convert-txl-to-linalg | FileCheck %s

// txl.loss_mix: one generic over [rows, batch] reading the position weight
// by row and each term's weight (first + k) through a constant map; the
// terms are added in order, then scaled by the position weight.
// CHECK-DAG: #[[$POS:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[$W1:.+]] = affine_map<(d0, d1) -> (1)>
// CHECK-DAG: #[[$W2:.+]] = affine_map<(d0, d1) -> (2)>
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @loss_mix
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32>, %[[PW:.+]]: tensor<?xf32>, %[[A:.+]]: tensor<?x?xf32>, %[[B:.+]]: tensor<?x?xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[$POS]], #[[$W1]], #[[$ID]], #[[$W2]], #[[$ID]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[PW]], %[[W]], %[[A]], %[[W]], %[[B]] :
// CHECK: ^bb0(%[[P:[^:]+]]: f32, %[[WA:[^:]+]]: f32, %[[XA:[^:]+]]: f32, %[[WB:[^:]+]]: f32, %[[XB:[^:]+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[TA:.+]] = arith.mulf %[[WA]], %[[XA]]
// CHECK-NEXT: %[[TB:.+]] = arith.mulf %[[WB]], %[[XB]]
// CHECK-NEXT: %[[S:.+]] = arith.addf %[[TA]], %[[TB]]
// CHECK-NEXT: %[[R:.+]] = arith.mulf %[[P]], %[[S]]
// CHECK-NEXT: linalg.yield %[[R]]
func.func @loss_mix(%w: tensor<4xf32>, %pw: tensor<?xf32>, %a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %l = txl.loss_mix %w, %pw, %a, %b {first = 1} : tensor<4xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %l : tensor<?x?xf32>
}

// -----

// One term (an adjoint's form): weight `first` alone.
// CHECK: #[[$W3:.+]] = affine_map<(d0, d1) -> (3)>
// CHECK-LABEL: func.func @loss_mix_one
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[$W3]], #{{.+}}, #{{.+}}]
// CHECK: ^bb0(%[[P:[^:]+]]: f32, %[[WA:[^:]+]]: f32, %[[XA:[^:]+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[TA:.+]] = arith.mulf %[[WA]], %[[XA]]
// CHECK-NEXT: %[[R:.+]] = arith.mulf %[[P]], %[[TA]]
// CHECK-NEXT: linalg.yield %[[R]]
func.func @loss_mix_one(%w: tensor<4xf32>, %pw: tensor<?xf32>, %a: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %l = txl.loss_mix %w, %pw, %a {first = 3} : tensor<4xf32>, tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %l : tensor<?x?xf32>
}
