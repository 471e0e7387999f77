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
    for (RelAttentionOp op : ops)
      op.replaceWithLse(rewriter, /*withLse=*/true);
  }
};

} // namespace
