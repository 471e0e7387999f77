//===- Passes.h - Reverse-mode differentiation of txl ------------*- C++ -*-===//
#ifndef TXL_AUTODIFF_PASSES_H
#define TXL_AUTODIFF_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "txl/IR/TxlDialect.h"

namespace mlir {
namespace txl {

#define GEN_PASS_DECL
#include "txl/Autodiff/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "txl/Autodiff/Passes.h.inc"

} // namespace txl
} // namespace mlir

#endif // TXL_AUTODIFF_PASSES_H
