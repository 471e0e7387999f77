//===- SaveAttentionStats.cpp - Give txl.rel_attention its lse result -----===//
//
// txl.rel_attention (no lse) => txl.rel_attention with its lse result (see
// Passes.td). The backward generated afterwards passes the result and lse
// to txl.rel_attention_grad as its saved group (RelAttentionAdjoint); the
// canonicalizer drops the lse results nothing reads.
//
//===----------------------------------------------------------------------===//

#include "txl/IR/TxlOps.h"
#include "txl/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_SAVEATTENTIONSTATSPASS
#include "txl/Transforms/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

struct SaveAttentionStatsPass
    : public txl::impl::SaveAttentionStatsPassBase<SaveAttentionStatsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<RelAttentionOp> ops;
    getOperation().walk([&](RelAttentionOp op) {
      if (!op.getLse())
        ops.push_back(op);
    });
    for (RelAttentionOp op : ops) {
      // [batch, n_head, qlen] of the query's element type.
      auto q = cast<RankedTensorType>(op.getQuery().getType());
      auto lseType = RankedTensorType::get(
          {q.getDimSize(1), q.getDimSize(2), q.getDimSize(0)},
          q.getElementType());
      rewriter.setInsertionPoint(op);
      auto withLse = RelAttentionOp::create(
          rewriter, op.getLoc(), op.getResult().getType(), lseType,
          op.getQuery(), op.getKey(), op.getValue(), op.getPosKey(),
          op.getRWBias(), op.getRRBias(), op.getMemLen(), op.getSameLength(),
          op.getDropattSeed(), op.getDropattOffset(), op.getDropattTraining(),
          op.getDropattStreamBase(), op.getScaleAttr(), op.getDropattAttr(),
          op.getDropattStreamAttr());
      rewriter.replaceAllUsesWith(op.getResult(), withLse.getResult());
      rewriter.eraseOp(op);
    }
  }
};

} // namespace
