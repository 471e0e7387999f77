//===- FuseRelAttention.cpp - Four score terms => txl.rel_attention -*- C++ -*-===//
//
// The frontend writes the relative attention score of Transformer-XL
// (paper §3.3) as its four terms. This pass recognizes that DAG and folds it
// into one txl.rel_attention so that lowering can compute AC and BD in one
// buffer: (q + v) rᵀ written once into a zero-padded buffer whose shifted
// view is BD, AC accumulated onto that view, with no rel_shift gather.
//
//===----------------------------------------------------------------------===//

#include "txl/IR/TxlOps.h"
#include "txl/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_FUSERELATTENTIONPASS
#include "txl/Transforms/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

/// Collects the leaves of a tree of single-use `txl.add` ops rooted at `v`.
static void collectSumLeaves(Value v, bool isRoot,
                             SmallVectorImpl<Value> &leaves) {
  auto add = v.getDefiningOp<AddOp>();
  if (!add || (!isRoot && !v.hasOneUse())) {
    leaves.push_back(v);
    return;
  }
  collectSumLeaves(add.getLhs(), /*isRoot=*/false, leaves);
  collectSumLeaves(add.getRhs(), /*isRoot=*/false, leaves);
}

/// One pair of terms `x·key + bias·key`: the plain query and the per-head
/// bias broadcast to it, both scored against the same key.
struct TermPair {
  Value query, bias, key;
};

/// Matches exactly two single-use `txl.attn_score` leaves of which one scores
/// `query` and the other `broadcast_head_bias(bias, query)`, on one key.
static FailureOr<TermPair> matchTermPair(ArrayRef<Value> leaves) {
  if (leaves.size() != 2)
    return failure();
  auto first = leaves[0].getDefiningOp<AttnScoreOp>();
  auto second = leaves[1].getDefiningOp<AttnScoreOp>();
  if (!first || !second || !first->hasOneUse() || !second->hasOneUse())
    return failure();
  if (first.getKey() != second.getKey())
    return failure();
  for (auto [plain, biased] : {std::pair(first, second), std::pair(second, first)}) {
    auto bcast = biased.getQuery().getDefiningOp<BroadcastHeadBiasOp>();
    if (bcast && bcast.getLike() == plain.getQuery())
      return TermPair{plain.getQuery(), bcast.getBias(), plain.getKey()};
  }
  return failure();
}

// (q·k + u·k) + rel_shift(q·r + v·r) -> masked_softmax [-> dropout] ->
// attn_apply
//   => rel_attention(q, k, value, r, u, v) [dropatt(...)]
struct FuseRelAttentionPattern : public OpRewritePattern<AttnApplyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttnApplyOp apply,
                                PatternRewriter &rewriter) const override {
    // The official dropatt sits between the softmax and the product with V.
    Value probs = apply.getProbs();
    auto dropatt = probs.getDefiningOp<DropoutOp>();
    if (dropatt) {
      if (!dropatt->hasOneUse())
        return rewriter.notifyMatchFailure(apply, "dropped probabilities have "
                                                  "other users");
      // The fused op draws the masks of the whole batch (column-based
      // counters); a mask counted over this tensor alone is another draw.
      if (!dropatt.getColumn() || dropatt.getBatchDim() != 2)
        return rewriter.notifyMatchFailure(
            apply, "dropatt does not count its elements by batch column "
                   "(column and batch_dim = 2 of [qlen, klen, batch, "
                   "n_head])");
      probs = dropatt.getInput();
    }
    auto softmax = probs.getDefiningOp<MaskedSoftmaxOp>();
    if (!softmax || !softmax->hasOneUse())
      return rewriter.notifyMatchFailure(apply, "probabilities are not a "
                                                "single-use masked_softmax");
    SmallVector<Value> leaves;
    collectSumLeaves(softmax.getScores(), /*isRoot=*/true, leaves);
    if (!softmax.getScores().hasOneUse() || leaves.size() != 3)
      return rewriter.notifyMatchFailure(apply, "scores are not a single-use "
                                                "sum of three terms");

    RelShiftOp shift;
    SmallVector<Value> contentLeaves;
    for (Value leaf : leaves) {
      if (auto s = leaf.getDefiningOp<RelShiftOp>(); s && !shift)
        shift = s;
      else
        contentLeaves.push_back(leaf);
    }
    if (!shift || !shift->hasOneUse())
      return rewriter.notifyMatchFailure(apply, "no single-use rel_shift term");

    SmallVector<Value> positionalLeaves;
    collectSumLeaves(shift.getInput(), /*isRoot=*/true, positionalLeaves);
    if (!shift.getInput().hasOneUse())
      return rewriter.notifyMatchFailure(apply, "shifted sum has other users");

    FailureOr<TermPair> content = matchTermPair(contentLeaves);
    if (failed(content))
      return rewriter.notifyMatchFailure(apply, "content terms are not "
                                                "q·k + u·k");
    FailureOr<TermPair> positional = matchTermPair(positionalLeaves);
    if (failed(positional))
      return rewriter.notifyMatchFailure(apply, "positional terms are not "
                                                "q·r + v·r");
    if (content->query != positional->query)
      return rewriter.notifyMatchFailure(apply, "terms use different queries");
    if (cast<RankedTensorType>(content->key.getType()).getRank() != 4 ||
        cast<RankedTensorType>(positional->key.getType()).getRank() != 3)
      return rewriter.notifyMatchFailure(apply, "content key must be "
                                                "[klen, batch, n_head, d_head] "
                                                "and positions [klen, n_head, "
                                                "d_head]");
    if (apply.getValue().getType() != content->key.getType() ||
        apply.getType() != content->query.getType())
      return rewriter.notifyMatchFailure(apply, "value or result type differs "
                                                "from key or query");

    Value seed, offset, training, streamBase, column;
    FloatAttr rate;
    IntegerAttr stream;
    if (dropatt) {
      seed = dropatt.getSeed();
      offset = dropatt.getOffset();
      training = dropatt.getTraining();
      // The fused op's group always carries a base; absent means 0.
      streamBase = dropatt.getStreamBase();
      if (!streamBase)
        streamBase =
            arith::ConstantIntOp::create(rewriter, apply.getLoc(), 0, 64);
      column = dropatt.getColumn();
      rate = dropatt.getRateAttr();
      stream = dropatt.getStreamAttr();
    }
    rewriter.replaceOpWithNewOp<RelAttentionOp>(
        apply, apply.getType(), /*lse=*/Type(), content->query, content->key,
        apply.getValue(), positional->key, content->bias, positional->bias,
        softmax.getMemLen(), softmax.getSameLength(), seed, offset, training,
        streamBase, column, softmax.getScaleAttr(), rate, stream);
    return success();
  }
};

struct FuseRelAttentionPass
    : public txl::impl::FuseRelAttentionPassBase<FuseRelAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseRelAttentionPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
