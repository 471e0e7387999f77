// RUN: txl-opt %s | txl-opt | FileCheck %s
// RUN: txl-opt %s --mlir-print-op-generic | txl-opt | FileCheck %s

// Every txl op parses and prints back in its custom form; the dynamic
// dimensions (qlen, mlen, klen, batch) stay `?` and the static model sizes stay
// static.

// The embedding gathers [qlen, batch] token ids into [qlen, batch, d_embed].
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[TABLE:[^:]+]]: tensor<50x32xf32>, %[[TOK:[^:]+]]: tensor<?x?xi64>)
// CHECK: %[[E:.+]] = txl.embedding %[[TABLE]], %[[TOK]] : tensor<50x32xf32>, tensor<?x?xi64> -> tensor<?x?x32xf32>
// CHECK: return %[[E]]
func.func @embedding(%table: tensor<50x32xf32>, %tokens: tensor<?x?xi64>) -> tensor<?x?x32xf32> {
  %e = txl.embedding %table, %tokens : tensor<50x32xf32>, tensor<?x?xi64> -> tensor<?x?x32xf32>
  return %e : tensor<?x?x32xf32>
}

// txl.linear with a bias (the feed-forward) and without (qkv_net, r_net), on
// 3-D and 2-D inputs.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf32>, %[[W:[^:]+]]: tensor<64x32xf32>, %[[B:[^:]+]]: tensor<64xf32>, %[[R:[^:]+]]: tensor<?x32xf32>)
// CHECK: %[[Y:.+]] = txl.linear %[[X]], %[[W]], %[[B]] : tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
// CHECK: %[[Z:.+]] = txl.linear %[[X]], %[[W]] : tensor<?x?x32xf32>, tensor<64x32xf32> -> tensor<?x?x64xf32>
// CHECK: %[[P:.+]] = txl.linear %[[R]], %[[W]] : tensor<?x32xf32>, tensor<64x32xf32> -> tensor<?x64xf32>
// CHECK: return %[[Y]], %[[Z]], %[[P]]
func.func @linear(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>, %r: tensor<?x32xf32>)
    -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x64xf32>) {
  %y = txl.linear %x, %w, %b : tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  %z = txl.linear %x, %w : tensor<?x?x32xf32>, tensor<64x32xf32> -> tensor<?x?x64xf32>
  %p = txl.linear %r, %w : tensor<?x32xf32>, tensor<64x32xf32> -> tensor<?x64xf32>
  return %y, %z, %p : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x64xf32>
}

// layer_norm keeps its epsilon attribute.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf32>, %[[G:[^:]+]]: tensor<32xf32>, %[[B:[^:]+]]: tensor<32xf32>)
// CHECK: %[[Y:.+]] = txl.layer_norm %[[X]], %[[G]], %[[B]] {epsilon = 9.99999974E-6 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
// CHECK: return %[[Y]]
func.func @layer_norm(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %y = txl.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}

// The elementwise ops: add (on 3-D hidden states and 4-D scores), scale with
// its factor, relu.
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf32>, %[[Y:[^:]+]]: tensor<?x?x32xf32>, %[[S:[^:]+]]: tensor<?x?x?x2xf32>)
// CHECK: %[[A:.+]] = txl.add %[[X]], %[[Y]] : tensor<?x?x32xf32>
// CHECK: %[[SS:.+]] = txl.add %[[S]], %[[S]] : tensor<?x?x?x2xf32>
// CHECK: %[[M:.+]] = txl.scale %[[A]] {factor = 5.65685415 : f32} : tensor<?x?x32xf32>
// CHECK: %[[R:.+]] = txl.relu %[[M]] : tensor<?x?x32xf32>
// CHECK: return %[[R]], %[[SS]]
func.func @elementwise(%x: tensor<?x?x32xf32>, %y: tensor<?x?x32xf32>, %s: tensor<?x?x?x2xf32>)
    -> (tensor<?x?x32xf32>, tensor<?x?x?x2xf32>) {
  %a = txl.add %x, %y : tensor<?x?x32xf32>
  %ss = txl.add %s, %s : tensor<?x?x?x2xf32>
  %m = txl.scale %a {factor = 5.65685415 : f32} : tensor<?x?x32xf32>
  %r = txl.relu %m : tensor<?x?x32xf32>
  return %r, %ss : tensor<?x?x32xf32>, tensor<?x?x?x2xf32>
}

