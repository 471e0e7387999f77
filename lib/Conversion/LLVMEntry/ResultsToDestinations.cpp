//===- ResultsToDestinations.cpp - Caller-allocated outputs ------*- C++ -*-===//
//
// The runtime allocates every output of a segment (the NLL and the new
// memory, whose sizes it knows) and the generated code writes into them, so
// no allocation crosses the call boundary.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_RESULTSTODESTINATIONSPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

/// Entry functions change signature in these passes, so a call inside the
/// module would break; report it instead. Returns failure if `fn` is called.
static LogicalResult verifyNotCalled(func::FuncOp fn, ModuleOp module,
                                     llvm::StringRef pass) {
  if (SymbolTable::symbolKnownUseEmpty(fn, module))
    return success();
  return fn.emitOpError(pass) << ": an entry function (llvm.emit_c_interface) "
                                 "must not be called inside the module";
}

namespace {
struct ResultsToDestinationsPass
    : public txl::impl::ResultsToDestinationsPassBase<
          ResultsToDestinationsPass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal() || !fn->hasAttr("llvm.emit_c_interface"))
        continue;
      if (failed(verifyNotCalled(fn, getOperation(),
                                 "txl-results-to-destinations")) ||
          failed(convert(fn)))
        return signalPassFailure();
    }
  }

  LogicalResult convert(func::FuncOp fn) {
    FunctionType type = fn.getFunctionType();
    for (Type t : type.getResults())
      if (!isa<RankedTensorType>(t))
        return fn.emitOpError("txl-results-to-destinations: every result "
                              "must be a ranked tensor");
    OpBuilder b(fn.getContext());
    unsigned numInputs = type.getNumInputs();
    for (unsigned i = 0; i < numInputs; ++i)
      if (isa<TensorType>(type.getInput(i)))
        fn.setArgAttr(i, "bufferization.writable", b.getBoolAttr(false));
    SmallVector<Type> inputs(type.getInputs());
    inputs.append(type.getResults().begin(), type.getResults().end());
    Block &entry = fn.getBody().front();
    SmallVector<Value> outs;
    for (Type t : type.getResults())
      outs.push_back(entry.addArgument(t, fn.getLoc()));
    fn.setType(b.getFunctionType(inputs, type.getResults()));

    WalkResult walk = fn.walk([&](func::ReturnOp ret) {
      b.setInsertionPoint(ret);
      SmallVector<Value> written;
      for (auto [value, out] : llvm::zip(ret.getOperands(), outs))
        written.push_back(bufferization::MaterializeInDestinationOp::create(
                              b, ret.getLoc(), value, out)
                              .getResult());
      ret->setOperands(written);
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }
};
} // namespace

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_DROPDESTINATIONRESULTSPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

namespace {
struct DropDestinationResultsPass
    : public txl::impl::DropDestinationResultsPassBase<
          DropDestinationResultsPass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal() || !fn->hasAttr("llvm.emit_c_interface") ||
          fn.getNumResults() == 0)
        continue;
      if (failed(verifyNotCalled(fn, getOperation(),
                                 "txl-drop-destination-results")))
        return signalPassFailure();
      Block &entry = fn.getBody().front();
      unsigned firstOut = fn.getNumArguments() - fn.getNumResults();
      WalkResult walk = fn.walk([&](func::ReturnOp ret) {
        for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
          auto arg = dyn_cast<BlockArgument>(v);
          if (!arg || arg.getOwner() != &entry ||
              arg.getArgNumber() != firstOut + i) {
            ret.emitOpError("txl-drop-destination-results: result ")
                << i << " is not its caller-provided buffer (argument "
                << firstOut + i << ")";
            return WalkResult::interrupt();
          }
        }
        ret->setOperands({});
        return WalkResult::advance();
      });
      if (walk.wasInterrupted())
        return signalPassFailure();
      fn.setType(FunctionType::get(&getContext(),
                                   fn.getFunctionType().getInputs(), {}));
    }
  }
};
} // namespace
