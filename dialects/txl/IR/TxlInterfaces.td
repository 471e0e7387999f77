//===- TxlInterfaces.td - txl op interfaces ----------------*- tablegen -*-===//
//
// The reverse-mode differentiation interface, in the spirit of Enzyme-MLIR's
// ReverseAutoDiffOpInterface: each differentiable op builds its own adjoint
// from the gradients of its results; --txl-generate-backward drives it.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_INTERFACES
#define TXL_INTERFACES

include "mlir/IR/OpBase.td"

def Txl_AdjointOpInterface : OpInterface<"AdjointOpInterface"> {
  let cppNamespace = "::mlir::txl";
  let description = [{
    An op that can propagate gradients from its results to its operands
    (reverse mode). `buildAdjoint` is called with the insertion point where
    the adjoint must go and one gradient per result (null where no gradient
    reaches that result); it returns one value per operand: the gradient
    contribution of that operand, or null when the operand gets none
    (integers, indices, values the op treats as constants). Contributions
    are summed by the caller, so an op never accumulates itself.
  }];
  let methods = [
    InterfaceMethod<
      "Builds the adjoint; returns one gradient (or null) per operand.",
      "::llvm::SmallVector<::mlir::Value>", "buildAdjoint",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::ValueRange":$resultGrads)>,
  ];
}

#endif // TXL_INTERFACES
