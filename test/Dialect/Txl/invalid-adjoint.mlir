// RUN: txl-opt %s --split-input-file --verify-diagnostics

// One case per verifier message of the backward and optimizer ops
// (TxlAdjointOps.cpp).

func.func @linear_input_grad_rank(%dy: tensor<?x?x8xf32>, %w: tensor<8x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'txl.linear_input_grad' op d_result and d_input must have the same rank and leading dimensions}}
  %dx = txl.linear_input_grad %dy, %w : tensor<?x?x8xf32>, tensor<8x4xf32> -> tensor<?x4xf32>
  return %dx : tensor<?x4xf32>
}

// -----

func.func @linear_input_grad_weight(%dy: tensor<?x8xf32>, %w: tensor<4x8xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'txl.linear_input_grad' op weight must be [d_result features, d_input features]}}
  %dx = txl.linear_input_grad %dy, %w : tensor<?x8xf32>, tensor<4x8xf32> -> tensor<?x4xf32>
  return %dx : tensor<?x4xf32>
}

// -----

func.func @linear_weight_grad_rows(%dy: tensor<3x8xf32>, %x: tensor<5x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'txl.linear_weight_grad' op d_result and input must have the same rank and leading dimensions}}
  %dw = txl.linear_weight_grad %dy, %x : tensor<3x8xf32>, tensor<5x4xf32> -> tensor<8x4xf32>
  return %dw : tensor<8x4xf32>
}

// -----

func.func @linear_weight_grad_shape(%dy: tensor<?x8xf32>, %x: tensor<?x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'txl.linear_weight_grad' op d_weight must be [d_result features, input features]}}
  %dw = txl.linear_weight_grad %dy, %x : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<4x8xf32>
  return %dw : tensor<4x8xf32>
}

// -----

func.func @sum_leading_rank(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'txl.sum_leading' op result rank must be at least 1 and below the input rank}}
  %s = txl.sum_leading %x : tensor<?x8xf32> -> tensor<?x8xf32>
  return %s : tensor<?x8xf32>
}

// -----

func.func @sum_leading_trailing(%x: tensor<?x?x2x8xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'txl.sum_leading' op result dimensions must match the trailing input dimensions}}
  %s = txl.sum_leading %x : tensor<?x?x2x8xf32> -> tensor<2x4xf32>
  return %s : tensor<2x4xf32>
}

// -----

func.func @layer_norm_grad_dynamic(%dy: tensor<?x?xf32>, %x: tensor<?x?xf32>, %w: tensor<8xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'txl.layer_norm_grad' op the normalized (last) dimension must be static}}
  %dx, %dw, %db = txl.layer_norm_grad %dy, %x, %w {epsilon = 1.0e-05 : f32} : tensor<?x?xf32>, tensor<8xf32>
  return %dx : tensor<?x?xf32>
}

// -----

func.func @layer_norm_grad_weight(%dy: tensor<?x8xf32>, %x: tensor<?x8xf32>, %w: tensor<4xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'txl.layer_norm_grad' op weight must have the size of the last input dimension}}
  %dx, %dw, %db = txl.layer_norm_grad %dy, %x, %w {epsilon = 1.0e-05 : f32} : tensor<?x8xf32>, tensor<4xf32>
  return %dx : tensor<?x8xf32>
}

// -----

func.func @layer_norm_grad_epsilon(%dy: tensor<?x8xf32>, %x: tensor<?x8xf32>, %w: tensor<8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'txl.layer_norm_grad' op epsilon must be positive}}
  %dx, %dw, %db = txl.layer_norm_grad %dy, %x, %w {epsilon = 0.0 : f32} : tensor<?x8xf32>, tensor<8xf32>
  return %dx : tensor<?x8xf32>
}

// -----

func.func @embedding_grad_tokens(%dy: tensor<4x3x8xf32>, %t: tensor<5x3xi64>) -> tensor<10x8xf32> {
  // expected-error @+1 {{'txl.embedding_grad' op d_result dimensions 0 and 1 must match the tokens}}
  %d = txl.embedding_grad %dy, %t : tensor<4x3x8xf32>, tensor<5x3xi64> -> tensor<10x8xf32>
  return %d : tensor<10x8xf32>
}

