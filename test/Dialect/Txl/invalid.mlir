// RUN: txl-opt %s --split-input-file --verify-diagnostics

// One case per verifier message in TxlOps.cpp (static shape parts that
// disagree), then one case per category of type-constraint failure.

//===----------------------------------------------------------------------===//
// txl.embedding
//===----------------------------------------------------------------------===//

// The result keeps the [qlen, batch] of the tokens.
func.func @embedding_result_len(%table: tensor<50x32xf32>, %tokens: tensor<4x3xi64>) -> tensor<5x3x32xf32> {
  // expected-error @+1 {{'txl.embedding' op result dimensions 0 and 1 must match the tokens}}
  %e = txl.embedding %table, %tokens : tensor<50x32xf32>, tensor<4x3xi64> -> tensor<5x3x32xf32>
  return %e : tensor<5x3x32xf32>
}

// -----

// The result's last dimension is d_embed, the table's row size.
func.func @embedding_result_features(%table: tensor<50x32xf32>, %tokens: tensor<?x?xi64>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'txl.embedding' op result dimension 2 must be the embedding size 32}}
  %e = txl.embedding %table, %tokens : tensor<50x32xf32>, tensor<?x?xi64> -> tensor<?x?x16xf32>
  return %e : tensor<?x?x16xf32>
}

//===----------------------------------------------------------------------===//
// txl.linear
//===----------------------------------------------------------------------===//

// -----

// A linear map keeps the rank of its input.
func.func @linear_rank(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'txl.linear' op result rank must equal the input rank}}
  %y = txl.linear %x, %w : tensor<?x?x32xf32>, tensor<64x32xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// The weight is [out, in] (nn.Linear), so its dimension 1 is the input size.
func.func @linear_input_features(%x: tensor<?x?x16xf32>, %w: tensor<64x32xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'txl.linear' op input features (16) must match weight dimension 1 (32)}}
  %y = txl.linear %x, %w : tensor<?x?x16xf32>, tensor<64x32xf32> -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// A weight given as [in, out] (the transpose of nn.Linear's) is rejected on the
// result side.
func.func @linear_result_features(%x: tensor<?x?x32xf32>, %w: tensor<32x32xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'txl.linear' op result features (64) must match weight dimension 0 (32)}}
  %y = txl.linear %x, %w : tensor<?x?x32xf32>, tensor<32x32xf32> -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Static leading dimensions must carry over from input to result.
func.func @linear_leading(%x: tensor<4x3x32xf32>, %w: tensor<64x32xf32>) -> tensor<5x3x64xf32> {
  // expected-error @+1 {{'txl.linear' op leading dimensions of input and result must match}}
  %y = txl.linear %x, %w : tensor<4x3x32xf32>, tensor<64x32xf32> -> tensor<5x3x64xf32>
  return %y : tensor<5x3x64xf32>
}

// -----

// The bias has one entry per output feature.
func.func @linear_bias(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'txl.linear' op bias size must match weight dimension 0}}
  %y = txl.linear %x, %w, %b : tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32xf32> -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

//===----------------------------------------------------------------------===//
// txl.layer_norm
//===----------------------------------------------------------------------===//

// -----

// The affine parameters have d_model entries.
func.func @layer_norm_params(%x: tensor<?x?x32xf32>, %g: tensor<16xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'txl.layer_norm' op weight and bias must have the size of the last input dimension}}
  %y = txl.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x?x32xf32>, tensor<16xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// The bias is checked like the weight.
func.func @layer_norm_bias(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'txl.layer_norm' op weight and bias must have the size of the last input dimension}}
  %y = txl.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<64xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// A zero epsilon would divide by zero on a constant row.
func.func @layer_norm_epsilon(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'txl.layer_norm' op epsilon must be positive}}
  %y = txl.layer_norm %x, %g, %b {epsilon = 0.0 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// A negative epsilon is rejected too.
func.func @layer_norm_negative_epsilon(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'txl.layer_norm' op epsilon must be positive}}
  %y = txl.layer_norm %x, %g, %b {epsilon = -1.0e-05 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}

//===----------------------------------------------------------------------===//
// txl.concat_mem
//===----------------------------------------------------------------------===//

// -----

// Memory and hidden states must share batch and d_model.
func.func @concat_mem_features(%mem: tensor<?x?x16xf32>, %h: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'txl.concat_mem' op memory, hidden and result must agree on batch and feature dimensions}}
  %c = txl.concat_mem %mem, %h : tensor<?x?x16xf32>, tensor<?x?x32xf32> -> tensor<?x?x32xf32>
  return %c : tensor<?x?x32xf32>
}

// -----

// The result's batch is the hidden states' batch.
func.func @concat_mem_result_batch(%mem: tensor<?x3x32xf32>, %h: tensor<?x3x32xf32>) -> tensor<?x4x32xf32> {
  // expected-error @+1 {{'txl.concat_mem' op memory, hidden and result must agree on batch and feature dimensions}}
  %c = txl.concat_mem %mem, %h : tensor<?x3x32xf32>, tensor<?x3x32xf32> -> tensor<?x4x32xf32>
  return %c : tensor<?x4x32xf32>
}

// -----

// With static lengths, klen = mlen + qlen.
func.func @concat_mem_length(%mem: tensor<8x3x32xf32>, %h: tensor<4x3x32xf32>) -> tensor<8x3x32xf32> {
  // expected-error @+1 {{'txl.concat_mem' op result length must be memory length + hidden length}}
  %c = txl.concat_mem %mem, %h : tensor<8x3x32xf32>, tensor<4x3x32xf32> -> tensor<8x3x32xf32>
  return %c : tensor<8x3x32xf32>
}

//===----------------------------------------------------------------------===//
// txl.take_last
//===----------------------------------------------------------------------===//

// -----

// Only rows are dropped.
func.func @take_last_features(%x: tensor<?x?x32xf32>, %n: index) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'txl.take_last' op batch and feature dimensions must be preserved}}
  %m = txl.take_last %x, %n : tensor<?x?x32xf32> -> tensor<?x?x16xf32>
  return %m : tensor<?x?x16xf32>
}

// -----

