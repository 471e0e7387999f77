//===- AccumulateEmbeddingGrad.cpp - Tied table gradient as a scatter-add -===//
//
// txl.add %dw, (txl.embedding_grad %dy, %tokens)
//   => txl.embedding_grad %dy, %tokens into %dw
// (see Passes.td: a pass, not a canonicalization, because it reorders float
// additions).
//
//===----------------------------------------------------------------------===//

#include "txl/IR/TxlOps.h"
#include "txl/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_ACCUMULATEEMBEDDINGGRADPASS
#include "txl/Transforms/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

// txl.add %g, (txl.embedding_grad %dy, %t) => txl.embedding_grad %dy, %t into %g
// (either operand order; the scatter fresh and used only by the add)
struct AccumulateIntoAddend : public OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [grad, other] : {std::pair(op.getRhs(), op.getLhs()),
                               std::pair(op.getLhs(), op.getRhs())}) {
      auto scatter = grad.getDefiningOp<EmbeddingGradOp>();
      if (!scatter || scatter.getInit() || !scatter->hasOneUse())
        continue;
      rewriter.replaceOpWithNewOp<EmbeddingGradOp>(
          op, scatter.getType(), scatter.getDResult(), scatter.getTokens(),
          other);
      rewriter.eraseOp(scatter);
      return success();
    }
    return rewriter.notifyMatchFailure(
        op, "no operand is a fresh embedding_grad used only here");
  }
};

struct AccumulateEmbeddingGradPass
    : public txl::impl::AccumulateEmbeddingGradPassBase<
          AccumulateEmbeddingGradPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AccumulateIntoAddend>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