// -----

func.func @embedding_grad_rows(%dy: tensor<?x?x8xf32>, %t: tensor<?x?xi64>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'txl.embedding_grad' op d_table must have a static number of rows (n_token)}}
  %d = txl.embedding_grad %dy, %t : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x8xf32>
  return %d : tensor<?x8xf32>
}

// -----

func.func @embedding_grad_width(%dy: tensor<?x?x8xf32>, %t: tensor<?x?xi64>) -> tensor<10x4xf32> {
  // expected-error @+1 {{'txl.embedding_grad' op d_table columns must be the embedding size 8}}
  %d = txl.embedding_grad %dy, %t : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<10x4xf32>
  return %d : tensor<10x4xf32>
}

// -----

func.func @embedding_grad_init(%dy: tensor<?x?x8xf32>, %t: tensor<?x?xi64>, %g: tensor<20x8xf32>) -> tensor<10x8xf32> {
  // expected-error @+1 {{'txl.embedding_grad' op failed to verify that init has the type of d_table}}
  %d = "txl.embedding_grad"(%dy, %t, %g) : (tensor<?x?x8xf32>, tensor<?x?xi64>, tensor<20x8xf32>) -> tensor<10x8xf32>
  return %d : tensor<10x8xf32>
}

// -----

func.func @adaptive_embedding_grad_count(%dy: tensor<?x?x4xf32>, %t: tensor<?x?xi64>, %t0: tensor<3x4xf32>, %p0: tensor<4x4xf32>) {
  // expected-error @+1 {{'txl.adaptive_embedding_grad' op needs one table and one projection per cluster (2)}}
  %g:2 = txl.adaptive_embedding_grad %dy, %t tables(%t0 : tensor<3x4xf32>) projs(%p0 : tensor<4x4xf32>)
      {cutoff_ends = array<i64: 0, 3, 8>} : tensor<?x?x4xf32>, tensor<?x?xi64>
  return
}

// -----

func.func @adaptive_embedding_grad_shape(%dy: tensor<?x?x4xf32>, %t: tensor<?x?xi64>, %t0: tensor<3x4xf32>, %t1: tensor<4x2xf32>,
                                         %p0: tensor<4x4xf32>, %p1: tensor<4x2xf32>) {
  // expected-error @+1 {{'txl.adaptive_embedding_grad' op cluster 1: table must be [5, d_i] and projection [4, d_i]}}
  %g:4 = txl.adaptive_embedding_grad %dy, %t tables(%t0, %t1 : tensor<3x4xf32>, tensor<4x2xf32>)
      projs(%p0, %p1 : tensor<4x4xf32>, tensor<4x2xf32>)
      {cutoff_ends = array<i64: 0, 3, 8>} : tensor<?x?x4xf32>, tensor<?x?xi64>
  return
}

// -----

func.func @nll_grad_shape(%dy: tensor<4x3xf32>, %l: tensor<5x3x10xf32>, %t: tensor<5x3xi64>) -> tensor<5x3x10xf32> {
  // expected-error @+1 {{'txl.nll_grad' op d_result, logits and target must agree on [qlen, batch]}}
  %d = txl.nll_grad %dy, %l, %t : tensor<4x3xf32>, tensor<5x3x10xf32>, tensor<5x3xi64>
  return %d : tensor<5x3x10xf32>
}

// -----

func.func @adaptive_nll_grad_ends(%dy: tensor<?x?xf32>, %h: tensor<?x?x4xf32>, %t: tensor<?x?xi64>, %w: tensor<8x4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'txl.adaptive_nll_grad' op cutoff_ends needs at least [0, n_token]}}
  %g:3 = txl.adaptive_nll_grad %dy, %h, %t weights(%w : tensor<8x4xf32>) biases(%b : tensor<8xf32>) projs()
      {cutoff_ends = array<i64: 8>} : tensor<?x?xf32>, tensor<?x?x4xf32>, tensor<?x?xi64>
  return
}

// -----

