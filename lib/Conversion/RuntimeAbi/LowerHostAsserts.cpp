//===- LowerHostAsserts.cpp - Run-time checks that end in an error --------===//
//
// The host code's run-time checks (`cf.assert`: a dynamic shape that the
// verifier could not check, such as pos_key's rows against klen) must end
// the run with an error message and a status, not with a signal. Upstream's
// convert-cf-to-llvm prints the message with `puts` to stdout and calls
// `abort`. This pass lowers each check first: a failed one calls
// `txl_rt_assert_failed(message)` (runtime/include/txl/runtime.h), which
// prints `error: run-time check failed: <message>` to stderr and exits
// with status 1.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_LOWERHOSTASSERTSPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

constexpr StringLiteral kAssertFailed = "txl_rt_assert_failed";

struct LowerHostAssertsPass
    : public txl::impl::LowerHostAssertsPassBase<LowerHostAssertsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<cf::AssertOp> asserts;
    // Kernels have no runtime to call: only the host's checks.
    module.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::GPUModuleOp>(op))
        return WalkResult::skip();
      if (auto check = dyn_cast<cf::AssertOp>(op))
        asserts.push_back(check);
      return WalkResult::advance();
    });
    if (asserts.empty())
      return;

    MLIRContext *ctx = &getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    SymbolTable symbols(module);
    auto fn = symbols.lookup<LLVM::LLVMFuncOp>(kAssertFailed);
    auto fnType =
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr});
    if (!fn) {
      OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
      fn = LLVM::LLVMFuncOp::create(b, module.getLoc(), kAssertFailed, fnType);
    } else if (fn.getFunctionType() != fnType) {
      fn.emitError() << "'" << kAssertFailed << "' has type "
                     << fn.getFunctionType() << ", expected " << fnType;
      return signalPassFailure();
    }

    // One constant string per distinct message.
    llvm::StringMap<LLVM::GlobalOp> messages;
    auto messageGlobal = [&](StringRef text, Location loc) {
      LLVM::GlobalOp &global = messages[text];
      if (global)
        return global;
      std::string data = (text + Twine('\0')).str();
      auto type =
          LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), data.size());
      OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
      global = LLVM::GlobalOp::create(
          b, loc, type, /*isConstant=*/true, LLVM::Linkage::Internal,
          "txl_assert_message", b.getStringAttr(data));
      symbols.insert(global); // renames on a clash
      return global;
    };

    for (cf::AssertOp check : asserts) {
      Location loc = check.getLoc();
      LLVM::GlobalOp global = messageGlobal(check.getMsg(), loc);
      Block *before = check->getBlock();
      Block *after = before->splitBlock(check->getIterator());
      Region *region = before->getParent();
      auto *failed = new Block();
      region->getBlocks().insertAfter(before->getIterator(), failed);

      OpBuilder b = OpBuilder::atBlockEnd(before);
      cf::CondBranchOp::create(b, loc, check.getArg(), after, ValueRange{},
                               failed, ValueRange{});
      b.setInsertionPointToStart(failed);
      Value text = LLVM::AddressOfOp::create(b, loc, global);
      LLVM::CallOp::create(b, loc, fn, ValueRange{text});
      LLVM::UnreachableOp::create(b, loc);
      check.erase();
    }
  }
};

} // namespace
