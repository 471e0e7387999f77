// RUN: txl-opt %s --split-input-file --txl-fuse-rel-attention | FileCheck %s

// The four-term score exactly as the frontend emits it,
// ((q·k + u·k) + rel_shift(q·r + v·r)) -> masked_softmax -> attn_apply,
// becomes one txl.rel_attention(q, k, value, r, u, v, mem_len, same_length);
// every intermediate score, the broadcasts and the shift disappear.
// CHECK-LABEL: func.func @fuse_frontend_order
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x2x16xf32>, %[[K:[^:]+]]: tensor<?x?x2x16xf32>, %[[VAL:[^:]+]]: tensor<?x?x2x16xf32>, %[[R:[^:]+]]: tensor<?x2x16xf32>, %[[U:[^:]+]]: tensor<2x16xf32>, %[[V:[^:]+]]: tensor<2x16xf32>, %[[ML:[^:]+]]: index, %[[SL:[^:]+]]: i1)
// CHECK-NOT: txl.attn_score
// CHECK-NOT: txl.broadcast_head_bias
// CHECK-NOT: txl.rel_shift
// CHECK-NOT: txl.add
// CHECK-NOT: txl.masked_softmax
// CHECK: %[[O:.+]] = txl.rel_attention %[[Q]], %[[K]], %[[VAL]], %[[R]], %[[U]], %[[V]], %[[ML]], %[[SL]] {scale = 2.500000e-01 : f32}
// CHECK-SAME: -> tensor<?x?x2x16xf32>
// CHECK-NOT: txl.attn_apply
// CHECK: return %[[O]]
func.func @fuse_frontend_order(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %val: tensor<?x?x2x16xf32>,
                               %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %v: tensor<2x16xf32>,
                               %mem_len: index, %same_length: i1) -> tensor<?x?x2x16xf32> {
  %a = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %ub = txl.broadcast_head_bias %u, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %c = txl.attn_score %ub, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %b = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %vb = txl.broadcast_head_bias %v, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %d = txl.attn_score %vb, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %bd = txl.add %b, %d : tensor<?x?x?x2xf32>
  %shift = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  %ac = txl.add %a, %c : tensor<?x?x?x2xf32>
  %s = txl.add %ac, %shift : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %p, %val : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// Every add swapped: shift first in the score sum, the biased term first in
// both pairs. u and v still land in the r_w_bias and r_r_bias slots.
// CHECK-LABEL: func.func @fuse_swapped_adds
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x2x16xf32>, %[[K:[^:]+]]: tensor<?x?x2x16xf32>, %[[VAL:[^:]+]]: tensor<?x?x2x16xf32>, %[[R:[^:]+]]: tensor<?x2x16xf32>, %[[U:[^:]+]]: tensor<2x16xf32>, %[[V:[^:]+]]: tensor<2x16xf32>, %[[ML:[^:]+]]: index, %[[SL:[^:]+]]: i1)
// CHECK-NOT: txl.attn_score
// CHECK-NOT: txl.rel_shift
// CHECK: %[[O:.+]] = txl.rel_attention %[[Q]], %[[K]], %[[VAL]], %[[R]], %[[U]], %[[V]], %[[ML]], %[[SL]] {scale = 1.250000e-01 : f32}
// CHECK-NOT: txl.masked_softmax
// CHECK-NOT: txl.attn_apply
// CHECK: return %[[O]]
func.func @fuse_swapped_adds(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %val: tensor<?x?x2x16xf32>,
                             %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %v: tensor<2x16xf32>,
                             %mem_len: index, %same_length: i1) -> tensor<?x?x2x16xf32> {
  %vb = txl.broadcast_head_bias %v, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %d = txl.attn_score %vb, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %b = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %bd = txl.add %d, %b : tensor<?x?x?x2xf32>
  %shift = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  %ub = txl.broadcast_head_bias %u, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %c = txl.attn_score %ub, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %a = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %ac = txl.add %c, %a : tensor<?x?x?x2xf32>
  %s = txl.add %shift, %ac : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.125 : f32} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %p, %val : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// The score sum is matched as a tree: a + (c + shift) fuses as well.
