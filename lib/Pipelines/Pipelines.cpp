//===- Pipelines.cpp - txlc pass pipelines -----------------------*- C++ -*-===//

#include "txl/Pipelines/Pipelines.h"

#include "txl/Autodiff/Passes.h"
#include "txl/Conversion/Passes.h"
#include "txl/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::txl;

void mlir::txl::buildTxlOptPipeline(OpPassManager &pm,
                                    const TxlCpuPipelineOptions &options) {
  if (options.fuseAttention)
    pm.addPass(createFuseRelAttentionPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createNarrowLinearSlicesPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::txl::buildTxlBackwardPipeline(OpPassManager &pm) {
  pm.addPass(createGenerateBackwardPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createNarrowLinearSlicesPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::txl::buildTxlToLinalgPipeline(OpPassManager &pm) {
  // After the backward: the decomposed form's rel_shift is differentiated
  // as a txl op.
  pm.addPass(createLowerRelShiftPass());
  pm.addPass(createConvertTxlToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createFuseElementwisePass());
}

void mlir::txl::buildLinalgToLLVMPipeline(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(createResultsToDestinationsPass());
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createDropDestinationResultsPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  // Deallocation clones a returned buffer whose ownership is ambiguous
  // (e.g. an eval-mode dropout returning its input next to that input);
  // clones become alloc + copy.
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createConvertLinalgToBlasPass());
  pm.addPass(createExpandStridedCopiesPass());
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createPolynomialExpPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createLowerContiguousReshapesPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createEmitPackedEntryPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::txl::buildTxlCpuPipeline(OpPassManager &pm,
                                    const TxlCpuPipelineOptions &options) {
  buildTxlOptPipeline(pm, options);
  if (options.generateBackward)
    buildTxlBackwardPipeline(pm);
  buildTxlToLinalgPipeline(pm);
  buildLinalgToLLVMPipeline(pm);
}

void mlir::txl::registerTxlPipelines() {
  PassPipelineRegistration<TxlCpuPipelineOptions>(
      "txl-cpu-pipeline",
      "Lower a txl segment to the LLVM dialect for the CPU (cblas_sgemm "
      "products, packed entry point)",
      buildTxlCpuPipeline);
  PassPipelineRegistration<TxlCpuPipelineOptions>(
      "txl-opt-pipeline", "The txl-level passes (fusion, rel_shift lowering)",
      buildTxlOptPipeline);
  PassPipelineRegistration<>("txl-to-linalg-pipeline",
                             "Lower txl ops to linalg on tensors",
                             buildTxlToLinalgPipeline);
  PassPipelineRegistration<>(
      "txl-linalg-to-llvm-pipeline",
      "Bufferize, call BLAS for products, and lower to the LLVM dialect",
      buildLinalgToLLVMPipeline);
}
