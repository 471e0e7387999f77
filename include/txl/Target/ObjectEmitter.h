//===- ObjectEmitter.h - LLVM dialect -> LLVM IR -> object file --*- C++ -*-===//
#ifndef TXL_TARGET_OBJECTEMITTER_H
#define TXL_TARGET_OBJECTEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <memory>

namespace mlir {
namespace txl {

/// Native code generation settings (`txlc -mcpu=`, `-O`).
struct CodegenOptions {
  std::string cpu = "x86-64-v3"; ///< LLVM CPU name; "native" = this host
  unsigned optLevel = 3;         ///< 0..3
};

/// Translates an LLVM-dialect module to LLVM IR for the host triple, with
/// the target's data layout, optimized at `options.optLevel`. Emits a
/// diagnostic on `module` and returns null on failure.
std::unique_ptr<llvm::Module>
translateAndOptimize(ModuleOp module, llvm::LLVMContext &llvmContext,
                     const CodegenOptions &options);

/// Writes `llvmModule` as an ELF object to `path` through LLVM's
/// TargetMachine. Returns an error message on failure.
llvm::Error emitObjectFile(llvm::Module &llvmModule, llvm::StringRef path,
                           const CodegenOptions &options);

} // namespace txl
} // namespace mlir

#endif // TXL_TARGET_OBJECTEMITTER_H
