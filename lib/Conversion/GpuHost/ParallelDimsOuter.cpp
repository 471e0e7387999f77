//===- ParallelDimsOuter.cpp - Parallel loops of linalg.generic first -----===//
//
// The GPU targets launch one kernel per outermost scf.parallel; loops
// outside it run on the host. A linalg.generic whose reductions come
// before its parallel loops is interchanged so that the parallel loops
// come first (each in its order, then the reductions in theirs): one
// kernel, each work-item summing its element's terms in the original
// order.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::txl {
#define GEN_PASS_DEF_PARALLELDIMSOUTERPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;

namespace {

struct ParallelDimsOuterPass
    : public txl::impl::ParallelDimsOuterPassBase<ParallelDimsOuterPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : generics) {
      SmallVector<unsigned> parallel, reduction;
      for (auto [i, type] : llvm::enumerate(op.getIteratorTypesArray()))
        (linalg::isParallelIterator(type) ? parallel : reduction).push_back(i);
      SmallVector<unsigned> order = parallel;
      llvm::append_range(order, reduction);
      if (llvm::equal(order, llvm::seq<unsigned>(0, order.size())))
        continue;
      rewriter.setInsertionPoint(op);
      if (failed(linalg::interchangeGenericOp(rewriter, op, order))) {
        op.emitError("cannot interchange the loops of this linalg.generic");
        return signalPassFailure();
      }
    }
  }
};

} // namespace
