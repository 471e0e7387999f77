//===- ScopeLaunchStack.cpp - A stack scope per looping kernel launch -----===//
//
// The LLVM translation of gpu.launch_func allocates the kernel's argument
// array on the stack where the launch stands. Outside the entry block such
// allocas are dynamic: in a host loop every iteration would push another
// array, and a loop of enough launches overflows the stack. Each such
// launch gets its own scope (llvm.intr.stacksave / stackrestore).
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::txl {
#define GEN_PASS_DEF_SCOPELAUNCHSTACKPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;

namespace {

struct ScopeLaunchStackPass
    : public txl::impl::ScopeLaunchStackPassBase<ScopeLaunchStackPass> {
  void runOnOperation() override {
    getOperation().walk([](gpu::LaunchFuncOp launch) {
      auto func = launch->getParentOfType<LLVM::LLVMFuncOp>();
      if (!func || launch->getBlock() == &func.getBody().front())
        return;
      OpBuilder b(launch);
      Value sp = LLVM::StackSaveOp::create(
          b, launch.getLoc(), LLVM::LLVMPointerType::get(b.getContext()));
      b.setInsertionPointAfter(launch);
      LLVM::StackRestoreOp::create(b, launch.getLoc(), sp);
    });
  }
};

} // namespace
