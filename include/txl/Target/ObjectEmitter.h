//===- ObjectEmitter.h - LLVM dialect -> LLVM IR -> object file --*- C++ -*-===//
#ifndef TXL_TARGET_OBJECTEMITTER_H
#define TXL_TARGET_OBJECTEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/Timing.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <memory>

namespace mlir {
namespace txl {

/// Native code generation settings (`txlc -mcpu=`, `-O`, `-j`).
struct CodegenOptions {
  std::string cpu = "x86-64-v3"; ///< LLVM CPU name; "native" = this host
  unsigned optLevel = 3;         ///< 0..3
  /// Also compile the functions with loops for x86-64-v4 (AVX-512), chosen
  /// at run time (addX86_64V4Variants; txlc --cpu-variants).
  bool x86_64V4Variants = false;
  /// Threads for LLVM optimization and code generation of an executable;
  /// 0 = one per core. The module is split into this many parts.
  unsigned threads = 0;
};

/// The byte the runtime sets (nonzero) when the CPU runs x86-64-v4 code:
/// AVX-512 F, BW, CD, DQ and VL, with the OS saving their registers.
inline constexpr char kX86_64V4Flag[] = "txl_rt_x86_64_v4";

/// Gives every function of `llvmModule` with a loop and local linkage (the
/// layer functions and the other private functions; not the always-inline
/// entry wrappers) a clone `<name>.x86_64_v4` compiled for x86-64-v4
/// (`target-cpu`; LLVM then vectorizes it with 512-bit registers), and
/// makes the function call it when the byte `kX86_64V4Flag` (defined by
/// the runtime) is nonzero, or run its own body (the module's CPU)
/// otherwise (issue #49 item 3; bench/README.md, "AVX-512 variants").
void addX86_64V4Variants(llvm::Module &llvmModule);

/// Checks that `cpu` ("native" or an LLVM CPU name) names a CPU of the host
/// triple's target; the error names it and a few valid names.
llvm::Error checkCpuName(llvm::StringRef cpu);

/// Whether `cpu` ("native" or an LLVM CPU name) has AVX-512 F, BW, DQ and
/// VL (LLVM's feature table for that CPU; the host's CPU name for
/// "native"). False for an unknown name.
bool cpuHasAvx512(llvm::StringRef cpu);

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

/// Translates `module` to LLVM IR, splits it into `options.threads` parts
/// (whole functions, balanced by size; llvm::SplitModule), and optimizes
/// and emits each part on its own thread, in its own LLVMContext, into a
/// temporary ELF object whose path is appended to `objectPaths` (the
/// caller links and removes them). The parts are the same code the
/// single-module route emits, less inlining across parts (only the small
/// `_mlir_ciface_`/packed wrappers call across). Emits a diagnostic on
/// `module` and returns failure on any error. Each step is timed under
/// `timing` (txlc --mlir-timing). `module`'s body is erased once translated
/// (its memory is given back before code generation): the caller keeps the
/// empty module.
LogicalResult emitObjectFilesInParallel(
    ModuleOp module, const CodegenOptions &options,
    llvm::SmallVectorImpl<std::string> &objectPaths, TimingScope &timing);

} // namespace txl
} // namespace mlir

#endif // TXL_TARGET_OBJECTEMITTER_H
