//===- FuseBiasRelu.cpp - A product's bias into the ReLU after it ---------===//
//
// txl-fuse-bias-relu (GPU targets): txl.relu of a txl.linear with a bias,
// the product used by the ReLU alone (the feed-forward's first product),
// becomes the product without its bias and one linalg.generic computing
// max(x + bias, 0). The linear's lowering puts its bias into the product's
// output before the product (a broadcast fill, a launch on a GPU, then
// beta = 1), and the ReLU is a launch of its own: this is one launch fewer
// a layer, with the same rounding (the product's beta = 1 adds the bias to
// the finished sum, as the generic does). The CPU target keeps the linear's
// lowering, where the fill and the ReLU cost no launch.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::txl {
#define GEN_PASS_DEF_FUSEBIASRELUPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;
using namespace mlir::txl;

namespace {

// txl.relu(txl.linear(x, w, b)) => linalg.generic { max(y + b, 0) } of
// y = txl.linear(x, w), when the relu is the linear's only user.
struct BiasIntoRelu : public OpRewritePattern<ReluOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReluOp op,
                                PatternRewriter &rewriter) const override {
    auto linear = op.getInput().getDefiningOp<LinearOp>();
    if (!linear || !linear.getBias())
      return rewriter.notifyMatchFailure(op, "not a product with a bias");
    if (!linear->hasOneUse())
      return rewriter.notifyMatchFailure(op, "the product has other users");
    auto type = cast<RankedTensorType>(op.getType());
    Location loc = op.getLoc();
    Value product;
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPoint(linear);
      product =
          LinearOp::create(rewriter, linear.getLoc(), linear.getType(),
                           linear.getInput(), linear.getWeight(), Value());
    }
    int64_t rank = type.getRank();
    MLIRContext *ctx = getContext();
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap last =
        AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, ctx), ctx);
    Value init = tensor::EmptyOp::create(
        rewriter, loc, tensor::getMixedSizes(rewriter, loc, product),
        type.getElementType());
    SmallVector<utils::IteratorType> parallel(rank,
                                              utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{product, linear.getBias()},
        ValueRange{init}, ArrayRef<AffineMap>{id, last, id}, parallel,
        [](OpBuilder &b, Location l, ValueRange args) {
          Value sum = arith::AddFOp::create(b, l, args[0], args[1]);
          Value zero =
              arith::ConstantOp::create(b, l, b.getZeroAttr(sum.getType()));
          linalg::YieldOp::create(
              b, l, ValueRange{arith::MaxNumFOp::create(b, l, sum, zero)});
        });
    rewriter.replaceOp(op, generic.getResults());
    rewriter.eraseOp(linear);
    return success();
  }
};

struct FuseBiasReluPass
    : public txl::impl::FuseBiasReluPassBase<FuseBiasReluPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<BiasIntoRelu>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
