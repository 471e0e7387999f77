//===- FuseElementwise.cpp - Fuse single-use elementwise generics -*- C++ -*-===//
//
// Producer-consumer fusion of linalg.generic ops on tensors: an all-parallel
// generic whose only use is an input of another generic is computed inside
// that generic, so its result never goes to memory.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

/// The most operands a fused generic may have. On the GPU targets every
/// operand of a generic is a kernel parameter (a memref descriptor of up to
/// 72 bytes at rank 4), and sm_80 and sm_90 kernels take 4,352 bytes of
/// parameters: 48 keeps a fused kernel below that (objective "alrfou"'s
/// chained txl.loss_mix generics would otherwise fuse into one of 128
/// terms).
constexpr unsigned kMaxFusedOperands = 48;

/// Whether the producer of `operand` may be fused into its consumer: both
/// linalg.generic on tensors in one block; the producer all-parallel with
/// one result used once, and read by the consumer through a permutation of
/// all its loops (so each producer element is computed exactly once: a
/// broadcast read would recompute it per broadcast element); the operand an
/// input of the consumer (never its destination, so in-place updates keep
/// their buffer); at most kMaxFusedOperands operands after fusion; and
/// upstream's conditions hold.
static bool isFusableOperand(OpOperand &operand) {
  auto consumer = dyn_cast<linalg::GenericOp>(operand.getOwner());
  auto producer = operand.get().getDefiningOp<linalg::GenericOp>();
  if (!consumer || !producer || !consumer.hasPureTensorSemantics() ||
      !producer.hasPureTensorSemantics())
    return false;
  // The fused generic reads the producer's inputs and the consumer's other
  // operands; on the GPU targets each becomes a kernel parameter.
  if (producer.getNumDpsInputs() + consumer->getNumOperands() - 1 >
      kMaxFusedOperands)
    return false;
  if (!consumer.isDpsInput(&operand) || producer->getNumResults() != 1 ||
      !operand.get().hasOneUse() ||
      producer->getBlock() != consumer->getBlock())
    return false;
  if (producer.getNumParallelLoops() != producer.getNumLoops() ||
      !consumer.getMatchingIndexingMap(&operand).isPermutation())
    return false;
  return linalg::areElementwiseOpsFusable(&operand);
}

struct FuseSingleUseProducer : public OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    for (OpOperand &operand : consumer->getOpOperands()) {
      if (!isFusableOperand(operand))
        continue;
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, &operand);
      if (failed(fused))
        continue;
      for (auto [original, replacement] : fused->replacements)
        rewriter.replaceAllUsesWith(original, replacement);
      return success();
    }
    return rewriter.notifyMatchFailure(consumer, "no fusable producer");
  }
};

struct FuseElementwisePass
    : public txl::impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseSingleUseProducer>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