// txl.dropout on hidden states and on 4-D probabilities, with and without a
// stream base (the decoder layer's) and a batch column; rate, stream and
// batch_dim are kept exactly.
// CHECK-LABEL: func.func @dropout
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x32xf32>, %[[P:[^:]+]]: tensor<?x?x?x2xf64>, %[[SEED:[^:]+]]: i64, %[[OFF:[^:]+]]: i64, %[[TR:[^:]+]]: i1, %[[BASE:[^:]+]]: i64, %[[COL:[^:]+]]: i64)
// CHECK: %[[Y:.+]] = txl.dropout %[[X]], %[[SEED]], %[[OFF]], %[[TR]] {rate = 1.000000e-01 : f64, stream = 0 : i64} : tensor<?x?x32xf32>
// CHECK: %[[Q:.+]] = txl.dropout %[[P]], %[[SEED]], %[[OFF]], %[[TR]] stream_base %[[BASE]] {rate = 2.500000e-01 : f64, stream = 3 : i64} : tensor<?x?x?x2xf64>
// CHECK: %[[Z:.+]] = txl.dropout %[[X]], %[[SEED]], %[[OFF]], %[[TR]] column %[[COL]] {batch_dim = 1 : i64, rate = 1.000000e-01 : f64, stream = 0 : i64} : tensor<?x?x32xf32>
// CHECK: %[[W:.+]] = txl.dropout %[[P]], %[[SEED]], %[[OFF]], %[[TR]] stream_base %[[BASE]] column %[[COL]] {batch_dim = 2 : i64, rate = 2.500000e-01 : f64, stream = 3 : i64} : tensor<?x?x?x2xf64>
// CHECK: return %[[Y]], %[[Q]], %[[Z]], %[[W]]
func.func @dropout(%x: tensor<?x?x32xf32>, %p: tensor<?x?x?x2xf64>, %seed: i64, %offset: i64, %training: i1, %base: i64,
                   %col: i64)
    -> (tensor<?x?x32xf32>, tensor<?x?x?x2xf64>, tensor<?x?x32xf32>, tensor<?x?x?x2xf64>) {
  %y = txl.dropout %x, %seed, %offset, %training {rate = 0.1 : f64, stream = 0 : i64} : tensor<?x?x32xf32>
  %q = txl.dropout %p, %seed, %offset, %training stream_base %base {rate = 0.25 : f64, stream = 3 : i64} : tensor<?x?x?x2xf64>
  %z = txl.dropout %x, %seed, %offset, %training column %col {batch_dim = 1 : i64, rate = 0.1 : f64, stream = 0 : i64} : tensor<?x?x32xf32>
  %w = txl.dropout %p, %seed, %offset, %training stream_base %base column %col {batch_dim = 2 : i64, rate = 0.25 : f64, stream = 3 : i64} : tensor<?x?x?x2xf64>
  return %y, %q, %z, %w : tensor<?x?x32xf32>, tensor<?x?x?x2xf64>, tensor<?x?x32xf32>, tensor<?x?x?x2xf64>
}

// A static tensor of exactly 2^34 elements is the largest whose dropout masks
// are distinct (invalid.mlir: one more row is rejected).
// CHECK-LABEL: func.func @dropout_largest
// CHECK: txl.dropout %{{.+}} : tensor<131072x131072xf32>
func.func @dropout_largest(%x: tensor<131072x131072xf32>, %seed: i64, %offset: i64, %training: i1)
    -> tensor<131072x131072xf32> {
  %y = txl.dropout %x, %seed, %offset, %training {rate = 0.1 : f64, stream = 0 : i64} : tensor<131072x131072xf32>
  return %y : tensor<131072x131072xf32>
}

