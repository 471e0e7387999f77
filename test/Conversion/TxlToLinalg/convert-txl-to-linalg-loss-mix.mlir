// RUN: txl-opt %s --split-input-file --convert-txl-to-linalg | FileCheck %s
// RUN: txl-opt %s --split-input-file --convert-txl-to-linalg --txl-fuse-elementwise | FileCheck %s --check-prefix=FUSED

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

// -----

// 17 terms: a first generic adds 16 (32 operands, no position weight), a
// second reads that sum, the position weight and the 17th term (weight 16),
// so that no kernel on the GPU targets takes more than 16 terms.
// CHECK: #[[$W16:.+]] = affine_map<(d0, d1) -> (16)>
// CHECK-LABEL: func.func @loss_mix_chunks
// CHECK-SAME: (%[[W:[^:]+]]: tensor<18xf32>, %[[PW:[^:]+]]: tensor<?xf32>, %[[A:[^:]+]]: tensor<?x?xf32>)
// CHECK: %[[S:.+]] = linalg.generic
// CHECK-SAME: ins(%[[W]], %[[A]], %[[W]], %[[A]],
// CHECK-NOT: %[[PW]]
// CHECK-COUNT-16: arith.mulf
// CHECK: linalg.yield
// CHECK: linalg.generic {indexing_maps = [#{{[^,]+}}, #{{[^,]+}}, #[[$W16]], #{{[^,]+}}, #{{[^]]+}}]
// CHECK-SAME: ins(%[[S]], %[[PW]], %[[W]], %[[A]] :
// CHECK: ^bb0(%[[ACC:[^:]+]]: f32, %[[P:[^:]+]]: f32, %[[WK:[^:]+]]: f32, %[[XK:[^:]+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[T:.+]] = arith.mulf %[[WK]], %[[XK]]
// CHECK-NEXT: %[[SUM:.+]] = arith.addf %[[ACC]], %[[T]]
// CHECK-NEXT: %[[R:.+]] = arith.mulf %[[P]], %[[SUM]]
// CHECK-NEXT: linalg.yield %[[R]]
func.func @loss_mix_chunks(%w: tensor<18xf32>, %pw: tensor<?xf32>, %a: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %l = txl.loss_mix %w, %pw, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a : tensor<18xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %l : tensor<?x?xf32>
}

// -----

// --txl-fuse-elementwise fuses a chunk into the next only while the fused
// generic keeps at most 48 operands (a GPU kernel's parameter space): the 17
// terms above become one generic of 35 inputs, these 40 stay three (16, 16
// and 8 terms; fused, one would read 81 operands).
// FUSED-LABEL: func.func @loss_mix_chunks
// FUSED: linalg.generic
// FUSED-NOT: linalg.generic
// FUSED: return
// FUSED-LABEL: func.func @loss_mix_many
// FUSED-COUNT-3: linalg.generic
// FUSED-NOT: linalg.generic
// FUSED: return
func.func @loss_mix_many(%w: tensor<40xf32>, %pw: tensor<?xf32>, %a: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %l = txl.loss_mix %w, %pw, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a, %a : tensor<40xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %l : tensor<?x?xf32>
}
