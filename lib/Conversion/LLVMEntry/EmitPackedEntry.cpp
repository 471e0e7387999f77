//===- EmitPackedEntry.cpp - void(void**) entry for the runtime --*- C++ -*-===//
//
// The runtime is model-agnostic: it calls every generated function through
// one signature, `void entry(void **args)`, where args[i] points at argument
// i of the function's C interface. This pass writes that entry in the LLVM
// dialect next to `_mlir_ciface_<function>`, for each function of the
// runtime ABI (runtime/include/txl/runtime.h) that the module has.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_EMITPACKEDENTRYPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {
/// One generated function and the packed entry the runtime calls it by.
struct PackedEntry {
  StringRef function;
  StringRef entry;
  bool required; ///< false: the runtime declares the entry weak
};

/// The entries after the segment's (which the pass options name): the
/// backward segment, the distribution, the key/value-cache forms and their
/// r_head_k, the clipping norm's partial sums and the optimizer update
/// (whole-model on the GPU targets, per tensor on the CPU), the lr schedule
/// and the batch chunks' gradient accumulation.
constexpr PackedEntry kOptionalEntries[] = {
    {"segment_grad", "txl_segment_grad", false},
    {"segment_log_probs", "txl_segment_log_probs", false},
    {"segment_kv", "txl_segment_kv", false},
    {"segment_log_probs_kv", "txl_segment_log_probs_kv", false},
    {"segment_r_head_k", "txl_segment_r_head_k", false},
    {"grad_squared_norm", "txl_grad_squared_norm", false},
    {"optimizer_step", "txl_optimizer_step", false},
    {"squared_norm_part", "txl_squared_norm_part", false},
    {"optimizer_update", "txl_optimizer_update", false},
    {"learning_rate", "txl_learning_rate", false},
    {"accumulate_grads", "txl_accumulate_grads", false},
};

struct EmitPackedEntryPass
    : public txl::impl::EmitPackedEntryPassBase<EmitPackedEntryPass> {
  using EmitPackedEntryPassBase::EmitPackedEntryPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The uses of every symbol, counted in one walk of the module: asking
    // per function walked the whole module each time (20 walks for the ten
    // entries, 8 % of rel_basic's compile).
    symbolUses.clear();
    if (std::optional<SymbolTable::UseRange> uses =
            SymbolTable::getSymbolUses(&module.getBodyRegion()))
      for (const SymbolTable::SymbolUse &use : *uses)
        ++symbolUses[use.getSymbolRef().getRootReference().getValue()];
    SmallVector<PackedEntry> entries = {{function, entry, true}};
    entries.append(std::begin(kOptionalEntries), std::end(kOptionalEntries));
    for (const PackedEntry &e : entries)
      if (failed(emitEntry(module, e.function, e.entry, e.required)))
        return signalPassFailure();
    // The module's own private functions (the layer functions, the aux
    // heads) are internal: LLVM may then drop the
    // arguments and returned values their bodies and callers never read
    // (dead argument elimination; most of each memref descriptor).
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
      if (!fn.isExternal() && fn.isPrivate())
        fn.setLinkage(LLVM::Linkage::Internal);
  }

  /// Uses of each top-level symbol before the entries were added.
  llvm::StringMap<unsigned> symbolUses;

  /// Emits `entry` around `_mlir_ciface_<function>`; a missing function is
  /// an error only when `required`.
  LogicalResult emitEntry(ModuleOp module, StringRef function, StringRef entry,
                          bool required) {
    std::string target = ("_mlir_ciface_" + function).str();
    auto callee = module.lookupSymbol<LLVM::LLVMFuncOp>(target);
    if (!callee) {
      if (!required)
        return success();
      return module.emitError("txl-emit-packed-entry: no function '")
             << target << "' (is '" << function
             << "' marked llvm.emit_c_interface and lowered to LLVM?)";
    }
    if (module.lookupSymbol(entry))
      return module.emitError("txl-emit-packed-entry: symbol '")
             << entry << "' already exists";
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(module.getBody());
    Location loc = callee.getLoc();
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    auto fnType =
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptrType});
    auto fn = LLVM::LLVMFuncOp::create(b, loc, entry, fnType);
    Block *body = fn.addEntryBlock(b);
    b.setInsertionPointToStart(body);
    Value args = body->getArgument(0);

    SmallVector<Value> operands;
    LLVM::LLVMFunctionType calleeType = callee.getFunctionType();
    for (auto [i, type] : llvm::enumerate(calleeType.getParams())) {
      Value slot = LLVM::GEPOp::create(b, loc, ptrType, ptrType, args,
                                       ArrayRef<LLVM::GEPArg>{int32_t(i)});
      Value pointee = LLVM::LoadOp::create(b, loc, ptrType, slot);
      operands.push_back(isa<LLVM::LLVMPointerType>(type)
                             ? pointee
                             : LLVM::LoadOp::create(b, loc, type, pointee)
                                   .getResult());
    }
    LLVM::CallOp::create(b, loc, callee, operands);
    LLVM::ReturnOp::create(b, loc, ValueRange{});
    inlineIntoEntry(module, callee, function);
    return success();
  }

  /// Makes the C-interface wrapper and the function it calls internal and
  /// always-inline, each when its one use is the call from the layer above
  /// (entry -> wrapper -> function), so that the entry is the only symbol
  /// left. Why: the wrapper passes every memref descriptor field as its own
  /// argument (1,878 for enwik8_base's @segment_grad), and LLVM's instruction
  /// selection of such a call took as long as that of the function itself.
  /// The wrapper's uses are counted before its entry's call was added, the
  /// function's are the wrapper's call (no entry calls a function directly).
  void inlineIntoEntry(ModuleOp module, LLVM::LLVMFuncOp wrapper,
                       StringRef function) {
    auto internalize = [](LLVM::LLVMFuncOp fn) {
      fn.setLinkage(LLVM::Linkage::Internal);
      fn.setAlwaysInline(true);
    };
    if (symbolUses.lookup(wrapper.getSymName()) != 0)
      return;
    internalize(wrapper);
    auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(function);
    if (fn && !fn.isExternal() && symbolUses.lookup(function) == 1)
      internalize(fn);
  }
};
} // namespace