// The number of rows kept is min(count, len), known only at run time.
func.func @take_last_static_length(%x: tensor<12x3x32xf32>, %n: index) -> tensor<8x3x32xf32> {
  // expected-error @+1 {{'txl.take_last' op result length must be dynamic (it depends on the run-time count)}}
  %m = txl.take_last %x, %n : tensor<12x3x32xf32> -> tensor<8x3x32xf32>
  return %m : tensor<8x3x32xf32>
}

//===----------------------------------------------------------------------===//
// txl.pos_emb
//===----------------------------------------------------------------------===//

// -----

// [sin || cos] doubles the inv_freq size.
func.func @pos_emb_features(%f: tensor<16xf32>, %klen: index, %clamp: i64) -> tensor<?x16xf32> {
  // expected-error @+1 {{'txl.pos_emb' op result features must be twice the inv_freq size}}
  %r = txl.pos_emb %f, %klen, %clamp : tensor<16xf32> -> tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}

//===----------------------------------------------------------------------===//
// txl.broadcast_head_bias
//===----------------------------------------------------------------------===//

// -----

// u and v are [n_head, d_head]; a transposed bias is rejected.
func.func @broadcast_head_bias_shape(%u: tensor<16x2xf32>, %q: tensor<?x?x2x16xf32>) -> tensor<?x?x2x16xf32> {
  // expected-error @+1 {{'txl.broadcast_head_bias' op bias must be [n_head, d_head] of the target}}
  %b = txl.broadcast_head_bias %u, %q : tensor<16x2xf32>, tensor<?x?x2x16xf32>
  return %b : tensor<?x?x2x16xf32>
}

//===----------------------------------------------------------------------===//
// txl.attn_score
//===----------------------------------------------------------------------===//

// -----

// Content keys must have the query's heads and head size.
func.func @attn_score_heads(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x4x16xf32>) -> tensor<?x?x?x2xf32> {
  // expected-error @+1 {{'txl.attn_score' op query and key must agree on n_head and d_head}}
  %s = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x?x4x16xf32> -> tensor<?x?x?x2xf32>
  return %s : tensor<?x?x?x2xf32>
}

// -----

// Positional keys [rlen, n_head, d_head] are checked on their dimensions 1 and 2.
func.func @attn_score_positional_head_size(%q: tensor<?x?x2x16xf32>, %r: tensor<?x2x8xf32>) -> tensor<?x?x?x2xf32> {
  // expected-error @+1 {{'txl.attn_score' op query and key must agree on n_head and d_head}}
  %s = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x8xf32> -> tensor<?x?x?x2xf32>
  return %s : tensor<?x?x?x2xf32>
}

// -----

// Content keys have a batch dimension that must match the query's.
func.func @attn_score_batch(%q: tensor<?x3x2x16xf32>, %k: tensor<?x5x2x16xf32>) -> tensor<?x?x3x2xf32> {
  // expected-error @+1 {{'txl.attn_score' op query and key must agree on the batch size}}
  %s = txl.attn_score %q, %k : tensor<?x3x2x16xf32>, tensor<?x5x2x16xf32> -> tensor<?x?x3x2xf32>
  return %s : tensor<?x?x3x2xf32>
}

// -----

// Scores are [qlen, klen, batch, n_head]; [qlen, klen, n_head, batch] is not.
func.func @attn_score_result(%q: tensor<?x3x2x16xf32>, %k: tensor<?x3x2x16xf32>) -> tensor<?x?x2x3xf32> {
  // expected-error @+1 {{'txl.attn_score' op result must be [qlen, klen, batch, n_head]}}
  %s = txl.attn_score %q, %k : tensor<?x3x2x16xf32>, tensor<?x3x2x16xf32> -> tensor<?x?x2x3xf32>
  return %s : tensor<?x?x2x3xf32>
}

// -----

// With positional keys, the result's klen is the number of positions.
func.func @attn_score_positional_result(%q: tensor<?x?x2x16xf32>, %r: tensor<12x2x16xf32>) -> tensor<?x8x?x2xf32> {
  // expected-error @+1 {{'txl.attn_score' op result must be [qlen, klen, batch, n_head]}}
  %s = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<12x2x16xf32> -> tensor<?x8x?x2xf32>
  return %s : tensor<?x8x?x2xf32>
}

//===----------------------------------------------------------------------===//
// txl.attn_apply
//===----------------------------------------------------------------------===//

// -----

