// RUN: txl-opt %s --split-input-file --convert-txl-to-linalg --canonicalize --verify-diagnostics | FileCheck %s
// RUN: not txl-opt %s --split-input-file --convert-txl-to-linalg 2>&1 | FileCheck %s --check-prefix=UNLOWERED

// The backward ops of the decomposed attention become batched products
// (linalg.batch_matmul, handed to BLAS later) on heads-first operands, and the
// softmax backward one product, one row reduction and one pointwise pass.

// attn_score_grad with a content key: per (batch, head) dq = dS k and
// dk = dSᵀ q, dS read transposed by the product (lhs map (b, k, m)).
// CHECK-DAG: #[[$TLHS:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>
// CHECK-LABEL: func.func @attn_score_grad
// CHECK-SAME: (%[[DS:[^:]+]]: tensor<?x?x?x2xf32>, %[[Q:[^:]+]]: tensor<?x?x2x4xf32>, %[[K:[^:]+]]: tensor<?x?x2x4xf32>)
// CHECK: %[[DST:.+]] = linalg.transpose ins(%[[DS]] : tensor<?x?x?x2xf32>) {{.*}} permutation = [2, 3, 0, 1]
// CHECK: %[[DS3:.+]] = tensor.collapse_shape %[[DST]] {{\[}}[0, 1], [2], [3]] : tensor<?x2x?x?xf32> into tensor<?x?x?xf32>
// CHECK: %[[KT:.+]] = linalg.transpose ins(%[[K]] : {{.+}} permutation = [1, 2, 0, 3]
// CHECK: %[[K3:.+]] = tensor.collapse_shape %[[KT]]
// CHECK: %[[DQ3:.+]] = linalg.batch_matmul ins(%[[DS3]], %[[K3]] : tensor<?x?x?xf32>, tensor<?x?x4xf32>)
// CHECK: %[[QT:.+]] = linalg.transpose ins(%[[Q]] : {{.+}} permutation = [1, 2, 0, 3]
// CHECK: %[[Q3:.+]] = tensor.collapse_shape %[[QT]]
// CHECK: %[[DK3:.+]] = linalg.batch_matmul indexing_maps = [#[[$TLHS]], {{.+}}] ins(%[[DS3]], %[[Q3]] :
// CHECK: %[[DQE:.+]] = tensor.expand_shape %[[DQ3]]
// CHECK: %[[DQ:.+]] = linalg.transpose ins(%[[DQE]] : {{.+}} permutation = [2, 0, 1, 3]
// CHECK: %[[DKE:.+]] = tensor.expand_shape %[[DK3]]
// CHECK: %[[DK:.+]] = linalg.transpose ins(%[[DKE]] : {{.+}} permutation = [2, 0, 1, 3]
// CHECK-NOT: txl.
// CHECK: return %[[DQ]], %[[DK]] : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
func.func @attn_score_grad(%ds: tensor<?x?x?x2xf32>, %q: tensor<?x?x2x4xf32>, %k: tensor<?x?x2x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>) {
  %dq, %dk = txl.attn_score_grad %ds, %q, %k : tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  return %dq, %dk : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
}

// -----

// With the positional key r [rlen, n_head, d_head], one product per head over
// the (batch, query) rows: dq = dS r, and dr = dSᵀ q sums the batch inside
// the product (no separate reduction).
// CHECK-LABEL: func.func @attn_score_grad_positional
// CHECK-SAME: (%[[DS:[^:]+]]: tensor<?x?x?x2xf32>, %[[Q:[^:]+]]: tensor<?x?x2x4xf32>, %[[R:[^:]+]]: tensor<?x2x4xf32>)
// CHECK: %[[DST:.+]] = linalg.transpose ins(%[[DS]] : {{.+}} permutation = [3, 2, 0, 1]
// CHECK: %[[DS3:.+]] = tensor.collapse_shape %[[DST]] {{\[}}[0], [1, 2], [3]] : tensor<2x?x?x?xf32> into tensor<2x?x?xf32>
// CHECK: %[[QT:.+]] = linalg.transpose ins(%[[Q]] : {{.+}} permutation = [2, 1, 0, 3]
// CHECK: %[[Q3:.+]] = tensor.collapse_shape %[[QT]] {{\[}}[0], [1, 2], [3]] : tensor<2x?x?x4xf32> into tensor<2x?x4xf32>
// CHECK: %[[RT:.+]] = linalg.transpose ins(%[[R]] : {{.+}} permutation = [1, 0, 2]
// CHECK: %[[DQ3:.+]] = linalg.batch_matmul ins(%[[DS3]], %[[RT]] : tensor<2x?x?xf32>, tensor<2x?x4xf32>)
// CHECK: %[[DQ:.+]] = linalg.transpose ins(%{{.+}} : tensor<2x?x?x4xf32>) {{.+}} permutation = [2, 1, 0, 3]
// CHECK-NOT: linalg.reduce
// CHECK: %[[DR3:.+]] = linalg.batch_matmul indexing_maps = {{.+}} ins(%[[DS3]], %[[Q3]] : tensor<2x?x?xf32>, tensor<2x?x4xf32>)
// CHECK-NOT: linalg.reduce
// CHECK: %[[DR:.+]] = linalg.transpose ins(%[[DR3]] : tensor<2x?x4xf32>) {{.+}} permutation = [1, 0, 2]
// CHECK-NOT: linalg.reduce
// CHECK: return %[[DQ]], %[[DR]] : tensor<?x?x2x4xf32>, tensor<?x2x4xf32>
func.func @attn_score_grad_positional(%ds: tensor<?x?x?x2xf32>, %q: tensor<?x?x2x4xf32>, %r: tensor<?x2x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x4xf32>) {
  %dq, %dr = txl.attn_score_grad %ds, %q, %r : tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>
  return %dq, %dr : tensor<?x?x2x4xf32>, tensor<?x2x4xf32>
}

