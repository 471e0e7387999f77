//===- SpirvKernels.h - One SPIR-V module per kernel ------------*- C++ -*-===//
//
// The OpenCL target emits the kernels' gpu.module as one SPIR-V module
// (emitSpirv) and ships each kernel as a module of its own, so that the
// runtime builds only the kernels a run launches and the program cache
// keeps each kernel once for every image that has it (txl/device.h).
//
// LLVM's SPIR-V backend cannot emit a second module in the same process
// reliably (its module analysis keeps a static table keyed by machine
// function addresses, which a later module reuses), so the split is done on
// the SPIR-V itself: SPIRV-Tools' parser says which operands are ids, and a
// kernel's module keeps what its entry point reaches, in a canonical order.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_TARGET_SPIRVKERNELS_H
#define TXL_TARGET_SPIRVKERNELS_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir {
namespace txl {

/// Splits a SPIR-V module (binary, little endian) into one module per
/// OpEntryPoint, by the entry point's name. Each holds the module's
/// capabilities, extensions, extended instruction imports and memory model;
/// its own entry point (the interface sorted by id) and execution modes;
/// and the types, constants,
/// global variables and functions its function reaches through id operands,
/// with their names and decorations. The types, constants and globals stand
/// in the order a depth-first walk from the entry point first finishes
/// them, the functions callee first, and ids are renumbered from 1 in
/// order of definition: a kernel's bytes depend on that kernel alone, not
/// on the other kernels of the module.
///
/// Errors: a module SPIRV-Tools cannot parse, and constructs whose id
/// order this canonical form does not keep (OpTypeForwardPointer,
/// decoration groups).
llvm::Expected<llvm::StringMap<std::string>>
splitSpirvKernels(llvm::StringRef spirv);

} // namespace txl
} // namespace mlir

#endif // TXL_TARGET_SPIRVKERNELS_H