// The segment-memory ops: concat_mem, take_last with a run-time count, and
// stop_gradient.
// CHECK-LABEL: func.func @memory
// CHECK-SAME: (%[[MEM:[^:]+]]: tensor<?x?x32xf32>, %[[H:[^:]+]]: tensor<?x?x32xf32>, %[[N:[^:]+]]: index)
// CHECK: %[[CAT:.+]] = txl.concat_mem %[[MEM]], %[[H]] : tensor<?x?x32xf32>, tensor<?x?x32xf32> -> tensor<?x?x32xf32>
// CHECK: %[[LAST:.+]] = txl.take_last %[[CAT]], %[[N]] : tensor<?x?x32xf32> -> tensor<?x?x32xf32>
// CHECK: %[[SG:.+]] = txl.stop_gradient %[[LAST]] : tensor<?x?x32xf32>
// CHECK: return %[[SG]]
func.func @memory(%mem: tensor<?x?x32xf32>, %h: tensor<?x?x32xf32>, %n: index) -> tensor<?x?x32xf32> {
  %cat = txl.concat_mem %mem, %h : tensor<?x?x32xf32>, tensor<?x?x32xf32> -> tensor<?x?x32xf32>
  %last = txl.take_last %cat, %n : tensor<?x?x32xf32> -> tensor<?x?x32xf32>
  %sg = txl.stop_gradient %last : tensor<?x?x32xf32>
  return %sg : tensor<?x?x32xf32>
}

// concat_mem with static lengths (8 + 4 = 12 rows).
// CHECK-LABEL: func.func @concat_mem_static
// CHECK: txl.concat_mem %{{.+}}, %{{.+}} : tensor<8x3x32xf32>, tensor<4x3x32xf32> -> tensor<12x3x32xf32>
func.func @concat_mem_static(%mem: tensor<8x3x32xf32>, %h: tensor<4x3x32xf32>) -> tensor<12x3x32xf32> {
  %cat = txl.concat_mem %mem, %h : tensor<8x3x32xf32>, tensor<4x3x32xf32> -> tensor<12x3x32xf32>
  return %cat : tensor<12x3x32xf32>
}

// The sinusoid position embedding takes inv_freq, klen (index) and clamp_len (i64).
// CHECK-LABEL: func.func @pos_emb
// CHECK-SAME: (%[[F:[^:]+]]: tensor<16xf32>, %[[K:[^:]+]]: index, %[[C:[^:]+]]: i64)
// CHECK: %[[R:.+]] = txl.pos_emb %[[F]], %[[K]], %[[C]] : tensor<16xf32> -> tensor<?x32xf32>
// CHECK: return %[[R]]
func.func @pos_emb(%inv_freq: tensor<16xf32>, %klen: index, %clamp: i64) -> tensor<?x32xf32> {
  %r = txl.pos_emb %inv_freq, %klen, %clamp : tensor<16xf32> -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}

