//===- TxlAdjointOps.td - txl ops of the backward segment --*- tablegen -*-===//
//
// The ops that --txl-generate-backward emits for the adjoints of the forward
// ops (lib/Autodiff/Adjoints.cpp). Each takes the gradient of the forward
// result (`d_*`) and whatever it must recompute from, and returns gradients
// typed like the forward operands. Shapes are those of TxlOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_ADJOINT_OPS
#define TXL_ADJOINT_OPS

//===----------------------------------------------------------------------===//
// Products and reductions
//===----------------------------------------------------------------------===//

def Txl_LinearInputGradOp : Txl_Op<"linear_input_grad", [Pure]> {
  let summary = "gradient of txl.linear with respect to its input";
  let description = [{
    `d_input[..., i] = sum_o d_result[..., o] * weight[o, i]`: `d_result`
    [..., out] and `weight` [out, in] give [..., in].

    ```mlir
    %dx = txl.linear_input_grad %dy, %w
        : tensor<?x?x512xf32>, tensor<512x128xf32> -> tensor<?x?x128xf32>
    ```
  }];
  let arguments = (ins FloatTensorAtLeast2D:$d_result, FloatTensor2D:$weight);
  let results = (outs FloatTensorAtLeast2D:$d_input);
  let assemblyFormat = [{
    $d_result `,` $weight attr-dict `:` type($d_result) `,` type($weight)
    `->` type($d_input)
  }];
  let hasVerifier = 1;
}

def Txl_LinearWeightGradOp : Txl_Op<"linear_weight_grad", [Pure]> {
  let summary = "gradient of txl.linear with respect to its weight";
  let description = [{
    `d_weight[o, i] = sum_rows d_result[row, o] * input[row, i]`, summed over
    every leading position: `d_result` [..., out] and `input` [..., in] (same
    leading sizes) give [out, in].

    ```mlir
    %dw = txl.linear_weight_grad %dy, %x
        : tensor<?x?x512xf32>, tensor<?x?x128xf32> -> tensor<512x128xf32>
    ```
  }];
  let arguments = (ins FloatTensorAtLeast2D:$d_result, FloatTensorAtLeast2D:$input);
  let results = (outs FloatTensor2D:$d_weight);
  let assemblyFormat = [{
    $d_result `,` $input attr-dict `:` type($d_result) `,` type($input)
    `->` type($d_weight)
  }];
  let hasVerifier = 1;
}

