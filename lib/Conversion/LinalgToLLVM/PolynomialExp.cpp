//===- PolynomialExp.cpp - f32 math.exp => vectorizable polynomial -*- C++ -*-===//
//
// LLVM vectorizes no loop that calls expf (glibc's scalar exp), and every
// call spills the loop's live values: the softmax, log-sum-exp and NLL
// gradient loops spent most of their time in libm. MLIR's Cephes-based
// approximation is plain arithmetic, so those loops vectorize.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_POLYNOMIALEXPPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

struct PolynomialExpPass
    : public txl::impl::PolynomialExpPassBase<PolynomialExpPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // Only exp: the other approximations are either off the hot path (log
    // of one value per row) or less accurate than libm where it matters.
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      name.consume_front("math.");
      return name == "exp";
    });
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
  }
};

} // namespace
