// RUN: txl-opt %s --split-input-file --convert-txl-to-linalg --verify-diagnostics | FileCheck %s
// RUN: txl-opt %s --split-input-file --convert-txl-to-linalg --cse --verify-diagnostics | FileCheck %s --check-prefix=CSE
// RUN: not txl-opt %s --split-input-file --convert-txl-to-linalg 2>&1 | FileCheck %s --check-prefix=UNLOWERED
// RUN: txl-opt %s --split-input-file --convert-txl-to-linalg --verify-diagnostics | FileCheck %s --check-prefix=F64

// One case per op family. Products become linalg.matmul / linalg.batch_matmul
// (later cblas_sgemm), everything else linalg.generic or tensor.generate, and
// the dynamic dimensions stay `?`.

// txl.linear with a bias: the leading dimensions are collapsed, the bias is
// broadcast into the [rows, out] result, and the product is a linalg.matmul
// reading the [out, in] weight transposed (B map (n, k)) that accumulates
// onto it (BLAS beta = 1), so no second buffer or pass adds the bias; the
// result is expanded back.
// CHECK-DAG: #[[$A:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$BT:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$C:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$ID2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$COL:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @linear_bias
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf32>, %[[W:[^:]+]]: tensor<64x32xf32>, %[[B:[^:]+]]: tensor<64xf32>)
// CHECK: %[[X2:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<?x?x32xf32> into tensor<?x32xf32>
// CHECK-NOT: linalg.fill
// CHECK: %[[INIT:.+]] = linalg.generic {indexing_maps = [#[[$COL]], #[[$ID2]]], iterator_types = ["parallel", "parallel"]} ins(%[[B]] : tensor<64xf32>) outs(%{{.+}} : tensor<?x64xf32>)
// CHECK-NEXT: ^bb0(%[[BIAS:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: linalg.yield %[[BIAS]]
// CHECK: %[[MM:.+]] = linalg.matmul indexing_maps = [#[[$A]], #[[$BT]], #[[$C]]] ins(%[[X2]], %[[W]] : tensor<?x32xf32>, tensor<64x32xf32>) outs(%[[INIT]] : tensor<?x64xf32>)
// CHECK-NOT: linalg.generic
// CHECK: %[[E:.+]] = tensor.expand_shape %[[MM]] {{\[\[}}0, 1], [2]] output_shape [%{{.+}}, %{{.+}}, 64] : tensor<?x64xf32> into tensor<?x?x64xf32>
// CHECK-NOT: txl.
// CHECK: return %[[E]] : tensor<?x?x64xf32>
func.func @linear_bias(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %y = txl.linear %x, %w, %b : tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// txl.linear on a 2-D input without bias is the bare matmul onto zeros:
// nothing to collapse, no bias generic.
// CHECK-DAG: #[[$A:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$BT:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$C:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @linear_2d_no_bias
// CHECK-SAME: (%[[R:[^:]+]]: tensor<?x32xf32>, %[[W:[^:]+]]: tensor<64x32xf32>)
// CHECK-NOT: tensor.collapse_shape
// CHECK-NOT: linalg.generic
// CHECK: linalg.fill
// CHECK: %[[MM:.+]] = linalg.matmul indexing_maps = [#[[$A]], #[[$BT]], #[[$C]]] ins(%[[R]], %[[W]] : tensor<?x32xf32>, tensor<64x32xf32>) outs(%{{.+}} : tensor<?x64xf32>) -> tensor<?x64xf32>
// CHECK-NOT: linalg.generic
// CHECK-NOT: tensor.expand_shape
// CHECK: return %[[MM]] : tensor<?x64xf32>
func.func @linear_2d_no_bias(%r: tensor<?x32xf32>, %w: tensor<64x32xf32>) -> tensor<?x64xf32> {
  %y = txl.linear %r, %w : tensor<?x32xf32>, tensor<64x32xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// attn_score against a 4-D key: q and k go heads-first ([b·n, len, d]) and one
// batch_matmul computes q kᵀ per (batch, head); the result is expanded to
// [b, n, i, j] and transposed to [qlen, klen, batch, n_head].
// CHECK-DAG: #[[$QA:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$KT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[$S:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @attn_score_content
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x2x16xf32>, %[[K:[^:]+]]: tensor<?x?x2x16xf32>)
// CHECK: %[[QT:.+]] = linalg.transpose ins(%[[Q]] : tensor<?x?x2x16xf32>) outs(%{{.+}} : tensor<?x2x?x16xf32>) permutation = [1, 2, 0, 3]
// CHECK: %[[Q3:.+]] = tensor.collapse_shape %[[QT]] {{\[\[}}0, 1], [2], [3]] : tensor<?x2x?x16xf32> into tensor<?x?x16xf32>
// CHECK: %[[KT:.+]] = linalg.transpose ins(%[[K]] : tensor<?x?x2x16xf32>) outs(%{{.+}} : tensor<?x2x?x16xf32>) permutation = [1, 2, 0, 3]
// CHECK: %[[K3:.+]] = tensor.collapse_shape %[[KT]] {{\[\[}}0, 1], [2], [3]] : tensor<?x2x?x16xf32> into tensor<?x?x16xf32>
// CHECK: %[[BMM:.+]] = linalg.batch_matmul indexing_maps = [#[[$QA]], #[[$KT]], #[[$S]]] ins(%[[Q3]], %[[K3]] : tensor<?x?x16xf32>, tensor<?x?x16xf32>) outs(%{{.+}} : tensor<?x?x?xf32>)
// CHECK: %[[E:.+]] = tensor.expand_shape %[[BMM]] {{\[\[}}0, 1], [2], [3]] output_shape [%{{.+}}, 2, %{{.+}}, %{{.+}}] : tensor<?x?x?xf32> into tensor<?x2x?x?xf32>
// CHECK: %[[OUT:.+]] = linalg.transpose ins(%[[E]] : tensor<?x2x?x?xf32>) outs(%{{.+}} : tensor<?x?x?x2xf32>) permutation = [2, 3, 0, 1]
// CHECK: return %[[OUT]] : tensor<?x?x?x2xf32>
func.func @attn_score_content(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>) -> tensor<?x?x?x2xf32> {
  %s = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  return %s : tensor<?x?x?x2xf32>
}

// -----

// attn_score against a 3-D positional key [rlen, n, d]: the batch of the
// product is the head; q becomes [n, b·i, d] and r [n, j, d].
// CHECK-DAG: #[[$QA:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$KT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[$S:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @attn_score_positional
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x2x16xf32>, %[[R:[^:]+]]: tensor<?x2x16xf32>)
// CHECK: %[[QT:.+]] = linalg.transpose ins(%[[Q]] : tensor<?x?x2x16xf32>) outs(%{{.+}} : tensor<2x?x?x16xf32>) permutation = [2, 1, 0, 3]
// CHECK: %[[Q3:.+]] = tensor.collapse_shape %[[QT]] {{\[\[}}0], [1, 2], [3]] : tensor<2x?x?x16xf32> into tensor<2x?x16xf32>
// CHECK: %[[RT:.+]] = linalg.transpose ins(%[[R]] : tensor<?x2x16xf32>) outs(%{{.+}} : tensor<2x?x16xf32>) permutation = [1, 0, 2]
// CHECK: %[[BMM:.+]] = linalg.batch_matmul indexing_maps = [#[[$QA]], #[[$KT]], #[[$S]]] ins(%[[Q3]], %[[RT]] : tensor<2x?x16xf32>, tensor<2x?x16xf32>) outs(%{{.+}} : tensor<2x?x?xf32>)
// CHECK: %[[E:.+]] = tensor.expand_shape %[[BMM]] {{\[\[}}0], [1, 2], [3]] output_shape [2, %{{.+}}, %{{.+}}, %{{.+}}] : tensor<2x?x?xf32> into tensor<2x?x?x?xf32>
// CHECK: %[[OUT:.+]] = linalg.transpose ins(%[[E]] : tensor<2x?x?x?xf32>) outs(%{{.+}} : tensor<?x?x?x2xf32>) permutation = [2, 3, 1, 0]
// CHECK: return %[[OUT]] : tensor<?x?x?x2xf32>
func.func @attn_score_positional(%q: tensor<?x?x2x16xf32>, %r: tensor<?x2x16xf32>) -> tensor<?x?x?x2xf32> {
  %s = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  return %s : tensor<?x?x?x2xf32>
}

