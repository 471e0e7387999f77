//===- CheckHostAllocations.cpp - Checked heap allocations --------*- C++
//-*-===//
//
// The CPU code's working buffers come from `malloc` / `aligned_alloc`
// (finalize-memref-to-llvm). The generated code has no error path, so a
// failed allocation must not return to it: this pass renames the C
// library's functions to the runtime's checked ones, which report the
// failure and exit (runtime/src/session/Session.cpp).
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_CHECKHOSTALLOCATIONSPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

/// The C library's allocation functions and their checked counterparts.
constexpr std::pair<StringLiteral, StringLiteral> kCheckedAllocators[] = {
    {"malloc", "txl_rt_malloc"},
    {"aligned_alloc", "txl_rt_aligned_alloc"},
};

struct CheckHostAllocationsPass
    : public txl::impl::CheckHostAllocationsPassBase<CheckHostAllocationsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto [libc, checked] : kCheckedAllocators) {
      auto function = symbols.lookup<LLVM::LLVMFuncOp>(libc);
      if (!function)
        continue;
      if (!function.isExternal()) {
        function.emitError() << "'" << libc
                             << "' is defined in the module; expected the C "
                                "library's declaration";
        return signalPassFailure();
      }
      if (auto existing = symbols.lookup<LLVM::LLVMFuncOp>(checked)) {
        // Declared already (by an earlier run): uses move over to it.
        if (existing.getFunctionType() != function.getFunctionType()) {
          existing.emitError()
              << "'" << checked << "' has type " << existing.getFunctionType()
              << ", but '" << libc << "' has " << function.getFunctionType();
          return signalPassFailure();
        }
        if (failed(SymbolTable::replaceAllSymbolUses(
                function, existing.getSymNameAttr(), module)))
          return signalPassFailure();
        function.erase();
        continue;
      }
      if (failed(symbols.rename(function, checked)))
        return signalPassFailure();
    }
  }
};

} // namespace
