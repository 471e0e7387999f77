//===- Passes.td - txl-level transformations ---------------*- tablegen -*-===//
#ifndef TXL_TRANSFORMS_PASSES
#define TXL_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def FuseRelAttentionPass : Pass<"txl-fuse-rel-attention", "::mlir::func::FuncOp"> {
  let summary = "Fuse the four-term relative attention into txl.rel_attention";
  let description = [{
    Recognizes the paper's score written literally (§3.3),

      (a) q·k + (c) u·k + rel_shift((b) q·W_{k,R}R + (d) v·W_{k,R}R),

    followed by `txl.masked_softmax` and `txl.attn_apply`, and replaces the
    whole chain with one `txl.rel_attention` computing
    `softmax(mask(scale·((q+u)kᵀ + shift((q+v)rᵀ))))·V`.

    Before:
    ```mlir
    %a  = txl.attn_score %q, %k
    %ub = txl.broadcast_head_bias %u, %q
    %c  = txl.attn_score %ub, %k
    %b  = txl.attn_score %q, %r
    %vb = txl.broadcast_head_bias %v, %q
    %d  = txl.attn_score %vb, %r
    %bd = txl.rel_shift (txl.add %b, %d)
    %p  = txl.masked_softmax (txl.add (txl.add %a, %c), %bd), %mem_len, %same
    %o  = txl.attn_apply %p, %val
    ```
    After:
    ```mlir
    %o = txl.rel_attention %q, %k, %val, %r, %u, %v, %mem_len, %same
    ```
    A single-use `txl.dropout` between the softmax and `txl.attn_apply` (the
    official `dropatt`) that counts its elements by batch column (`column`,
    `batch_dim = 2` of the [qlen, klen, batch, n_head] scores) becomes the
    fused op's `dropatt(...)` group, same seed, offset, training, column,
    stream and rate (a missing stream base becomes the constant 0); one
    counted otherwise would draw other masks fused, and is left alone.
    Chains whose intermediate scores have other users are left alone.
  }];
  let dependentDialects = ["::mlir::txl::TxlDialect"];
}