// -----

// attn_apply: probabilities [i, j, b, n] -> [b·n, i, j], values -> [b·n, j, d],
// one untransposed batch_matmul (default maps), back to [i, b, n, d].
// CHECK-LABEL: func.func @attn_apply
// CHECK-SAME: (%[[P:[^:]+]]: tensor<?x?x?x2xf32>, %[[V:[^:]+]]: tensor<?x?x2x16xf32>)
// CHECK: %[[PT:.+]] = linalg.transpose ins(%[[P]] : tensor<?x?x?x2xf32>) outs(%{{.+}} : tensor<?x2x?x?xf32>) permutation = [2, 3, 0, 1]
// CHECK: %[[P3:.+]] = tensor.collapse_shape %[[PT]] {{\[\[}}0, 1], [2], [3]] : tensor<?x2x?x?xf32> into tensor<?x?x?xf32>
// CHECK: %[[VT:.+]] = linalg.transpose ins(%[[V]] : tensor<?x?x2x16xf32>) outs(%{{.+}} : tensor<?x2x?x16xf32>) permutation = [1, 2, 0, 3]
// CHECK: %[[V3:.+]] = tensor.collapse_shape %[[VT]] {{\[\[}}0, 1], [2], [3]] : tensor<?x2x?x16xf32> into tensor<?x?x16xf32>
// CHECK: %[[BMM:.+]] = linalg.batch_matmul ins(%[[P3]], %[[V3]] : tensor<?x?x?xf32>, tensor<?x?x16xf32>) outs(%{{.+}} : tensor<?x?x16xf32>)
// CHECK: %[[E:.+]] = tensor.expand_shape %[[BMM]] {{\[\[}}0, 1], [2], [3]] output_shape [%{{.+}}, 2, %{{.+}}, 16] : tensor<?x?x16xf32> into tensor<?x2x?x16xf32>
// CHECK: %[[OUT:.+]] = linalg.transpose ins(%[[E]] : tensor<?x2x?x16xf32>) outs(%{{.+}} : tensor<?x?x2x16xf32>) permutation = [2, 0, 1, 3]
// CHECK: return %[[OUT]] : tensor<?x?x2x16xf32>
func.func @attn_apply(%p: tensor<?x?x?x2xf32>, %v: tensor<?x?x2x16xf32>) -> tensor<?x?x2x16xf32> {
  %o = txl.attn_apply %p, %v : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// layer_norm: a row sum and a row sum of squared deviations (reductions over
// the last dimension, their additions `reassoc` so that LLVM vectorizes them
// into partial sums), then a parallel generic computing
// (x - mean) * rsqrt(var + eps) * g + b with mean and var scaled by 1/32,
// whose arithmetic keeps strict IEEE order.
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$FEAT:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf32>, %[[G:[^:]+]]: tensor<32xf32>, %[[B:[^:]+]]: tensor<32xf32>)
// CHECK: %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]] : tensor<?x?x32xf32>) outs(%{{.+}} : tensor<?x?xf32>)
// CHECK: arith.addf %{{.+}}, %{{.+}} fastmath<reassoc> : f32
// CHECK: %[[SQ:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]], %[[SUM]] : tensor<?x?x32xf32>, tensor<?x?xf32>) outs(%{{.+}} : tensor<?x?xf32>)
// CHECK: arith.constant 3.125000e-02 : f32
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: arith.addf %{{.+}}, %{{.+}} fastmath<reassoc> : f32
// CHECK: %[[Y:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ROW]], #[[$FEAT]], #[[$FEAT]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[X]], %[[SUM]], %[[SQ]], %[[G]], %[[B]] : tensor<?x?x32xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<32xf32>, tensor<32xf32>) outs(%{{.+}} : tensor<?x?x32xf32>)
// CHECK: %[[EPS:.+]] = arith.constant 9.99999974E-6 : f32
// CHECK: %[[VE:.+]] = arith.addf %{{.+}}, %[[EPS]] : f32
// CHECK: math.rsqrt %[[VE]] : f32
// CHECK-NOT: fastmath
// CHECK: return %[[Y]] : tensor<?x?x32xf32>
func.func @layer_norm(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %y = txl.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// nll: row max (init -inf; `nnan nsz`, one maxps per vector: a NaN logit
// still reaches the sum), row sum of exp(x - max) (both reductions
// `reassoc`, vectorized), lse = log(sum) + max,
// then lse - logits[i, b, target[i, b]] read with tensor.extract.
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$ID2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @nll
// CHECK-SAME: (%[[L:[^:]+]]: tensor<?x?x50xf32>, %[[T:[^:]+]]: tensor<?x?xi64>)
// CHECK: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: %[[MAXINIT:.+]] = linalg.fill ins(%[[NEGINF]] : f32)
// CHECK: %[[MAX:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[L]] : tensor<?x?x50xf32>) outs(%[[MAXINIT]] : tensor<?x?xf32>)
// CHECK: arith.maximumf %{{.+}}, %{{.+}} fastmath<reassoc,nnan,nsz> : f32
// CHECK: %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[L]], %[[MAX]] : tensor<?x?x50xf32>, tensor<?x?xf32>)
// CHECK: math.exp
// CHECK: arith.addf %{{.+}}, %{{.+}} fastmath<reassoc> : f32
// CHECK: %[[LSE:.+]] = linalg.generic {indexing_maps = [#[[$ID2]], #[[$ID2]], #[[$ID2]]], iterator_types = ["parallel", "parallel"]} ins(%[[SUM]], %[[MAX]] : tensor<?x?xf32>, tensor<?x?xf32>)
// CHECK-NEXT: ^bb0(%[[S:.+]]: f32, %[[M:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[LOG:.+]] = math.log %[[S]] : f32
// CHECK-NEXT: %[[ADD:.+]] = arith.addf %[[LOG]], %[[M]] : f32
// CHECK-NEXT: linalg.yield %[[ADD]] : f32
// CHECK: %[[NLL:.+]] = linalg.generic {indexing_maps = [#[[$ID2]], #[[$ID2]], #[[$ID2]]], iterator_types = ["parallel", "parallel"]} ins(%[[LSE]], %[[T]] : tensor<?x?xf32>, tensor<?x?xi64>) outs(%{{.+}} : tensor<?x?xf32>)
// CHECK-NEXT: ^bb0(%[[LS:.+]]: f32, %[[TGT:.+]]: i64, %{{.+}}: f32):
// CHECK-NEXT: %[[I:.+]] = linalg.index 0 : index
// CHECK-NEXT: %[[BI:.+]] = linalg.index 1 : index
// CHECK-NEXT: %[[TI:.+]] = arith.index_cast %[[TGT]] : i64 to index
// CHECK-NEXT: %[[LOGIT:.+]] = tensor.extract %[[L]][%[[I]], %[[BI]], %[[TI]]] : tensor<?x?x50xf32>
// CHECK-NEXT: %[[R:.+]] = arith.subf %[[LS]], %[[LOGIT]] : f32
// CHECK-NEXT: linalg.yield %[[R]] : f32
// CHECK: return %[[NLL]] : tensor<?x?xf32>
func.func @nll(%logits: tensor<?x?x50xf32>, %target: tensor<?x?xi64>) -> tensor<?x?xf32> {
  %n = txl.nll %logits, %target : tensor<?x?x50xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

// txl.linear_nll (made by txl-fuse-linear-nll from a txl.nll of a
// txl.linear used by nothing else): one loop over blocks of 512
// of the 1000 output columns; each block's logits are a matmul of the rows
// with a slice of w onto the broadcast bias slice, then an online
// log-sum-exp update of the running max and sum, both carried in place. The
// target's logit is a gathered dot product plus bias[t]; no [rows, 1000]
// tensor exists.
// CHECK-LABEL: func.func @linear_nll
// CHECK-SAME: (%[[H:[^:]+]]: tensor<?x?x32xf32>, %[[W:[^:]+]]: tensor<1000x32xf32>, %[[B:[^:]+]]: tensor<1000xf32>, %[[T:[^:]+]]: tensor<?x?xi64>)
// CHECK: %[[H2:.+]] = tensor.collapse_shape %[[H]] {{\[}}[0, 1], [2]]
// CHECK: %[[T1:.+]] = tensor.collapse_shape %[[T]] {{\[}}[0, 1]]
// CHECK: %[[BLOCK:.+]] = arith.constant 512 : index
// CHECK: %[[M0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<?xf32>)
// CHECK: %[[S0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<?xf32>)
// CHECK: %[[LOOP:.+]]:2 = scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %[[BLOCK]] iter_args(%[[M:.+]] = %[[M0]], %[[S:.+]] = %[[S0]])
// CHECK: %[[COLS:.+]] = arith.minsi %[[BLOCK]], %{{.+}} : index
// CHECK: %[[WB:.+]] = tensor.extract_slice %[[W]][%[[J]], %{{.+}}] [%[[COLS]], 32]
// CHECK: %[[BB:.+]] = tensor.extract_slice %[[B]][%[[J]]] [%[[COLS]]]
// CHECK: %[[INIT:.+]] = linalg.generic {{.+}} ins(%[[BB]] : tensor<?xf32>)
// CHECK: %[[LOGITS:.+]] = linalg.matmul {{.+}} ins(%[[H2]], %[[WB]] : tensor<?x32xf32>, tensor<?x32xf32>) outs(%[[INIT]] : tensor<?x?xf32>)
// CHECK: %[[BMAX:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]} ins(%[[LOGITS]] : tensor<?x?xf32>)
// CHECK: arith.maximumf %{{.+}}, %{{.+}} fastmath<reassoc,nnan,nsz> : f32
// CHECK: %[[RESCALED:.+]] = linalg.generic {{.+}} ins(%[[M]], %[[BMAX]] : tensor<?xf32>, tensor<?xf32>) outs(%[[S]] : tensor<?xf32>)
// CHECK: math.exp
// CHECK: %[[NEWMAX:.+]] = linalg.generic {{.+}} ins(%[[BMAX]] : tensor<?xf32>) outs(%[[M]] : tensor<?xf32>)
// CHECK: %[[NEWSUM:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]} ins(%[[LOGITS]], %[[NEWMAX]] : tensor<?x?xf32>, tensor<?xf32>) outs(%[[RESCALED]] : tensor<?xf32>)
// CHECK: math.exp
// CHECK: arith.addf %{{.+}}, %{{.+}} fastmath<reassoc> : f32
// CHECK: scf.yield %[[NEWMAX]], %[[NEWSUM]]
// CHECK: %[[LSE:.+]] = linalg.generic {{.+}} ins(%[[LOOP]]#1, %[[LOOP]]#0 : tensor<?xf32>, tensor<?xf32>)
// CHECK: math.log
// CHECK: %[[DOT:.+]] = linalg.generic {{.+}} ins(%[[H2]], %[[T1]] : tensor<?x32xf32>, tensor<?xi64>)
// CHECK: tensor.extract %[[W]]
// CHECK: %[[NLL:.+]] = linalg.generic {{.+}} ins(%[[LSE]], %[[DOT]], %[[T1]] : tensor<?xf32>, tensor<?xf32>, tensor<?xi64>)
// CHECK: tensor.extract %[[B]]
// CHECK: %[[OUT:.+]] = tensor.expand_shape %[[NLL]] {{\[}}[0, 1]]
// CHECK: return %[[OUT]] : tensor<?x?xf32>
func.func @linear_nll(%h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %b: tensor<1000xf32>, %t: tensor<?x?xi64>) -> tensor<?x?xf32> {
  %n = txl.linear_nll %h, %w, %t, %b : tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>, tensor<1000xf32> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

// Without a bias the blocks' products start from zeros and the target's
// logit is the dot product alone.
// CHECK-LABEL: func.func @linear_nll_no_bias
// CHECK: scf.for
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<?x?xf32>)
// CHECK: linalg.matmul {{.+}} outs(%[[Z]] : tensor<?x?xf32>)
// CHECK: scf.yield
// CHECK: math.log
// CHECK: tensor.extract %{{.+}} : tensor<1000x32xf32>
// CHECK-NOT: tensor.extract
// CHECK: return
func.func @linear_nll_no_bias(%h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<?x?xi64>) -> tensor<?x?xf32> {
  %n = txl.linear_nll %h, %w, %t : tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

// A txl.linear and a txl.nll (not fused: here the logits are also
// returned) lower one op at a time: one matmul over all 1000 columns, then
// the nll's own lowering, and no loop over column blocks.
// CHECK-LABEL: func.func @linear_nll_logits_kept
// CHECK-NOT: scf.for
// CHECK: %[[LOGITS:.+]] = linalg.matmul {{.+}} -> tensor<?x1000xf32>
// CHECK-NOT: scf.for
// CHECK: linalg.generic {{.+}} ins(%{{.+}} : tensor<?x?x1000xf32>)
// CHECK-NOT: scf.for
// CHECK: return
func.func @linear_nll_logits_kept(%h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<?x?xi64>) -> (tensor<?x?xf32>, tensor<?x?x1000xf32>) {
  %l = txl.linear %h, %w : tensor<?x?x32xf32>, tensor<1000x32xf32> -> tensor<?x?x1000xf32>
  %n = txl.nll %l, %t : tensor<?x?x1000xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n, %l : tensor<?x?xf32>, tensor<?x?x1000xf32>
}

// -----

// pos_emb: a tensor.generate over [klen, d_model]; row k holds distance
// klen - 1 - k (clamped when clamp_len > 0), column c < 16 is
// sin(p * inv_freq[c]) and column c >= 16 is cos(p * inv_freq[c - 16]).
// CHECK-LABEL: func.func @pos_emb
// CHECK-SAME: (%[[F:[^:]+]]: tensor<16xf32>, %[[KLEN:[^:]+]]: index, %[[CLAMP:[^:]+]]: i64)
// CHECK: %[[G:.+]] = tensor.generate %[[KLEN]] {
// CHECK-NEXT: ^bb0(%[[K:.+]]: index, %[[C:.+]]: index):
// CHECK: %[[LAST:.+]] = arith.subi %[[KLEN]], %{{.+}} : index
// CHECK: %[[DIST:.+]] = arith.subi %[[LAST]], %[[K]] : index
// CHECK: %[[POS:.+]] = arith.index_cast %[[DIST]] : index to i64
// CHECK: %[[CL:.+]] = arith.minsi %[[POS]], %[[CLAMP]] : i64
// CHECK: %[[DOCL:.+]] = arith.cmpi sgt, %[[CLAMP]], %{{.+}} : i64
// CHECK: %[[P:.+]] = arith.select %[[DOCL]], %[[CL]], %[[POS]] : i64
// CHECK: %[[PF:.+]] = arith.sitofp %[[P]] : i64 to f32
// CHECK: %[[HALF:.+]] = arith.constant 16 : index
// CHECK: %[[ISSIN:.+]] = arith.cmpi ult, %[[C]], %[[HALF]] : index
// CHECK: %[[FI:.+]] = arith.select %[[ISSIN]], %[[C]], %{{.+}} : index
// CHECK: %[[FREQ:.+]] = tensor.extract %[[F]][%[[FI]]] : tensor<16xf32>
// CHECK: %[[ANGLE:.+]] = arith.mulf %[[PF]], %[[FREQ]] : f32
// CHECK: %[[SIN:.+]] = math.sin %[[ANGLE]] : f32
// CHECK: %[[COS:.+]] = math.cos %[[ANGLE]] : f32
// CHECK: %[[V:.+]] = arith.select %[[ISSIN]], %[[SIN]], %[[COS]] : f32
// CHECK: tensor.yield %[[V]] : f32
// CHECK: } : tensor<?x32xf32>
// CHECK: return %[[G]] : tensor<?x32xf32>
func.func @pos_emb(%inv_freq: tensor<16xf32>, %klen: index, %clamp: i64) -> tensor<?x32xf32> {
  %r = txl.pos_emb %inv_freq, %klen, %clamp : tensor<16xf32> -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}

// -----

// masked_softmax on [qlen, klen, batch, n_head]: a parallel generic masks
// (j <= i + mlen, and j + s > i when same_length) and scales, then a max
// reduction over j (dimension 1), exp, a sum reduction over j, and a divide.
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-LABEL: func.func @masked_softmax
// CHECK-SAME: (%[[S:[^:]+]]: tensor<?x?x?x2xf32>, %[[ML:[^:]+]]: index, %[[SL:[^:]+]]: i1)
// CHECK: %[[MASKED:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[S]] : tensor<?x?x?x2xf32>)
// CHECK: %[[I:.+]] = linalg.index 0 : index
// CHECK: %[[J:.+]] = linalg.index 1 : index
// CHECK: %[[LASTVIS:.+]] = arith.addi %[[I]], %{{.+}} : index
// CHECK: %[[CAUSAL:.+]] = arith.cmpi sle, %[[J]], %[[LASTVIS]] : index
// CHECK: arith.cmpi sgt
// CHECK: %[[RECENT:.+]] = arith.select %[[SL]], %{{.+}}, %{{.+}} : i1
// CHECK: %[[VIS:.+]] = arith.andi %[[CAUSAL]], %[[RECENT]] : i1
// CHECK: %[[SCALE:.+]] = arith.constant 2.500000e-01 : f32
// CHECK: %[[SCALED:.+]] = arith.mulf %{{.+}}, %[[SCALE]] : f32
// CHECK: arith.select %[[VIS]], %[[SCALED]], %{{.+}} : f32
// CHECK: %[[MAX:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]]], iterator_types = ["parallel", "reduction", "parallel", "parallel"]} ins(%[[MASKED]] : tensor<?x?x?x2xf32>)
// CHECK: arith.maximumf %{{.+}}, %{{.+}} fastmath<reassoc> : f32
// CHECK: %[[EXP:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[MASKED]], %[[MAX]] : tensor<?x?x?x2xf32>, tensor<?x?x2xf32>)
// CHECK: math.exp
// CHECK: %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]]], iterator_types = ["parallel", "reduction", "parallel", "parallel"]} ins(%[[EXP]] : tensor<?x?x?x2xf32>)
// CHECK: arith.addf %{{.+}}, %{{.+}} fastmath<reassoc> : f32
// CHECK: %[[P:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[EXP]], %[[SUM]] : tensor<?x?x?x2xf32>, tensor<?x?x2xf32>)
// CHECK: arith.divf
// CHECK: return %[[P]] : tensor<?x?x?x2xf32>
func.func @masked_softmax(%s: tensor<?x?x?x2xf32>, %mem_len: index, %same_length: i1) -> tensor<?x?x?x2xf32> {
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  return %p : tensor<?x?x?x2xf32>
}

// -----

// rel_attention: every score comes from a batched product, with the heads
// outermost ([n·b, len, d]). The positional scores (q + v) rᵀ are one
// product per head over all batch columns ([n, b·qlen, d] against pos_key
// per head [n, klen, d], r never repeated per batch column) into columns
// 1..klen of a zero-filled [n·b, qlen, klen + 1] buffer viewed as [n, b·qlen,
// klen + 1]; BD is the view of that buffer that starts qlen elements into
// each (head, batch) block with row stride klen (collapse, extract_slice at
// qlen of qlen·klen elements, expand): the official _rel_shift without its
// copy. AC = (q + u) kᵀ is accumulated onto that view, so the scores are one
// buffer. No gather, pad or generate.
// CHECK-DAG: #[[$QA:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$KT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[$S:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[$HM:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d1, d0, d3)>
// CHECK-LABEL: func.func @rel_attention
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x2x16xf32>, %[[K:[^:]+]]: tensor<?x?x2x16xf32>, %[[V:[^:]+]]: tensor<?x?x2x16xf32>, %[[R:[^:]+]]: tensor<?x2x16xf32>, %[[U:[^:]+]]: tensor<2x16xf32>, %[[VB:[^:]+]]: tensor<2x16xf32>, %[[ML:[^:]+]]: index, %[[SL:[^:]+]]: i1)
// CHECK-NOT: tensor.pad
// CHECK-NOT: tensor.generate
// CHECK-NOT: tensor.extract %
// CHECK: %[[QU:.+]] = linalg.generic {indexing_maps = [#[[$HM]], {{.+}}]{{.+}} ins(%[[Q]], %[[U]] : tensor<?x?x2x16xf32>, tensor<2x16xf32>) outs(%{{.+}} : tensor<2x?x?x16xf32>)
// CHECK: arith.addf
// CHECK: %[[QU3:.+]] = tensor.collapse_shape %[[QU]] {{\[\[}}0, 1], [2], [3]]
// CHECK: %[[QV:.+]] = linalg.generic {indexing_maps = [#[[$HM]], {{.+}}]{{.+}} ins(%[[Q]], %[[VB]] : tensor<?x?x2x16xf32>, tensor<2x16xf32>)
// CHECK: %[[QV3:.+]] = tensor.collapse_shape %[[QV]]
// CHECK: %[[KT:.+]] = linalg.transpose ins(%[[K]] : tensor<?x?x2x16xf32>) outs(%{{.+}} : tensor<2x?x?x16xf32>) permutation = [2, 1, 0, 3]
// CHECK: %[[K3:.+]] = tensor.collapse_shape %[[KT]]
// CHECK: %[[RH:.+]] = linalg.transpose ins(%[[R]] : tensor<?x2x16xf32>) outs(%{{.+}} : tensor<2x?x16xf32>) permutation = [1, 0, 2]
// CHECK: %[[KP1:.+]] = arith.addi %[[KLEN:.+]], %{{.+}} : index
// CHECK: %[[PADE:.+]] = tensor.empty(%{{.+}}, %[[QLEN:.+]], %[[KP1]]) : tensor<?x?x?xf32>
// CHECK: %[[PAD:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[PADE]] : tensor<?x?x?xf32>)
// CHECK: %[[PAD4:.+]] = tensor.expand_shape %[[PAD]] {{\[\[}}0, 1], [2], [3]] output_shape [2, %[[B:[^,]+]], %{{.+}}] : tensor<?x?x?xf32> into tensor<2x?x?x?xf32>
// CHECK: %[[PADH:.+]] = tensor.collapse_shape %[[PAD4]] {{\[\[}}0], [1, 2], [3]] : tensor<2x?x?x?xf32> into tensor<2x?x?xf32>
// CHECK: %[[ROWS:.+]] = arith.muli %[[B]], %[[QLEN]] : index
// CHECK: %[[COLS:.+]] = tensor.extract_slice %[[PADH]][0, 0, 1] [2, %[[ROWS]], %[[KLEN]]] [1, 1, 1]
// CHECK: %[[QV4:.+]] = tensor.expand_shape %[[QV3]]
// CHECK: %[[QVH:.+]] = tensor.collapse_shape %[[QV4]] {{\[\[}}0], [1, 2], [3]] : tensor<2x?x?x16xf32> into tensor<2x?x16xf32>
// CHECK: %[[RAW:.+]] = linalg.batch_matmul indexing_maps = [#[[$QA]], #[[$KT]], #[[$S]]] ins(%[[QVH]], %[[RH]] : tensor<2x?x16xf32>, tensor<2x?x16xf32>) outs(%[[COLS]] : tensor<2x?x?xf32>)
// CHECK: %[[PADH2:.+]] = tensor.insert_slice %[[RAW]] into %[[PADH]][0, 0, 1] [2, %[[ROWS]], %[[KLEN]]] [1, 1, 1]
// CHECK: %[[PAD24:.+]] = tensor.expand_shape %[[PADH2]]
// CHECK: %[[PAD2:.+]] = tensor.collapse_shape %[[PAD24]] {{\[\[}}0, 1], [2], [3]] : tensor<2x?x?x?xf32> into tensor<?x?x?xf32>
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape %[[PAD2]] {{\[\[}}0], [1, 2]] : tensor<?x?x?xf32> into tensor<?x?xf32>
// CHECK: %[[QK:.+]] = arith.muli %[[QLEN]], %[[KLEN]] : index
// CHECK: %[[BD2:.+]] = tensor.extract_slice %[[FLAT]][0, %[[QLEN]]] [%{{.+}}, %[[QK]]] [1, 1]
// CHECK: %[[BD:.+]] = tensor.expand_shape %[[BD2]] {{\[\[}}0], [1, 2]] output_shape [%{{.+}}, %[[QLEN]], %[[KLEN]]]
// CHECK: %[[SC:.+]] = linalg.batch_matmul indexing_maps = [#[[$QA]], #[[$KT]], #[[$S]]] ins(%[[QU3]], %[[K3]] : tensor<?x?x16xf32>, tensor<?x?x16xf32>) outs(%[[BD]] : tensor<?x?x?xf32>)
// CHECK: %[[SC4:.+]] = tensor.expand_shape %[[SC]] {{\[\[}}0, 1], [2], [3]] {{.+}} into tensor<2x?x?x?xf32>
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.generic {{.+}} ins(%[[SC4]] : tensor<2x?x?x?xf32>)
// CHECK: arith.cmpi sle
// CHECK: arith.select %[[SL]]
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: linalg.transpose ins(%[[V]] : tensor<?x?x2x16xf32>) outs(%{{.+}} : tensor<2x?x?x16xf32>) permutation = [2, 1, 0, 3]
// CHECK: %[[PV:.+]] = linalg.batch_matmul ins(
// CHECK-NOT: linalg.batch_matmul
// CHECK: %[[OUT:.+]] = linalg.transpose ins(%{{.+}} : tensor<2x?x?x16xf32>) outs(%{{.+}} : tensor<?x?x2x16xf32>) permutation = [2, 1, 0, 3]
// CHECK-NOT: tensor.pad
// CHECK-NOT: tensor.generate
// CHECK: return %[[OUT]] : tensor<?x?x2x16xf32>
func.func @rel_attention(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x16xf32>,
                         %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                         %mem_len: index, %same_length: i1) -> tensor<?x?x2x16xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same_length {scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// pos_key is read once, by the copy that puts its heads outermost, which
// feeds the one positional product; it is never gathered element by element
// or repeated per batch column.
// CHECK-LABEL: func.func @rel_attention_pos_key_one_product
// CHECK-SAME: %[[R:[^:]+]]: tensor<?x2x16xf32>
// CHECK-NOT: tensor.extract %[[R]]
// CHECK: %[[RH:.+]] = linalg.transpose ins(%[[R]] : tensor<?x2x16xf32>) outs(%{{.+}} : tensor<2x?x16xf32>)
// CHECK-NOT: tensor.extract %[[R]]
// CHECK-NOT: ins(%[[R]]
// CHECK: linalg.batch_matmul {{.+}} ins(%{{.+}}, %[[RH]] :
// CHECK-NOT: tensor.extract %[[R]]
// CHECK-NOT: ins(%[[R]]
// CHECK-NOT: ins(%[[RH]]
// CHECK: return
func.func @rel_attention_pos_key_one_product(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x16xf32>,
                         %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                         %mem_len: index, %same_length: i1) -> tensor<?x?x2x16xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same_length {scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// With its lse result, the softmax's row max and row sum also give each
// row's max + log(sum) over the masked scores ([n_head, batch, qlen]),
// transposed to [batch, n_head, qlen]. The backward with a saved group
// lowers as without one: P is recomputed whole, the saved values unread
// (their dynamic sizes are checked against the query's).
// CHECK-LABEL: func.func @rel_attention_lse
// CHECK: %[[LOGSUM:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel"]} ins({{.+}}) outs(%{{.+}} : tensor<2x3x?xf32>)
// CHECK: math.log
// CHECK: arith.addf
// CHECK: %[[LSE:.+]] = linalg.transpose ins(%[[LOGSUM]] : tensor<2x3x?xf32>) outs(%{{.+}} : tensor<3x2x?xf32>) permutation = [1, 0, 2]
// CHECK: return %{{.+}}, %[[LSE]]
// CHECK-LABEL: func.func @rel_attention_grad_saved
// CHECK-SAME: %[[SLSE:[^:]+]]: tensor<3x2x?xf32>, %[[SO:[^:]+]]: tensor<?x3x2x16xf32>)
// CHECK: tensor.dim %[[SO]], %{{.+}} : tensor<?x3x2x16xf32>
// CHECK: cf.assert %{{.+}}, "txl.rel_attention_grad: the saved output must have the query shape"
// CHECK: tensor.dim %[[SLSE]], %{{.+}} : tensor<3x2x?xf32>
// CHECK: cf.assert %{{.+}}, "txl.rel_attention_grad: lse must be [batch, n_head, qlen] of the query"
// CHECK-NOT: %[[SLSE]]
// CHECK-NOT: %[[SO]]
// CHECK: return
func.func @rel_attention_lse(%q: tensor<?x3x2x16xf32>, %k: tensor<?x3x2x16xf32>, %v: tensor<?x3x2x16xf32>,
                             %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                             %mem_len: index, %same_length: i1) -> (tensor<?x3x2x16xf32>, tensor<3x2x?xf32>) {
  %o, %lse = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same_length {scale = 0.25 : f32}
      : tensor<?x3x2x16xf32>, tensor<?x3x2x16xf32>, tensor<?x3x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x3x2x16xf32>, tensor<3x2x?xf32>
  return %o, %lse : tensor<?x3x2x16xf32>, tensor<3x2x?xf32>
}
func.func @rel_attention_grad_saved(%q: tensor<?x3x2x16xf32>, %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>,
                                    %m: index, %s: i1, %lse: tensor<3x2x?xf32>, %o: tensor<?x3x2x16xf32>)
    -> tensor<?x2x16xf32> {
  %g:6 = txl.rel_attention_grad %q, %q, %q, %q, %r, %u, %u, %m, %s saved(%lse, %o : tensor<3x2x?xf32>, tensor<?x3x2x16xf32>)
      {scale = 0.25 : f32}
      : tensor<?x3x2x16xf32>, tensor<?x3x2x16xf32>, tensor<?x3x2x16xf32>, tensor<?x2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>
  return %g#3 : tensor<?x2x16xf32>
}

// -----

// The positional product reads r row qlen - 1 - i + j for every key j, so
// pos_key must have klen rows. With klen dynamic, the verifier cannot see a
// mismatch: the lowering checks it at run time, before any product, and the
// grad's lowering does the same.
// CHECK-LABEL: func.func @rel_attention_pos_key_rows_checked
// CHECK-SAME: (%{{[^:]+}}: tensor<?x?x2x16xf32>, %[[K:[^:]+]]: tensor<?x?x2x16xf32>, %{{[^:]+}}: tensor<?x?x2x16xf32>, %[[R:[^:]+]]: tensor<?x2x16xf32>
// CHECK: %[[KL:.+]] = tensor.dim %[[K]], %{{.+}} : tensor<?x?x2x16xf32>
// CHECK: %[[RL:.+]] = tensor.dim %[[R]], %{{.+}} : tensor<?x2x16xf32>
// CHECK: %[[EQ:.+]] = arith.cmpi eq, %[[KL]], %[[RL]] : index
// CHECK: cf.assert %[[EQ]], "txl.rel_attention: pos_key must have as many rows as key (klen)"
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.generic
// CHECK-LABEL: func.func @rel_attention_grad_pos_key_rows_checked
// CHECK: cf.assert %{{.+}}, "txl.rel_attention_grad: pos_key must have as many rows as key (klen)"
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.generic
// CHECK: return
func.func @rel_attention_pos_key_rows_checked(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x16xf32>,
                         %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                         %mem_len: index, %same_length: i1) -> tensor<?x?x2x16xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same_length {scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}
func.func @rel_attention_grad_pos_key_rows_checked(%q: tensor<?x?x2x16xf32>, %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>,
                         %m: index, %s: i1) -> tensor<?x2x16xf32> {
  %g:6 = txl.rel_attention_grad %q, %q, %q, %q, %r, %u, %u, %m, %s {scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>
  return %g#3 : tensor<?x2x16xf32>
}

// -----

// With klen static on both sides the verifier has checked it: no run-time
// check of pos_key's rows; the dynamic batch columns of query, key and value
// are checked.
// CHECK-LABEL: func.func @rel_attention_static_klen
// CHECK-NOT: pos_key must have
// CHECK: cf.assert %{{.+}}, "txl.rel_attention: query and key must agree on batch, n_head and d_head"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention: query and value must agree on batch, n_head and d_head"
// CHECK-NOT: pos_key must have
// CHECK: return
// CHECK-LABEL: func.func @rel_attention_all_static
// CHECK-NOT: cf.assert
// CHECK: return
func.func @rel_attention_static_klen(%q: tensor<?x?x2x16xf32>, %k: tensor<12x?x2x16xf32>, %v: tensor<12x?x2x16xf32>,
                         %r: tensor<12x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                         %mem_len: index, %same_length: i1) -> tensor<?x?x2x16xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same_length {scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<12x?x2x16xf32>, tensor<12x?x2x16xf32>, tensor<12x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

func.func @rel_attention_all_static(%q: tensor<4x3x2x16xf32>, %k: tensor<12x3x2x16xf32>, %v: tensor<12x3x2x16xf32>,
                         %r: tensor<12x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                         %mem_len: index, %same_length: i1) -> tensor<4x3x2x16xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same_length {scale = 0.25 : f32}
      : tensor<4x3x2x16xf32>, tensor<12x3x2x16xf32>, tensor<12x3x2x16xf32>, tensor<12x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<4x3x2x16xf32>
  return %o : tensor<4x3x2x16xf32>
}

// -----

// embedding: a parallel generic over [qlen, batch, d_embed] reading the token
// id and gathering table[token, e] with tensor.extract.
// CHECK-DAG: #[[$TOK:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[TABLE:[^:]+]]: tensor<50x32xf32>, %[[TOKENS:[^:]+]]: tensor<?x?xi64>)
// CHECK: %[[E:.+]] = linalg.generic {indexing_maps = [#[[$TOK]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[TOKENS]] : tensor<?x?xi64>) outs(%{{.+}} : tensor<?x?x32xf32>)
// CHECK-NEXT: ^bb0(%[[T:.+]]: i64, %{{.+}}: f32):
// CHECK-NEXT: %[[ROW:.+]] = arith.index_cast %[[T]] : i64 to index
// CHECK-NEXT: %[[COL:.+]] = linalg.index 2 : index
// CHECK-NEXT: %[[V:.+]] = tensor.extract %[[TABLE]][%[[ROW]], %[[COL]]] : tensor<50x32xf32>
// CHECK-NEXT: linalg.yield %[[V]] : f32
// CHECK: return %[[E]] : tensor<?x?x32xf32>
func.func @embedding(%table: tensor<50x32xf32>, %tokens: tensor<?x?xi64>) -> tensor<?x?x32xf32> {
  %e = txl.embedding %table, %tokens : tensor<50x32xf32>, tensor<?x?xi64> -> tensor<?x?x32xf32>
  return %e : tensor<?x?x32xf32>
}

// -----

// concat_mem: memory inserted at row 0 and the hidden states at row mlen of a
// [mlen + qlen, batch, d] tensor (checked after cse, so that mlen is visibly
// dimension 0 of the memory).
// CHECK-LABEL: func.func @concat_mem
// CHECK: tensor.insert_slice
// CHECK: tensor.insert_slice
// CHECK-NOT: txl.concat_mem
// CSE-LABEL: func.func @concat_mem
// CSE-SAME: (%[[MEM:[^:]+]]: tensor<?x?x32xf32>, %[[H:[^:]+]]: tensor<?x?x32xf32>)
// CSE-DAG: %[[C0:.+]] = arith.constant 0 : index
// CSE-DAG: %[[MLEN:.+]] = tensor.dim %[[MEM]], %[[C0]] : tensor<?x?x32xf32>
// CSE-DAG: %[[QLEN:.+]] = tensor.dim %[[H]], %[[C0]] : tensor<?x?x32xf32>
// CSE: %[[KLEN:.+]] = arith.addi %[[MLEN]], %[[QLEN]] : index
// CSE: %[[INIT:.+]] = tensor.empty(%[[KLEN]], %{{.+}}) : tensor<?x?x32xf32>
// CSE: %[[WITHMEM:.+]] = tensor.insert_slice %[[MEM]] into %[[INIT]][0, 0, 0] [%[[MLEN]], %{{.+}}, 32] [1, 1, 1]
// CSE: %[[CAT:.+]] = tensor.insert_slice %[[H]] into %[[WITHMEM]][%[[MLEN]], 0, 0] [%[[QLEN]], %{{.+}}, 32] [1, 1, 1]
// CSE: return %[[CAT]] : tensor<?x?x32xf32>
func.func @concat_mem(%mem: tensor<?x?x32xf32>, %h: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %cat = txl.concat_mem %mem, %h : tensor<?x?x32xf32>, tensor<?x?x32xf32> -> tensor<?x?x32xf32>
  return %cat : tensor<?x?x32xf32>
}

// -----

// take_last: the last min(count, len) rows, an extract_slice at
// len - min(count, len) (checked after cse, where len is visibly dimension 0 of the input).
// CHECK-LABEL: func.func @take_last
// CHECK: tensor.extract_slice
// CHECK-NOT: txl.take_last
// CSE-LABEL: func.func @take_last
// CSE-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf32>, %[[N:[^:]+]]: index)
// CSE-DAG: %[[C0:.+]] = arith.constant 0 : index
// CSE-DAG: %[[LEN:.+]] = tensor.dim %[[X]], %[[C0]] : tensor<?x?x32xf32>
// CSE: %[[COUNT:.+]] = arith.minui %[[N]], %[[LEN]] : index
// CSE: %[[OFF:.+]] = arith.subi %[[LEN]], %[[COUNT]] : index
// CSE: %[[S:.+]] = tensor.extract_slice %[[X]][%[[OFF]], 0, 0] [%[[COUNT]], %{{.+}}, 32] [1, 1, 1] : tensor<?x?x32xf32> to tensor<?x?x32xf32>
// CSE: return %[[S]] : tensor<?x?x32xf32>
func.func @take_last(%x: tensor<?x?x32xf32>, %n: index) -> tensor<?x?x32xf32> {
  %m = txl.take_last %x, %n : tensor<?x?x32xf32> -> tensor<?x?x32xf32>
  return %m : tensor<?x?x32xf32>
}

// -----

// take_last of concat_mem (a segment's new memory): no [klen, batch, d]
// concatenation; the rows it keeps of the memory, [min(klen - count, mlen),
// mlen), then the last count - (those) rows of h, inserted into a
// [count, batch, d] tensor.
// CHECK-LABEL: func.func @new_memory
// CHECK-NOT: txl.
// CHECK: return
// CSE-LABEL: func.func @new_memory
// CSE-SAME: (%[[MEM:[^:]+]]: tensor<?x?x32xf32>, %[[H:[^:]+]]: tensor<?x?x32xf32>, %[[N:[^:]+]]: index)
// CSE-DAG: %[[C0:.+]] = arith.constant 0 : index
// CSE-DAG: %[[MLEN:.+]] = tensor.dim %[[MEM]], %[[C0]] : tensor<?x?x32xf32>
// CSE-DAG: %[[QLEN:.+]] = tensor.dim %[[H]], %[[C0]] : tensor<?x?x32xf32>
// CSE: %[[KLEN:.+]] = arith.addi %[[MLEN]], %[[QLEN]] : index
// CSE: %[[COUNT:.+]] = arith.minui %[[N]], %[[KLEN]] : index
// CSE: %[[START:.+]] = arith.subi %[[KLEN]], %[[COUNT]] : index
// CSE: %[[MSTART:.+]] = arith.minui %[[START]], %[[MLEN]] : index
// CSE: %[[FROMMEM:.+]] = arith.subi %[[MLEN]], %[[MSTART]] : index
// CSE: %[[FROMH:.+]] = arith.subi %[[COUNT]], %[[FROMMEM]] : index
// CSE: %[[HSTART:.+]] = arith.subi %[[QLEN]], %[[FROMH]] : index
// CSE: %[[INIT:.+]] = tensor.empty(%[[COUNT]], %{{.+}}) : tensor<?x?x32xf32>
// CSE: %[[MROWS:.+]] = tensor.extract_slice %[[MEM]][%[[MSTART]], 0, 0] [%[[FROMMEM]], %{{.+}}, 32] [1, 1, 1]
// CSE: %[[WITHMEM:.+]] = tensor.insert_slice %[[MROWS]] into %[[INIT]][0, 0, 0] [%[[FROMMEM]], %{{.+}}, 32] [1, 1, 1]
// CSE: %[[HROWS:.+]] = tensor.extract_slice %[[H]][%[[HSTART]], 0, 0] [%[[FROMH]], %{{.+}}, 32] [1, 1, 1]
// CSE: %[[NEW:.+]] = tensor.insert_slice %[[HROWS]] into %[[WITHMEM]][%[[FROMMEM]], 0, 0] [%[[FROMH]], %{{.+}}, 32] [1, 1, 1]
// CSE: return %[[NEW]] : tensor<?x?x32xf32>
func.func @new_memory(%mem: tensor<?x?x32xf32>, %h: tensor<?x?x32xf32>, %n: index) -> tensor<?x?x32xf32> {
  %cat = txl.concat_mem %mem, %h : tensor<?x?x32xf32>, tensor<?x?x32xf32> -> tensor<?x?x32xf32>
  %m = txl.take_last %cat, %n : tensor<?x?x32xf32> -> tensor<?x?x32xf32>
  return %m : tensor<?x?x32xf32>
}

// -----

// The concatenation stays when something else reads it too.
// CHECK-LABEL: func.func @new_memory_and_concat
// CHECK: %[[INIT:.+]] = tensor.empty
// CHECK: tensor.insert_slice %{{.+}} into %[[INIT]]
// CHECK: %[[CAT:.+]] = tensor.insert_slice
// CHECK: return %{{.+}}, %[[CAT]]
func.func @new_memory_and_concat(%mem: tensor<?x?x32xf32>, %h: tensor<?x?x32xf32>, %n: index) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %cat = txl.concat_mem %mem, %h : tensor<?x?x32xf32>, tensor<?x?x32xf32> -> tensor<?x?x32xf32>
  %m = txl.take_last %cat, %n : tensor<?x?x32xf32> -> tensor<?x?x32xf32>
  return %m, %cat : tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// stop_gradient is the identity in the forward pass: it disappears.
// CHECK-LABEL: func.func @stop_gradient
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf32>)
// CHECK-NOT: txl.stop_gradient
// CHECK-NEXT: return %[[X]] : tensor<?x?x32xf32>
func.func @stop_gradient(%x: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %s = txl.stop_gradient %x : tensor<?x?x32xf32>
  return %s : tensor<?x?x32xf32>
}

// -----

// add, scale, relu and broadcast_head_bias are parallel generics.
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$HEAD:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[$ID4:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf32>, %[[Y:[^:]+]]: tensor<?x?x32xf32>, %[[U:[^:]+]]: tensor<2x16xf32>, %[[Q:[^:]+]]: tensor<?x?x2x16xf32>)
// CHECK: %[[A:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[X]], %[[Y]] : tensor<?x?x32xf32>, tensor<?x?x32xf32>)
// CHECK: arith.addf
// CHECK-NOT: txl.
// CHECK: %[[M:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[A]] : tensor<?x?x32xf32>)
// CHECK: %[[F:.+]] = arith.constant 5.65685415 : f32
// CHECK: arith.mulf %{{.+}}, %[[F]] : f32
// CHECK-NOT: txl.
// CHECK: %[[R:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[M]] : tensor<?x?x32xf32>)
// CHECK: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: arith.maxnumf %{{.+}}, %[[Z]] : f32
// CHECK-NOT: txl.
// CHECK: %[[B:.+]] = linalg.generic {indexing_maps = [#[[$HEAD]], #[[$ID4]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[U]] : tensor<2x16xf32>) outs(%{{.+}} : tensor<?x?x2x16xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: linalg.yield %[[IN]] : f32
// CHECK-NOT: txl.
// CHECK: return %[[R]], %[[B]]
func.func @elementwise(%x: tensor<?x?x32xf32>, %y: tensor<?x?x32xf32>, %u: tensor<2x16xf32>, %q: tensor<?x?x2x16xf32>)
    -> (tensor<?x?x32xf32>, tensor<?x?x2x16xf32>) {
  %a = txl.add %x, %y : tensor<?x?x32xf32>
  %m = txl.scale %a {factor = 5.65685415 : f32} : tensor<?x?x32xf32>
  %r = txl.relu %m : tensor<?x?x32xf32>
  %b = txl.broadcast_head_bias %u, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  return %r, %b : tensor<?x?x32xf32>, tensor<?x?x2x16xf32>
}

// -----

// float64 (gradient checks): layer_norm computes in f64; 1/32 is an f64
// constant and the f32 epsilon is widened exactly (1.0e-05 : f32 is
// 9.9999997473787516E-6), not re-rounded from its decimal spelling.
// CHECK-LABEL: func.func @layer_norm_f64
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf64>, %[[G:[^:]+]]: tensor<32xf64>, %[[B:[^:]+]]: tensor<32xf64>)
// CHECK: linalg.fill ins(%{{.+}} : f64) outs(%{{.+}} : tensor<?x?xf64>)
// CHECK: %[[SUM:.+]] = linalg.generic {{.+}} ins(%[[X]] : tensor<?x?x32xf64>) outs(%{{.+}} : tensor<?x?xf64>)
// CHECK: %[[SQ:.+]] = linalg.generic {{.+}} ins(%[[X]], %[[SUM]] : tensor<?x?x32xf64>, tensor<?x?xf64>) outs(%{{.+}} : tensor<?x?xf64>)
// CHECK: arith.constant 3.125000e-02 : f64
// CHECK: %[[Y:.+]] = linalg.generic {{.+}} ins(%[[X]], %[[SUM]], %[[SQ]], %[[G]], %[[B]] : tensor<?x?x32xf64>, tensor<?x?xf64>, tensor<?x?xf64>, tensor<32xf64>, tensor<32xf64>) outs(%{{.+}} : tensor<?x?x32xf64>)
// CHECK: %[[EPS:.+]] = arith.constant 9.9999997473787516E-6 : f64
// CHECK: %[[VE:.+]] = arith.addf %{{.+}}, %[[EPS]] : f64
// CHECK: math.rsqrt %[[VE]] : f64
// CHECK: return %[[Y]] : tensor<?x?x32xf64>
// No f32 is left in an f64 lowering (the F64 prefix checks each function
// from its label to its return).
// F64-LABEL: func.func @layer_norm_f64
// F64-NOT: f32
// F64: return
func.func @layer_norm_f64(%x: tensor<?x?x32xf64>, %g: tensor<32xf64>, %b: tensor<32xf64>) -> tensor<?x?x32xf64> {
  %y = txl.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x?x32xf64>, tensor<32xf64>, tensor<32xf64>
  return %y : tensor<?x?x32xf64>
}

// -----

// float64 linear: the product is an f64 linalg.matmul (later cblas_dgemm)
// onto the f64 bias rows.
// CHECK-LABEL: func.func @linear_f64
// CHECK: %[[INIT:.+]] = linalg.generic {{.+}} ins(%{{.+}} : tensor<64xf64>) outs(%{{.+}} : tensor<?x64xf64>)
// CHECK: %[[MM:.+]] = linalg.matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<?x32xf64>, tensor<64x32xf64>) outs(%[[INIT]] : tensor<?x64xf64>)
// F64-LABEL: func.func @linear_f64
// F64-NOT: f32
// F64: return
func.func @linear_f64(%x: tensor<?x?x32xf64>, %w: tensor<64x32xf64>, %b: tensor<64xf64>) -> tensor<?x?x64xf64> {
  %y = txl.linear %x, %w, %b : tensor<?x?x32xf64>, tensor<64x32xf64>, tensor<64xf64> -> tensor<?x?x64xf64>
  return %y : tensor<?x?x64xf64>
}

// -----

// float64 constants of the other families: scale's f32 factor widened, relu's
// zero, the softmax scale and -inf, and pos_emb's positions converted to f64.
// CHECK-LABEL: func.func @constants_f64
// CHECK: arith.constant 5.6568541526794434 : f64
// CHECK: arith.constant 0.000000e+00 : f64
// CHECK: arith.maxnumf %{{.+}}, %{{.+}} : f64
// CHECK: arith.constant 2.500000e-01 : f64
// CHECK: arith.constant 0xFFF0000000000000 : f64
// CHECK: arith.sitofp %{{.+}} : i64 to f64
// F64-LABEL: func.func @constants_f64
// F64-NOT: f32
// F64: return
func.func @constants_f64(%x: tensor<?x?x32xf64>, %s: tensor<?x?x?x2xf64>, %mem_len: index, %same_length: i1,
                         %inv_freq: tensor<16xf64>, %klen: index, %clamp: i64)
    -> (tensor<?x?x32xf64>, tensor<?x?x?x2xf64>, tensor<?x32xf64>) {
  %m = txl.scale %x {factor = 5.65685415 : f32} : tensor<?x?x32xf64>
  %r = txl.relu %m : tensor<?x?x32xf64>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf64>
  %e = txl.pos_emb %inv_freq, %klen, %clamp : tensor<16xf64> -> tensor<?x32xf64>
  return %r, %p, %e : tensor<?x?x32xf64>, tensor<?x?x?x2xf64>, tensor<?x32xf64>
}

// -----

// txl.rel_shift has no lowering here (it is --txl-lower-rel-shift's job, or
// fused away): left in the input, the conversion fails.
// UNLOWERED: error: failed to legalize operation 'txl.rel_shift' that was explicitly marked illegal
func.func @rel_shift_left(%bd: tensor<?x?x?x2xf32>) -> tensor<?x?x?x2xf32> {
  // expected-error @+1 {{failed to legalize operation 'txl.rel_shift' that was explicitly marked illegal}}
  %s = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  return %s : tensor<?x?x?x2xf32>
}
