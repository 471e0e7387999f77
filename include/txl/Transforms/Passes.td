//===- Passes.td - txl-level transformations ---------------*- tablegen -*-===//
#ifndef TXL_TRANSFORMS_PASSES
#define TXL_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def FuseRelAttentionPass : Pass<"txl-fuse-rel-attention"> {
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
    official `dropatt`) becomes the fused op's `dropatt(...)` group, same
    seed, offset, training, stream and rate (a missing stream base becomes
    the constant 0). Chains whose intermediate scores have other users are
    left alone.
  }];
  let dependentDialects = ["::mlir::txl::TxlDialect"];
}

def LowerRelShiftPass : Pass<"txl-lower-rel-shift"> {
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

#endif // TXL_TRANSFORMS_PASSES
