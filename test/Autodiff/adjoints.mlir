// RUN: txl-opt %s --split-input-file --txl-generate-backward | FileCheck %s

// The adjoint of every differentiable op family (lib/Autodiff/Adjoints.cpp).

// Products, ReLU, layer norm and the NLL: each gets its backward op; the
// input %x is not computed from a parameter, so no linear_input_grad.
// CHECK-LABEL: func.func @segment_grad
// CHECK: %[[Y:.+]] = txl.linear %[[X:[^,]+]], %[[W:[^,]+]], %{{.+}} :
// CHECK: %[[R:.+]] = txl.relu %[[Y]]
// CHECK: %[[N:.+]] = txl.layer_norm %[[R]], %[[G:[^,]+]], %{{[^ ]+}} {epsilon
// CHECK: %[[SEED:.+]] = linalg.fill
// CHECK: %[[DN:.+]] = txl.nll_grad %[[SEED]], %[[N]], %{{.+}} : tensor<?x?xf32>, tensor<?x?x6xf32>, tensor<?x?xi64>
// CHECK: %[[DR:.+]], %[[DG:.+]], %[[DB:.+]] = txl.layer_norm_grad %[[DN]], %[[R]], %[[G]] {epsilon = 9.99999974E-6 : f32}
// CHECK: %[[DY:.+]] = txl.relu_grad %[[DR]], %[[R]]
// CHECK-NOT: txl.linear_input_grad
// CHECK: %[[DW:.+]] = txl.linear_weight_grad %[[DY]], %[[X]] : tensor<?x?x6xf32>, tensor<?x?x4xf32> -> tensor<6x4xf32>
// CHECK: %[[DBIAS:.+]] = txl.sum_leading %[[DY]] : tensor<?x?x6xf32> -> tensor<6xf32>
// CHECK: return %{{.+}}, %[[DW]], %[[DBIAS]], %[[DG]], %[[DB]]
func.func @segment(%x: tensor<?x?x4xf32>, %w: tensor<6x4xf32> {txl.param = "w"}, %b: tensor<6xf32> {txl.param = "b"},
                   %g: tensor<6xf32> {txl.param = "g"}, %beta: tensor<6xf32> {txl.param = "beta"},
                   %t: tensor<?x?xi64>) -> tensor<?x?xf32> {
  %y = txl.linear %x, %w, %b : tensor<?x?x4xf32>, tensor<6x4xf32>, tensor<6xf32> -> tensor<?x?x6xf32>
  %r = txl.relu %y : tensor<?x?x6xf32>
  %n = txl.layer_norm %r, %g, %beta {epsilon = 1.0e-05 : f32} : tensor<?x?x6xf32>, tensor<6xf32>, tensor<6xf32>
  %l = txl.nll %n, %t : tensor<?x?x6xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %l : tensor<?x?xf32>
}

// -----

// Memory and reshapes: a slice's gradient is inserted into zeros, take_last
// pads its gradient with zero rows above, concat_mem gives the hidden rows
// theirs, reshapes are inverted, and the embedding scatters into its table.
// The memory output %cat carries no gradient (only result 0 is seeded).
// CHECK-LABEL: func.func @segment_grad
// CHECK: %[[H:.+]] = txl.embedding %[[E:[^,]+]], %[[TOK:[^ ]+]] :
// CHECK: %[[SEED:.+]] = linalg.fill
// CHECK: %[[INS:.+]] = tensor.insert_slice %[[SEED]] into %{{.+}}[0, 0, 2]
// CHECK: %[[EXP:.+]] = tensor.expand_shape %[[INS]] {{\[}}[0], [1], [2, 3]]
// CHECK: %[[COL:.+]] = tensor.collapse_shape %[[EXP]] {{\[}}[0], [1], [2, 3]]
// CHECK: %[[PAD:.+]] = tensor.insert_slice %[[COL]] into %{{.+}}[%{{.+}}, 0, 0]
// CHECK: %[[DH:.+]] = tensor.extract_slice %[[PAD]][%{{.+}}, 0, 0]
// CHECK: %[[DE:.+]] = txl.embedding_grad %[[DH]], %[[TOK]] : tensor<?x?x4xf32>, tensor<?x?xi64> -> tensor<10x4xf32>
// CHECK: return %{{.+}}, %{{.+}}, %[[DE]]
func.func @segment(%e: tensor<10x4xf32> {txl.param = "e"}, %tok: tensor<?x?xi64>, %mem: tensor<?x?x4xf32>,
                   %n: index) -> (tensor<?x?x2xf32>, tensor<?x?x4xf32>) {
  %h = txl.embedding %e, %tok : tensor<10x4xf32>, tensor<?x?xi64> -> tensor<?x?x4xf32>
  %cat = txl.concat_mem %mem, %h : tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  %last = txl.take_last %cat, %n : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %last, %c0 : tensor<?x?x4xf32>
  %d1 = tensor.dim %last, %c1 : tensor<?x?x4xf32>
  %ex = tensor.expand_shape %last [[0], [1], [2, 3]] output_shape [%d0, %d1, 2, 2] : tensor<?x?x4xf32> into tensor<?x?x2x2xf32>
  %co = tensor.collapse_shape %ex [[0], [1], [2, 3]] : tensor<?x?x2x2xf32> into tensor<?x?x4xf32>
  %s = tensor.extract_slice %co[0, 0, 2] [%d0, %d1, 2] [1, 1, 1] : tensor<?x?x4xf32> to tensor<?x?x2xf32>
  return %s, %cat : tensor<?x?x2xf32>, tensor<?x?x4xf32>
}