func.func @adaptive_nll_grad_weights(%dy: tensor<?x?xf32>, %h: tensor<?x?x4xf32>, %t: tensor<?x?xi64>, %w: tensor<8x4xf32>,
                                     %b: tensor<8xf32>, %b1: tensor<8xf32>) {
  // expected-error @+1 {{'txl.adaptive_nll_grad' op needs one weight and bias, or one per cluster (1)}}
  %g:4 = txl.adaptive_nll_grad %dy, %h, %t weights(%w : tensor<8x4xf32>) biases(%b, %b1 : tensor<8xf32>, tensor<8xf32>) projs()
      {cutoff_ends = array<i64: 0, 8>} : tensor<?x?xf32>, tensor<?x?x4xf32>, tensor<?x?xi64>
  return
}

// -----

func.func @adaptive_nll_grad_projs(%dy: tensor<?x?xf32>, %h: tensor<?x?x4xf32>, %t: tensor<?x?xi64>, %w: tensor<8x4xf32>,
                                   %b: tensor<8xf32>, %p: tensor<4x4xf32>, %cw: tensor<1x4xf32>, %cb: tensor<1xf32>) {
  // expected-error @+1 {{'txl.adaptive_nll_grad' op needs no projection or one per cluster (2)}}
  %g:6 = txl.adaptive_nll_grad %dy, %h, %t weights(%w : tensor<8x4xf32>) biases(%b : tensor<8xf32>) projs(%p : tensor<4x4xf32>)
      clusters(%cw, %cb : tensor<1x4xf32>, tensor<1xf32>)
      {cutoff_ends = array<i64: 0, 3, 8>} : tensor<?x?xf32>, tensor<?x?x4xf32>, tensor<?x?xi64>
  return
}

// -----

func.func @adaptive_nll_grad_clusters(%dy: tensor<?x?xf32>, %h: tensor<?x?x4xf32>, %t: tensor<?x?xi64>, %w: tensor<8x4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'txl.adaptive_nll_grad' op cluster_weight and cluster_bias are needed iff there are tail clusters}}
  %g:3 = txl.adaptive_nll_grad %dy, %h, %t weights(%w : tensor<8x4xf32>) biases(%b : tensor<8xf32>) projs()
      {cutoff_ends = array<i64: 0, 3, 8>} : tensor<?x?xf32>, tensor<?x?x4xf32>, tensor<?x?xi64>
  return
}

// -----

func.func @adaptive_nll_grad_tokens(%dy: tensor<4x3xf32>, %h: tensor<5x3x4xf32>, %t: tensor<5x3xi64>, %w: tensor<8x4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'txl.adaptive_nll_grad' op d_result, hidden and target must agree on [qlen, batch]}}
  %g:3 = txl.adaptive_nll_grad %dy, %h, %t weights(%w : tensor<8x4xf32>) biases(%b : tensor<8xf32>) projs()
      {cutoff_ends = array<i64: 0, 8>} : tensor<4x3xf32>, tensor<5x3x4xf32>, tensor<5x3xi64>
  return
}

// -----

