// RUN: txl-opt %s --convert-txl-to-linalg --canonicalize | FileCheck %s

// The backward ops become BLAS-readable products and fused loops.

// dW = dyᵀ x reads dy transposed in place: linalg.matmul with lhs map (k, m).
// CHECK-DAG: #[[$TA:.+]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[$TB:.+]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[$BTA:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>
// CHECK-LABEL: func.func @linear_weight_grad
// CHECK: %[[DY:.+]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]]
// CHECK: %[[X:.+]] = tensor.collapse_shape %arg1 {{\[}}[0, 1], [2]]
// CHECK: linalg.matmul indexing_maps = [#[[$TA]], #[[$TB]], #{{.+}}] ins(%[[DY]], %[[X]] : tensor<?x8xf32>, tensor<?x4xf32>) outs(%{{.+}} : tensor<8x4xf32>)
func.func @linear_weight_grad(%dy: tensor<?x?x8xf32>, %x: tensor<?x?x4xf32>) -> tensor<8x4xf32> {
  %dw = txl.linear_weight_grad %dy, %x : tensor<?x?x8xf32>, tensor<?x?x4xf32> -> tensor<8x4xf32>
  return %dw : tensor<8x4xf32>
}

// dx = dy W: a plain product, expanded back to [..., in].
// CHECK-LABEL: func.func @linear_input_grad
// CHECK: linalg.matmul ins(%{{.+}}, %arg1 : tensor<?x8xf32>, tensor<8x4xf32>) outs(%{{.+}} : tensor<?x4xf32>)
// CHECK: tensor.expand_shape
func.func @linear_input_grad(%dy: tensor<?x?x8xf32>, %w: tensor<8x4xf32>) -> tensor<?x?x4xf32> {
  %dx = txl.linear_input_grad %dy, %w : tensor<?x?x8xf32>, tensor<8x4xf32> -> tensor<?x?x4xf32>
  return %dx : tensor<?x?x4xf32>
}

// A bias gradient reduces the leading dimensions.
// CHECK-LABEL: func.func @sum_leading
// CHECK: linalg.generic {{.+}} iterator_types = ["reduction", "reduction", "parallel", "parallel"]} ins(%arg0 : tensor<?x?x2x4xf32>) outs(%{{.+}} : tensor<2x4xf32>)
func.func @sum_leading(%x: tensor<?x?x2x4xf32>) -> tensor<2x4xf32> {
  %s = txl.sum_leading %x : tensor<?x?x2x4xf32> -> tensor<2x4xf32>
  return %s : tensor<2x4xf32>
}

// The embedding gradient accumulates rows in position order.
// CHECK-LABEL: func.func @embedding_grad
// CHECK: linalg.fill {{.+}} -> tensor<10x4xf32>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.addf
// CHECK: tensor.insert
func.func @embedding_grad(%dy: tensor<?x?x4xf32>, %t: tensor<?x?xi64>) -> tensor<10x4xf32> {
  %d = txl.embedding_grad %dy, %t : tensor<?x?x4xf32>, tensor<?x?xi64> -> tensor<10x4xf32>
  return %d : tensor<10x4xf32>
}

// With `into`, the rows are added onto the given gradient: no zero table.
// CHECK-LABEL: func.func @embedding_grad_into
// CHECK-SAME: %[[G:[^:]+]]: tensor<10x4xf32>)
// CHECK-NOT: linalg.fill
// CHECK: scf.for %{{.+}} iter_args(%{{.+}} = %[[G]])
// CHECK: scf.for
// CHECK: arith.addf
// CHECK: tensor.insert
func.func @embedding_grad_into(%dy: tensor<?x?x4xf32>, %t: tensor<?x?xi64>, %g: tensor<10x4xf32>) -> tensor<10x4xf32> {
  %d = txl.embedding_grad %dy, %t into %g : tensor<?x?x4xf32>, tensor<?x?xi64> -> tensor<10x4xf32>
  return %d : tensor<10x4xf32>
}