// Probabilities over klen keys need klen values.
func.func @attn_apply_operands(%p: tensor<?x12x?x2xf32>, %v: tensor<8x?x2x16xf32>) -> tensor<?x?x2x16xf32> {
  // expected-error @+1 {{'txl.attn_apply' op probabilities [qlen, klen, batch, n_head] and values [klen, batch, n_head, d_head] disagree}}
  %o = txl.attn_apply %p, %v : tensor<?x12x?x2xf32>, tensor<8x?x2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// The output has the values' head size.
func.func @attn_apply_result(%p: tensor<?x?x?x2xf32>, %v: tensor<?x?x2x16xf32>) -> tensor<?x?x2x8xf32> {
  // expected-error @+1 {{'txl.attn_apply' op result must be [qlen, batch, n_head, d_head]}}
  %o = txl.attn_apply %p, %v : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x8xf32>
  return %o : tensor<?x?x2x8xf32>
}

//===----------------------------------------------------------------------===//
// txl.dropout
//===----------------------------------------------------------------------===//

// -----

// A negative rate is no probability.
func.func @dropout_rate_negative(%x: tensor<?x8xf32>, %seed: i64, %off: i64, %tr: i1) -> tensor<?x8xf32> {
  // expected-error @+1 {{'txl.dropout' op rate must be in [0, 1), got -1.000000e-01}}
  %y = txl.dropout %x, %seed, %off, %tr {rate = -0.1 : f64, stream = 0 : i64} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Rate 1 would drop everything and scale by 1 / 0.
func.func @dropout_rate_one(%x: tensor<?x8xf32>, %seed: i64, %off: i64, %tr: i1) -> tensor<?x8xf32> {
  // expected-error @+1 {{'txl.dropout' op rate must be in [0, 1), got 1.000000e+00}}
  %y = txl.dropout %x, %seed, %off, %tr {rate = 1.0 : f64, stream = 0 : i64} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Past 2^34 elements the masks would repeat (the counter's element word counts
// blocks of 4); round-trip.mlir keeps exactly 2^34.
func.func @dropout_too_many_elements(%x: tensor<131073x131072xf32>, %seed: i64, %off: i64, %tr: i1) -> tensor<131073x131072xf32> {
  // expected-error @+1 {{'txl.dropout' op a tensor of 17180000256 elements is more than the 2^34 whose dropout masks are distinct (the Philox counter's element word counts blocks of 4)}}
  %y = txl.dropout %x, %seed, %off, %tr {rate = 0.1 : f64, stream = 0 : i64} : tensor<131073x131072xf32>
  return %y : tensor<131073x131072xf32>
}

// -----

// The stream is one 32-bit Philox counter word.
func.func @dropout_stream_range(%x: tensor<?x8xf32>, %seed: i64, %off: i64, %tr: i1) -> tensor<?x8xf32> {
  // expected-error @+1 {{'txl.dropout' op stream must be in [0, 2^32) (one Philox counter word), got 4294967296}}
  %y = txl.dropout %x, %seed, %off, %tr {rate = 0.1 : f64, stream = 4294967296 : i64} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @dropout_stream_negative(%x: tensor<?x8xf32>, %seed: i64, %off: i64, %tr: i1) -> tensor<?x8xf32> {
  // expected-error @+1 {{'txl.dropout' op stream must be in [0, 2^32) (one Philox counter word), got -1}}
  %y = txl.dropout %x, %seed, %off, %tr {rate = 0.1 : f64, stream = -1 : i64} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// The result is the input's type.
func.func @dropout_type(%x: tensor<?x8xf32>, %seed: i64, %off: i64, %tr: i1) -> tensor<?x8xf64> {
  // expected-error @+1 {{'txl.dropout' op failed to verify that all of {input, result} have same type}}
  %y = "txl.dropout"(%x, %seed, %off, %tr) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>, rate = 0.1 : f64, stream = 0 : i64}> : (tensor<?x8xf32>, i64, i64, i1) -> tensor<?x8xf64>
  return %y : tensor<?x8xf64>
}

// -----

// A column without the dimension it numbers.
func.func @dropout_column_no_batch_dim(%x: tensor<?x8xf32>, %seed: i64, %off: i64, %tr: i1) -> tensor<?x8xf32> {
  // expected-error @+1 {{'txl.dropout' op column and batch_dim go together}}
  %y = txl.dropout %x, %seed, %off, %tr column %off {rate = 0.1 : f64, stream = 0 : i64} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// A batch dimension without the column it starts from.
func.func @dropout_batch_dim_no_column(%x: tensor<?x8xf32>, %seed: i64, %off: i64, %tr: i1) -> tensor<?x8xf32> {
  // expected-error @+1 {{'txl.dropout' op column and batch_dim go together}}
  %y = txl.dropout %x, %seed, %off, %tr {batch_dim = 0 : i64, rate = 0.1 : f64, stream = 0 : i64} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// The batch dimension must be one of the input's.
func.func @dropout_batch_dim_rank(%x: tensor<?x8xf32>, %seed: i64, %off: i64, %tr: i1) -> tensor<?x8xf32> {
  // expected-error @+1 {{'txl.dropout' op batch_dim 2 is not a dimension of the rank-2 input}}
  %y = txl.dropout %x, %seed, %off, %tr column %off {batch_dim = 2 : i64, rate = 0.1 : f64, stream = 0 : i64} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

//===----------------------------------------------------------------------===//
// txl.rel_attention
//===----------------------------------------------------------------------===//

// -----

// Keys and values come from the same projection and have one type.
func.func @rel_attention_key_value(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x3x2x16xf32>,
                                   %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                                   %ml: index, %sl: i1) -> tensor<?x?x2x16xf32> {
  // expected-error @+1 {{'txl.rel_attention' op key and value must have the same shape}}
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %ml, %sl {scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x3x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// Query and key share batch, n_head and d_head.
func.func @rel_attention_query_key(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x4x16xf32>, %v: tensor<?x?x4x16xf32>,
                                   %r: tensor<?x4x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                                   %ml: index, %sl: i1) -> tensor<?x?x2x16xf32> {
  // expected-error @+1 {{'txl.rel_attention' op query and key must agree on batch, n_head, d_head}}
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %ml, %sl {scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x4x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// lse is [batch, n_head, qlen] of the query's element type.
func.func @rel_attention_lse(%q: tensor<5x3x2x16xf32>, %k: tensor<?x3x2x16xf32>, %v: tensor<?x3x2x16xf32>,
                             %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                             %ml: index, %sl: i1) -> tensor<3x2x4xf32> {
  // expected-error @+1 {{'txl.rel_attention' op lse must be [batch, n_head, qlen] of the query's element type}}
  %o, %lse = txl.rel_attention %q, %k, %v, %r, %u, %vb, %ml, %sl {scale = 0.25 : f32}
      : tensor<5x3x2x16xf32>, tensor<?x3x2x16xf32>, tensor<?x3x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<5x3x2x16xf32>, tensor<3x2x4xf32>
  return %lse : tensor<3x2x4xf32>
}

// -----

// There is one projected position per key (klen), with the keys' heads.
func.func @rel_attention_pos_key(%q: tensor<?x?x2x16xf32>, %k: tensor<12x?x2x16xf32>, %v: tensor<12x?x2x16xf32>,
                                 %r: tensor<8x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                                 %ml: index, %sl: i1) -> tensor<?x?x2x16xf32> {
  // expected-error @+1 {{'txl.rel_attention' op pos_key must be [klen, n_head, d_head]}}
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %ml, %sl {scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<12x?x2x16xf32>, tensor<12x?x2x16xf32>, tensor<8x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// r_w_bias (u) is [n_head, d_head].
func.func @rel_attention_r_w_bias(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x16xf32>,
                                  %r: tensor<?x2x16xf32>, %u: tensor<16x2xf32>, %vb: tensor<2x16xf32>,
                                  %ml: index, %sl: i1) -> tensor<?x?x2x16xf32> {
  // expected-error @+1 {{'txl.rel_attention' op r_w_bias and r_r_bias must be [n_head, d_head]}}
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %ml, %sl {scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<16x2xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// r_r_bias (v) is checked like r_w_bias.
func.func @rel_attention_r_r_bias(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x16xf32>,
                                  %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x8xf32>,
                                  %ml: index, %sl: i1) -> tensor<?x?x2x16xf32> {
  // expected-error @+1 {{'txl.rel_attention' op r_w_bias and r_r_bias must be [n_head, d_head]}}
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %ml, %sl {scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x8xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// The output has exactly the query's type (no refinement of `?` dimensions).
func.func @rel_attention_result(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x16xf32>,
                                %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                                %ml: index, %sl: i1) -> tensor<4x?x2x16xf32> {
  // expected-error @+1 {{'txl.rel_attention' op result type must be the query type}}
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %ml, %sl {scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<4x?x2x16xf32>
  return %o : tensor<4x?x2x16xf32>
}

//===----------------------------------------------------------------------===//
// txl.nll
//===----------------------------------------------------------------------===//

// -----

// One NLL value per target token.
func.func @nll_shape(%logits: tensor<4x3x50xf32>, %target: tensor<4x5xi64>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'txl.nll' op logits, target and result must agree on [qlen, batch]}}
  %n = txl.nll %logits, %target : tensor<4x3x50xf32>, tensor<4x5xi64> -> tensor<4x3xf32>
  return %n : tensor<4x3xf32>
}

// -----

// The result is [qlen, batch] of the targets.
func.func @nll_result(%logits: tensor<?x?x50xf32>, %target: tensor<4x3xi64>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'txl.nll' op logits, target and result must agree on [qlen, batch]}}
  %n = txl.nll %logits, %target : tensor<?x?x50xf32>, tensor<4x3xi64> -> tensor<3x4xf32>
  return %n : tensor<3x4xf32>
}

//===----------------------------------------------------------------------===//
// txl.loss_mix
//===----------------------------------------------------------------------===//

// -----

func.func @loss_mix_no_input(%w: tensor<4xf32>, %pw: tensor<?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'txl.loss_mix' op needs at least one input}}
  %l = "txl.loss_mix"(%w, %pw) : (tensor<4xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %l : tensor<?x?xf32>
}

// -----

// Every term is a per-token loss shaped like the result.
func.func @loss_mix_input_type(%w: tensor<4xf32>, %pw: tensor<3xf32>, %a: tensor<3x2xf32>, %b: tensor<3x5xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'txl.loss_mix' op inputs must have the result's type 'tensor<3x2xf32>', got 'tensor<3x5xf32>'}}
  %l = txl.loss_mix %w, %pw, %a, %b : tensor<4xf32>, tensor<3xf32>, tensor<3x2xf32>, tensor<3x5xf32> -> tensor<3x2xf32>
  return %l : tensor<3x2xf32>
}

// -----

func.func @loss_mix_first(%w: tensor<4xf32>, %pw: tensor<?xf32>, %a: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'txl.loss_mix' op first must be non-negative, got -1}}
  %l = txl.loss_mix %w, %pw, %a {first = -1} : tensor<4xf32>, tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %l : tensor<?x?xf32>
}

// -----

// Inputs 3 and 4 from weight 3 need 5 weights.
func.func @loss_mix_weights(%w: tensor<4xf32>, %pw: tensor<?xf32>, %a: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'txl.loss_mix' op has 2 inputs from weight 3 but only 4 weights}}
  %l = txl.loss_mix %w, %pw, %a, %a {first = 3} : tensor<4xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %l : tensor<?x?xf32>
}

// -----

func.func @loss_mix_positions(%w: tensor<4xf32>, %pw: tensor<5xf32>, %a: tensor<6x2xf32>) -> tensor<6x2xf32> {
  // expected-error @+1 {{'txl.loss_mix' op position_weights must have one weight per row of the result}}
  %l = txl.loss_mix %w, %pw, %a : tensor<4xf32>, tensor<5xf32>, tensor<6x2xf32> -> tensor<6x2xf32>
  return %l : tensor<6x2xf32>
}

//===----------------------------------------------------------------------===//
// Type constraints (ODS)
//===----------------------------------------------------------------------===//

// -----

// txl ops work on f32 (the model) or f64 (gradient checks) only.
func.func @embedding_f16(%table: tensor<50x32xf16>, %tokens: tensor<?x?xi64>) -> tensor<?x?x32xf16> {
  // expected-error @+1 {{'txl.embedding' op operand #0 must be 2D tensor of 32-bit float or 64-bit float values}}
  %e = txl.embedding %table, %tokens : tensor<50x32xf16>, tensor<?x?xi64> -> tensor<?x?x32xf16>
  return %e : tensor<?x?x32xf16>
}

// -----

// An op computes in one float type (SameFloatElementType): an f64 table
// cannot give an f32 embedding.
func.func @embedding_mixed_f32_f64(%table: tensor<50x32xf64>, %tokens: tensor<?x?xi64>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'txl.embedding' op float operands and results must share one element type, got 'f64' and 'f32'}}
  %e = txl.embedding %table, %tokens : tensor<50x32xf64>, tensor<?x?xi64> -> tensor<?x?x32xf32>
  return %e : tensor<?x?x32xf32>
}

// -----

// Variadic operands are compared too: one f64 output layer among f32 ones.
func.func @adaptive_nll_mixed_f32_f64(%h: tensor<?x?x8xf32>, %t: tensor<?x?xi64>, %w0: tensor<4x8xf32>, %w1: tensor<6x8xf64>, %b0: tensor<4xf32>, %b1: tensor<6xf32>, %cw: tensor<1x8xf32>, %cb: tensor<1xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'txl.adaptive_nll' op float operands and results must share one element type, got 'f32' and 'f64'}}
  %n = txl.adaptive_nll %h, %t weights(%w0, %w1 : tensor<4x8xf32>, tensor<6x8xf64>) biases(%b0, %b1 : tensor<4xf32>, tensor<6xf32>) projs() clusters(%cw, %cb : tensor<1x8xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 4, 10>} : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

// Token ids are i64.
func.func @embedding_i32_tokens(%table: tensor<50x32xf32>, %tokens: tensor<?x?xi32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'txl.embedding' op operand #1 must be 2D tensor of 64-bit signless integer values}}
  %e = txl.embedding %table, %tokens : tensor<50x32xf32>, tensor<?x?xi32> -> tensor<?x?x32xf32>
  return %e : tensor<?x?x32xf32>
}

// -----

// Ranks are restricted: linear takes 2-D to 4-D inputs.
func.func @linear_rank_1(%x: tensor<32xf32>, %w: tensor<64x32xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{'txl.linear' op operand #0 must be 2D/3D/4D tensor of 32-bit float or 64-bit float values}}
  %y = txl.linear %x, %w : tensor<32xf32>, tensor<64x32xf32> -> tensor<64xf32>
  return %y : tensor<64xf32>
}

// -----

// A key must be 3-D (positions) or 4-D (content).
func.func @attn_score_key_rank(%q: tensor<?x?x2x16xf32>, %k: tensor<?x32xf32>) -> tensor<?x?x?x2xf32> {
  // expected-error @+1 {{'txl.attn_score' op operand #1 must be 3D/4D tensor of 32-bit float or 64-bit float values}}
  %s = txl.attn_score %q, %k : tensor<?x?x2x16xf32>, tensor<?x32xf32> -> tensor<?x?x?x2xf32>
  return %s : tensor<?x?x?x2xf32>
}

// -----

// Elementwise operands and result have one type (SameOperandsAndResultType;
// static sizes that differ are rejected).
func.func @add_types(%a: tensor<3x?x32xf32>, %b: tensor<4x?x32xf32>) -> tensor<3x?x32xf32> {
  // expected-error @+1 {{'txl.add' op requires the same type for all operands and results}}
  %s = "txl.add"(%a, %b) : (tensor<3x?x32xf32>, tensor<4x?x32xf32>) -> tensor<3x?x32xf32>
  return %s : tensor<3x?x32xf32>
}

// -----

// layer_norm returns the type of its input (AllTypesMatch).
func.func @layer_norm_result_type(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<4x?x32xf32> {
  // expected-error @+1 {{'txl.layer_norm' op failed to verify that all of {input, result} have same type}}
  %y = "txl.layer_norm"(%x, %g, %b) {epsilon = 1.0e-05 : f32}
      : (tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x?x32xf32>
  return %y : tensor<4x?x32xf32>
}

// -----

// Required attributes are checked: layer_norm needs its epsilon.
func.func @layer_norm_missing_epsilon(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'txl.layer_norm' op requires attribute 'epsilon'}}
  %y = txl.layer_norm %x, %g, %b : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// The keys are the memory's then the segment's: never fewer than the
// queries.
func.func @masked_softmax_qlen_gt_klen(%s: tensor<8x4x?x2xf32>, %ml: index, %sl: i1) -> tensor<8x4x?x2xf32> {
  // expected-error @+1 {{'txl.masked_softmax' op scores must be [qlen, klen, batch, n_head] with qlen <= klen, got qlen 8 > klen 4}}
  %p = txl.masked_softmax %s, %ml, %sl {scale = 0.25 : f32} : tensor<8x4x?x2xf32>
  return %p : tensor<8x4x?x2xf32>
}

// -----

// The softmax scale is 1 / sqrt(d_head): positive and finite.
func.func @masked_softmax_scale_negative(%s: tensor<?x?x?x2xf32>, %ml: index, %sl: i1) -> tensor<?x?x?x2xf32> {
  // expected-error @+1 {{'txl.masked_softmax' op scale must be a positive finite number}}
  %p = txl.masked_softmax %s, %ml, %sl {scale = -0.25 : f32} : tensor<?x?x?x2xf32>
  return %p : tensor<?x?x?x2xf32>
}

// -----

func.func @masked_softmax_scale_zero(%s: tensor<?x?x?x2xf32>, %ml: index, %sl: i1) -> tensor<?x?x?x2xf32> {
  // expected-error @+1 {{'txl.masked_softmax' op scale must be a positive finite number}}
  %p = txl.masked_softmax %s, %ml, %sl {scale = 0.0 : f32} : tensor<?x?x?x2xf32>
  return %p : tensor<?x?x?x2xf32>
}

// -----

// The fused op's scale is checked the same way.
func.func @rel_attention_scale(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x16xf32>,
                               %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                               %ml: index, %sl: i1) -> tensor<?x?x2x16xf32> {
  // expected-error @+1 {{'txl.rel_attention' op scale must be a positive finite number}}
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %ml, %sl {scale = 0x7F800000 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// masked_softmax's scale must be an f32 attribute.
func.func @masked_softmax_scale_type(%s: tensor<?x?x?x2xf32>, %ml: index, %sl: i1) -> tensor<?x?x?x2xf32> {
  // expected-error @+1 {{'txl.masked_softmax' op attribute 'scale' failed to satisfy constraint: 32-bit float attribute}}
  %p = txl.masked_softmax %s, %ml, %sl {scale = 0.25 : f64} : tensor<?x?x?x2xf32>
  return %p : tensor<?x?x?x2xf32>
}

// -----

// Scalar operands are typed too: take_last counts with an index.
func.func @take_last_count_type(%x: tensor<?x?x32xf32>, %n: i64) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'txl.take_last' op operand #1 must be index}}
  %m = "txl.take_last"(%x, %n) : (tensor<?x?x32xf32>, i64) -> tensor<?x?x32xf32>
  return %m : tensor<?x?x32xf32>
}

// -----

// layer_norm_c4: the normalized dimension is static (a model size).
func.func @layer_norm_dynamic_features(%x: tensor<?x?x?xf32>, %g: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{'txl.layer_norm' op the normalized (last) dimension must be static}}
  %y = txl.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x?x?xf32>, tensor<?xf32>, tensor<?xf32>
  return %y : tensor<?x?x?xf32>
}

// -----

// A NaN epsilon is not positive either.
func.func @layer_norm_nan_epsilon(%x: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'txl.layer_norm' op epsilon must be positive}}
  %y = txl.layer_norm %x, %g, %b {epsilon = 0x7FC00000 : f32} : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// pos_emb: [sin || cos] needs a static, even feature size.
func.func @pos_emb_odd(%f: tensor<?xf32>, %k: index, %c: i64) -> tensor<?x33xf32> {
  // expected-error @+1 {{'txl.pos_emb' op result features must be static and even (sin || cos)}}
  %r = txl.pos_emb %f, %k, %c : tensor<?xf32> -> tensor<?x33xf32>
  return %r : tensor<?x33xf32>
}

// -----

// txl.add is defined on float32 and float64 tensors only.
func.func @add_i32(%a: tensor<?xi32>, %b: tensor<?xi32>) -> tensor<?xi32> {
  // expected-error @+1 {{'txl.add' op operand #0 must be ranked tensor of 32-bit float or 64-bit float values}}
  %s = txl.add %a, %b : tensor<?xi32>
  return %s : tensor<?xi32>
}

// -----

// Adaptive ops: cutoff_ends is [0, cutoffs..., n_token].
func.func @adaptive_embedding_ends_start(%t: tensor<?x?xi64>, %a: tensor<10x8xf32>, %p: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'txl.adaptive_embedding' op cutoff_ends must be [0, cutoffs..., n_token]}}
  %e = txl.adaptive_embedding %t tables(%a : tensor<10x8xf32>) projs(%p : tensor<8x8xf32>) {cutoff_ends = array<i64: 1, 10>} : tensor<?x?xi64> -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}

// -----

func.func @adaptive_embedding_ends_order(%t: tensor<?x?xi64>, %a: tensor<5x8xf32>, %b: tensor<5x4xf32>, %p: tensor<8x8xf32>, %q: tensor<8x4xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'txl.adaptive_embedding' op cutoff_ends must be strictly increasing}}
  %e = txl.adaptive_embedding %t tables(%a, %b : tensor<5x8xf32>, tensor<5x4xf32>) projs(%p, %q : tensor<8x8xf32>, tensor<8x4xf32>) {cutoff_ends = array<i64: 0, 5, 5>} : tensor<?x?xi64> -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}

// -----

func.func @adaptive_embedding_tables(%t: tensor<?x?xi64>, %a: tensor<5x8xf32>, %p: tensor<8x8xf32>, %q: tensor<8x4xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'txl.adaptive_embedding' op expects one table per cluster (2), got 1}}
  %e = txl.adaptive_embedding %t tables(%a : tensor<5x8xf32>) projs(%p, %q : tensor<8x8xf32>, tensor<8x4xf32>) {cutoff_ends = array<i64: 0, 5, 10>} : tensor<?x?xi64> -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}

// -----

func.func @adaptive_embedding_projs(%t: tensor<?x?xi64>, %a: tensor<5x8xf32>, %b: tensor<5x4xf32>, %p: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'txl.adaptive_embedding' op expects one projection per cluster (2), got 1}}
  %e = txl.adaptive_embedding %t tables(%a, %b : tensor<5x8xf32>, tensor<5x4xf32>) projs(%p : tensor<8x8xf32>) {cutoff_ends = array<i64: 0, 5, 10>} : tensor<?x?xi64> -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}

