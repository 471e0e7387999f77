//===- TxlToLinalg.cpp - The convert-txl-to-linalg pass ----------*- C++ -*-===//

#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_CONVERTTXLTOLINALGPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {
struct ConvertTxlToLinalgPass
    : public txl::impl::ConvertTxlToLinalgPassBase<ConvertTxlToLinalgPass> {
  using ConvertTxlToLinalgPassBase::ConvertTxlToLinalgPassBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addIllegalDialect<TxlDialect>();
    target.addLegalDialect<arith::ArithDialect, cf::ControlFlowDialect,
                           linalg::LinalgDialect, math::MathDialect,
                           scf::SCFDialect, tensor::TensorDialect>();
    lowerNewMemories(getOperation());
    RewritePatternSet patterns(ctx);
    populateTxlElementwiseToLinalgPatterns(patterns);
    populateTxlDropoutToLinalgPatterns(patterns);
    populateTxlContractionToLinalgPatterns(patterns);
    populateTxlNormalizationToLinalgPatterns(patterns);
    populateTxlAttentionToLinalgPatterns(patterns, stridedAttention);
    populateTxlMemoryToLinalgPatterns(patterns);
    populateTxlAdaptiveToLinalgPatterns(patterns);
    populateTxlGradientToLinalgPatterns(patterns);
    populateTxlOptimizerToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