// CHECK-LABEL: func.func @fuse_right_nested_sum
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x2x16xf32>, %[[K:[^:]+]]: tensor<?x?x2x16xf32>, %[[VAL:[^:]+]]: tensor<?x?x2x16xf32>, %[[R:[^:]+]]: tensor<?x2x16xf32>, %[[U:[^:]+]]: tensor<2x16xf32>, %[[V:[^:]+]]: tensor<2x16xf32>, %[[ML:[^:]+]]: index, %[[SL:[^:]+]]: i1)
// CHECK: %[[O:.+]] = txl.rel_attention %[[Q]], %[[K]], %[[VAL]], %[[R]], %[[U]], %[[V]], %[[ML]], %[[SL]]
// CHECK-NOT: txl.add
// CHECK: return %[[O]]
func.func @fuse_right_nested_sum(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %val: tensor<?x?x2x16xf32>,
                                 %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %v: tensor<2x16xf32>,
                                 %mem_len: index, %same_length: i1) -> tensor<?x?x2x16xf32> {
  %a = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %ub = txl.broadcast_head_bias %u, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %c = txl.attn_score %ub, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %b = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %vb = txl.broadcast_head_bias %v, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %d = txl.attn_score %vb, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %bd = txl.add %b, %d : tensor<?x?x?x2xf32>
  %shift = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  %cs = txl.add %c, %shift : tensor<?x?x?x2xf32>
  %s = txl.add %a, %cs : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %p, %val : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// An intermediate score with a second user (here the AC term, also returned)
// must still be computed, so nothing is fused.
// CHECK-LABEL: func.func @no_fuse_score_reused
// CHECK-NOT: txl.rel_attention
// CHECK: %[[A:.+]] = txl.attn_score
// CHECK: txl.rel_shift
// CHECK: txl.masked_softmax
// CHECK: %[[O:.+]] = txl.attn_apply
// CHECK: return %[[O]], %[[A]]
func.func @no_fuse_score_reused(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %val: tensor<?x?x2x16xf32>,
                                %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %v: tensor<2x16xf32>,
                                %mem_len: index, %same_length: i1) -> (tensor<?x?x2x16xf32>, tensor<?x?x?x2xf32>) {
  %a = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %ub = txl.broadcast_head_bias %u, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %c = txl.attn_score %ub, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %b = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %vb = txl.broadcast_head_bias %v, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %d = txl.attn_score %vb, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %bd = txl.add %b, %d : tensor<?x?x?x2xf32>
  %shift = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  %ac = txl.add %a, %c : tensor<?x?x?x2xf32>
  %s = txl.add %ac, %shift : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %p, %val : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o, %a : tensor<?x?x2x16xf32>, tensor<?x?x?x2xf32>
}

// -----

// The unshifted positional sum with a second user is not fused either (the
// fused op has no result for it: its lowering writes (q + v) rᵀ only into a
// padded buffer internal to the op).
// CHECK-LABEL: func.func @no_fuse_shift_input_reused
// CHECK-NOT: txl.rel_attention
// CHECK: %[[BD:.+]] = txl.add
// CHECK: txl.rel_shift %[[BD]]
// CHECK: txl.attn_apply
// CHECK: return %{{.+}}, %[[BD]]
func.func @no_fuse_shift_input_reused(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %val: tensor<?x?x2x16xf32>,
                                      %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %v: tensor<2x16xf32>,
                                      %mem_len: index, %same_length: i1) -> (tensor<?x?x2x16xf32>, tensor<?x?x?x2xf32>) {
  %a = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %ub = txl.broadcast_head_bias %u, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %c = txl.attn_score %ub, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %b = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %vb = txl.broadcast_head_bias %v, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %d = txl.attn_score %vb, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %bd = txl.add %b, %d : tensor<?x?x?x2xf32>
  %shift = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  %ac = txl.add %a, %c : tensor<?x?x?x2xf32>
  %s = txl.add %ac, %shift : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %p, %val : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o, %bd : tensor<?x?x2x16xf32>, tensor<?x?x?x2xf32>
}

// -----

// The content terms use %q, the positional terms another query %q2: not the
// paper's score, not fused.
// CHECK-LABEL: func.func @no_fuse_different_queries
// CHECK-NOT: txl.rel_attention
// CHECK: txl.rel_shift
// CHECK: txl.masked_softmax
// CHECK: txl.attn_apply
func.func @no_fuse_different_queries(%q: tensor<?x?x2x16xf32>, %q2: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>,
                                     %val: tensor<?x?x2x16xf32>, %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>,
                                     %v: tensor<2x16xf32>, %mem_len: index, %same_length: i1) -> tensor<?x?x2x16xf32> {
  %a = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %ub = txl.broadcast_head_bias %u, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %c = txl.attn_score %ub, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %b = txl.attn_score %q2, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %vb = txl.broadcast_head_bias %v, %q2 : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %d = txl.attn_score %vb, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %bd = txl.add %b, %d : tensor<?x?x?x2xf32>
  %shift = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  %ac = txl.add %a, %c : tensor<?x?x?x2xf32>
  %s = txl.add %ac, %shift : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %p, %val : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// The bias of a pair must be broadcast to the pair's own query: u broadcast
// like %q2 but scored next to %q is not q·k + u·k.
// CHECK-LABEL: func.func @no_fuse_bias_of_other_query
// CHECK-NOT: txl.rel_attention
// CHECK: txl.attn_apply
func.func @no_fuse_bias_of_other_query(%q: tensor<?x?x2x16xf32>, %q2: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>,
                                       %val: tensor<?x?x2x16xf32>, %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>,
                                       %v: tensor<2x16xf32>, %mem_len: index, %same_length: i1) -> tensor<?x?x2x16xf32> {
  %a = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %ub = txl.broadcast_head_bias %u, %q2 : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %c = txl.attn_score %ub, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %b = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %vb = txl.broadcast_head_bias %v, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %d = txl.attn_score %vb, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %bd = txl.add %b, %d : tensor<?x?x?x2xf32>
  %shift = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  %ac = txl.add %a, %c : tensor<?x?x?x2xf32>
  %s = txl.add %ac, %shift : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %p, %val : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// Without the u·k term (c) the sum has three leaves but only one content
// term: not fused.
// CHECK-LABEL: func.func @no_fuse_missing_content_bias
// CHECK-NOT: txl.rel_attention
// CHECK: txl.rel_shift
// CHECK: txl.attn_apply
func.func @no_fuse_missing_content_bias(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %val: tensor<?x?x2x16xf32>,
                                        %r: tensor<?x2x16xf32>, %v: tensor<2x16xf32>,
                                        %mem_len: index, %same_length: i1) -> tensor<?x?x2x16xf32> {
  %a = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %b = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %vb = txl.broadcast_head_bias %v, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %d = txl.attn_score %vb, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %bd = txl.add %b, %d : tensor<?x?x?x2xf32>
  %shift = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  %s = txl.add %a, %shift : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %p, %val : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// Without the v·r term (d) the shifted sum is a single score: not fused.
// CHECK-LABEL: func.func @no_fuse_missing_positional_bias
// CHECK-NOT: txl.rel_attention
// CHECK: txl.rel_shift
// CHECK: txl.attn_apply
func.func @no_fuse_missing_positional_bias(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %val: tensor<?x?x2x16xf32>,
                                           %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>,
                                           %mem_len: index, %same_length: i1) -> tensor<?x?x2x16xf32> {
  %a = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %ub = txl.broadcast_head_bias %u, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %c = txl.attn_score %ub, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %b = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %shift = txl.rel_shift %b : tensor<?x?x?x2xf32>
  %ac = txl.add %a, %c : tensor<?x?x?x2xf32>
  %s = txl.add %ac, %shift : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %p, %val : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// The shift is applied to the content terms (against the 4-D key) and the
// positional terms are left unshifted: the rel_shift is of something else, so
// nothing is fused.
// CHECK-LABEL: func.func @no_fuse_shift_of_content
// CHECK-NOT: txl.rel_attention
// CHECK: txl.rel_shift
// CHECK: txl.attn_apply
func.func @no_fuse_shift_of_content(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %val: tensor<?x?x2x16xf32>,
                                    %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %v: tensor<2x16xf32>,
                                    %mem_len: index, %same_length: i1) -> tensor<?x?x2x16xf32> {
  %a = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %ub = txl.broadcast_head_bias %u, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %c = txl.attn_score %ub, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %b = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %vb = txl.broadcast_head_bias %v, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %d = txl.attn_score %vb, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %ac = txl.add %a, %c : tensor<?x?x?x2xf32>
  %shift = txl.rel_shift %ac : tensor<?x?x?x2xf32>
  %bd = txl.add %b, %d : tensor<?x?x?x2xf32>
  %s = txl.add %shift, %bd : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %p, %val : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// A score sum without any rel_shift (plain softmax attention) is left alone.
// CHECK-LABEL: func.func @no_fuse_without_shift
// CHECK-NOT: txl.rel_attention
// CHECK: txl.masked_softmax
// CHECK: txl.attn_apply
func.func @no_fuse_without_shift(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %val: tensor<?x?x2x16xf32>,
                                 %mem_len: index, %same_length: i1) -> tensor<?x?x2x16xf32> {
  %a = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %a, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %p, %val : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// dropatt (a txl.dropout between the softmax and attn_apply, counted by
// batch column in the scores' dimension 2) becomes the fused op's dropatt
// group with the same seed, offset, training, column, rate and stream; the
// stream base it lacks is the constant 0.
// CHECK-LABEL: func.func @fuse_dropatt
// CHECK-SAME: %[[SEED:[^:]+]]: i64, %[[OFF:[^:]+]]: i64, %[[TR:[^:]+]]: i1, %[[COL:[^:]+]]: i64)
// CHECK: %[[ZERO:.+]] = arith.constant 0 : i64
// CHECK-NOT: txl.dropout
// CHECK: %[[O:.+]] = txl.rel_attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} dropatt(%[[SEED]], %[[OFF]], %[[TR]], %[[ZERO]], %[[COL]]) {dropatt = 2.000000e-01 : f64, dropatt_stream = 3 : i64, scale = 2.500000e-01 : f32}
// CHECK-NOT: txl.attn_apply
// CHECK: return %[[O]]
func.func @fuse_dropatt(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %val: tensor<?x?x2x16xf32>,
                        %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %v: tensor<2x16xf32>,
                        %mem_len: index, %same_length: i1,
                        %seed: i64, %offset: i64, %training: i1, %col: i64) -> tensor<?x?x2x16xf32> {
  %a = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %ub = txl.broadcast_head_bias %u, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %c = txl.attn_score %ub, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %b = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %vb = txl.broadcast_head_bias %v, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %d = txl.attn_score %vb, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %bd = txl.add %b, %d : tensor<?x?x?x2xf32>
  %shift = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  %ac = txl.add %a, %c : tensor<?x?x?x2xf32>
  %s = txl.add %ac, %shift : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  %pd = txl.dropout %p, %seed, %offset, %training column %col {batch_dim = 2 : i64, rate = 0.2 : f64, stream = 3 : i64} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %pd, %val : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// With a stream base (inside @decoder_layer) it is passed through; dropped
// probabilities with another user keep the decomposed form, and so do
// probabilities dropped without a batch column (row-major over the tensor)
// or with another batch dimension: the fused op's masks would differ.
// CHECK-LABEL: func.func @fuse_dropatt_base
// CHECK: txl.rel_attention {{.+}} dropatt(%{{.+}}, %{{.+}}, %{{.+}}, %arg11, %arg12)
// CHECK-LABEL: func.func @dropatt_other_user
// CHECK-NOT: txl.rel_attention
// CHECK: txl.dropout
// CHECK: txl.attn_apply
// CHECK-LABEL: func.func @dropatt_no_column
// CHECK-NOT: txl.rel_attention
// CHECK: txl.dropout
// CHECK: txl.attn_apply
// CHECK-LABEL: func.func @dropatt_other_batch_dim
// CHECK-NOT: txl.rel_attention
// CHECK: txl.dropout
// CHECK: txl.attn_apply
func.func @fuse_dropatt_base(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %val: tensor<?x?x2x16xf32>,
                             %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %v: tensor<2x16xf32>,
                             %mem_len: index, %same_length: i1,
                             %seed: i64, %offset: i64, %training: i1, %base: i64, %col: i64) -> tensor<?x?x2x16xf32> {
  %a = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %ub = txl.broadcast_head_bias %u, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %c = txl.attn_score %ub, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %b = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %vb = txl.broadcast_head_bias %v, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %d = txl.attn_score %vb, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %bd = txl.add %b, %d : tensor<?x?x?x2xf32>
  %shift = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  %ac = txl.add %a, %c : tensor<?x?x?x2xf32>
  %s = txl.add %ac, %shift : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  %pd = txl.dropout %p, %seed, %offset, %training stream_base %base column %col {batch_dim = 2 : i64, rate = 0.2 : f64, stream = 3 : i64} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %pd, %val : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

func.func @dropatt_other_user(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %val: tensor<?x?x2x16xf32>,
                              %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %v: tensor<2x16xf32>,
                              %mem_len: index, %same_length: i1,
                              %seed: i64, %offset: i64, %training: i1, %col: i64) -> (tensor<?x?x2x16xf32>, tensor<?x?x?x2xf32>) {
  %a = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %ub = txl.broadcast_head_bias %u, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %c = txl.attn_score %ub, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %b = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %vb = txl.broadcast_head_bias %v, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %d = txl.attn_score %vb, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %bd = txl.add %b, %d : tensor<?x?x?x2xf32>
  %shift = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  %ac = txl.add %a, %c : tensor<?x?x?x2xf32>
  %s = txl.add %ac, %shift : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  %pd = txl.dropout %p, %seed, %offset, %training column %col {batch_dim = 2 : i64, rate = 0.2 : f64, stream = 3 : i64} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %pd, %val : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o, %pd : tensor<?x?x2x16xf32>, tensor<?x?x?x2xf32>
}

func.func @dropatt_no_column(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %val: tensor<?x?x2x16xf32>,
    %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %v: tensor<2x16xf32>,
    %mem_len: index, %same_length: i1,
    %seed: i64, %offset: i64, %training: i1, %col: i64) -> tensor<?x?x2x16xf32> {
  %a = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %ub = txl.broadcast_head_bias %u, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %c = txl.attn_score %ub, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %b = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %vb = txl.broadcast_head_bias %v, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %d = txl.attn_score %vb, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %bd = txl.add %b, %d : tensor<?x?x?x2xf32>
  %shift = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  %ac = txl.add %a, %c : tensor<?x?x?x2xf32>
  %s = txl.add %ac, %shift : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  %pd = txl.dropout %p, %seed, %offset, %training {rate = 0.2 : f64, stream = 3 : i64} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %pd, %val : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

func.func @dropatt_other_batch_dim(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %val: tensor<?x?x2x16xf32>,
    %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %v: tensor<2x16xf32>,
    %mem_len: index, %same_length: i1,
    %seed: i64, %offset: i64, %training: i1, %col: i64) -> tensor<?x?x2x16xf32> {
  %a = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %ub = txl.broadcast_head_bias %u, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %c = txl.attn_score %ub, %k : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x?x2xf32>
  %b = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %vb = txl.broadcast_head_bias %v, %q : tensor<2x16xf32>, tensor<?x?x2x16xf32>
  %d = txl.attn_score %vb, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  %bd = txl.add %b, %d : tensor<?x?x?x2xf32>
  %shift = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  %ac = txl.add %a, %c : tensor<?x?x?x2xf32>
  %s = txl.add %ac, %shift : tensor<?x?x?x2xf32>
  %p = txl.masked_softmax %s, %mem_len, %same_length {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
  %pd = txl.dropout %p, %seed, %offset, %training column %col {batch_dim = 1 : i64, rate = 0.2 : f64, stream = 3 : i64} : tensor<?x?x?x2xf32>
  %o = txl.attn_apply %pd, %val : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

