//===- Passes.td - Reverse-mode differentiation of txl -----*- tablegen -*-===//
#ifndef TXL_AUTODIFF_PASSES
#define TXL_AUTODIFF_PASSES

include "mlir/Pass/PassBase.td"

def GenerateBackwardPass : Pass<"txl-generate-backward", "::mlir::ModuleOp"> {
  let summary = "Generate the gradient function of a txl segment (reverse mode)";
  let description = [{
    For the function named by `function`, adds `@<function>_grad` (or the
    public function named by `grad-function`) with the
    same arguments, returning the function's results followed by the
    gradient of the **mean** of its first result (the per-token NLL) with
    respect to every trained parameter argument (those marked `txl.param`
    and not `txl.buffer`; all float tensor arguments when none is marked),
    in argument order.

    The forward computation is cloned and the adjoints are appended in
    reverse order: each op builds its own through `AdjointOpInterface`
    (external models in lib/Autodiff/Adjoints.cpp), and contributions to a
    value used several times (tied parameters, residual connections) are
    summed with `txl.add`. Only values computed from a parameter are
    differentiated: `txl.stop_gradient` propagates nothing, so the memory
    input gets no gradient (paper §3.2), and buffers are constants. A call
    is differentiated through a generated `@<callee>_grad(args...,
    [activations...,] result grads...) -> grads of the active args`. With
    `save-activations` (default) the forward call becomes a call of
    `@<callee>_fwd`, the callee also returning the values its adjoints read
    (views of them are recomputed, not saved), and `@<callee>_grad` takes
    them: nothing of the layer is computed twice. Without it,
    `@<callee>_grad` recomputes the callee (layer-level checkpointing: only
    each layer's input stays alive). A parameter no gradient reaches gets
    zeros. An op on a gradient path without an adjoint is an error naming
    it. `txl.rel_attention` gets the fused `txl.rel_attention_grad`, which
    recomputes the probabilities from q, k, v and r. The decomposed
    attention (`--fuse-attention=false`) is differentiated op by op:
    `txl.attn_score`, `txl.rel_shift`, `txl.masked_softmax` and
    `txl.attn_apply` get `txl.attn_score_grad`, `txl.rel_shift_grad`,
    `txl.softmax_grad` and `txl.attn_apply_grad`, `txl.broadcast_head_bias`
    a `txl.sum_leading`; with `save-activations` the probabilities (and
    their dropatt) are then saved activations.

    With `loss-scale`, `@<function>_grad` takes one more argument, last:
    `%loss_scale: f32` (named by the argument attribute `txl.loss_scale`),
    and returns the gradient of `loss_scale` × the mean: the seed 1 / numel
    is multiplied by it, so every gradient is scaled from the start of the
    backward (dynamic loss scaling keeps small f16 gradients from flushing
    to zero; a power of two scales every value exactly).
  }];
  let options = [
    Option<"function", "function", "std::string", "\"segment\"",
           "The function to differentiate">,
    Option<"gradFunction", "grad-function", "std::string", "\"\"",
           "Name of the generated function (default: <function>_grad)">,
    Option<"gradEntry", "grad-entry", "std::string", "\"\"",
           "The packed entry point the runtime calls the generated function "
           "by (its `txl.entry`; default: none, and a `txl.entry` the "
           "function carries is not copied)">,
    Option<"saveActivations", "save-activations", "bool", "true",
           "Keep the activations a called layer's adjoints read (returned "
           "by @<callee>_fwd) instead of recomputing the layer">,
    Option<"lossScale", "loss-scale", "bool", "false",
           "Add a trailing f32 argument `loss_scale` to @<function>_grad "
           "that multiplies the gradient seed">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::txl::TxlDialect"];
}

#endif // TXL_AUTODIFF_PASSES