// The fused attention backward recomputes the scores as the forward does
// (the positional product into the padded buffer, AC onto its shifted
// view), then: dV = Pᵀ dO and dK = dSᵀ (q + u) as batched products with a
// transposed lhs, dP = dO Vᵀ, dQu = dS K. dS is shifted back to the
// unshifted positional columns once (dRaw[i, m] = dS[i, m + 1 + i - qlen],
// 0 before the first column), and both positional gradients are products
// too, one per head over all batch columns ([n, b·qlen, klen]): dQv = dRaw r
// and dR = dRawᵀ (q + v), whose sum over the batch columns is the product's
// own reduction. Nothing gathers r, repeats it per batch column or reduces
// over a shifted index.
// CHECK-LABEL: func.func @rel_attention_grad
// CHECK-SAME: %[[R:[^:]+]]: tensor<?x2x4xf32>, %{{[^:]+}}: tensor<2x4xf32>, %{{[^:]+}}: tensor<2x4xf32>, %{{[^:]+}}: index, %{{[^:]+}}: i1)
// CHECK-NOT: tensor.extract %[[R]]
// CHECK: %[[RH:.+]] = linalg.transpose ins(%[[R]] : tensor<?x2x4xf32>) outs(%{{.+}} : tensor<2x?x4xf32>) permutation = [1, 0, 2]
// CHECK: tensor.extract_slice %{{.+}}[0, 0, 1]
// CHECK: linalg.batch_matmul
// CHECK: tensor.expand_shape
// CHECK: linalg.batch_matmul
// CHECK: math.exp
// CHECK: linalg.batch_matmul indexing_maps = [#[[$BTA]]
// CHECK: linalg.batch_matmul
// CHECK: %[[DS:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel"]} ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?xf32>)
// CHECK: %[[DRAW:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel"]} outs(
// CHECK-NEXT: ^bb0(%{{.+}}: f32):
// CHECK-NEXT: %[[BN:.+]] = linalg.index 0 : index
// CHECK-NEXT: %[[I:.+]] = linalg.index 1 : index
// CHECK-NEXT: %[[M:.+]] = linalg.index 2 : index
// CHECK-NEXT: %[[M1:.+]] = arith.addi %[[M]], %{{.+}} : index
// CHECK-NEXT: %[[MI:.+]] = arith.addi %[[M1]], %[[I]] : index
// CHECK-NEXT: %[[J:.+]] = arith.subi %[[MI]], %{{.+}} : index
// CHECK-NEXT: %[[EX:.+]] = arith.cmpi sge, %[[J]], %{{.+}} : index
// CHECK-NEXT: %[[COL:.+]] = arith.maxsi %[[J]], %{{.+}} : index
// CHECK-NEXT: %[[G:.+]] = tensor.extract %[[DS]][%[[BN]], %[[I]], %[[COL]]] : tensor<?x?x?xf32>
// CHECK-NEXT: %[[SEL:.+]] = arith.select %[[EX]], %[[G]], %{{.+}} : f32
// CHECK-NEXT: linalg.yield %[[SEL]] : f32
// CHECK: linalg.batch_matmul ins(%[[DS]], %{{.+}} :
// CHECK: linalg.batch_matmul indexing_maps = [#[[$BTA]], {{.+}}] ins(%[[DS]], %{{.+}} :
// CHECK: %[[DRAW4:.+]] = tensor.expand_shape %[[DRAW]] {{\[\[}}0, 1], [2], [3]]
// CHECK: %[[DRAWH:.+]] = tensor.collapse_shape %[[DRAW4]] {{\[\[}}0], [1, 2], [3]] : tensor<2x?x?x?xf32> into tensor<2x?x?xf32>
// CHECK: linalg.batch_matmul ins(%[[DRAWH]], %[[RH]] : tensor<2x?x?xf32>, tensor<2x?x4xf32>)
// CHECK: %[[DRH:.+]] = linalg.batch_matmul indexing_maps = [#[[$BTA]], {{.+}}] ins(%[[DRAWH]], %{{.+}} : tensor<2x?x?xf32>, tensor<2x?x4xf32>) outs(%{{.+}} : tensor<2x?x4xf32>)
// CHECK-NOT: "reduction", "parallel", "parallel", "parallel"
// CHECK: linalg.transpose ins(%[[DRH]] : tensor<2x?x4xf32>) outs(%{{.+}} : tensor<?x2x4xf32>) permutation = [1, 0, 2]
// CHECK-NOT: "reduction", "parallel", "parallel", "parallel"
// CHECK-NOT: tensor.extract %[[R]]
// CHECK-NOT: tensor<?x?xf32>
// CHECK: return
func.func @rel_attention_grad(%do: tensor<?x?x2x4xf32>, %q: tensor<?x?x2x4xf32>, %k: tensor<?x?x2x4xf32>, %v: tensor<?x?x2x4xf32>,
                              %r: tensor<?x2x4xf32>, %u: tensor<2x4xf32>, %vb: tensor<2x4xf32>, %m: index, %s: i1)
    -> (tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s {scale = 0.5 : f32}
      : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4, %g#5
      : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// nll_grad: (softmax - onehot(target)) · dy over the recomputed log-sum-exp,
// written over the logits (their last reader), so the backward of the
// softmax creates no [tokens, n_token] tensor of its own; the one-hot column
// compare is in i32.
// CHECK-LABEL: func.func @nll_grad
// CHECK-SAME: (%[[DY:[^:]+]]: tensor<?x?xf32>, %[[L:[^:]+]]: tensor<?x?x10xf32>, %[[T:[^:]+]]: tensor<?x?xi64>)
// CHECK-NOT: tensor.empty({{.+}}) : tensor<?x?x10xf32>
// CHECK: %[[G:.+]] = linalg.generic {{.+}} ins(%[[L]], %{{.+}}, %[[T]], %[[DY]] : tensor<?x?x10xf32>, tensor<?x?xf32>, tensor<?x?xi64>, tensor<?x?xf32>) outs(%[[L]] : tensor<?x?x10xf32>)
// CHECK: %[[C:.+]] = arith.index_cast %{{.+}} : index to i32
// CHECK: %[[TT:.+]] = arith.trunci %{{.+}} : i64 to i32
// CHECK: math.exp
// CHECK: arith.cmpi eq, %[[C]], %[[TT]] : i32
// CHECK: return %[[G]]
func.func @nll_grad(%dy: tensor<?x?xf32>, %l: tensor<?x?x10xf32>, %t: tensor<?x?xi64>) -> tensor<?x?x10xf32> {
  %g = txl.nll_grad %dy, %l, %t : tensor<?x?xf32>, tensor<?x?x10xf32>, tensor<?x?xi64>
  return %g : tensor<?x?x10xf32>
}

// The adaptive softmax backward never builds a [tokens, n_token] matrix:
// the head is [tokens, 3 + 1] wide, each tail only its cluster's rows.
// CHECK-LABEL: func.func @adaptive_nll_grad
// CHECK-NOT: tensor<?x8xf32>
// CHECK: return
func.func @adaptive_nll_grad(%dn: tensor<?x?xf32>, %h: tensor<?x?x4xf32>, %t: tensor<?x?xi64>, %w0: tensor<3x4xf32>,
                             %w1: tensor<5x4xf32>, %b0: tensor<3xf32>, %b1: tensor<5xf32>, %cw: tensor<1x4xf32>,
                             %cb: tensor<1xf32>) -> tensor<?x?x4xf32> {
  %g:7 = txl.adaptive_nll_grad %dn, %h, %t weights(%w0, %w1 : tensor<3x4xf32>, tensor<5x4xf32>)
      biases(%b0, %b1 : tensor<3xf32>, tensor<5xf32>) projs()
      clusters(%cw, %cb : tensor<1x4xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 3, 8>}
      : tensor<?x?xf32>, tensor<?x?x4xf32>, tensor<?x?xi64>
  return %g#0 : tensor<?x?x4xf32>
}

// The head's shortlist (here 2000 columns) is swept in blocks of 512
// columns twice, each block's logits recomputed from the head input: the
// log-sum-exp sweep, then the gradient sweep (softmax minus one-hot, dh
// accumulated with a product per block, dW and db written per block).
// No [tokens, 2000] logits or gradient exist.
// CHECK-LABEL: func.func @adaptive_nll_grad_head_blocks
// CHECK-NOT: x2000xf32>
// CHECK: scf.for
// CHECK-NOT: x2000xf32>
// CHECK: linalg.matmul
// CHECK-NOT: x2000xf32>
// CHECK: scf.yield
// CHECK-NOT: x2000xf32>
// CHECK: scf.for
// CHECK-NOT: x2000xf32>
// CHECK: linalg.matmul
// CHECK-NOT: x2000xf32>
// CHECK: linalg.matmul
// CHECK-NOT: x2000xf32>
// CHECK: linalg.matmul
// CHECK-NOT: x2000xf32>
// CHECK: scf.yield
// CHECK-NOT: x2000xf32>
// CHECK: return
func.func @adaptive_nll_grad_head_blocks(%dn: tensor<?x?xf32>, %h: tensor<?x?x8xf32>, %t: tensor<?x?xi64>,
                                         %w0: tensor<2000x8xf32>, %b0: tensor<2000xf32>)
    -> (tensor<?x?x8xf32>, tensor<2000x8xf32>, tensor<2000xf32>) {
  %g:3 = txl.adaptive_nll_grad %dn, %h, %t weights(%w0 : tensor<2000x8xf32>)
      biases(%b0 : tensor<2000xf32>) projs() {cutoff_ends = array<i64: 0, 2000>}
      : tensor<?x?xf32>, tensor<?x?x8xf32>, tensor<?x?xi64>
  return %g#0, %g#1, %g#2 : tensor<?x?x8xf32>, tensor<2000x8xf32>, tensor<2000xf32>
}

// An output layer with its backward, as txl-fuse-linear-nll makes it
// (txl.linear_nll_fwd + txl.linear_nll_grad): a forward sweep over
// blocks of 512 of the 1000 columns that also writes each block of logits
// into its own contiguous [rows, 512] slab of a block-major [2, rows, 512]
// tensor, and a backward sweep, last block first (column 512, then 0),
// whose per-block d_logits ([rows, block]) feed dh += dl·w_j, dW[j] = dlᵀh
// and db[j]; no txl op, no [rows, 1000] logits or d_logits and no
// full-width product remain.
// CHECK-LABEL: func.func @output_layer_sweeps
// CHECK-DAG: %[[C512:.+]] = arith.constant 512 : index
// CHECK: %[[FWD:.+]]:3 = scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args({{.+}}) -> (tensor<?xf32>, tensor<?xf32>, tensor<2x?x512xf32>)
// CHECK: %[[K:.+]] = arith.divsi %[[J]], %[[C512]]
// CHECK: tensor.extract_slice %{{.+}}[%[[K]], 0, 0] [1, %{{.+}}, %{{.+}}] [1, 1, 1] : tensor<2x?x512xf32> to tensor<?x?xf32>
// CHECK: linalg.matmul
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[%[[K]], 0, 0] [1, %{{.+}}, %{{.+}}] [1, 1, 1] : tensor<?x?xf32> into tensor<2x?x512xf32>
// CHECK: %[[BWD:.+]]:3 = scf.for %[[IV:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %[[DWACC:.+]] = %{{.+}}, %[[DBACC:.+]] = %{{.+}}) -> (tensor<?x32xf32>, tensor<1000x32xf32>, tensor<1000xf32>)
// CHECK: %[[BJ:.+]] = arith.subi %[[C512]], %[[IV]] : index
// CHECK: %[[BK:.+]] = arith.divsi %[[BJ]], %[[C512]]
// CHECK: tensor.extract_slice %[[FWD]]#2[%[[BK]], 0, 0]
// CHECK: math.exp
// Each row's target column, one row per iteration of an scf.forall.
// CHECK: %[[DL:.+]] = scf.forall (%[[R:.+]]) in (%{{.+}}) shared_outs(%[[OUT:.+]] = %{{.+}}) -> (tensor<?x?xf32>)
// CHECK: %[[INB:.+]] = arith.andi
// CHECK: %[[COL:.+]] = arith.select %[[INB]], %{{.+}}, %{{.+}} : index
// CHECK: %[[SLOT:.+]] = tensor.extract_slice %[[OUT]][%[[R]], %[[COL]]] [1, 1] [1, 1]
// CHECK: %[[OLD:.+]] = tensor.extract %[[SLOT]]
// CHECK: %[[SUB:.+]] = arith.subf %[[OLD]]
// CHECK: arith.select %[[INB]], %[[SUB]], %[[OLD]] : f32
// CHECK: tensor.parallel_insert_slice %{{.+}} into %[[OUT]][%[[R]], %[[COL]]] [1, 1] [1, 1]
// CHECK: linalg.matmul ins(%[[DL]],
// dW[j] and db[j] are computed in their slices of the carried gradients
// (zero-filled there, inserted back), so they bufferize in place.
// CHECK: %[[DWS:.+]] = tensor.extract_slice %[[DWACC]][%[[BJ]], 0] [%{{.+}}, 32] [1, 1]
// CHECK: %[[DWZ:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[DWS]] : tensor<?x32xf32>)
// CHECK: %[[DWJ:.+]] = linalg.matmul {{.+}} outs(%[[DWZ]] : tensor<?x32xf32>)
// CHECK: tensor.insert_slice %[[DWJ]] into %[[DWACC]][%[[BJ]], 0] [%{{.+}}, 32] [1, 1] : tensor<?x32xf32> into tensor<1000x32xf32>
// CHECK: %[[DBS:.+]] = tensor.extract_slice %[[DBACC]][%[[BJ]]]
// CHECK: %[[DBZ:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[DBS]] : tensor<?xf32>)
// CHECK: %[[DBJ:.+]] = linalg.generic {{.+}} outs(%[[DBZ]] : tensor<?xf32>)
// CHECK: tensor.insert_slice %[[DBJ]] into %[[DBACC]][%[[BJ]]] [%{{.+}}] [1] : tensor<?xf32> into tensor<1000xf32>
// CHECK-NOT: txl.
// CHECK-NOT: x1000xf32>
// CHECK: return
func.func @output_layer_sweeps(%h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %b: tensor<1000xf32>,
                               %t: tensor<?x?xi64>, %g: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<1000xf32>) {
  %n, %lse, %blocks = txl.linear_nll_fwd %h, %w, %t, %b {block = 512 : i64}
      : tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>, tensor<1000xf32>
      -> tensor<?x?xf32>, tensor<?xf32>, tensor<2x?x512xf32>
  %dh, %dw, %db = txl.linear_nll_grad %g, %h, %w, %t, %lse, %blocks {block = 512 : i64}
      : tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>, tensor<?xf32>, tensor<2x?x512xf32>
      -> tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<1000xf32>
  return %n, %dh, %dw, %db : tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<1000xf32>
}

// The unfused ops (txl-fuse-linear-nll leaves them when d_logits has another
// reader, here returned) lower one at a time: the full-width product and
// nll_grad over [rows, 1000].
// CHECK-LABEL: func.func @output_layer_dlogits_kept
// CHECK-NOT: scf.for
// CHECK: linalg.matmul {{.+}} -> tensor<?x1000xf32>
// CHECK: linalg.generic {{.+}} outs(%{{.+}} : tensor<?x?x1000xf32>)
// CHECK: return
func.func @output_layer_dlogits_kept(%h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>,
                                     %t: tensor<?x?xi64>, %g: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<?x?x1000xf32>) {
  %l = txl.linear %h, %w : tensor<?x?x32xf32>, tensor<1000x32xf32> -> tensor<?x?x1000xf32>
  %n = txl.nll %l, %t : tensor<?x?x1000xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  %dl = txl.nll_grad %g, %l, %t : tensor<?x?xf32>, tensor<?x?x1000xf32>, tensor<?x?xi64>
  %dh = txl.linear_input_grad %dl, %w : tensor<?x?x1000xf32>, tensor<1000x32xf32> -> tensor<?x?x32xf32>
  return %n, %dh, %dl : tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<?x?x1000xf32>
}
