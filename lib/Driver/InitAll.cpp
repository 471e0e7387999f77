//===- InitAll.cpp - Register everything txl tools need ----------*- C++ -*-===//

#include "txl/InitAll.h"

#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlDialect.h"
#include "txl/Pipelines/Pipelines.h"
#include "txl/Transforms/Passes.h"
#include "txl/Autodiff/Adjoints.h"
#include "txl/Autodiff/Passes.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

void mlir::txl::registerAllTxlDialects(DialectRegistry &registry) {
  registry.insert<TxlDialect>();
  registerAdjointInterfaceExternalModels(registry);
  registerGpuLaunchEffectsExternalModel(registry);
  registerAllDialects(registry);
  // Includes the bufferization external models one-shot-bufferize needs.
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
}

void mlir::txl::registerAllTxlPasses() {
  registerAllPasses();
  registerTxlTransformsPasses();
  registerTxlAutodiffPasses();
  registerTxlConversionPasses();
  registerTxlPipelines();
}