// The four-term attention: broadcast_head_bias, attn_score against a 4-D key
// and a 3-D positional key, rel_shift, masked_softmax and attn_apply.
// CHECK-LABEL: func.func @four_term_attention
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x2x16xf32>, %[[K:[^:]+]]: tensor<?x?x2x16xf32>, %[[V:[^:]+]]: tensor<?x?x2x16xf32>, %[[R:[^:]+]]: tensor<?x2x16xf32>, %[[U:[^:]+]]: tensor<2x16xf32>, %[[ML:[^:]+]]: index, %[[SL:[^:]+]]: i1)
// CHECK: %[[UB:.+]] = txl.broadcast_head_bias %[[U]], %[[Q]] : tensor<2x16xf32>, tensor<?x?x2x16xf32>
// CHECK: %[[AC:.+]] = txl.attn_score %[[UB]], %[[K]] : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
// CHECK: %[[BD:.+]] = txl.attn_score %[[Q]], %[[R]] : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
// CHECK: %[[SH:.+]] = txl.rel_shift %[[BD]] : tensor<?x?x?x2xf32>
// CHECK: %[[S:.+]] = txl.add %[[AC]], %[[SH]] : tensor<?x?x?x2xf32>
// CHECK: %[[P:.+]] = txl.masked_softmax %[[S]], %[[ML]], %[[SL]] {scale = 2.500000e-01 : f32} : tensor<?x?x?x2xf32>
// CHECK: %[[O:.+]] = txl.attn_apply %[[P]], %[[V]] : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
// CHECK: return %[[O]]
func.func @four_term_attention(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x16xf32>,
                               %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %mem_len: index,
                               %same_length: i1) -> tensor<?x?x2x16xf32> {
  %ub = txl.broadcast_head_bias %u, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %ac = txl.attn_score %ub, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %bd = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %sh = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  %s = txl.add %ac, %sh : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %p, %v : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// The fused rel_attention with all eight operands in order.
// CHECK-LABEL: func.func @rel_attention
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x2x16xf32>, %[[K:[^:]+]]: tensor<?x?x2x16xf32>, %[[V:[^:]+]]: tensor<?x?x2x16xf32>, %[[R:[^:]+]]: tensor<?x2x16xf32>, %[[U:[^:]+]]: tensor<2x16xf32>, %[[VB:[^:]+]]: tensor<2x16xf32>, %[[ML:[^:]+]]: index, %[[SL:[^:]+]]: i1)
// CHECK: %[[O:.+]] = txl.rel_attention %[[Q]], %[[K]], %[[V]], %[[R]], %[[U]], %[[VB]], %[[ML]], %[[SL]] {scale = 2.500000e-01 : f32}
// CHECK-SAME: : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
// CHECK: return %[[O]]
func.func @rel_attention(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x16xf32>,
                         %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                         %mem_len: index, %same_length: i1) -> tensor<?x?x2x16xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same_length {scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// The fused rel_attention with dropatt: the group of five scalars and the
// rate and stream attributes.
// CHECK-LABEL: func.func @rel_attention_dropatt
// CHECK-SAME: %[[SEED:[^:]+]]: i64, %[[OFF:[^:]+]]: i64, %[[TR:[^:]+]]: i1, %[[BASE:[^:]+]]: i64, %[[COL:[^:]+]]: i64)
// CHECK: txl.rel_attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} dropatt(%[[SEED]], %[[OFF]], %[[TR]], %[[BASE]], %[[COL]]) {dropatt = 1.000000e-01 : f64, dropatt_stream = 7 : i64, scale = 2.500000e-01 : f32}
func.func @rel_attention_dropatt(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x16xf32>,
                                 %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                                 %mem_len: index, %same_length: i1,
                                 %seed: i64, %offset: i64, %training: i1, %base: i64, %col: i64) -> tensor<?x?x2x16xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same_length dropatt(%seed, %offset, %training, %base, %col)
      {dropatt = 0.1 : f64, dropatt_stream = 7 : i64, scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// The fused rel_attention with its lse result, [batch, n_head, qlen].
// CHECK-LABEL: func.func @rel_attention_lse
// CHECK: %{{.+}}, %[[LSE:.+]] = txl.rel_attention
// CHECK-SAME: -> tensor<?x3x2x16xf32>, tensor<3x2x?xf32>
// CHECK: return %[[LSE]]
func.func @rel_attention_lse(%q: tensor<?x3x2x16xf32>, %k: tensor<?x3x2x16xf32>, %v: tensor<?x3x2x16xf32>,
                             %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                             %mem_len: index, %same_length: i1) -> tensor<3x2x?xf32> {
  %o, %lse = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same_length {scale = 0.25 : f32}
      : tensor<?x3x2x16xf32>, tensor<?x3x2x16xf32>, tensor<?x3x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x3x2x16xf32>, tensor<3x2x?xf32>
  return %lse : tensor<3x2x?xf32>
}

// The per-token negative log-likelihood.
// CHECK-LABEL: func.func @nll
// CHECK-SAME: (%[[L:[^:]+]]: tensor<?x?x50xf32>, %[[T:[^:]+]]: tensor<?x?xi64>)
// CHECK: %[[N:.+]] = txl.nll %[[L]], %[[T]] : tensor<?x?x50xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
// CHECK: return %[[N]]
func.func @nll(%logits: tensor<?x?x50xf32>, %target: tensor<?x?xi64>) -> tensor<?x?xf32> {
  %n = txl.nll %logits, %target : tensor<?x?x50xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// Fully static shapes round-trip as well.
// CHECK-LABEL: func.func @static_shapes
// CHECK: txl.attn_score %{{.+}}, %{{.+}} : tensor<4x3x2x16xf32>, tensor<12x3x2x16xf32> -> tensor<4x12x3x2xf32>
// CHECK: txl.attn_score %{{.+}}, %{{.+}} : tensor<4x3x2x16xf32>, tensor<12x2x16xf32> -> tensor<4x12x3x2xf32>
func.func @static_shapes(%q: tensor<4x3x2x16xf32>, %k: tensor<12x3x2x16xf32>, %r: tensor<12x2x16xf32>)
    -> (tensor<4x12x3x2xf32>, tensor<4x12x3x2xf32>) {
  %a = txl.attn_score %q, %k : tensor<4x3x2x16xf32>, tensor<12x3x2x16xf32> -> tensor<4x12x3x2xf32>
  %b = txl.attn_score %q, %r : tensor<4x3x2x16xf32>, tensor<12x2x16xf32> -> tensor<4x12x3x2xf32>
  return %a, %b : tensor<4x12x3x2xf32>, tensor<4x12x3x2xf32>
}

// Adaptive input: one table and projection per cluster (div_val != 1).
// CHECK-LABEL: func.func @adaptive_embedding
// CHECK: txl.adaptive_embedding %{{.+}} tables(%{{.+}}, %{{.+}} : tensor<5x8xf32>, tensor<5x4xf32>) projs(%{{.+}}, %{{.+}} : tensor<8x8xf32>, tensor<8x4xf32>) {cutoff_ends = array<i64: 0, 5, 10>} : tensor<?x?xi64> -> tensor<?x?x8xf32>
func.func @adaptive_embedding(%t: tensor<?x?xi64>, %a: tensor<5x8xf32>, %b: tensor<5x4xf32>, %p: tensor<8x8xf32>, %q: tensor<8x4xf32>) -> tensor<?x?x8xf32> {
  %e = txl.adaptive_embedding %t tables(%a, %b : tensor<5x8xf32>, tensor<5x4xf32>) projs(%p, %q : tensor<8x8xf32>, tensor<8x4xf32>) {cutoff_ends = array<i64: 0, 5, 10>} : tensor<?x?xi64> -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}

// Adaptive softmax in its three forms: sliced output layer with projections
// and clusters, one layer per cluster, and a projected head alone.
// CHECK-LABEL: func.func @adaptive_nll
// CHECK: txl.adaptive_nll %{{.+}}, %{{.+}} weights(%{{.+}} : tensor<10x4xf32>) biases(%{{.+}} : tensor<10xf32>) projs(%{{.+}}, %{{.+}} : tensor<8x4xf32>, tensor<8x4xf32>) clusters(%{{.+}}, %{{.+}} : tensor<1x4xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 4, 10>}
// CHECK: txl.adaptive_nll %{{.+}}, %{{.+}} weights(%{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<6x8xf32>) biases(%{{.+}}, %{{.+}} : tensor<4xf32>, tensor<6xf32>) projs() clusters(
// CHECK: txl.adaptive_nll %{{.+}}, %{{.+}} weights(%{{.+}} : tensor<10x4xf32>) biases(%{{.+}} : tensor<10xf32>) projs(%{{.+}} : tensor<8x4xf32>) {cutoff_ends = array<i64: 0, 10>}
func.func @adaptive_nll(%h: tensor<?x?x8xf32>, %t: tensor<?x?xi64>, %w: tensor<10x4xf32>, %b: tensor<10xf32>, %p: tensor<8x4xf32>, %cw: tensor<1x4xf32>, %cb: tensor<1xf32>,
                        %w0: tensor<4x8xf32>, %w1: tensor<6x8xf32>, %b0: tensor<4xf32>, %b1: tensor<6xf32>, %cw8: tensor<1x8xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %0 = txl.adaptive_nll %h, %t weights(%w : tensor<10x4xf32>) biases(%b : tensor<10xf32>) projs(%p, %p : tensor<8x4xf32>, tensor<8x4xf32>) clusters(%cw, %cb : tensor<1x4xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 4, 10>} : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  %1 = txl.adaptive_nll %h, %t weights(%w0, %w1 : tensor<4x8xf32>, tensor<6x8xf32>) biases(%b0, %b1 : tensor<4xf32>, tensor<6xf32>) projs() clusters(%cw8, %cb : tensor<1x8xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 4, 10>} : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  %2 = txl.adaptive_nll %h, %t weights(%w : tensor<10x4xf32>) biases(%b : tensor<10xf32>) projs(%p : tensor<8x4xf32>) {cutoff_ends = array<i64: 0, 10>} : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %0, %1, %2 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}

// CHECK-LABEL: func.func @adaptive_log_softmax
// CHECK: txl.adaptive_log_softmax %{{.+}} weights(%{{.+}} : tensor<10x4xf32>) biases(%{{.+}} : tensor<10xf32>) projs(%{{.+}}, %{{.+}} : tensor<8x4xf32>, tensor<8x4xf32>) clusters(%{{.+}}, %{{.+}} : tensor<1x4xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 4, 10>} : tensor<?x?x8xf32> -> tensor<?x?x10xf32>
// CHECK: txl.adaptive_log_softmax %{{.+}} weights(%{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<6x8xf32>) biases(%{{.+}}, %{{.+}} : tensor<4xf32>, tensor<6xf32>) projs() clusters(
func.func @adaptive_log_softmax(%h: tensor<?x?x8xf32>, %w: tensor<10x4xf32>, %b: tensor<10xf32>, %p: tensor<8x4xf32>, %cw: tensor<1x4xf32>, %cb: tensor<1xf32>,
                                %w0: tensor<4x8xf32>, %w1: tensor<6x8xf32>, %b0: tensor<4xf32>, %b1: tensor<6xf32>, %cw8: tensor<1x8xf32>)
    -> (tensor<?x?x10xf32>, tensor<?x?x10xf32>) {
  %0 = txl.adaptive_log_softmax %h weights(%w : tensor<10x4xf32>) biases(%b : tensor<10xf32>) projs(%p, %p : tensor<8x4xf32>, tensor<8x4xf32>) clusters(%cw, %cb : tensor<1x4xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 4, 10>} : tensor<?x?x8xf32> -> tensor<?x?x10xf32>
  %1 = txl.adaptive_log_softmax %h weights(%w0, %w1 : tensor<4x8xf32>, tensor<6x8xf32>) biases(%b0, %b1 : tensor<4xf32>, tensor<6xf32>) projs() clusters(%cw8, %cb : tensor<1x8xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 4, 10>} : tensor<?x?x8xf32> -> tensor<?x?x10xf32>
  return %0, %1 : tensor<?x?x10xf32>, tensor<?x?x10xf32>
}

// float64 (gradient checks): the same ops on f64 tensors; attributes stay f32.
// CHECK-LABEL: func.func @float64
// CHECK: txl.linear %{{.+}}, %{{.+}}, %{{.+}} : tensor<?x?x32xf64>, tensor<64x32xf64>, tensor<64xf64> -> tensor<?x?x64xf64>
// CHECK: txl.layer_norm %{{.+}}, %{{.+}}, %{{.+}} {epsilon = 9.99999974E-6 : f32} : tensor<?x?x64xf64>, tensor<64xf64>, tensor<64xf64>
// CHECK: txl.masked_softmax %{{.+}}, %{{.+}}, %{{.+}} {scale = 2.500000e-01 : f32} : tensor<?x?x?x2xf64>
func.func @float64(%x: tensor<?x?x32xf64>, %w: tensor<64x32xf64>, %b: tensor<64xf64>, %g: tensor<64xf64>,
                   %s: tensor<?x?x?x2xf64>, %ml: index, %sl: i1) -> (tensor<?x?x64xf64>, tensor<?x?x?x2xf64>) {
  %y = txl.linear %x, %w, %b : tensor<?x?x32xf64>, tensor<64x32xf64>, tensor<64xf64> -> tensor<?x?x64xf64>
  %n = txl.layer_norm %y, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x?x64xf64>, tensor<64xf64>, tensor<64xf64>
  %p = txl.masked_softmax %s, %ml, %sl {scale = 0.25 : f32} : tensor<?x?x?x2xf64>
  return %n, %p : tensor<?x?x64xf64>, tensor<?x?x?x2xf64>
}

// The fused output layer (txl-fuse-linear-nll), with and without a bias.
// CHECK-LABEL: func.func @linear_nll
// CHECK: txl.linear_nll %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>, tensor<1000xf32> -> tensor<?x?xf32>
// CHECK: txl.linear_nll %{{.+}}, %{{.+}}, %{{[^,]+}} : tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
// CHECK: txl.linear_nll_fwd %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {block = 512 : i64} : tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>, tensor<1000xf32> -> tensor<?x?xf32>, tensor<?xf32>, tensor<2x?x512xf32>
// CHECK: return
func.func @linear_nll(%h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<?x?xi64>, %b: tensor<1000xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<2x?x512xf32>) {
  %n = txl.linear_nll %h, %w, %t, %b : tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>, tensor<1000xf32> -> tensor<?x?xf32>
  %m = txl.linear_nll %h, %w, %t : tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  %f:3 = txl.linear_nll_fwd %h, %w, %t, %b {block = 512 : i64}
      : tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>, tensor<1000xf32> -> tensor<?x?xf32>, tensor<?xf32>, tensor<2x?x512xf32>
  return %n, %m, %f#2 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<2x?x512xf32>
}

// CHECK-LABEL: func.func @loss_mix
// CHECK: txl.loss_mix %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<4xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
// CHECK: txl.loss_mix %{{.+}}, %{{.+}}, %{{.+}} {first = 3 : i64} : tensor<4xf32>, tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
func.func @loss_mix(%w: tensor<4xf32>, %pw: tensor<?xf32>, %a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %l = txl.loss_mix %w, %pw, %a, %b : tensor<4xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %m = txl.loss_mix %w, %pw, %b {first = 3} : tensor<4xf32>, tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %l, %m : tensor<?x?xf32>, tensor<?x?xf32>
}

// CHECK-LABEL: func.func @log_softmax
// CHECK: txl.log_softmax %{{.+}} : tensor<?x?x50xf32>
func.func @log_softmax(%x: tensor<?x?x50xf32>) -> tensor<?x?x50xf32> {
  %y = txl.log_softmax %x : tensor<?x?x50xf32>
  return %y : tensor<?x?x50xf32>
}
