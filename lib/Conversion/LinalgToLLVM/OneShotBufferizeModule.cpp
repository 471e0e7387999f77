//===- OneShotBufferizeModule.cpp - One-shot bufferization ------*- C++ -*-===//
//
// Upstream one-shot module bufferization, with the bufferization argument
// attributes removed once per function instead of once per argument (see
// Passes.td, txl-one-shot-bufferize).
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_ONESHOTBUFFERIZEMODULEPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

/// Removes the attributes only the bufferization analysis reads from every
/// argument of `fn`, setting the argument attribute list once.
static void dropBufferizationArgAttrs(FunctionOpInterface fn) {
  ArrayAttr all = fn.getArgAttrsAttr();
  if (!all)
    return;
  StringRef names[] = {
      bufferization::BufferizationDialect::kWritableAttrName,
      bufferization::BufferizationDialect::kBufferLayoutAttrName};
  bool dropped = false;
  SmallVector<Attribute> kept;
  for (auto dict : all.getAsRange<DictionaryAttr>()) {
    NamedAttrList attrs(dict);
    for (StringRef name : names)
      dropped |= static_cast<bool>(attrs.erase(name));
    kept.push_back(attrs.getDictionary(fn.getContext()));
  }
  if (dropped)
    fn.setAllArgAttrs(kept);
}

struct OneShotBufferizeModulePass
    : public txl::impl::OneShotBufferizeModulePassBase<
          OneShotBufferizeModulePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bufferization::OneShotBufferizationOptions options;
    options.bufferizeFunctionBoundaries = true;
    options.setFunctionBoundaryTypeConversion(
        bufferization::LayoutMapOption::IdentityLayoutMap);
    // As the upstream pass by default: fully dynamic layouts where a type
    // is not known.
    options.unknownTypeConverterFn =
        [](TensorType type, Attribute memorySpace,
           const bufferization::BufferizationOptions &) {
          return bufferization::getMemRefTypeWithFullyDynamicLayout(
              type, memorySpace);
        };
    bufferization::BufferizationState state;
    // Upstream's runOneShotModuleBufferize: the analysis and the copies it
    // asks for, then the rewrite; the attributes go in between.
    if (failed(bufferization::insertTensorCopies(module, options, state)))
      return signalPassFailure();
    for (auto fn : module.getOps<FunctionOpInterface>())
      dropBufferizationArgAttrs(fn);
    if (failed(bufferization::bufferizeModuleOp(module, options, state)))
      return signalPassFailure();
  }
};

} // namespace