// -----

// The fused attention has one backward op. The positional embedding depends
// only on the inv_freq buffer: no gradient flows into it (no
// linear_input_grad for r_net's input).
// CHECK-LABEL: func.func @segment_grad
// CHECK: %[[PE:.+]] = txl.pos_emb
// CHECK: %[[R:.+]] = tensor.expand_shape
// CHECK: %[[SEED:.+]] = linalg.fill
// CHECK: %[[DQ:[^,]+]], %[[DK:[^,]+]], %[[DV:[^,]+]], %[[DR:[^,]+]], %[[DU:[^,]+]], %[[DVB:[^ ]+]] = txl.rel_attention_grad %[[SEED]], %{{.+}}, %{{.+}}, %{{.+}}, %[[R]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {scale = 5.000000e-01 : f32}
// CHECK: %[[DR2:.+]] = tensor.collapse_shape %[[DR]]
// CHECK-NOT: txl.linear_input_grad
// CHECK: %[[DRW:.+]] = txl.linear_weight_grad %[[DR2]], %[[PE]]
// CHECK: return %{{.+}}, %[[DQ]], %[[DK]], %[[DV]], %[[DRW]], %[[DU]], %[[DVB]]
func.func @segment(%q: tensor<?x?x2x4xf32> {txl.param = "q"}, %k: tensor<?x?x2x4xf32> {txl.param = "k"},
                   %v: tensor<?x?x2x4xf32> {txl.param = "v"}, %rw: tensor<8x8xf32> {txl.param = "r_net"},
                   %u: tensor<2x4xf32> {txl.param = "u"}, %vb: tensor<2x4xf32> {txl.param = "vb"},
                   %f: tensor<4xf32> {txl.param = "inv_freq", txl.buffer}, %klen: index, %clamp: i64,
                   %ml: index, %sl: i1) -> tensor<?x?x2x4xf32> {
  %pe = txl.pos_emb %f, %klen, %clamp : tensor<4xf32> -> tensor<?x8xf32>
  %r2 = txl.linear %pe, %rw : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
  %c0 = arith.constant 0 : index
  %d0 = tensor.dim %r2, %c0 : tensor<?x8xf32>
  %r = tensor.expand_shape %r2 [[0], [1, 2]] output_shape [%d0, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %ml, %sl {scale = 0.5 : f32}
      : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<?x?x2x4xf32>
  return %o : tensor<?x?x2x4xf32>
}

// -----

// Adaptive input and softmax: one backward op each, one gradient per
// table/layer/projection; tied tables and projections sum both uses.
// CHECK-LABEL: func.func @segment_grad
// CHECK: %[[H:.+]] = txl.adaptive_embedding
// CHECK: %[[SEED:.+]] = linalg.fill
// CHECK: %[[G:.+]]:9 = txl.adaptive_nll_grad %[[SEED]], %[[H]], %{{.+}} weights(
// CHECK-SAME: clusters(
// CHECK: %[[E:.+]]:4 = txl.adaptive_embedding_grad %[[G]]#0, %{{.+}} tables(
// CHECK: %[[T0:.+]] = txl.add %[[G]]#1, %[[E]]#0 : tensor<3x4xf32>
// CHECK: %[[T1:.+]] = txl.add %[[G]]#2, %[[E]]#1 : tensor<5x2xf32>
// CHECK: %[[P0:.+]] = txl.add %[[G]]#5, %[[E]]#2 : tensor<4x4xf32>
// CHECK: %[[P1:.+]] = txl.add %[[G]]#6, %[[E]]#3 : tensor<4x2xf32>
// CHECK: return %{{.+}}, %[[T0]], %[[T1]], %[[P0]], %[[P1]], %[[G]]#3, %[[G]]#4, %[[G]]#7, %[[G]]#8
func.func @segment(%tok: tensor<?x?xi64>, %t0: tensor<3x4xf32> {txl.param = "t0"}, %t1: tensor<5x2xf32> {txl.param = "t1"},
                   %p0: tensor<4x4xf32> {txl.param = "p0"}, %p1: tensor<4x2xf32> {txl.param = "p1"},
                   %b0: tensor<3xf32> {txl.param = "b0"}, %b1: tensor<5xf32> {txl.param = "b1"},
                   %cw: tensor<1x4xf32> {txl.param = "cw"}, %cb: tensor<1xf32> {txl.param = "cb"},
                   %tgt: tensor<?x?xi64>) -> tensor<?x?xf32> {
  %h = txl.adaptive_embedding %tok tables(%t0, %t1 : tensor<3x4xf32>, tensor<5x2xf32>)
      projs(%p0, %p1 : tensor<4x4xf32>, tensor<4x2xf32>) {cutoff_ends = array<i64: 0, 3, 8>}
      : tensor<?x?xi64> -> tensor<?x?x4xf32>
  %l = txl.adaptive_nll %h, %tgt weights(%t0, %t1 : tensor<3x4xf32>, tensor<5x2xf32>)
      biases(%b0, %b1 : tensor<3xf32>, tensor<5xf32>) projs(%p0, %p1 : tensor<4x4xf32>, tensor<4x2xf32>)
      clusters(%cw, %cb : tensor<1x4xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 3, 8>}
      : tensor<?x?x4xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %l : tensor<?x?xf32>
}

// -----

// Dropout is linear in x: its adjoint is the same dropout (seed, offset,
// training, stream base, rate, stream) applied to the cotangent, so the mask
// is recomputed, never stored; the scalars get no gradient.
// CHECK-LABEL: func.func @segment_grad
// CHECK-SAME: (%[[W:[^:]+]]: tensor<4x4xf32> {txl.param = "w"}, %[[X:[^:]+]]: tensor<?x4xf32>, %[[SEED:[^:]+]]: i64, %[[OFF:[^:]+]]: i64, %[[TR:[^:]+]]: i1, %[[BASE:[^:]+]]: i64)
// CHECK: %[[Y:.+]] = txl.linear %[[X]], %[[W]]
// CHECK: %[[D:.+]] = txl.dropout %[[Y]], %[[SEED]], %[[OFF]], %[[TR]] stream_base %[[BASE]] {rate = 1.000000e-01 : f64, stream = 2 : i64}
// CHECK: %[[G:.+]] = linalg.fill
// CHECK: %[[DY:.+]] = txl.dropout %[[G]], %[[SEED]], %[[OFF]], %[[TR]] stream_base %[[BASE]] {rate = 1.000000e-01 : f64, stream = 2 : i64} : tensor<?x4xf32>
// CHECK: %[[DW:.+]] = txl.linear_weight_grad %[[DY]], %[[X]]
// CHECK: return %[[D]], %[[DW]]
func.func @segment(%w: tensor<4x4xf32> {txl.param = "w"}, %x: tensor<?x4xf32>, %seed: i64, %offset: i64,
                   %training: i1, %base: i64) -> tensor<?x4xf32> {
  %y = txl.linear %x, %w : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %d = txl.dropout %y, %seed, %offset, %training stream_base %base {rate = 0.1 : f64, stream = 2 : i64} : tensor<?x4xf32>
  return %d : tensor<?x4xf32>
}

// -----

// The fused attention's dropatt group and attributes carry over to its
// backward op, which recomputes the same mask.
// CHECK-LABEL: func.func @segment_grad
// CHECK-SAME: %[[SEED:[^:]+]]: i64, %[[OFF:[^:]+]]: i64, %[[TR:[^:]+]]: i1, %[[BASE:[^:]+]]: i64, %[[COL:[^:]+]]: i64)
// CHECK: txl.rel_attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} dropatt(%[[SEED]], %[[OFF]], %[[TR]], %[[BASE]], %[[COL]]) {dropatt = 2.000000e-01 : f64, dropatt_stream = 3 : i64, scale = 5.000000e-01 : f32}
func.func @segment(%q: tensor<?x?x2x3xf32> {txl.param = "q"}, %r: tensor<?x2x3xf32> {txl.param = "r"},
                   %u: tensor<2x3xf32> {txl.param = "u"}, %ml: index, %sl: i1,
                   %seed: i64, %offset: i64, %training: i1, %base: i64, %col: i64) -> tensor<?x?x2x3xf32> {
  %a = txl.rel_attention %q, %q, %q, %r, %u, %u, %ml, %sl dropatt(%seed, %offset, %training, %base, %col)
      {dropatt = 0.2 : f64, dropatt_stream = 3 : i64, scale = 0.5 : f32}
      : tensor<?x?x2x3xf32>, tensor<?x?x2x3xf32>, tensor<?x?x2x3xf32>, tensor<?x2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
      -> tensor<?x?x2x3xf32>
  return %a : tensor<?x?x2x3xf32>
}

// -----

// A layer function's dropout scalars (seed, offset, training, its stream
// base) are passed to its generated gradient function, which recomputes the
// layer with the same masks.
// CHECK-LABEL: func.func private @layer_grad(
// CHECK-SAME: %[[H:[^:]+]]: tensor<?x4xf32>, %[[SEED:[^:]+]]: i64, %[[OFF:[^:]+]]: i64, %[[TR:[^:]+]]: i1, %[[BASE:[^:]+]]: i64, %{{[^:]+}}: tensor<4x4xf32> {txl.param = "w"}, %[[DR:[^:]+]]: tensor<?x4xf32>)
// CHECK: txl.dropout %[[DR]], %[[SEED]], %[[OFF]], %[[TR]] stream_base %[[BASE]] {rate = 3.000000e-01 : f64, stream = 1 : i64}
// CHECK-LABEL: func.func @segment_grad
// CHECK-SAME: %[[SEED:[^:]+]]: i64, %[[OFF:[^:]+]]: i64, %[[TR:[^:]+]]: i1)
// CHECK-DAG: %[[B4:.+]] = arith.constant 4 : i64
// CHECK-DAG: %[[B8:.+]] = arith.constant 8 : i64
// CHECK: call @layer_grad(%{{.+}}, %[[SEED]], %[[OFF]], %[[TR]], %[[B8]], %{{.+}}, %{{.+}})
// CHECK: call @layer_grad_0(%{{.+}}, %[[SEED]], %[[OFF]], %[[TR]], %[[B4]], %{{.+}}, %{{.+}})
func.func private @layer(%h: tensor<?x4xf32>, %seed: i64, %offset: i64, %training: i1, %base: i64,
                         %w: tensor<4x4xf32> {txl.param = "w"}) -> tensor<?x4xf32> {
  %y = txl.linear %h, %w : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %d = txl.dropout %y, %seed, %offset, %training stream_base %base {rate = 0.3 : f64, stream = 1 : i64} : tensor<?x4xf32>
  return %d : tensor<?x4xf32>
}
func.func @segment(%x: tensor<?x4xf32>, %w0: tensor<4x4xf32> {txl.param = "w0"}, %w1: tensor<4x4xf32> {txl.param = "w1"},
                   %seed: i64, %offset: i64, %training: i1) -> tensor<?x4xf32> {
  %b4 = arith.constant 4 : i64
  %b8 = arith.constant 8 : i64
  %h1 = call @layer(%x, %seed, %offset, %training, %b4, %w0) : (tensor<?x4xf32>, i64, i64, i1, i64, tensor<4x4xf32>) -> tensor<?x4xf32>
  %h2 = call @layer(%h1, %seed, %offset, %training, %b8, %w1) : (tensor<?x4xf32>, i64, i64, i1, i64, tensor<4x4xf32>) -> tensor<?x4xf32>
  return %h2 : tensor<?x4xf32>
}

// -----

// The decomposed four-term attention (paper §3.3, as the frontend writes it
// before fusion): attn_apply, masked_softmax, rel_shift and each attn_score
// get their own backward op; the two biases sum their broadcast gradients
// back; mem_len and same_length get none. The positional terms (b) and (d)
// share the shifted gradient, and q's three contributions are summed.
// CHECK-LABEL: func.func @segment_grad
// CHECK: %[[P:.+]] = txl.masked_softmax
// CHECK: %[[DP:.+]], %[[DV:.+]] = txl.attn_apply_grad %{{.+}}, %[[P]], %[[V:[^ ]+]] :
// CHECK: %[[DS:.+]] = txl.softmax_grad %[[DP]], %[[P]] {scale = 5.000000e-01 : f32}
// CHECK: %[[DRAW:.+]] = txl.rel_shift_grad %[[DS]]
// CHECK-DAG: %{{.+}}, %[[DR1:.+]] = txl.attn_score_grad %[[DRAW]], %{{.+}}, %[[R:[^ ]+]] : tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>
// CHECK-DAG: %{{.+}}, %[[DK1:.+]] = txl.attn_score_grad %[[DS]], %{{.+}}, %[[K:[^ ]+]] : tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
// CHECK-DAG: txl.sum_leading %{{.+}} : tensor<?x?x2x4xf32> -> tensor<2x4xf32>
// CHECK: return
func.func @segment(%q: tensor<?x?x2x4xf32> {txl.param = "q"}, %k: tensor<?x?x2x4xf32> {txl.param = "k"},
                   %v: tensor<?x?x2x4xf32> {txl.param = "v"}, %r: tensor<?x2x4xf32> {txl.param = "r"},
                   %u: tensor<2x4xf32> {txl.param = "u"}, %vb: tensor<2x4xf32> {txl.param = "vb"},
                   %ml: index, %sl: i1, %w: tensor<3x8xf32> {txl.param = "w"}, %t: tensor<?x?xi64>) -> tensor<?x?xf32> {
  %ta = txl.attn_score %q, %k : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x?x?x2xf32>
  %qu = txl.broadcast_head_bias %u, %q : tensor<2x4xf32>, tensor<?x?x2x4xf32>
  %tc = txl.attn_score %qu, %k : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x?x?x2xf32>
  %tb = txl.attn_score %q, %r : tensor<?x?x2x4xf32>, tensor<?x2x4xf32> -> tensor<?x?x?x2xf32>
  %qv = txl.broadcast_head_bias %vb, %q : tensor<2x4xf32>, tensor<?x?x2x4xf32>
  %td = txl.attn_score %qv, %r : tensor<?x?x2x4xf32>, tensor<?x2x4xf32> -> tensor<?x?x?x2xf32>
  %bd0 = txl.add %tb, %td : tensor<?x?x?x2xf32>
  %bd = txl.rel_shift %bd0 : tensor<?x?x?x2xf32>
  %ac = txl.add %ta, %tc : tensor<?x?x?x2xf32>
  %s = txl.add %ac, %bd : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %ml, %sl {scale = 0.5 : f32} : tensor<?x?x?x2xf32>
  %a = txl.attn_apply %p, %v : tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32> -> tensor<?x?x2x4xf32>
  %o = tensor.collapse_shape %a [[0], [1], [2, 3]] : tensor<?x?x2x4xf32> into tensor<?x?x8xf32>
  %z = txl.linear %o, %w : tensor<?x?x8xf32>, tensor<3x8xf32> -> tensor<?x?x3xf32>
  %l = txl.nll %z, %t : tensor<?x?x3xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %l : tensor<?x?xf32>
}

// -----

// txl.loss_mix: each term's gradient is the seed mixed with that term's
// weight alone (first = first + k); the weights, position weights and the
// stop_gradient part get none.
// CHECK-LABEL: func.func @segment_grad
// CHECK: %[[NA:.+]] = txl.nll %[[LA:[^,]+]], %[[T:[^ ]+]] :
// CHECK: %[[NB:.+]] = txl.nll %[[LB:[^,]+]], %[[T]] :
// CHECK: %[[MIX:.+]] = txl.loss_mix %[[W:[^,]+]], %[[PW:[^,]+]], %[[NA]], %[[NB]] {first = 1 : i64}
// CHECK: %[[SEED:.+]] = linalg.fill
// CHECK-DAG: %[[GA:.+]] = txl.loss_mix %[[W]], %[[PW]], %[[SEED]] {first = 1 : i64}
// CHECK-DAG: %[[GB:.+]] = txl.loss_mix %[[W]], %[[PW]], %[[SEED]] {first = 2 : i64}
// CHECK-DAG: txl.nll_grad %[[GA]], %[[LA]], %[[T]]
// CHECK-DAG: txl.nll_grad %[[GB]], %[[LB]], %[[T]]
func.func @segment(%a: tensor<?x?x5xf32> {txl.param = "a"}, %b: tensor<?x?x5xf32> {txl.param = "b"},
                   %t: tensor<?x?xi64>, %w: tensor<3xf32>, %pw: tensor<?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %na = txl.nll %a, %t : tensor<?x?x5xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  %nb = txl.nll %b, %t : tensor<?x?x5xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  %mix = txl.loss_mix %w, %pw, %na, %nb {first = 1} : tensor<3xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %part = txl.loss_mix %w, %pw, %na : tensor<3xf32>, tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %sg = txl.stop_gradient %part : tensor<?x?xf32>
  return %mix, %sg : tensor<?x?xf32>, tensor<?x?xf32>
}
