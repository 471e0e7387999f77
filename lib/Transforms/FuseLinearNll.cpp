//===- FuseLinearNll.cpp - Output layer + NLL => txl.linear_nll ----*- C++ -*-===//
//
// The output layer's txl.linear and the txl.nll of its logits (and, in a
// backward segment, the generated txl.nll_grad and the linear's adjoints)
// become the named ops txl.linear_nll, or txl.linear_nll_fwd with its
// adjoint txl.linear_nll_grad, so that the lowering never has to match a
// DAG: one op, one lowering.
//
//===----------------------------------------------------------------------===//

#include "txl/IR/TxlOps.h"
#include "txl/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_FUSELINEARNLLPASS
#include "txl/Transforms/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

/// `v` as `type` (a tensor.cast where static sizes differ).
static Value castTo(PatternRewriter &rewriter, Location loc, Value v,
                    Type type) {
  if (v.getType() == type)
    return v;
  return tensor::CastOp::create(rewriter, loc, type, v);
}

// txl.nll(txl.linear(h, w, bias), target), the logits read by nothing else
// => txl.linear_nll(h, w, target, bias)
struct FuseLinearNll : public OpRewritePattern<NllOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(NllOp nll,
                                PatternRewriter &rewriter) const override {
    auto linear = nll.getLogits().getDefiningOp<LinearOp>();
    if (!linear)
      return rewriter.notifyMatchFailure(nll, "logits are not a txl.linear");
    if (!linear->hasOneUse())
      return rewriter.notifyMatchFailure(nll, "logits have other uses");
    if (linear.getInput().getType().getRank() != 3)
      return rewriter.notifyMatchFailure(nll, "input is not [qlen, batch, d]");
    rewriter.replaceOpWithNewOp<LinearNllOp>(
        nll, nll.getType(), linear.getInput(), linear.getWeight(),
        nll.getTarget(), linear.getBias());
    rewriter.eraseOp(linear);
    return success();
  }
};

// logits = txl.linear(h, w, bias) read only by txl.nll and txl.nll_grad,
// whose d_logits feed only the linear's adjoints (txl.linear_input_grad by
// w, txl.linear_weight_grad of h, the bias gradient txl.sum_leading)
// => txl.linear_nll_fwd at the nll, txl.linear_nll_grad at the nll_grad
struct FuseLinearNllWithGrad : public OpRewritePattern<LinearOp> {
  FuseLinearNllWithGrad(MLIRContext *ctx, int64_t block)
      : OpRewritePattern<LinearOp>(ctx), block(block) {}

  LogicalResult matchAndRewrite(LinearOp linear,
                                PatternRewriter &rewriter) const override {
    NllOp nll;
    NllGradOp nllGrad;
    for (Operation *user : linear->getUsers()) {
      if (auto n = dyn_cast<NllOp>(user); n && !nll)
        nll = n;
      else if (auto g = dyn_cast<NllGradOp>(user);
               g && !nllGrad && g.getLogits() == linear.getResult())
        nllGrad = g;
      else
        return rewriter.notifyMatchFailure(linear, "logits have other uses");
    }
    if (!nll || !nllGrad || nll.getTarget() != nllGrad.getTarget() ||
        nll->getBlock() != nllGrad->getBlock() ||
        !nll->isBeforeInBlock(nllGrad))
      return rewriter.notifyMatchFailure(linear, "not an nll + nll_grad pair");
    Value h = linear.getInput(), w = linear.getWeight();
    if (cast<RankedTensorType>(h.getType()).getRank() != 3)
      return rewriter.notifyMatchFailure(linear, "input is not [qlen, batch, d]");
    LinearInputGradOp inputGrad;
    LinearWeightGradOp weightGrad;
    SumLeadingOp biasGrad;
    Value dLogits = nllGrad.getResult();
    for (Operation *user : nllGrad->getUsers()) {
      if (auto u = dyn_cast<LinearInputGradOp>(user);
          u && !inputGrad && u.getDResult() == dLogits && u.getWeight() == w)
        inputGrad = u;
      else if (auto u = dyn_cast<LinearWeightGradOp>(user);
               u && !weightGrad && u.getDResult() == dLogits &&
               u.getInput() == h)
        weightGrad = u;
      else if (auto u = dyn_cast<SumLeadingOp>(user);
               u && !biasGrad && linear.getBias() &&
               u.getType().getRank() == 1)
        biasGrad = u;
      else
        return rewriter.notifyMatchFailure(
            linear, "d_logits feed something other than the linear's adjoint");
    }

    auto hType = cast<RankedTensorType>(h.getType());
    auto wType = cast<RankedTensorType>(w.getType());
    Type et = hType.getElementType();
    int64_t qlen = hType.getDimSize(0), batch = hType.getDimSize(1);
    int64_t rows = ShapedType::isDynamic(qlen) || ShapedType::isDynamic(batch)
                       ? ShapedType::kDynamic
                       : qlen * batch;
    int64_t vocab = wType.getDimSize(0);
    int64_t blocks = ShapedType::isDynamic(vocab)
                         ? ShapedType::kDynamic
                         : llvm::divideCeil(vocab, block);
    rewriter.setInsertionPoint(nll);
    auto fwd = LinearNllFwdOp::create(
        rewriter, nll.getLoc(), nll.getType(),
        RankedTensorType::get({rows}, et),
        RankedTensorType::get({blocks, rows, block}, et), h, w,
        nll.getTarget(), linear.getBias(), block);
    rewriter.replaceOp(nll, fwd.getResult());

    rewriter.setInsertionPoint(nllGrad);
    Location loc = nllGrad.getLoc();
    auto grad = LinearNllGradOp::create(
        rewriter, loc, hType, wType, RankedTensorType::get({vocab}, et),
        nllGrad.getDResult(), h, w, fwd.getTarget(), fwd.getLse(),
        fwd.getLogits(), block);
    if (inputGrad)
      rewriter.replaceOp(inputGrad, castTo(rewriter, loc, grad.getDInput(),
                                           inputGrad.getType()));
    if (weightGrad)
      rewriter.replaceOp(weightGrad, castTo(rewriter, loc, grad.getDWeight(),
                                            weightGrad.getType()));
    if (biasGrad)
      rewriter.replaceOp(biasGrad, castTo(rewriter, loc, grad.getDBias(),
                                          biasGrad.getType()));
    rewriter.eraseOp(nllGrad);
    rewriter.eraseOp(linear);
    return success();
  }

  int64_t block;
};

struct FuseLinearNllPass
    : public txl::impl::FuseLinearNllPassBase<FuseLinearNllPass> {
  using FuseLinearNllPassBase::FuseLinearNllPassBase;
  void runOnOperation() override {
    if (block <= 0) {
      getOperation().emitError("txl-fuse-linear-nll: block must be positive");
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseLinearNll>(&getContext());
    patterns.add<FuseLinearNllWithGrad>(&getContext(), block);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
