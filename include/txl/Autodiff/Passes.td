//===- Passes.td - Reverse-mode differentiation of txl -----*- tablegen -*-===//
#ifndef TXL_AUTODIFF_PASSES
#define TXL_AUTODIFF_PASSES

include "mlir/Pass/PassBase.td"

def GenerateBackwardPass : Pass<"txl-generate-backward", "::mlir::ModuleOp"> {
  let summary = "Generate the gradient function of a txl segment (reverse mode)";
  let description = [{
    For the function named by `function`, adds `@<function>_grad` with the
    same arguments, returning the function's results followed by the
    gradient of the **mean** of its first result (the per-token NLL) with
    respect to every parameter argument (those marked `txl.param`; all float
    tensor arguments when none is marked), in argument order.

    The forward computation is cloned and the adjoints are appended in
    reverse order: each op builds its own through `AdjointOpInterface`, and
    contributions to a value used several times (tied parameters, residual
    connections) are summed with `txl.add`. `txl.stop_gradient` propagates
    nothing, so the memory input gets no gradient (paper §3.2). A parameter
    no gradient reaches gets zeros. An op on a gradient path without an
    adjoint is an error naming it.

    Implemented adjoints so far: `txl.add`, `txl.scale`, `txl.stop_gradient`
    (the other op families come next; until then the pass rejects a segment
    that uses them, and no driver path runs it).
  }];
  let options = [
    Option<"function", "function", "std::string", "\"segment\"",
           "The function to differentiate">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::txl::TxlDialect"];
}

#endif // TXL_AUTODIFF_PASSES
