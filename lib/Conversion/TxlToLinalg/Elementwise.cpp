//===- Elementwise.cpp - Lower elementwise txl ops to linalg -----*- C++ -*-===//
//
// txl.add, txl.scale, txl.loss_mix, txl.relu and txl.broadcast_head_bias become parallel
// linalg.generic ops; txl.stop_gradient is the identity in the forward pass.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::txl;

namespace {

// txl.add(x, y) => linalg.generic { x + y }
struct AddLowering : public OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    AffineMap id = identityMap(getContext(), op.getType().getRank());
    rewriter.replaceOp(
        op, createPointwise(rewriter, op.getLoc(), op.getLhs(),
                            ValueRange{op.getLhs(), op.getRhs()}, {id, id},
                            [](OpBuilder &b, Location l, ValueRange a) -> Value {
                              return arith::AddFOp::create(b, l, a[0], a[1]);
                            }));
    return success();
  }
};

// txl.scale(x) {factor} => linalg.generic { x * factor }
struct ScaleLowering : public OpRewritePattern<ScaleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScaleOp op,
                                PatternRewriter &rewriter) const override {
    AffineMap id = identityMap(getContext(), op.getType().getRank());
    // The factor is an f32 hyper-parameter; multiply in the tensor's type.
    FloatAttr factor = castFloatAttr(rewriter, op.getFactorAttr(),
                                     op.getType().getElementType());
    rewriter.replaceOp(
        op, createPointwise(rewriter, op.getLoc(), op.getInput(),
                            ValueRange{op.getInput()}, {id},
                            [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                              Value c = arith::ConstantOp::create(b, l, factor);
                              return arith::MulFOp::create(b, l, a[0], c);
                            }));
    return success();
  }
};

// txl.loss_mix(w, pw, x_0..x_{K-1}) {first} => one linalg.generic over
// [rows, batch] reading pw[i], each x_k and its weight w[first + k] (a
// constant index map), summing the terms in k order, times pw[i].
struct LossMixLowering : public OpRewritePattern<LossMixOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LossMixOp op,
                                PatternRewriter &rewriter) const override {
    MLIRContext *ctx = getContext();
    AffineMap id = identityMap(ctx, 2);
    SmallVector<Value> inputs = {op.getPositionWeights()};
    SmallVector<AffineMap> maps = {
        AffineMap::get(2, 0, getAffineDimExpr(0, ctx))};
    size_t terms = op.getInputs().size();
    for (auto [k, input] : llvm::enumerate(op.getInputs())) {
      inputs.append({op.getWeights(), input});
      maps.append({AffineMap::get(2, 0,
                                  getAffineConstantExpr(
                                      op.getFirst() + int64_t(k), ctx)),
                   id});
    }
    rewriter.replaceOp(
        op, createPointwise(
                rewriter, op.getLoc(), op.getInputs().front(), inputs, maps,
                [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                  Value sum = arith::MulFOp::create(b, l, a[1], a[2]);
                  for (size_t k = 1; k < terms; ++k)
                    sum = arith::AddFOp::create(
                        b, l, sum,
                        arith::MulFOp::create(b, l, a[1 + 2 * k], a[2 + 2 * k]));
                  return arith::MulFOp::create(b, l, a[0], sum);
                }));
    return success();
  }
};

// txl.relu(x) => linalg.generic { max(x, 0) }
struct ReluLowering : public OpRewritePattern<ReluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReluOp op,
                                PatternRewriter &rewriter) const override {
    AffineMap id = identityMap(getContext(), op.getType().getRank());
    rewriter.replaceOp(
        op, createPointwise(rewriter, op.getLoc(), op.getInput(),
                            ValueRange{op.getInput()}, {id},
                            [](OpBuilder &b, Location l, ValueRange a) -> Value {
                              Value zero = arith::ConstantOp::create(
                                  b, l, b.getZeroAttr(a[0].getType()));
                              return arith::MaxNumFOp::create(b, l, a[0], zero);
                            }));
    return success();
  }
};

// txl.stop_gradient(x) => x
struct StopGradientLowering : public OpRewritePattern<StopGradientOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(StopGradientOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

// txl.broadcast_head_bias(bias[n, d], like[i, b, n, d]) => generic reading bias[n, d]
struct BroadcastHeadBiasLowering
    : public OpRewritePattern<BroadcastHeadBiasOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastHeadBiasOp op,
                                PatternRewriter &rewriter) const override {
    MLIRContext *ctx = getContext();
    AffineMap biasMap = AffineMap::get(
        4, 0, {getAffineDimExpr(2, ctx), getAffineDimExpr(3, ctx)}, ctx);
    rewriter.replaceOp(
        op, createPointwise(rewriter, op.getLoc(), op.getLike(),
                            ValueRange{op.getBias()}, {biasMap},
                            [](OpBuilder &, Location, ValueRange a) -> Value {
                              return a[0];
                            }));
    return success();
  }
};

} // namespace

void mlir::txl::populateTxlElementwiseToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AddLowering, ScaleLowering, LossMixLowering, ReluLowering,
               StopGradientLowering,
               BroadcastHeadBiasLowering>(patterns.getContext());
}
