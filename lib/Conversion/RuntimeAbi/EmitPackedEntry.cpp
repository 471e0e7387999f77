//===- EmitPackedEntry.cpp - void(void**) entries for the runtime ---------===//
//
// The runtime is model-agnostic: it calls every generated function through
// one signature, `void entry(void **args)`, where args[i] points at argument
// i of the function's C interface. This pass writes that entry in the LLVM
// dialect next to `_mlir_ciface_<function>`, for each function the frontend
// marked `txl.entry = "<entry>"` (the runtime ABI's functions,
// runtime/include/txl/runtime.h).
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlDialect.h"

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
    // The functions marked by the frontend (and txl-generate-backward).
    // func-to-llvm copies a function's discardable attributes to its C
    // interface wrapper: the wrappers are not entries of their own.
    SmallVector<std::pair<LLVM::LLVMFuncOp, StringAttr>> marked;
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
      if (auto entry =
              fn->getAttrOfType<StringAttr>(TxlDialect::kEntryAttrName))
        if (!fn.getSymName().starts_with(kCInterfacePrefix))
          marked.emplace_back(fn, entry);
    llvm::StringMap<LLVM::LLVMFuncOp> emitted;
    for (auto [fn, entry] : marked) {
      auto [it, inserted] = emitted.try_emplace(entry.getValue(), fn);
      if (!inserted) {
        fn.emitError("txl-emit-packed-entry: @")
            << it->second.getSymName() << " and @" << fn.getSymName()
            << " are both marked txl.entry = \"" << entry.getValue() << "\"";
        return signalPassFailure();
      }
      if (failed(emitEntry(module, fn, entry.getValue())))
        return signalPassFailure();
    }
    for (const std::string &entry : required)
      if (!emitted.count(entry)) {
        module.emitError("txl-emit-packed-entry: no function is marked "
                         "txl.entry = \"")
            << entry << "\" (the runtime needs it)";
        return signalPassFailure();
      }
    // The marks have served: the packed entries are the runtime's symbols.
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
      fn->removeAttr(TxlDialect::kEntryAttrName);
    // The module's own private functions (the layer functions, the aux
    // heads) are internal: LLVM may then drop the
    // arguments and returned values their bodies and callers never read
    // (dead argument elimination; most of each memref descriptor).
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
      if (!fn.isExternal() && fn.isPrivate())
        fn.setLinkage(LLVM::Linkage::Internal);
  }

  /// The prefix of func-to-llvm's C interface wrappers.
  static constexpr StringLiteral kCInterfacePrefix = "_mlir_ciface_";

  /// Uses of each top-level symbol before the entries were added.
  llvm::StringMap<unsigned> symbolUses;

  /// Emits `entry` around the C interface wrapper of `marked`.
  LogicalResult emitEntry(ModuleOp module, LLVM::LLVMFuncOp marked,
                          StringRef entry) {
    StringRef function = marked.getSymName();
    std::string target = (kCInterfacePrefix + function).str();
    auto callee = module.lookupSymbol<LLVM::LLVMFuncOp>(target);
    if (!callee)
      return marked.emitError("txl-emit-packed-entry: no function '")
             << target << "' (is '" << function
             << "' marked llvm.emit_c_interface and lowered to LLVM?)";
    if (module.lookupSymbol(entry))
      return marked.emitError("txl-emit-packed-entry: symbol '")
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
    // A scalar result (the learning-rate schedule's f64) goes through the
    // pointer in the slot after the arguments': host code writes it, and
    // no device memory is involved on the GPU targets.
    Type resultType = calleeType.getReturnType();
    const bool scalarResult = resultType.isIntOrFloat();
    if (!isa<LLVM::LLVMVoidType>(resultType) && !scalarResult) {
      fn.erase();
      return marked.emitError("txl-emit-packed-entry: '")
             << target << "' returns " << resultType
             << "; an entry returns nothing or one integer or float";
    }
    auto call = LLVM::CallOp::create(b, loc, callee, operands);
    if (scalarResult) {
      Value slot = LLVM::GEPOp::create(
          b, loc, ptrType, ptrType, args,
          ArrayRef<LLVM::GEPArg>{int32_t(calleeType.getNumParams())});
      Value out = LLVM::LoadOp::create(b, loc, ptrType, slot);
      LLVM::StoreOp::create(b, loc, call.getResult(), out);
    }
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