def SaveAttentionStatsPass : Pass<"txl-save-attention-stats",
                                  "::mlir::func::FuncOp"> {
  let summary = "Give every txl.rel_attention its lse result, for the "
                "backward to save";
  let description = [{
    Runs before --txl-generate-backward on every target: the backward
    kernels (GPU and CPU) recompute the probabilities tile by tile
    (flash-attention-2 style) from each query row's softmax statistic,
    which the CPU kernel would otherwise get by running the forward again. Every
    `txl.rel_attention` without one gains its `lse` result ([batch, n_head,
    qlen] of the query's element type: n·b·qlen floats, not a qlen × klen
    tensor). The adjoint of an op with an lse result passes it and the
    op's output to `txl.rel_attention_grad` as its `saved(...)` group, and
    the backward generation keeps both as activations of the layer's
    forward (its `_fwd` function returns them, as it returns the other
    values its adjoints read). The canonicalizer removes the lse results
    nothing reads (the evaluation segment's).

    Before:
    ```mlir
    %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mlen, %same {scale = 0.25 : f32}
        : ... -> tensor<?x?x8x64xf32>
    ```
    After:
    ```mlir
    %o, %lse = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mlen, %same {scale = 0.25 : f32}
        : ... -> tensor<?x?x8x64xf32>, tensor<?x8x?xf32>
    ```
  }];
  let dependentDialects = ["::mlir::txl::TxlDialect"];
}

def LowerRelShiftPass : Pass<"txl-lower-rel-shift", "::mlir::func::FuncOp"> {
  let summary = "Lower txl.rel_shift and txl.rel_shift_grad to index arithmetic";
  let description = [{
    Runs after --txl-generate-backward (so that the backward sees the
    txl.rel_shift it differentiates) and before --convert-txl-to-linalg.

    Replaces `txl.rel_shift` by a `tensor.generate` that reads
    `input[i, j + qlen - 1 - i]` (0 where that index passes klen - 1): the
    official pad + reshape + slice copy becomes one gather with computed
    indices, and no padded tensor exists. `txl.rel_shift_grad` becomes the
    transposed gather `d_result[i, c + i + 1 - qlen]` (0 where
    `c + i + 1 < qlen`).

    Before:
    ```mlir
    %s = txl.rel_shift %bd : tensor<?x?x?x2xf32>
    ```
    After:
    ```mlir
    %s = tensor.generate %qlen, %klen, %bsz {
    ^bb0(%i: index, %j: index, %b: index, %n: index):
      %src = (j + qlen - 1 - i); in bounds ? tensor.extract %bd[%i, %src, %b, %n] : 0
      tensor.yield ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def NarrowLinearSlicesPass : Pass<"txl-narrow-linear-slices", "::mlir::func::FuncOp"> {
  let summary = "Compute only the rows and columns of a txl.linear (and of "
                "its input gradient) that slices read";
  let description = [{
    The official attention projects the whole `[mem; h]` with `qkv_net`
    and keeps the query only for the rows of `h` (`w_head_q[-qlen:]`), so
    the query projection of every memory row is computed and dropped; its
    backward then forms the input gradient of the memory rows, which the
    stop-gradient drops. Two patterns move such slices before the product:

    * `txl.linear` read only through `tensor.extract_slice`s (unit strides,
      rank kept, static columns): one `txl.linear` per distinct range of
      the leading dimensions, over those rows of the input and the rows of
      the weight (and bias) that span the columns the slices read. Rows
      `[dim(mem, 0), +dim(h, 0))` of `txl.concat_mem %mem, %h` are `%h`
      itself. A linear whose slices share one range at offset 0 and read
      every column is left alone.
    * `tensor.extract_slice` of the leading dimensions of
      `txl.linear_input_grad %dy, %w` (its only reader, features whole):
      the input gradient of that slice of `%dy`.

    Runs before --txl-generate-backward (so the backward is generated from
    the narrowed forward) and after it (for the concat_mem adjoint's
    slice). The function computes the same values with fewer products.

    Before:
    ```mlir
    %cat = txl.concat_mem %mem, %h
    %y = txl.linear %cat, %w : ... -> tensor<?x?x384xf32>
    %q = tensor.extract_slice %y[%mlen, 0, 0] [%qlen, %bsz, 128] [1, 1, 1]
    %k = tensor.extract_slice %y[0, 0, 128] [%klen, %bsz, 128] [1, 1, 1]
    %v = tensor.extract_slice %y[0, 0, 256] [%klen, %bsz, 128] [1, 1, 1]
    ```
    After:
    ```mlir
    %wq = tensor.extract_slice %w[0, 0] [128, 128] [1, 1]
    %q = txl.linear %h, %wq : ... -> tensor<?x?x128xf32>
    %wkv = tensor.extract_slice %w[128, 0] [256, 128] [1, 1]
    %kv = txl.linear %cat, %wkv : ... -> tensor<?x?x256xf32>
    %k = tensor.extract_slice %kv[0, 0, 0] [%klen, %bsz, 128] [1, 1, 1]
    %v = tensor.extract_slice %kv[0, 0, 128] [%klen, %bsz, 128] [1, 1, 1]
    ```
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def AccumulateEmbeddingGradPass : Pass<"txl-accumulate-embedding-grad",
                                       "::mlir::func::FuncOp"> {
  let summary = "Scatter-add a tied table's embedding gradient onto the other "
                "gradient of that table";
  let description = [{
    With `tie_weight`, the word embedding table is also the output layer's
    weight, so the generated backward sums two gradients of it: the output
    layer's dense `dW` and the embedding's scatter of `d_result` rows
    (`txl.embedding_grad`). This pass turns that sum into one scatter-add
    onto `dW` (`txl.embedding_grad ... into`), so that no second
    `[n_token, d]` tensor is written and added.

    It is a pass and not a canonicalization because it changes results in
    the last bits: the sum `dW[t] + Σ rows` becomes `(…(dW[t] + row₀) + …)`,
    another order of float additions (torch's order is the former). Runs in
    the backward pipeline after `--txl-generate-backward`.

    Only an `embedding_grad` without `into` whose one use is the add is
    rewritten; one read elsewhere (whose value would change) or one that
    already accumulates is left alone.

    Before:
    ```mlir
    %e = txl.embedding_grad %dy, %tokens : ... -> tensor<50x4xf32>
    %s = txl.add %dw, %e : tensor<50x4xf32>
    ```
    After:
    ```mlir
    %s = txl.embedding_grad %dy, %tokens into %dw : ... -> tensor<50x4xf32>
    ```
  }];
  let dependentDialects = ["::mlir::txl::TxlDialect"];
}

def FuseLinearNllPass : Pass<"txl-fuse-linear-nll", "::mlir::func::FuncOp"> {
  let summary = "Fuse the output layer and its NLL (and their adjoints) into "
                "txl.linear_nll ops";
  let description = [{
    The output layer `txl.linear(h, w, bias)` whose logits only `txl.nll`
    reads becomes `txl.linear_nll`; in a backward segment, where the logits
    also feed the generated `txl.nll_grad` and its result only the linear's
    adjoints (`txl.linear_input_grad` by `w`, `txl.linear_weight_grad` of
    `h`, the bias gradient `txl.sum_leading`), the group becomes
    `txl.linear_nll_fwd` (at the nll, also keeping the row log-sum-exp and
    the logits in `block`-column slabs) and `txl.linear_nll_grad` (at the
    nll_grad). The lowering then computes the logits in column blocks with
    an online log-sum-exp and never writes [tokens, n_token] whole
    (docs/design.md). Runs after `--txl-generate-backward`, before
    `--convert-txl-to-linalg`. Logits with any other reader are left alone.

    Before:
    ```mlir
    %logits = txl.linear %h, %w, %b
    %nll = txl.nll %logits, %t
    %dl = txl.nll_grad %g, %logits, %t
    %dh = txl.linear_input_grad %dl, %w
    %dw = txl.linear_weight_grad %dl, %h
    %db = txl.sum_leading %dl
    ```
    After:
    ```mlir
    %nll, %lse, %blocks = txl.linear_nll_fwd %h, %w, %t, %b {block = 512}
    %dh, %dw, %db = txl.linear_nll_grad %g, %h, %w, %t, %lse, %blocks {block = 512}
    ```
  }];
  let options = [
    Option<"block", "block", "int64_t", "512",
           "Output columns per block of the kept logits (a [rows, block] "
           "f32 block is 1 MiB at 512 rows, within a core's L2)">
  ];
  let dependentDialects = ["::mlir::txl::TxlDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // TXL_TRANSFORMS_PASSES