// -----

func.func @adaptive_embedding_rows(%t: tensor<?x?xi64>, %a: tensor<5x8xf32>, %b: tensor<6x4xf32>, %p: tensor<8x8xf32>, %q: tensor<8x4xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'txl.adaptive_embedding' op table 1 must have 5 rows}}
  %e = txl.adaptive_embedding %t tables(%a, %b : tensor<5x8xf32>, tensor<6x4xf32>) projs(%p, %q : tensor<8x8xf32>, tensor<8x4xf32>) {cutoff_ends = array<i64: 0, 5, 10>} : tensor<?x?xi64> -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}

// -----

func.func @adaptive_embedding_proj_shape(%t: tensor<?x?xi64>, %a: tensor<5x8xf32>, %b: tensor<5x4xf32>, %p: tensor<8x8xf32>, %q: tensor<8x2xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'txl.adaptive_embedding' op projection 1 must be [d_model, d_1] = [8, 4]}}
  %e = txl.adaptive_embedding %t tables(%a, %b : tensor<5x8xf32>, tensor<5x4xf32>) projs(%p, %q : tensor<8x8xf32>, tensor<8x2xf32>) {cutoff_ends = array<i64: 0, 5, 10>} : tensor<?x?xi64> -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}

// -----

func.func @adaptive_embedding_result(%t: tensor<?x?xi64>, %a: tensor<10x8xf32>, %p: tensor<8x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'txl.adaptive_embedding' op result #0 must be 3D tensor of 32-bit float or 64-bit float values}}
  %e = txl.adaptive_embedding %t tables(%a : tensor<10x8xf32>) projs(%p : tensor<8x8xf32>) {cutoff_ends = array<i64: 0, 10>} : tensor<?x?xi64> -> tensor<?x8xf32>
  return %e : tensor<?x8xf32>
}