// -----

// softmax_grad: heads first, then scale * P (dP - rowsum(P dP)) over keys,
// the row sum a reassociable reduction; back to [qlen, klen, batch, n_head].
// CHECK-LABEL: func.func @softmax_grad
// CHECK-SAME: (%[[DP:[^:]+]]: tensor<?x?x?x2xf32>, %[[P:[^:]+]]: tensor<?x?x?x2xf32>)
// CHECK-DAG: %[[HALF:.+]] = arith.constant 5.000000e-01 : f32
// CHECK: linalg.transpose ins(%[[P]] : {{.+}} permutation = [2, 3, 0, 1]
// CHECK: linalg.transpose ins(%[[DP]] : {{.+}} permutation = [2, 3, 0, 1]
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.addf %{{.+}}, %{{.+}} fastmath<reassoc> : f32
// CHECK: linalg.generic
// CHECK: %[[C:.+]] = arith.subf
// CHECK: %[[M:.+]] = arith.mulf %{{.+}}, %[[C]] : f32
// CHECK: arith.mulf %[[M]], %[[HALF]] : f32
// CHECK: %[[OUT:.+]] = linalg.transpose {{.+}} permutation = [2, 3, 0, 1]
// CHECK: return %[[OUT]] : tensor<?x?x?x2xf32>
func.func @softmax_grad(%dp: tensor<?x?x?x2xf32>, %p: tensor<?x?x?x2xf32>) -> tensor<?x?x?x2xf32> {
  %ds = txl.softmax_grad %dp, %p {scale = 0.5 : f32} : tensor<?x?x?x2xf32>
  return %ds : tensor<?x?x?x2xf32>
}

// -----

// attn_apply_grad: dP = dO Vᵀ (rhs read transposed), dV = Pᵀ dO (lhs read
// transposed).
// CHECK-DAG: #[[$TLHS:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>
// CHECK-DAG: #[[$TRHS:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-LABEL: func.func @attn_apply_grad
// CHECK-SAME: (%[[DO:[^:]+]]: tensor<?x?x2x4xf32>, %[[P:[^:]+]]: tensor<?x?x?x2xf32>, %[[V:[^:]+]]: tensor<?x?x2x4xf32>)
// CHECK: linalg.transpose ins(%[[DO]] :
// CHECK: %[[DO3:.+]] = tensor.collapse_shape
// CHECK: linalg.transpose ins(%[[V]] :
// CHECK: %[[V3:.+]] = tensor.collapse_shape
// CHECK: %[[DP3:.+]] = linalg.batch_matmul indexing_maps = [{{.+}}, #[[$TRHS]], {{.+}}] ins(%[[DO3]], %[[V3]] :
// CHECK: linalg.transpose ins(%[[P]] : {{.+}} permutation = [2, 3, 0, 1]
// CHECK: %[[P3:.+]] = tensor.collapse_shape
// CHECK: %[[DV3:.+]] = linalg.batch_matmul indexing_maps = [#[[$TLHS]], {{.+}}] ins(%[[P3]], %[[DO3]] :
// CHECK: return
func.func @attn_apply_grad(%do: tensor<?x?x2x4xf32>, %p: tensor<?x?x?x2xf32>, %v: tensor<?x?x2x4xf32>) -> (tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>) {
  %dp, %dv = txl.attn_apply_grad %do, %p, %v : tensor<?x?x2x4xf32>, tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>
  return %dp, %dv : tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>
}

// -----

// txl.rel_shift_grad is --txl-lower-rel-shift's job (run first by the
// pipeline): left in the input, the conversion fails.
// UNLOWERED: error: failed to legalize operation 'txl.rel_shift_grad' that was explicitly marked illegal
func.func @rel_shift_grad_left(%ds: tensor<?x?x?x2xf32>) -> tensor<?x?x?x2xf32> {
  // expected-error @+1 {{failed to legalize operation 'txl.rel_shift_grad' that was explicitly marked illegal}}
  %d = txl.rel_shift_grad %ds : tensor<?x?x?x2xf32>
  return %d : tensor<?x?x?x2xf32>
}
