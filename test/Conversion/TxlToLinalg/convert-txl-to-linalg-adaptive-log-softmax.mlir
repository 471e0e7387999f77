// RUN: txl-opt %s --convert-txl-to-linalg | FileCheck %s

// txl.adaptive_log_softmax with a shortlist of 4 and tail clusters [4, 7)
// and [7, 10), div_val 1 (one layer sliced by cluster), no projections:
// the head's logits (shortlist rows 0..4) and cluster logits, one
// log-sum-exp over both; the shortlist columns are head logit - lse; tail
// cluster 1 reads cluster row 1 (head column -1) and tail cluster 2 row 0
// (column -2), each added to its own log-softmax and written into columns
// 4..7 and 7..10 of one [tokens, 10] result. No NLL, no compaction.
// CHECK-LABEL: func.func @adaptive_log_softmax
// CHECK-SAME: (%[[H:[^:]+]]: tensor<?x?x8xf32>, %[[W:[^:]+]]: tensor<10x8xf32>, %[[B:[^:]+]]: tensor<10xf32>, %[[CW:[^:]+]]: tensor<2x8xf32>, %[[CB:[^:]+]]: tensor<2xf32>)
// CHECK: %[[H2:.+]] = tensor.collapse_shape %[[H]] {{\[}}[0, 1], [2]]
// CHECK: %[[OUT:.+]] = tensor.empty(%{{.+}}) : tensor<?x10xf32>
// CHECK: tensor.extract_slice %[[W]][0, 0] [4, 8] [1, 1]
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// CHECK: math.log
// CHECK: %[[HEAD:.+]] = linalg.generic
// CHECK: arith.subf
// CHECK: %[[O1:.+]] = tensor.insert_slice %[[HEAD]] into %[[OUT]][0, 0] [%{{.+}}, 4] [1, 1]
// CHECK: tensor.extract_slice %[[W]][4, 0] [3, 8] [1, 1]
// CHECK: %[[COL1:.+]] = tensor.extract_slice %[[CL:.+]][0, 1] [%{{.+}}, 1] [1, 1]
// CHECK: %[[T1:.+]] = linalg.generic
// CHECK: arith.subf
// CHECK: arith.subf
// CHECK: arith.addf
// CHECK: %[[O2:.+]] = tensor.insert_slice %[[T1]] into %[[O1]][0, 4] [%{{.+}}, 3] [1, 1]
// CHECK: tensor.extract_slice %[[W]][7, 0] [3, 8] [1, 1]
// CHECK: tensor.extract_slice %[[CL]][0, 0] [%{{.+}}, 1] [1, 1]
// CHECK: %[[T2:.+]] = linalg.generic
// CHECK: %[[O3:.+]] = tensor.insert_slice %[[T2]] into %[[O2]][0, 7] [%{{.+}}, 3] [1, 1]
// CHECK: tensor.expand_shape %[[O3]]
// CHECK-NOT: scf.for
func.func @adaptive_log_softmax(%h: tensor<?x?x8xf32>, %w: tensor<10x8xf32>, %b: tensor<10xf32>, %cw: tensor<2x8xf32>, %cb: tensor<2xf32>) -> tensor<?x?x10xf32> {
  %lp = txl.adaptive_log_softmax %h weights(%w : tensor<10x8xf32>) biases(%b : tensor<10xf32>) projs() clusters(%cw, %cb : tensor<2x8xf32>, tensor<2xf32>) {cutoff_ends = array<i64: 0, 4, 7, 10>} : tensor<?x?x8xf32> -> tensor<?x?x10xf32>
  return %lp : tensor<?x?x10xf32>
}

// One cluster with a projection (d_embed 4 < d_model 8): no cluster
// columns, the projection h @ proj, then the head's log-softmax.
// CHECK-LABEL: func.func @projected_one_cluster
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [%{{.+}}, 10] [1, 1]
// CHECK-NOT: tensor.insert_slice
// CHECK: tensor.expand_shape
func.func @projected_one_cluster(%h: tensor<?x?x8xf32>, %w: tensor<10x4xf32>, %b: tensor<10xf32>, %p: tensor<8x4xf32>) -> tensor<?x?x10xf32> {
  %lp = txl.adaptive_log_softmax %h weights(%w : tensor<10x4xf32>) biases(%b : tensor<10xf32>) projs(%p : tensor<8x4xf32>) {cutoff_ends = array<i64: 0, 10>} : tensor<?x?x8xf32> -> tensor<?x?x10xf32>
  return %lp : tensor<?x?x10xf32>
}