// -----

func.func @adaptive_embedding_tokens(%t: tensor<4x?xi64>, %a: tensor<10x8xf32>, %p: tensor<8x8xf32>) -> tensor<3x?x8xf32> {
  // expected-error @+1 {{'txl.adaptive_embedding' op result dimensions 0 and 1 must match the tokens}}
  %e = txl.adaptive_embedding %t tables(%a : tensor<10x8xf32>) projs(%p : tensor<8x8xf32>) {cutoff_ends = array<i64: 0, 10>} : tensor<4x?xi64> -> tensor<3x?x8xf32>
  return %e : tensor<3x?x8xf32>
}

// -----

func.func @adaptive_nll_ends(%h: tensor<?x?x8xf32>, %t: tensor<?x?xi64>, %w: tensor<10x8xf32>, %b: tensor<10xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'txl.adaptive_nll' op cutoff_ends must be [0, cutoffs..., n_token]}}
  %n = txl.adaptive_nll %h, %t weights(%w : tensor<10x8xf32>) biases(%b : tensor<10xf32>) projs() {cutoff_ends = array<i64: 0>} : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

func.func @adaptive_nll_layers(%h: tensor<?x?x8xf32>, %t: tensor<?x?xi64>, %w: tensor<4x8xf32>, %v: tensor<3x8xf32>, %b: tensor<4xf32>, %c: tensor<3xf32>, %cw: tensor<2x8xf32>, %cb: tensor<2xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'txl.adaptive_nll' op expects one output layer, or one per cluster (3), got 2}}
  %n = txl.adaptive_nll %h, %t weights(%w, %v : tensor<4x8xf32>, tensor<3x8xf32>) biases(%b, %c : tensor<4xf32>, tensor<3xf32>) projs() clusters(%cw, %cb : tensor<2x8xf32>, tensor<2xf32>) {cutoff_ends = array<i64: 0, 4, 7, 10>} : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

