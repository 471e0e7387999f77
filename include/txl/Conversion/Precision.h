//===- Precision.h - The products' operand type -----------------*- C++ -*-===//
//
// One spelling of the precision from txlc's --precision to the passes'
// `precision` options and the runtime's txl_precision_t (txl/runtime.h):
// f32, bf16, fp16 (the official code's --fp16; "f16" is MLIR's element
// type, not a precision).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_CONVERSION_PRECISION_H
#define TXL_CONVERSION_PRECISION_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

namespace mlir {
namespace txl {

/// The operand type of the model's products; every sum is f32.
enum class Precision {
  F32,  ///< f32 operands: the exactness mode
  Bf16, ///< bf16 operands (tensor cores on the GPUs; AMX, AVX512-BF16)
  Fp16, ///< fp16 operands (the GPU targets); train scales the loss
};

/// txlc's spelling of `precision` ("f32", "bf16", "fp16").
inline llvm::StringRef precisionName(Precision precision) {
  switch (precision) {
  case Precision::F32:
    return "f32";
  case Precision::Bf16:
    return "bf16";
  case Precision::Fp16:
    return "fp16";
  }
  return "";
}

/// The values of a pipeline's `precision` option, as txlc's --precision
/// spells them.
inline llvm::cl::ValuesClass precisionValues() {
  return llvm::cl::values(
      clEnumValN(Precision::F32, "f32", "f32 operands (default)"),
      clEnumValN(Precision::Bf16, "bf16", "bf16 operands, f32 sums"),
      clEnumValN(Precision::Fp16, "fp16",
                 "fp16 operands, f32 sums (the GPU targets)"));
}

} // namespace txl
} // namespace mlir

#endif // TXL_CONVERSION_PRECISION_H