def Txl_SumLeadingOp : Txl_Op<"sum_leading", [Pure]> {
  let summary = "sum over the leading dimensions";
  let description = [{
    Sums `input` over its first `rank(input) - rank(result)` dimensions; the
    trailing dimensions must match. The adjoint of a bias broadcast: the
    gradient of `txl.linear`'s bias ([..., out] to [out]) and of
    `txl.broadcast_head_bias` ([qlen, batch, n_head, d_head] to
    [n_head, d_head]).

    ```mlir
    %db = txl.sum_leading %dy : tensor<?x?x512xf32> -> tensor<512xf32>
    ```
  }];
  let arguments = (ins FloatTensor:$input);
  let results = (outs FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise and normalization
//===----------------------------------------------------------------------===//

def Txl_ReluGradOp : Txl_Op<"relu_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "gradient of txl.relu";
  let description = [{
    `d_input = result > 0 ? d_result : 0`, from the forward result (the
    subgradient at 0 is 0, as PyTorch's).

    ```mlir
    %dx = txl.relu_grad %dy, %y : tensor<?x?x512xf32>
    ```
  }];
  let arguments = (ins FloatTensorAtLeast2D:$d_result, FloatTensorAtLeast2D:$result);
  let results = (outs FloatTensorAtLeast2D:$d_input);
  let assemblyFormat = "$d_result `,` $result attr-dict `:` type($d_result)";
}

def Txl_LayerNormGradOp : Txl_Op<"layer_norm_grad", [Pure,
    AllTypesMatch<["d_result", "input", "d_input"]>,
    AllTypesMatch<["weight", "d_weight", "d_bias"]>]> {
  let summary = "gradient of txl.layer_norm";
  let description = [{
    With `xhat = (x - mean) * rstd` recomputed per row of `input` and
    `g = d_result * weight`: `d_input = rstd * (g - mean(g) - xhat *
    mean(g * xhat))` (means over the last dimension), `d_weight =
    sum_rows d_result * xhat`, `d_bias = sum_rows d_result`.

    ```mlir
    %dx, %dg, %db = txl.layer_norm_grad %dy, %x, %g {epsilon = 1.0e-05 : f32}
        : tensor<?x?x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins FloatTensorAtLeast2D:$d_result, FloatTensorAtLeast2D:$input,
                       FloatTensor1D:$weight, F32Attr:$epsilon);
  let results = (outs FloatTensorAtLeast2D:$d_input, FloatTensor1D:$d_weight,
                      FloatTensor1D:$d_bias);
  let assemblyFormat = [{
    $d_result `,` $input `,` $weight attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

def Txl_EmbeddingGradOp : Txl_Op<"embedding_grad", [Pure,
    OptionalTypesMatchWith<"init has the type of d_table", "d_table", "init",
                           "$_self">]> {
  let summary = "gradient of txl.embedding (scatter-add of rows)";
  let description = [{
    `d_table[t] = init[t] + sum over positions p with tokens[p] = t of
    d_result[p]`: `d_result` [qlen, batch, d_embed] and `tokens` [qlen, batch]
    give [n_token, d_embed]. Without `into`, `init` is zero (rows of tokens
    that do not occur are zero). The rows are added to `init` in position
    order, so repeated tokens accumulate deterministically.

    `into` accumulates onto another gradient of the same table: with
    `tie_weight` the output layer's weight gradient. The canonicalizer folds
    `txl.add %g, (txl.embedding_grad ...)` into it, which adds the same terms
    in a different order (`(g + d_1) + d_2` for `g + (d_1 + d_2)`) and saves
    a zero-filled table and a pass over both tables.

    ```mlir
    %dt = txl.embedding_grad %de, %tokens
        : tensor<?x?x128xf32>, tensor<?x?xi64> -> tensor<10000x128xf32>
    %dw = txl.embedding_grad %de, %tokens into %dout
        : tensor<?x?x128xf32>, tensor<?x?xi64> -> tensor<10000x128xf32>
    ```
  }];
  let arguments = (ins FloatTensor3D:$d_result, I64Tensor2D:$tokens,
                       Optional<FloatTensor2D>:$init);
  let results = (outs FloatTensor2D:$d_table);
  let assemblyFormat = [{
    $d_result `,` $tokens (`into` $init^)? attr-dict `:` type($d_result) `,`
    type($tokens) `->` type($d_table)
  }];
  let hasVerifier = 1;
}

def Txl_AdaptiveEmbeddingGradOp : Txl_Op<"adaptive_embedding_grad",
    [Pure, AttrSizedOperandSegments, InferTypeOpAdaptor]> {
  let summary = "gradient of txl.adaptive_embedding";
  let description = [{
    One gradient per table, then one per projection, typed like them. Per
    cluster i, over the positions p whose token t lies in the cluster:
    `d_projs[i] = sum_p d_result[p] ⊗ tables[i][t - lo]` and
    `d_tables[i][t - lo] += projs[i]ᵀ d_result[p]` (the official
    `AdaptiveEmbedding`, differentiated). Operands as txl.adaptive_embedding.

    ```mlir
    %dt0, %dt1, %dp0, %dp1 = txl.adaptive_embedding_grad %de, %tokens
        tables(%t0, %t1 : tensor<100x32xf32>, tensor<900x16xf32>)
        projs(%p0, %p1 : tensor<32x32xf32>, tensor<32x16xf32>)
        {cutoff_ends = array<i64: 0, 100, 1000>}
        : tensor<?x?x32xf32>, tensor<?x?xi64>
    ```
  }];
  let arguments = (ins FloatTensor3D:$d_result, I64Tensor2D:$tokens,
                       Variadic<FloatTensor2D>:$tables,
                       Variadic<FloatTensor2D>:$projs,
                       DenseI64ArrayAttr:$cutoff_ends);
  let results = (outs Variadic<FloatTensor2D>:$grads);
  let assemblyFormat = [{
    $d_result `,` $tokens `tables` `(` $tables `:` type($tables) `)`
    `projs` `(` $projs `:` type($projs) `)` attr-dict
    `:` type($d_result) `,` type($tokens)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Txl_NllGradOp : Txl_Op<"nll_grad", [Pure,
    AllTypesMatch<["logits", "d_logits"]>]> {
  let summary = "gradient of txl.nll";
  let description = [{
    `d_logits[i, b, c] = (softmax(logits[i, b])[c] - [c = target[i, b]]) *
    d_result[i, b]`, the softmax recomputed (max-shifted).

    ```mlir
    %dl = txl.nll_grad %dnll, %logits, %target
        : tensor<?x?xf32>, tensor<?x?x10000xf32>, tensor<?x?xi64>
    ```
  }];
  let arguments = (ins FloatTensor2D:$d_result, FloatTensor3D:$logits,
                       I64Tensor2D:$target);
  let results = (outs FloatTensor3D:$d_logits);
  let assemblyFormat = [{
    $d_result `,` $logits `,` $target attr-dict `:` type($d_result) `,`
    type($logits) `,` type($target)
  }];
  let hasVerifier = 1;
}

def Txl_AdaptiveNllGradOp : Txl_Op<"adaptive_nll_grad",
    [Pure, AttrSizedOperandSegments, InferTypeOpAdaptor]> {
  let summary = "gradient of txl.adaptive_nll";
  let description = [{
    Given the gradient of the per-token NLL [qlen, batch], returns one
    gradient per float operand of the forward op, in its order and typed like
    it: `hidden`, each weight, each bias, each projection, then
    `cluster_weight` and `cluster_bias` when present. The head is scored for
    every token (softmax minus the one-hot of the target's shortlist or
    cluster column); each tail only for its cluster's tokens, gathered and
    scattered back as in the forward lowering, so no [tokens, n_token]
    matrix exists. Operands otherwise as txl.adaptive_nll.

    ```mlir
    %dh, %dw0, %dw1, %db0, %db1, %dcw, %dcb = txl.adaptive_nll_grad %dnll, %h, %target
        weights(%w0, %w1 : tensor<100x32xf32>, tensor<900x32xf32>)
        biases(%b0, %b1 : tensor<100xf32>, tensor<900xf32>)
        projs()
        clusters(%cw, %cb : tensor<1x32xf32>, tensor<1xf32>)
        {cutoff_ends = array<i64: 0, 100, 1000>}
        : tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<?x?xi64>
    ```
  }];
  let arguments = (ins FloatTensor2D:$d_result, FloatTensor3D:$hidden,
                       I64Tensor2D:$target,
                       Variadic<FloatTensor2D>:$weights,
                       Variadic<FloatTensor1D>:$biases,
                       Variadic<FloatTensor2D>:$projs,
                       Optional<FloatTensor2D>:$cluster_weight,
                       Optional<FloatTensor1D>:$cluster_bias,
                       DenseI64ArrayAttr:$cutoff_ends);
  let results = (outs Variadic<FloatTensor>:$grads);
  let assemblyFormat = [{
    $d_result `,` $hidden `,` $target
    `weights` `(` ($weights^ `:` type($weights))? `)`
    `biases` `(` ($biases^ `:` type($biases))? `)`
    `projs` `(` ($projs^ `:` type($projs))? `)`
    (`clusters` `(` $cluster_weight^ `,` $cluster_bias `:`
       type($cluster_weight) `,` type($cluster_bias) `)`)?
    attr-dict `:` type($d_result) `,` type($hidden) `,` type($target)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Txl_LinearNllGradOp : Txl_Op<"linear_nll_grad", [Pure]> {
  let summary = "adjoint of the fused output layer and NLL";
  let description = [{
    With `d_logits = (softmax(logits) − onehot(target)) · d_result` (rows of
    `logits` from `txl.linear_nll_fwd`'s block-major `logits` and `lse`):
    `d_input = d_logits · weight` [qlen, batch, d], `d_weight =
    d_logitsᵀ · input` [n_token, d], `d_bias = Σ_rows d_logits` [n_token].
    Made by `--txl-fuse-linear-nll` from the generated backward's
    `txl.nll_grad` and the linear's adjoints; the CPU lowering sweeps the
    blocks last first, one [qlen·batch, block] block of `d_logits` at a
    time, so no [qlen·batch, n_token] tensor is written.

    ```mlir
    %dh, %dw, %db = txl.linear_nll_grad %g, %h, %w, %t, %lse, %logits {block = 512 : i64}
        : tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>,
          tensor<?xf32>, tensor<2x?x512xf32>
        -> tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<1000xf32>
    ```
  }];
  let arguments = (ins FloatTensor2D:$d_result, FloatTensor3D:$input,
                       FloatTensor2D:$weight, I64Tensor2D:$target,
                       FloatTensor1D:$lse, FloatTensor3D:$logits,
                       I64Attr:$block);
  let results = (outs FloatTensor3D:$d_input, FloatTensor2D:$d_weight,
                      FloatTensor1D:$d_bias);
  let assemblyFormat = [{
    $d_result `,` $input `,` $weight `,` $target `,` $lse `,` $logits attr-dict
    `:` type($d_result) `,` type($input) `,` type($weight) `,` type($target)
    `,` type($lse) `,` type($logits) `->` type($d_input) `,` type($d_weight)
    `,` type($d_bias)
  }];
  let hasVerifier = 1;
}

def Txl_RelAttentionGradOp : Txl_Op<"rel_attention_grad", [Pure,
    AttrSizedOperandSegments,
    AllTypesMatch<["d_result", "query", "d_query"]>,
    AllTypesMatch<["key", "d_key"]>, AllTypesMatch<["value", "d_value"]>,
    AllTypesMatch<["pos_key", "d_pos_key"]>,
    AllTypesMatch<["r_w_bias", "d_r_w_bias"]>,
    AllTypesMatch<["r_r_bias", "d_r_r_bias"]>]> {
  let summary = "fused backward of txl.rel_attention";
  let description = [{
    Recomputes the attention probabilities P of txl.rel_attention (operands
    and attributes as there), then, with `dS = scale * P ⊙ (dP - rowsum(P ⊙
    dP))` and `dP = d_result · Vᵀ`:
    `d_value = Pᵀ d_result`, `d_key = dSᵀ (q + u)`,
    `d_query = dS k + dS ⋆ r` where `(dS ⋆ r)[i] = sum_j dS[i, j] r[j + qlen - 1 - i]`,
    `d_pos_key[m] = sum_{i, b} dS[i, m - qlen + 1 + i] (q_i + v)`,
    `d_r_w_bias` and `d_r_r_bias` the sums of the two query terms over
    positions and batch. convert-txl-to-linalg's lowering recomputes the
    forward's padded score buffer and probabilities, writes dP and dS ([n_head·batch, qlen,
    klen] each) and shifts dS back to the unshifted positional columns
    once, into a third such tensor dRaw (the adjoint of the forward's
    shifted view), from which the positional parts of `d_query` and
    `d_pos_key` are batched products. With `dropatt`, P is dropped as in the
    forward op (mask M/(1 - rate) recomputed from the same counters):
    `d_value = (P ⊙ M)ᵀ d_result` and `dP = (d_result · Vᵀ) ⊙ M`.

    The optional `saved(lse, output)` group passes the forward's statistics:
    `lse` [batch, n_head, qlen], the forward op's second result, and
    `output`, its first (the query's type). The GPU kernels and the CPU
    kernel (txl-rel-attention-to-cpu) then read each row's log-sum-exp
    instead of recomputing it and take `rowsum(P ⊙ dP) = d_result_i ·
    output_i` (flash-attention-2's D); convert-txl-to-linalg's lowering,
    which keeps P whole, does not need them and ignores them.
    The values must be the matching forward's: the adjoint of a
    `txl.rel_attention` with an lse result passes its two results.

    ```mlir
    %dq, %dk, %dv, %dr, %du, %dvb = txl.rel_attention_grad %do, %q, %k, %v, %r,
        %u, %vb, %mem_len, %same_length {scale = 0.25 : f32}
        : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>,
          tensor<?x2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>
    %dq2, %dk2, %dv2, %dr2, %du2, %dvb2 = txl.rel_attention_grad %do, %q, %k,
        %v, %r, %u, %vb, %mem_len, %same_length
        saved(%lse, %o : tensor<?x2x?xf32>, tensor<?x?x2x16xf32>)
        {scale = 0.25 : f32}
        : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>,
          tensor<?x2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>
    ```
  }];
  let arguments = (ins FloatTensor4D:$d_result, FloatTensor4D:$query,
                       FloatTensor4D:$key, FloatTensor4D:$value,
                       FloatTensor3D:$pos_key, FloatTensor2D:$r_w_bias,
                       FloatTensor2D:$r_r_bias, Index:$mem_len, I1:$same_length,
                       Optional<I64>:$dropatt_seed,
                       Optional<I64>:$dropatt_offset,
                       Optional<I1>:$dropatt_training,
                       Optional<I64>:$dropatt_stream_base,
                       Optional<I64>:$dropatt_column,
                       Optional<FloatTensor3D>:$lse,
                       Optional<FloatTensor4D>:$output, F32Attr:$scale,
                       OptionalAttr<F64Attr>:$dropatt,
                       OptionalAttr<I64Attr>:$dropatt_stream);
  let results = (outs FloatTensor4D:$d_query, FloatTensor4D:$d_key,
                      FloatTensor4D:$d_value, FloatTensor3D:$d_pos_key,
                      FloatTensor2D:$d_r_w_bias, FloatTensor2D:$d_r_r_bias);
  let assemblyFormat = [{
    $d_result `,` $query `,` $key `,` $value `,` $pos_key `,` $r_w_bias `,`
    $r_r_bias `,` $mem_len `,` $same_length
    (`dropatt` `(` $dropatt_seed^ `,` $dropatt_offset `,` $dropatt_training `,`
       $dropatt_stream_base `,` $dropatt_column `)`)?
    (`saved` `(` $lse^ `,` $output `:` type($lse) `,` type($output) `)`)?
    attr-dict `:` type($query) `,`
    type($key) `,` type($value) `,` type($pos_key) `,` type($r_w_bias) `,`
    type($r_r_bias)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The operands of the dropatt group present (seed, offset, training,
    /// stream_base, column): all five, or none without dropatt.
    ::llvm::SmallVector<::mlir::Value> getDropattOperands();
  }];
}

//===----------------------------------------------------------------------===//
// Attention: the four-term form (--fuse-attention=false)
//===----------------------------------------------------------------------===//

def Txl_AttnScoreGradOp : Txl_Op<"attn_score_grad", [Pure,
    AllTypesMatch<["query", "d_query"]>, AllTypesMatch<["key", "d_key"]>]> {
  let summary = "backward of txl.attn_score (decomposed attention)";
  let description = [{
    For scores `S = einsum('ibnd,jbnd->ijbn', query, key)` and their
    gradient `d_result` [qlen, klen, batch, n_head]:
    `d_query[i, b, n] = sum_j d_result[i, j, b, n] key[j, b, n]` and
    `d_key[j, b, n] = sum_i d_result[i, j, b, n] query[i, b, n]`. With a
    positional key [rlen, n_head, d_head] (terms (b) and (d), paper §3.3) the
    key is shared by the batch: `d_key[j, n] = sum_{i, b} d_result[i, j, b, n]
    query[i, b, n]`. Lowered to batched BLAS products.

    ```mlir
    %dq, %dk = txl.attn_score_grad %ds, %q, %k
        : tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>
    ```
  }];
  let arguments = (ins FloatTensor4D:$d_result, FloatTensor4D:$query,
                       FloatTensor3DOr4D:$key);
  let results = (outs FloatTensor4D:$d_query, FloatTensor3DOr4D:$d_key);
  let assemblyFormat = [{
    $d_result `,` $query `,` $key attr-dict `:` type($d_result) `,`
    type($query) `,` type($key)
  }];
  let hasVerifier = 1;
}

def Txl_RelShiftGradOp : Txl_Op<"rel_shift_grad",
    [Pure, SameOperandsAndResultType]> {
  let summary = "backward of txl.rel_shift: shift the gradient back";
  let description = [{
    The transpose of txl.rel_shift on [qlen, klen, batch, n_head]:
    `d_input[i, c] = d_result[i, c - (qlen - 1 - i)]` for
    `c >= qlen - 1 - i`, and 0 for the columns no shifted entry reads.
    Every entry of the input is read at most once by the shift, so this is
    a gather, not a sum.

    ```mlir
    %draw = txl.rel_shift_grad %ds : tensor<?x?x?x2xf32>
    ```
  }];
  let arguments = (ins FloatTensor4D:$d_result);
  let results = (outs FloatTensor4D:$d_input);
  let assemblyFormat = "$d_result attr-dict `:` type($d_result)";
}

def Txl_SoftmaxGradOp : Txl_Op<"softmax_grad",
    [Pure, AllTypesMatch<["d_result", "probs", "d_scores"]>]> {
  let summary = "backward of txl.masked_softmax";
  let description = [{
    `d_scores = scale * probs ⊙ (d_result - sum_j(probs ⊙ d_result))`
    over the key dimension j of [qlen, klen, batch, n_head], where `probs`
    is the forward result. Masked keys have probability exactly 0, so they
    get no gradient without the mask being rebuilt.

    ```mlir
    %ds = txl.softmax_grad %dp, %p {scale = 0.25 : f32} : tensor<?x?x?x2xf32>
    ```
  }];
  let arguments = (ins FloatTensor4D:$d_result, FloatTensor4D:$probs,
                       F32Attr:$scale);
  let results = (outs FloatTensor4D:$d_scores);
  let assemblyFormat = [{
    $d_result `,` $probs attr-dict `:` type($d_result)
  }];
}

def Txl_AttnApplyGradOp : Txl_Op<"attn_apply_grad", [Pure,
    AllTypesMatch<["probs", "d_probs"]>, AllTypesMatch<["value", "d_value"]>]> {
  let summary = "backward of txl.attn_apply";
  let description = [{
    For `O = einsum('ijbn,jbnd->ibnd', probs, value)` and `d_result`
    [qlen, batch, n_head, d_head]:
    `d_probs[i, j, b, n] = d_result[i, b, n] · value[j, b, n]` and
    `d_value[j, b, n] = sum_i probs[i, j, b, n] d_result[i, b, n]`.
    Lowered to batched BLAS products.

    ```mlir
    %dp, %dv = txl.attn_apply_grad %do, %p, %v
        : tensor<?x?x2x16xf32>, tensor<?x?x?x2xf32>, tensor<?x?x2x16xf32>
    ```
  }];
  let arguments = (ins FloatTensor4D:$d_result, FloatTensor4D:$probs,
                       FloatTensor4D:$value);
  let results = (outs FloatTensor4D:$d_probs, FloatTensor4D:$d_value);
  let assemblyFormat = [{
    $d_result `,` $probs `,` $value attr-dict `:` type($d_result) `,`
    type($probs) `,` type($value)
  }];
  let hasVerifier = 1;
}

#endif // TXL_ADJOINT_OPS