func.func @adaptive_nll_biases(%h: tensor<?x?x8xf32>, %t: tensor<?x?xi64>, %w: tensor<10x8xf32>, %cw: tensor<1x8xf32>, %cb: tensor<1xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'txl.adaptive_nll' op expects one bias per output layer}}
  %n = txl.adaptive_nll %h, %t weights(%w : tensor<10x8xf32>) biases() projs() clusters(%cw, %cb : tensor<1x8xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 4, 10>} : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

func.func @adaptive_nll_rows(%h: tensor<?x?x8xf32>, %t: tensor<?x?xi64>, %w: tensor<9x8xf32>, %b: tensor<9xf32>, %cw: tensor<1x8xf32>, %cb: tensor<1xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'txl.adaptive_nll' op output layer 0 must have 10 rows and bias entries}}
  %n = txl.adaptive_nll %h, %t weights(%w : tensor<9x8xf32>) biases(%b : tensor<9xf32>) projs() clusters(%cw, %cb : tensor<1x8xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 4, 10>} : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

func.func @adaptive_nll_proj_count(%h: tensor<?x?x8xf32>, %t: tensor<?x?xi64>, %w: tensor<10x4xf32>, %b: tensor<10xf32>, %p: tensor<8x4xf32>, %cw: tensor<1x4xf32>, %cb: tensor<1xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'txl.adaptive_nll' op expects no projection, or one per cluster (2), got 1}}
  %n = txl.adaptive_nll %h, %t weights(%w : tensor<10x4xf32>) biases(%b : tensor<10xf32>) projs(%p : tensor<8x4xf32>) clusters(%cw, %cb : tensor<1x4xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 4, 10>} : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

