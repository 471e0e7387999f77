//===- Driver.h - The txlc compiler driver -----------------------*- C++ -*-===//
//
// Model file -> txl IR -> txl-opt -> linalg -> LLVM dialect -> LLVM IR ->
// object -> executable (Toy's toyc staging: each --emit level stops there).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_DRIVER_DRIVER_H
#define TXL_DRIVER_DRIVER_H

#include "txl/Frontend/ModelConfig.h"
#include "txl/Frontend/SegmentBuilder.h"
#include "txl/Target/ObjectEmitter.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace txl {

/// Where `txlc` stops.
enum class EmitAction {
  Txl,
  TxlOpt,
  TxlGrad,
  Linalg,
  LLVMMLIR,
  LLVMIR,
  Object,
  Executable
};

struct DriverOptions {
  std::string inputPath;
  std::string outputPath;       ///< "-" = stdout for textual stages
  EmitAction emit = EmitAction::Executable;
  bool fuseAttention = true;
  /// Add @segment_grad (txl-generate-backward) and its txl_segment_grad
  /// entry (fused or decomposed attention).
  bool backward = true;
  CodegenOptions codegen;
  std::string runtimeLibDir;    ///< libtxl_runtime*.a
  std::string runtimeIncludeDir;///< txl/runtime.h
  std::string linker;           ///< C/C++ compiler driver used to link
  bool keepTemps = false;
};

/// Writes the C definition of `txl_model_info` (runtime.h) for `config`.
void emitModelInfoSource(const ModelConfig &config, llvm::raw_ostream &os);

/// Runs the driver; diagnostics go to stderr. Returns the process exit code.
int runDriver(const DriverOptions &options);

} // namespace txl
} // namespace mlir

#endif // TXL_DRIVER_DRIVER_H
