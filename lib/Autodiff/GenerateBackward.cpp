//===- GenerateBackward.cpp - The txl-generate-backward pass -----*- C++ -*-===//
//
// Reverse-mode differentiation on the txl dialect: clone the forward
// function, then walk its ops backwards asking each for its adjoint
// (AdjointOpInterface) and summing the contributions per value.
//
//===----------------------------------------------------------------------===//

#include "txl/Autodiff/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_GENERATEBACKWARDPASS
#include "txl/Autodiff/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// A tensor of `like`'s type (dynamic sizes read from `like`) filled with
/// `value`.
Value splatLike(OpBuilder &b, Location loc, Value like, Value value) {
  auto type = cast<RankedTensorType>(like.getType());
  SmallVector<Value> dynamicSizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      dynamicSizes.push_back(tensor::DimOp::create(b, loc, like, d));
  return tensor::SplatOp::create(b, loc, value, type, dynamicSizes);
}

/// d mean(x) / dx = 1 / numel(x) everywhere.
Value meanSeed(OpBuilder &b, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  Value count = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t d = 0; d < type.getRank(); ++d)
    count = arith::MulIOp::create(b, loc, count,
                                  tensor::DimOp::create(b, loc, x, d));
  Type elementType = type.getElementType();
  Value count64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), count);
  Value countF = arith::SIToFPOp::create(b, loc, elementType, count64);
  Value one = arith::ConstantOp::create(b, loc, b.getFloatAttr(elementType, 1.0));
  return splatLike(b, loc, x, arith::DivFOp::create(b, loc, one, countF));
}

struct GenerateBackwardPass
    : public txl::impl::GenerateBackwardPassBase<GenerateBackwardPass> {
  using GenerateBackwardPassBase::GenerateBackwardPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(function);
    if (!forward) {
      module.emitError() << "txl-generate-backward: no function @" << function;
      return signalPassFailure();
    }
    if (forward.isExternal() || !forward.getBody().hasOneBlock()) {
      forward.emitError() << "txl-generate-backward: @" << function
                          << " must have a body of one block";
      return signalPassFailure();
    }
    auto resultTypes = forward.getFunctionType().getResults();
    if (resultTypes.empty() || !isFloatTensor(resultTypes[0])) {
      forward.emitError() << "txl-generate-backward: the first result of @"
                          << function << " must be a float tensor (the loss)";
      return signalPassFailure();
    }
    if (failed(generate(forward)))
      return signalPassFailure();
  }

  LogicalResult generate(func::FuncOp forward) {
    OpBuilder b(forward);
    b.setInsertionPointAfter(forward);
    auto grad = cast<func::FuncOp>(b.clone(*forward));
    grad.setSymName(function + "_grad");
    grad->removeAttr("llvm.emit_c_interface");
    Block &body = grad.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());

    // Parameters: arguments marked txl.param, else every float tensor.
    SmallVector<BlockArgument> params;
    for (BlockArgument arg : body.getArguments())
      if (isFloatTensor(arg.getType()) &&
          grad.getArgAttr(arg.getArgNumber(), "txl.param"))
        params.push_back(arg);
    if (params.empty())
      for (BlockArgument arg : body.getArguments())
        if (isFloatTensor(arg.getType()))
          params.push_back(arg);

    Location loc = grad.getLoc();
    b.setInsertionPoint(ret);
    llvm::DenseMap<Value, Value> grads;
    Value loss = ret.getOperand(0);
    grads[loss] = meanSeed(b, loc, loss);

    SmallVector<Operation *> forwardOps;
    for (Operation &op : body.without_terminator())
      forwardOps.push_back(&op);
    for (Operation *op : llvm::reverse(forwardOps)) {
      SmallVector<Value> resultGrads;
      bool any = false;
      for (Value result : op->getResults()) {
        resultGrads.push_back(grads.lookup(result));
        any |= static_cast<bool>(resultGrads.back());
      }
      if (!any)
        continue;
      auto adjoint = dyn_cast<AdjointOpInterface>(op);
      if (!adjoint)
        return op->emitOpError()
               << "has no adjoint: txl-generate-backward cannot "
                  "differentiate @"
               << function << " through it";
      SmallVector<Value> operandGrads = adjoint.buildAdjoint(b, resultGrads);
      for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads)) {
        if (!g || !isFloatTensor(operand.getType()))
          continue;
        Value &slot = grads[operand];
        slot = slot ? AddOp::create(b, op->getLoc(), slot, g).getResult() : g;
      }
    }

    SmallVector<Value> results(ret.getOperands());
    SmallVector<Type> types(ret.getOperandTypes());
    for (BlockArgument param : params) {
      Value g = grads.lookup(param);
      if (!g) {
        Type elementType =
            cast<RankedTensorType>(param.getType()).getElementType();
        Value zero = arith::ConstantOp::create(b, loc,
                                               b.getFloatAttr(elementType, 0));
        g = splatLike(b, loc, param, zero);
      }
      results.push_back(g);
      types.push_back(param.getType());
    }
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    grad.setFunctionType(
        b.getFunctionType(grad.getArgumentTypes(), types));
    return success();
  }
};

} // namespace