func.func @adaptive_nll_unprojected(%h: tensor<?x?x8xf32>, %t: tensor<?x?xi64>, %w: tensor<10x4xf32>, %b: tensor<10xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'txl.adaptive_nll' op without projections the output layers must take d_model (8) features}}
  %n = txl.adaptive_nll %h, %t weights(%w : tensor<10x4xf32>) biases(%b : tensor<10xf32>) projs() {cutoff_ends = array<i64: 0, 10>} : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

func.func @adaptive_nll_proj_shape(%h: tensor<?x?x8xf32>, %t: tensor<?x?xi64>, %w: tensor<10x4xf32>, %b: tensor<10xf32>, %p: tensor<8x2xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'txl.adaptive_nll' op projection 0 must be [d_model, d_0] = [8, 4]}}
  %n = txl.adaptive_nll %h, %t weights(%w : tensor<10x4xf32>) biases(%b : tensor<10xf32>) projs(%p : tensor<8x2xf32>) {cutoff_ends = array<i64: 0, 10>} : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

func.func @adaptive_nll_missing_clusters(%h: tensor<?x?x8xf32>, %t: tensor<?x?xi64>, %w: tensor<10x8xf32>, %b: tensor<10xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'txl.adaptive_nll' op cluster_weight and cluster_bias are required iff there are tail clusters}}
  %n = txl.adaptive_nll %h, %t weights(%w : tensor<10x8xf32>) biases(%b : tensor<10xf32>) projs() {cutoff_ends = array<i64: 0, 4, 10>} : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

func.func @adaptive_nll_cluster_shape(%h: tensor<?x?x8xf32>, %t: tensor<?x?xi64>, %w: tensor<10x8xf32>, %b: tensor<10xf32>, %cw: tensor<2x8xf32>, %cb: tensor<2xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'txl.adaptive_nll' op cluster_weight must be [n_clusters, d_0] = [1, 8] and cluster_bias [1]}}
  %n = txl.adaptive_nll %h, %t weights(%w : tensor<10x8xf32>) biases(%b : tensor<10xf32>) projs() clusters(%cw, %cb : tensor<2x8xf32>, tensor<2xf32>) {cutoff_ends = array<i64: 0, 4, 10>} : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

func.func @adaptive_nll_shapes(%h: tensor<3x?x8xf32>, %t: tensor<4x?xi64>, %w: tensor<10x8xf32>, %b: tensor<10xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'txl.adaptive_nll' op hidden, target and result must agree on [qlen, batch]}}
  %n = txl.adaptive_nll %h, %t weights(%w : tensor<10x8xf32>) biases(%b : tensor<10xf32>) projs() {cutoff_ends = array<i64: 0, 10>} : tensor<3x?x8xf32>, tensor<4x?xi64> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

