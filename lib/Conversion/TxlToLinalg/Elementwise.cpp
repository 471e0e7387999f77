//===- Elementwise.cpp - Lower elementwise txl ops to linalg -----*- C++
//-*-===//
//
// txl.add, txl.scale, txl.loss_mix, txl.relu and txl.broadcast_head_bias become
// parallel linalg.generic ops; txl.stop_gradient is the identity in the forward
// pass.
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

/// Terms of txl.loss_mix per linalg.generic: each term is two operands (its
/// weight, its tensor), and on the GPU targets every operand of the kernel
/// a generic becomes is a parameter; 16 terms stay far below the 4 KiB of
/// kernel parameters sm_80 and sm_90 take (objective "alrfou" of a 64-layer
/// model mixes 128).
constexpr size_t kLossMixTermsPerGeneric = 16;

// txl.loss_mix(w, pw, x_0..x_{K-1}) {first} => linalg.generics over [rows,
// batch], each adding up to kLossMixTermsPerGeneric terms w[first + k] *
// x_k (the weight read through a constant index map) to the previous one's
// sum, in k order; the last multiplies by pw[i].
struct LossMixLowering : public OpRewritePattern<LossMixOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LossMixOp op,
                                PatternRewriter &rewriter) const override {
    MLIRContext *ctx = getContext();
    AffineMap id = identityMap(ctx, 2);
    AffineMap rowMap = AffineMap::get(2, 0, getAffineDimExpr(0, ctx));
    ValueRange terms = op.getInputs();
    Value sum;
    for (size_t begin = 0; begin < terms.size();
         begin += kLossMixTermsPerGeneric) {
      size_t end = std::min(terms.size(), begin + kLossMixTermsPerGeneric);
      bool last = end == terms.size();
      // Operands: [sum so far,] [pw (last generic),] then (w, x_k) pairs.
      SmallVector<Value> inputs;
      SmallVector<AffineMap> maps;
      if (sum) {
        inputs.push_back(sum);
        maps.push_back(id);
      }
      if (last) {
        inputs.push_back(op.getPositionWeights());
        maps.push_back(rowMap);
      }
      for (size_t k = begin; k < end; ++k) {
        inputs.append({op.getWeights(), terms[k]});
        maps.append(
            {AffineMap::get(
                 2, 0, getAffineConstantExpr(op.getFirst() + int64_t(k), ctx)),
             id});
      }
      bool carried = static_cast<bool>(sum);
      sum = createPointwise(
          rewriter, op.getLoc(), terms.front(), inputs, maps,
          [&](OpBuilder &b, Location l, ValueRange a) -> Value {
            size_t pair = (carried ? 1 : 0) + (last ? 1 : 0);
            Value acc = carried ? a[0] : Value();
            for (size_t k = begin; k < end; ++k, pair += 2) {
              Value term = arith::MulFOp::create(b, l, a[pair], a[pair + 1]);
              acc = acc ? arith::AddFOp::create(b, l, acc, term).getResult()
                        : term;
            }
            if (last)
              acc = arith::MulFOp::create(b, l, a[carried ? 1 : 0], acc);
            return acc;
          });
    }
    rewriter.replaceOp(op, sum);
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
               StopGradientLowering, BroadcastHeadBiasLowering>(
      patterns.getContext());
}
