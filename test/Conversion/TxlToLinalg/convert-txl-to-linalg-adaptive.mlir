// RUN: txl-opt %s --split-input-file --convert-txl-to-linalg | FileCheck %s
// RUN: txl-opt %s --split-input-file --convert-txl-to-linalg | FileCheck %s --check-prefix=NOFULL

// txl.adaptive_nll with a sliced output layer (div_val = 1, cutoffs [4],
// n_token 10), projections and one tail cluster. The head's log-sum-exp
// over the shortlist (the projected hidden state times rows [0, 4) of the
// layer) is swept over blocks of 512 columns with an online log-sum-exp
// (scf.for carrying max and sum), the target's shortlist logit is a
// gathered dot product (row t of the layer), and the cluster row is one
// small product; the head's total log-sum-exp joins the two without
// concatenating. The cluster column of a tail token is found by comparing
// with the cluster starts. The tail is scored only for the compacted
// positions of its tokens (a blocked compaction), gathered, projected,
// swept over rows [4, 10) of the layer in blocks, its target logit
// gathered, and added into the head's NLL at its positions (one scf.forall
// iteration each).
// CHECK-LABEL: func.func @adaptive_nll_sliced
// CHECK-SAME: (%[[H:[^:]+]]: tensor<?x?x8xf32>, %[[T:[^:]+]]: tensor<?x?xi64>, %[[W:[^:]+]]: tensor<10x4xf32>, %[[B:[^:]+]]: tensor<10xf32>, %[[P:[^:]+]]: tensor<8x4xf32>, %[[CW:[^:]+]]: tensor<1x4xf32>, %[[CB:[^:]+]]: tensor<1xf32>)
// CHECK-DAG: %[[HF:.+]] = tensor.collapse_shape %[[H]] {{\[\[}}0, 1], [2]]
// CHECK-DAG: %[[TF:.+]] = tensor.collapse_shape %[[T]] {{\[\[}}0, 1]]
// CHECK: %[[HP:.+]] = linalg.matmul ins(%[[HF]], %[[P]] : tensor<?x8xf32>, tensor<8x4xf32>)
// CHECK: %[[W0:.+]] = tensor.extract_slice %[[W]][0, 0] [4, 4] [1, 1]
// CHECK: %[[SWEEP:.+]]:2 = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args({{.+}}) -> (tensor<?xf32>, tensor<?xf32>)
// CHECK: %[[BLOCK:.+]] = tensor.extract_slice %[[W0]]
// CHECK: linalg.matmul indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}] ins(%[[HP]], %[[BLOCK]] : tensor<?x4xf32>, tensor<?x4xf32>) outs(%{{.+}} : tensor<?x?xf32>)
// CHECK: math.log
// CHECK: %[[COLS:.+]] = linalg.generic {{.+}} ins(%[[TF]] : tensor<?xi64>) outs(%{{.+}} : tensor<?xindex>)
// CHECK: %[[W0B:.+]] = tensor.extract_slice %[[W]][0, 0] [4, 4] [1, 1]
// CHECK: linalg.generic {{.+}} ins(%[[HP]], %[[COLS]] : tensor<?x4xf32>, tensor<?xindex>)
// CHECK: tensor.extract %[[W0B]]
// CHECK: %[[SHORT:.+]] = linalg.generic {{.+}} ins(%{{.+}}, %[[COLS]] : tensor<?xf32>, tensor<?xindex>)
// CHECK: %[[CLUSTER:.+]] = linalg.matmul indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}] ins(%[[HP]], %[[CW]] : tensor<?x4xf32>, tensor<1x4xf32>)
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: %[[HEADNLL:.+]] = linalg.generic {{.+}} ins(%{{.+}}, %[[TF]], %[[SHORT]] : tensor<?xf32>, tensor<?xi64>, tensor<?xf32>)
// CHECK: arith.cmpi sge, %{{.+}}, %[[C4:.+]] : index
// CHECK: tensor.extract %[[CLUSTER]]
// CHECK: %[[NCOUNT:.+]] = scf.forall {{.+}} -> (tensor<?xindex>)
// CHECK: %[[NGROUPS:.+]] = scf.forall {{.+}} -> (tensor<?xindex>)
// CHECK: %[[NSCAN:.+]]:2 = scf.for {{.+}} -> (tensor<?xindex>, index)
// CHECK: %[[NOFFSETS:.+]] = scf.forall {{.+}} -> (tensor<?xindex>)
// CHECK: %[[NROWS:.+]] = scf.forall {{.+}} -> (tensor<?xindex>)
// CHECK: %[[NSCANBOUNDED:.+]] = arith.minui %[[NSCAN]]#1, %{{.+}} : index
// CHECK: %[[IDX:.+]] = tensor.extract_slice %[[NROWS]][0] [%[[NSCANBOUNDED]]] [1]
// CHECK: %[[G:.+]] = linalg.generic {{.+}} ins(%[[IDX]] : tensor<?xindex>)
// CHECK: tensor.extract %[[HF]]
// CHECK: %[[TP:.+]] = linalg.matmul ins(%[[G]], %[[P]] : tensor<?x8xf32>, tensor<8x4xf32>)
// CHECK: %[[W1:.+]] = tensor.extract_slice %[[W]][4, 0] [6, 4] [1, 1]
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args({{.+}}) -> (tensor<?xf32>, tensor<?xf32>)
// CHECK: %[[BLOCK1:.+]] = tensor.extract_slice %[[W1]]
// CHECK: linalg.matmul indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}] ins(%[[TP]], %[[BLOCK1]] : tensor<?x4xf32>, tensor<?x4xf32>)
// CHECK: %[[TCOLS:.+]] = linalg.generic {{.+}} ins(%[[IDX]] : tensor<?xindex>) outs(%{{.+}} : tensor<?xindex>)
// CHECK: tensor.extract %[[TF]]
// CHECK: linalg.generic {{.+}} ins(%[[TP]], %[[TCOLS]] : tensor<?x4xf32>, tensor<?xindex>)
// CHECK: %[[TAIL:.+]] = linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<?xf32>, tensor<?xf32>)
// CHECK: arith.subf
// CHECK: %[[SUM:.+]] = scf.forall (%[[M:.+]]) in (%[[NSCANBOUNDED]]) shared_outs(%[[SO:.+]] = %[[HEADNLL]]) -> (tensor<?xf32>)
// CHECK: %[[AT:.+]] = tensor.extract %[[IDX]][%[[M]]]
// CHECK: %[[V:.+]] = tensor.extract %[[TAIL]][%[[M]]]
// CHECK: %[[SLOT:.+]] = tensor.extract_slice %[[SO]][%[[AT]]] [1] [1]
// CHECK: %[[OLD:.+]] = tensor.extract %[[SLOT]]
// CHECK: arith.addf %[[OLD]], %[[V]]
// CHECK: tensor.parallel_insert_slice %{{.+}} into %[[SO]][%[[AT]]] [1] [1]
// CHECK: %[[E:.+]] = tensor.expand_shape %[[SUM]] {{\[\[}}0, 1]]
// CHECK: return %[[E]]
// No [tokens, n_token] logits: nothing is 10 wide.
// NOFULL-LABEL: func.func @adaptive_nll_sliced
// NOFULL-NOT: x10xf32>
// NOFULL: return
func.func @adaptive_nll_sliced(%h: tensor<?x?x8xf32>, %t: tensor<?x?xi64>, %w: tensor<10x4xf32>, %b: tensor<10xf32>, %p: tensor<8x4xf32>, %cw: tensor<1x4xf32>, %cb: tensor<1xf32>) -> tensor<?x?xf32> {
  %0 = txl.adaptive_nll %h, %t weights(%w : tensor<10x4xf32>) biases(%b : tensor<10xf32>) projs(%p, %p : tensor<8x4xf32>, tensor<8x4xf32>) clusters(%cw, %cb : tensor<1x4xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 4, 10>} : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Without clusters or projections only the head remains (here 2000
// columns): the blocked sweep (one loop, a product per block of 512
// columns) and the target's gathered logit; no other loop, no second
// product, and no [tokens, 2000] logits.
// CHECK-LABEL: func.func @adaptive_nll_head_only
// CHECK: scf.for
// CHECK: linalg.matmul {{.+}} outs(%{{.+}} : tensor<?x?xf32>)
// CHECK: scf.yield
// CHECK-NOT: linalg.matmul
// CHECK-NOT: scf.for
// CHECK: return
// NOFULL-LABEL: func.func @adaptive_nll_head_only
// NOFULL-NOT: x2000xf32>
// NOFULL: return
func.func @adaptive_nll_head_only(%h: tensor<?x?x8xf32>, %t: tensor<?x?xi64>, %w: tensor<2000x8xf32>, %b: tensor<2000xf32>) -> tensor<?x?xf32> {
  %0 = txl.adaptive_nll %h, %t weights(%w : tensor<2000x8xf32>) biases(%b : tensor<2000xf32>) projs() {cutoff_ends = array<i64: 0, 2000>} : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// txl.adaptive_embedding: per cluster, compact the positions of its ids,
// gather rows id - start of the cluster's table, project them (weight [out,
// in], B map transposed) and write them back by row.
// CHECK-LABEL: func.func @adaptive_embedding
// CHECK-SAME: (%[[IDS:[^:]+]]: tensor<?x?xi64>, %[[A:[^:]+]]: tensor<5x8xf32>, %[[B:[^:]+]]: tensor<5x4xf32>, %[[P:[^:]+]]: tensor<8x8xf32>, %[[Q:[^:]+]]: tensor<8x4xf32>)
// CHECK: %[[F:.+]] = tensor.collapse_shape %[[IDS]] {{\[\[}}0, 1]]
// CHECK: %[[OUT:.+]] = linalg.fill {{.+}} -> tensor<?x8xf32>
// The compaction, in blocks of 64 positions: each block's count (one
// scf.forall iteration per block), the blocks' first output slots (a
// blocked scan over groups of 64 blocks: each group's sum, one scf.forall
// iteration per group; the scan of the groups' sums, an scf.for, the only
// sequential part, one step per group; each block's offset in its group,
// one scf.forall iteration per block, adding the counts of the group's
// blocks before it), then each block writes its positions, in order, into
// its own slice of the rows.
// CHECK: %[[NB:.+]] = arith.ceildivui %{{.+}}, %c64 : index
// CHECK: %[[COUNTS:.+]] = scf.forall (%{{.+}}) in (%[[NB]]) shared_outs(%{{.+}}) -> (tensor<?xindex>)
// CHECK: scf.for {{.+}} -> (index)
// CHECK: arith.select
// CHECK: tensor.parallel_insert_slice
// CHECK: %[[NG:.+]] = arith.ceildivui %[[NB]], %c64 : index
// CHECK: %[[GROUPS:.+]] = scf.forall (%{{.+}}) in (%[[NG]]) shared_outs(%{{.+}}) -> (tensor<?xindex>)
// CHECK: scf.for {{.+}} -> (index)
// CHECK: tensor.extract %[[COUNTS]]
// CHECK: %[[SCAN:.+]]:2 = scf.for %{{.+}} = %{{.+}} to %[[NG]] {{.+}} -> (tensor<?xindex>, index)
// CHECK: tensor.extract %[[GROUPS]]
// CHECK: %[[OFFSETS:.+]] = scf.forall (%[[BLK:.+]]) in (%[[NB]]) shared_outs(%{{.+}}) -> (tensor<?xindex>)
// CHECK: %[[G:.+]] = arith.divui %[[BLK]], %c64 : index
// CHECK: %[[G0:.+]] = arith.muli %[[G]], %c64 : index
// CHECK: %[[G0END:.+]] = arith.addi %[[G0]], %c64 : index
// CHECK: %[[BEFORE:.+]] = arith.minui %[[G0END]], %[[BLK]] : index
// CHECK: scf.for %{{.+}} = %[[G0]] to %[[BEFORE]] {{.+}} -> (index)
// CHECK: tensor.extract %[[COUNTS]]
// CHECK: tensor.extract %[[SCAN]]#0[%[[G]]]
// CHECK: %[[ROWS:.+]] = scf.forall (%{{.+}}) in (%[[NB]]) shared_outs(%[[RO:.+]] = %{{.+}}) -> (tensor<?xindex>)
// CHECK: %[[FIRST:.+]] = tensor.extract %[[OFFSETS]]
// CHECK: %[[SIZE:.+]] = tensor.extract %[[COUNTS]]
// CHECK: %[[SLICE:.+]] = tensor.extract_slice %[[RO]][%[[FIRST]]] [%[[SIZE]]] [1]
// CHECK: %[[WROTE:.+]]:2 = scf.for {{.+}} iter_args(%{{.+}} = %[[SLICE]], {{.+}}) -> (tensor<?xindex>, index)
// CHECK: scf.if
// CHECK: tensor.insert
// CHECK: tensor.parallel_insert_slice %[[WROTE]]#0 into %[[RO]][%[[FIRST]]] [%[[SIZE]]] [1]
// CHECK: %[[SCANBOUNDED:.+]] = arith.minui %[[SCAN]]#1, %{{.+}} : index
// CHECK: %[[IDX:.+]] = tensor.extract_slice %[[ROWS]][0] [%[[SCANBOUNDED]]] [1]
// CHECK: linalg.generic {{.+}} ins(%[[IDX]] : tensor<?xindex>) outs(%{{.+}} : tensor<?x8xf32>)
// CHECK: tensor.extract %[[A]]
// CHECK: %[[PROJ:.+]] = linalg.matmul indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}] ins(%{{.+}}, %[[P]] : tensor<?x8xf32>, tensor<8x8xf32>)
// The rows go back one element per iteration (the compacted positions
// are distinct).
// CHECK: %[[OUT0:.+]] = scf.forall (%[[M:.+]], %[[K:.+]]) in (%[[SCANBOUNDED]], 8) shared_outs(%[[O:.+]] = %[[OUT]]) -> (tensor<?x8xf32>)
// CHECK: %[[AT:.+]] = tensor.extract %[[IDX]][%[[M]]]
// CHECK: tensor.extract %[[PROJ]][%[[M]], %[[K]]]
// CHECK: tensor.parallel_insert_slice %{{.+}} into %[[O]][%[[AT]], %[[K]]] [1, 1] [1, 1]
// CHECK: scf.forall {{.+}} -> (tensor<?xindex>)
// CHECK: arith.subi %{{.+}}, %[[C5:.+]] : index
// CHECK: tensor.extract %[[B]]
// CHECK: linalg.matmul indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}] ins(%{{.+}}, %[[Q]] : tensor<?x4xf32>, tensor<8x4xf32>)
// CHECK: %[[OUT1:.+]] = scf.forall {{.+}} shared_outs(%{{.+}} = %[[OUT0]]) -> (tensor<?x8xf32>)
// CHECK: tensor.expand_shape %[[OUT1]] {{\[\[}}0, 1], [2]]
func.func @adaptive_embedding(%t: tensor<?x?xi64>, %a: tensor<5x8xf32>, %b: tensor<5x4xf32>, %p: tensor<8x8xf32>, %q: tensor<8x4xf32>) -> tensor<?x?x8xf32> {
  %e = txl.adaptive_embedding %t tables(%a, %b : tensor<5x8xf32>, tensor<5x4xf32>) projs(%p, %q : tensor<8x8xf32>, tensor<8x4xf32>) {cutoff_ends = array<i64: 0, 5, 10>} : tensor<?x?xi64> -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}