// dropatt's rate is checked like txl.dropout's.
func.func @rel_attention_dropatt_rate(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %r: tensor<?x2x16xf32>,
                                      %u: tensor<2x16xf32>, %ml: index, %sl: i1, %seed: i64) -> tensor<?x?x2x16xf32> {
  // expected-error @+1 {{'txl.rel_attention' op dropatt must be in [0, 1), got 1.500000e+00}}
  %o = txl.rel_attention %q, %k, %k, %r, %u, %u, %ml, %sl dropatt(%seed, %seed, %sl, %seed, %seed)
      {dropatt = 1.5 : f64, dropatt_stream = 3 : i64, scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// The dropatt operands need the rate and the stream.
func.func @rel_attention_dropatt_no_rate(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %r: tensor<?x2x16xf32>,
                                         %u: tensor<2x16xf32>, %ml: index, %sl: i1, %seed: i64) -> tensor<?x?x2x16xf32> {
  // expected-error @+1 {{'txl.rel_attention' op dropatt needs its five operands (seed, offset, training, stream_base, column) and the dropatt and dropatt_stream attributes together}}
  %o = txl.rel_attention %q, %k, %k, %r, %u, %u, %ml, %sl dropatt(%seed, %seed, %sl, %seed, %seed)
      {scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// A rate without the operands is as incomplete.
func.func @rel_attention_dropatt_no_operands(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %r: tensor<?x2x16xf32>,
                                             %u: tensor<2x16xf32>, %ml: index, %sl: i1) -> tensor<?x?x2x16xf32> {
  // expected-error @+1 {{'txl.rel_attention' op dropatt needs its five operands (seed, offset, training, stream_base, column) and the dropatt and dropatt_stream attributes together}}
  %o = txl.rel_attention %q, %k, %k, %r, %u, %u, %ml, %sl
      {dropatt = 0.1 : f64, dropatt_stream = 3 : i64, scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// The dropatt stream is a 32-bit counter word too.
func.func @rel_attention_dropatt_stream(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %r: tensor<?x2x16xf32>,
                                        %u: tensor<2x16xf32>, %ml: index, %sl: i1, %seed: i64) -> tensor<?x?x2x16xf32> {
  // expected-error @+1 {{'txl.rel_attention' op dropatt_stream must be in [0, 2^32) (one Philox counter word), got -3}}
  %o = txl.rel_attention %q, %k, %k, %r, %u, %u, %ml, %sl dropatt(%seed, %seed, %sl, %seed, %seed)
      {dropatt = 0.1 : f64, dropatt_stream = -3 : i64, scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

func.func @linear_nll_weight(%h: tensor<?x?x32xf32>, %w: tensor<1000x16xf32>, %t: tensor<?x?xi64>) {
  // expected-error @+1 {{'txl.linear_nll' op weight must be [n_token, d] with d the input's last dimension}}
  %n = txl.linear_nll %h, %w, %t : tensor<?x?x32xf32>, tensor<1000x16xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return
}

// -----

func.func @linear_nll_bias(%h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<?x?xi64>, %b: tensor<999xf32>) {
  // expected-error @+1 {{'txl.linear_nll' op bias must be [n_token]}}
  %n = txl.linear_nll %h, %w, %t, %b : tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>, tensor<999xf32> -> tensor<?x?xf32>
  return
}

// -----

func.func @linear_nll_target(%h: tensor<4x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<5x?xi64>) {
  // expected-error @+1 {{'txl.linear_nll' op target must be the input's [qlen, batch]}}
  %n = txl.linear_nll %h, %w, %t : tensor<4x?x32xf32>, tensor<1000x32xf32>, tensor<5x?xi64> -> tensor<?x?xf32>
  return
}

// -----

func.func @linear_nll_result(%h: tensor<4x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<4x?xi64>) {
  // expected-error @+1 {{'txl.linear_nll' op result must be the input's [qlen, batch]}}
  %n = txl.linear_nll %h, %w, %t : tensor<4x?x32xf32>, tensor<1000x32xf32>, tensor<4x?xi64> -> tensor<5x?xf32>
  return
}

// -----

func.func @linear_nll_fwd_block(%h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<?x?xi64>) {
  // expected-error @+1 {{'txl.linear_nll_fwd' op block must be positive}}
  %n:3 = txl.linear_nll_fwd %h, %w, %t {block = 0 : i64} : tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64> -> tensor<?x?xf32>, tensor<?xf32>, tensor<2x?x0xf32>
  return
}

// -----

func.func @linear_nll_fwd_blocks(%h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<?x?xi64>) {
  // expected-error @+1 {{'txl.linear_nll_fwd' op logits must be [ceil(n_token / block), rows, block] and lse [rows]}}
  %n:3 = txl.linear_nll_fwd %h, %w, %t {block = 512 : i64} : tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64> -> tensor<?x?xf32>, tensor<?xf32>, tensor<3x?x512xf32>
  return
}

// -----

func.func @linear_nll_fwd_result(%h: tensor<4x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<4x?xi64>) {
  // expected-error @+1 {{'txl.linear_nll_fwd' op result must be the input's [qlen, batch]}}
  %n:3 = txl.linear_nll_fwd %h, %w, %t {block = 512 : i64} : tensor<4x?x32xf32>, tensor<1000x32xf32>, tensor<4x?xi64> -> tensor<3x?xf32>, tensor<?xf32>, tensor<2x?x512xf32>
  return
}

// -----

// txl.adaptive_log_softmax shares txl.adaptive_nll's output-layer checks.
func.func @adaptive_log_softmax_rows(%h: tensor<?x?x8xf32>, %w: tensor<9x8xf32>, %b: tensor<9xf32>, %cw: tensor<1x8xf32>, %cb: tensor<1xf32>) -> tensor<?x?x10xf32> {
  // expected-error @+1 {{'txl.adaptive_log_softmax' op output layer 0 must have 10 rows and bias entries}}
  %lp = txl.adaptive_log_softmax %h weights(%w : tensor<9x8xf32>) biases(%b : tensor<9xf32>) projs() clusters(%cw, %cb : tensor<1x8xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 4, 10>} : tensor<?x?x8xf32> -> tensor<?x?x10xf32>
  return %lp : tensor<?x?x10xf32>
}

// -----

func.func @adaptive_log_softmax_width(%h: tensor<?x?x8xf32>, %w: tensor<10x8xf32>, %b: tensor<10xf32>, %cw: tensor<1x8xf32>, %cb: tensor<1xf32>) -> tensor<?x?x9xf32> {
  // expected-error @+1 {{'txl.adaptive_log_softmax' op result must be [qlen, batch, n_token] with hidden's qlen and batch and n_token = 10}}
  %lp = txl.adaptive_log_softmax %h weights(%w : tensor<10x8xf32>) biases(%b : tensor<10xf32>) projs() clusters(%cw, %cb : tensor<1x8xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 4, 10>} : tensor<?x?x8xf32> -> tensor<?x?x9xf32>
  return %lp : tensor<?x?x9xf32>
}

// -----

func.func @adaptive_log_softmax_positions(%h: tensor<3x2x8xf32>, %w: tensor<10x8xf32>, %b: tensor<10xf32>) -> tensor<4x2x10xf32> {
  // expected-error @+1 {{'txl.adaptive_log_softmax' op result must be [qlen, batch, n_token] with hidden's qlen and batch and n_token = 10}}
  %lp = txl.adaptive_log_softmax %h weights(%w : tensor<10x8xf32>) biases(%b : tensor<10xf32>) projs() {cutoff_ends = array<i64: 0, 10>} : tensor<3x2x8xf32> -> tensor<4x2x10xf32>
  return %lp : tensor<4x2x10xf32>
}