func.func @rel_attention_grad_dropatt(%q: tensor<?x?x2x4xf32>, %r: tensor<?x2x4xf32>, %u: tensor<2x4xf32>, %m: index, %s: i1, %seed: i64) {
  // expected-error @+1 {{'txl.rel_attention_grad' op dropatt needs its five operands (seed, offset, training, stream_base, column) and the dropatt and dropatt_stream attributes together}}
  %g:6 = txl.rel_attention_grad %q, %q, %q, %q, %r, %u, %u, %m, %s dropatt(%seed, %seed, %s, %seed, %seed)
      {dropatt = 0.2 : f64, scale = 0.5 : f32}
      : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @rel_attention_grad_dropatt_rate(%q: tensor<?x?x2x4xf32>, %r: tensor<?x2x4xf32>, %u: tensor<2x4xf32>, %m: index, %s: i1, %seed: i64) {
  // expected-error @+1 {{'txl.rel_attention_grad' op dropatt must be in [0, 1), got 1.000000e+00}}
  %g:6 = txl.rel_attention_grad %q, %q, %q, %q, %r, %u, %u, %m, %s dropatt(%seed, %seed, %s, %seed, %seed)
      {dropatt = 1.0 : f64, dropatt_stream = 3 : i64, scale = 0.5 : f32}
      : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @rel_attention_grad_saved_half(%q: tensor<?x?x2x4xf32>, %r: tensor<?x2x4xf32>, %u: tensor<2x4xf32>, %m: index, %s: i1,
                                         %lse: tensor<?x2x?xf32>) {
  // The generic form can give lse without the output.
  // expected-error @+1 {{'txl.rel_attention_grad' op lse and output are saved together or not at all}}
  %g:6 = "txl.rel_attention_grad"(%q, %q, %q, %q, %r, %u, %u, %m, %s, %lse)
      <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0>, scale = 0.5 : f32}>
      : (tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, index, i1, tensor<?x2x?xf32>)
      -> (tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @rel_attention_grad_saved_lse(%q: tensor<?x3x2x4xf32>, %r: tensor<?x2x4xf32>, %u: tensor<2x4xf32>, %m: index, %s: i1,
                                        %lse: tensor<2x3x?xf32>) {
  // lse is [batch, n_head, qlen], not [n_head, batch, qlen].
  // expected-error @+1 {{'txl.rel_attention_grad' op lse must be [batch, n_head, qlen] of the query's element type}}
  %g:6 = txl.rel_attention_grad %q, %q, %q, %q, %r, %u, %u, %m, %s saved(%lse, %q : tensor<2x3x?xf32>, tensor<?x3x2x4xf32>)
      {scale = 0.5 : f32}
      : tensor<?x3x2x4xf32>, tensor<?x3x2x4xf32>, tensor<?x3x2x4xf32>, tensor<?x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @rel_attention_grad_saved_output(%q: tensor<?x?x2x4xf32>, %r: tensor<?x2x4xf32>, %u: tensor<2x4xf32>, %m: index, %s: i1,
                                           %lse: tensor<?x2x?xf32>, %o: tensor<?x?x2x5xf32>) {
  // expected-error @+1 {{'txl.rel_attention_grad' op the saved output must have the query type}}
  %g:6 = txl.rel_attention_grad %q, %q, %q, %q, %r, %u, %u, %m, %s saved(%lse, %o : tensor<?x2x?xf32>, tensor<?x?x2x5xf32>)
      {scale = 0.5 : f32}
      : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @rel_attention_grad_heads(%q: tensor<?x?x2x4xf32>, %k: tensor<?x?x3x4xf32>, %v: tensor<?x?x3x4xf32>,
                                    %r: tensor<?x2x4xf32>, %u: tensor<2x4xf32>, %vb: tensor<2x4xf32>, %m: index, %s: i1) {
  // expected-error @+1 {{'txl.rel_attention_grad' op query, key and value must agree on batch, n_head and d_head}}
  %g:6 = txl.rel_attention_grad %q, %q, %k, %v, %r, %u, %vb, %m, %s {scale = 0.5 : f32}
      : tensor<?x?x2x4xf32>, tensor<?x?x3x4xf32>, tensor<?x?x3x4xf32>, tensor<?x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @rel_attention_grad_klen(%q: tensor<?x?x2x4xf32>, %k: tensor<6x?x2x4xf32>, %v: tensor<6x?x2x4xf32>,
                                   %r: tensor<5x2x4xf32>, %u: tensor<2x4xf32>, %vb: tensor<2x4xf32>, %m: index, %s: i1) {
  // expected-error @+1 {{'txl.rel_attention_grad' op key, value and pos_key must have klen rows}}
  %g:6 = txl.rel_attention_grad %q, %q, %k, %v, %r, %u, %vb, %m, %s {scale = 0.5 : f32}
      : tensor<?x?x2x4xf32>, tensor<6x?x2x4xf32>, tensor<6x?x2x4xf32>, tensor<5x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @rel_attention_grad_bias(%q: tensor<?x?x2x4xf32>, %k: tensor<?x?x2x4xf32>, %v: tensor<?x?x2x4xf32>,
                                   %r: tensor<?x2x4xf32>, %u: tensor<4x2xf32>, %vb: tensor<2x4xf32>, %m: index, %s: i1) {
  // expected-error @+1 {{'txl.rel_attention_grad' op pos_key and the biases must be [n_head, d_head] per row}}
  %g:6 = txl.rel_attention_grad %q, %q, %k, %v, %r, %u, %vb, %m, %s {scale = 0.5 : f32}
      : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>, tensor<4x2xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @adam_update_beta(%p: tensor<4xf32>, %lr: f64, %step: i64, %scale: f32) {
  // expected-error @+1 {{'txl.adam_update' op beta2 must be in [0, 1), got 1.000000e+00}}
  %p1, %m1, %v1 = txl.adam_update %p, %p, %p, %p, %lr, %step, %scale
      {beta1 = 0.9 : f64, beta2 = 1.0 : f64, eps = 1.0e-08 : f64} : tensor<4xf32>
  return
}

// -----

func.func @adam_update_eps(%p: tensor<4xf32>, %lr: f64, %step: i64, %scale: f32) {
  // expected-error @+1 {{'txl.adam_update' op eps must be positive}}
  %p1, %m1, %v1 = txl.adam_update %p, %p, %p, %p, %lr, %step, %scale
      {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 0.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @sgd_update_momentum(%p: tensor<4xf32>, %lr: f64, %scale: f32) {
  // expected-error @+1 {{'txl.sgd_update' op momentum must be in [0, 1), got -5.000000e-01}}
  %p1, %b1 = txl.sgd_update %p, %p, %p, %lr, %scale {momentum = -0.5 : f64} : tensor<4xf32>
  return
}

// -----

func.func @adagrad_update_eps(%p: tensor<4xf32>, %lr: f64, %scale: f32) {
  // expected-error @+1 {{'txl.adagrad_update' op eps must be positive}}
  %p1, %s1 = txl.adagrad_update %p, %p, %p, %lr, %scale {eps = -1.0e-10 : f64} : tensor<4xf32>
  return
}

// -----

func.func @attn_score_grad_heads(%ds: tensor<?x?x?x2xf32>, %q: tensor<?x?x2x4xf32>, %k: tensor<?x?x3x4xf32>) {
  // expected-error @+1 {{'txl.attn_score_grad' op query and key must agree on n_head and d_head}}
  %dq, %dk = txl.attn_score_grad %ds, %q, %k : tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>, tensor<?x?x3x4xf32>
  return
}

// -----

func.func @attn_score_grad_batch(%ds: tensor<?x?x?x2xf32>, %q: tensor<?x5x2x4xf32>, %k: tensor<?x6x2x4xf32>) {
  // expected-error @+1 {{'txl.attn_score_grad' op query and key must agree on the batch size}}
  %dq, %dk = txl.attn_score_grad %ds, %q, %k : tensor<?x?x?x2xf32>, tensor<?x5x2x4xf32>, tensor<?x6x2x4xf32>
  return
}

// -----

func.func @attn_score_grad_d_result(%ds: tensor<?x?x?x3xf32>, %q: tensor<?x?x2x4xf32>, %r: tensor<?x2x4xf32>) {
  // expected-error @+1 {{'txl.attn_score_grad' op d_result must be [qlen, klen, batch, n_head]}}
  %dq, %dr = txl.attn_score_grad %ds, %q, %r : tensor<?x?x?x3xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>
  return
}

// -----

func.func @attn_apply_grad_values(%do: tensor<?x?x2x4xf32>, %p: tensor<?x?x?x2xf32>, %v: tensor<?x?x3x4xf32>) {
  // expected-error @+1 {{'txl.attn_apply_grad' op probabilities [qlen, klen, batch, n_head] and values [klen, batch, n_head, d_head] disagree}}
  %dp, %dv = txl.attn_apply_grad %do, %p, %v : tensor<?x?x2x4xf32>, tensor<?x?x?x2xf32>, tensor<?x?x3x4xf32>
  return
}

// -----

func.func @attn_apply_grad_d_result(%do: tensor<?x?x2x8xf32>, %p: tensor<?x?x?x2xf32>, %v: tensor<?x?x2x4xf32>) {
  // expected-error @+1 {{'txl.attn_apply_grad' op d_result must be [qlen, batch, n_head, d_head]}}
  %dp, %dv = txl.attn_apply_grad %do, %p, %v : tensor<?x?x2x8xf32>, tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>
  return
}

// -----

func.func @softmax_grad_types(%dp: tensor<?x?x?x2xf32>, %p: tensor<?x?x?x3xf32>) {
  // expected-error @+1 {{'txl.softmax_grad' op failed to verify that all of {d_result, probs, d_scores} have same type}}
  %ds = "txl.softmax_grad"(%dp, %p) {scale = 0.5 : f32} : (tensor<?x?x?x2xf32>, tensor<?x?x?x3xf32>) -> tensor<?x?x?x2xf32>
  return
}

// -----

func.func @rel_shift_grad_rank(%ds: tensor<?x?x2xf32>) {
  // expected-error @+1 {{'txl.rel_shift_grad' op operand #0 must be 4D tensor}}
  %d = txl.rel_shift_grad %ds : tensor<?x?x2xf32>
  return
}

// -----

func.func @linear_nll_grad_d_result(%g: tensor<?x3xf32>, %h: tensor<?x2x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<?x?xi64>, %lse: tensor<?xf32>, %l: tensor<2x?x512xf32>) {
  // expected-error @+1 {{'txl.linear_nll_grad' op d_result must be the input's [qlen, batch]}}
  %d:3 = txl.linear_nll_grad %g, %h, %w, %t, %lse, %l {block = 512 : i64} : tensor<?x3xf32>, tensor<?x2x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>, tensor<?xf32>, tensor<2x?x512xf32> -> tensor<?x2x32xf32>, tensor<1000x32xf32>, tensor<1000xf32>
  return
}

// -----

func.func @linear_nll_grad_d_input(%g: tensor<?x?xf32>, %h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<?x?xi64>, %lse: tensor<?xf32>, %l: tensor<2x?x512xf32>) {
  // expected-error @+1 {{'txl.linear_nll_grad' op d_input must have the input's type}}
  %d:3 = txl.linear_nll_grad %g, %h, %w, %t, %lse, %l {block = 512 : i64} : tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>, tensor<?xf32>, tensor<2x?x512xf32> -> tensor<?x?x16xf32>, tensor<1000x32xf32>, tensor<1000xf32>
  return
}

// -----

func.func @linear_nll_grad_d_weight(%g: tensor<?x?xf32>, %h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<?x?xi64>, %lse: tensor<?xf32>, %l: tensor<2x?x512xf32>) {
  // expected-error @+1 {{'txl.linear_nll_grad' op d_weight must have the weight's type}}
  %d:3 = txl.linear_nll_grad %g, %h, %w, %t, %lse, %l {block = 512 : i64} : tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>, tensor<?xf32>, tensor<2x?x512xf32> -> tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<1000xf32>
  return
}

// -----

func.func @linear_nll_grad_d_bias(%g: tensor<?x?xf32>, %h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<?x?xi64>, %lse: tensor<?xf32>, %l: tensor<2x?x512xf32>) {
  // expected-error @+1 {{'txl.linear_nll_grad' op d_bias must be [n_token]}}
  %d:3 = txl.linear_nll_grad %g, %h, %w, %t, %lse, %l {block = 512 : i64} : tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>, tensor<?xf32>, tensor<2x?x512xf32> -> tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<999xf32>
  return
}

// -----

func.func @linear_nll_grad_logits(%g: tensor<?x?xf32>, %h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<?x?xi64>, %lse: tensor<?xf32>, %l: tensor<2x?x256xf32>) {
  // expected-error @+1 {{'txl.linear_nll_grad' op logits must be [ceil(n_token / block), rows, block] and lse [rows]}}
  %d:3 = txl.linear_nll_grad %g, %h, %w, %t, %lse, %l {block = 512 : i64} : tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>, tensor<?xf32>, tensor<2x?x256xf32> -> tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<1000xf32>
  return
}
