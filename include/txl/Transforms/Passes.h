//===- Passes.h - txl-level transformations ----------------------*- C++ -*-===//
#ifndef TXL_TRANSFORMS_PASSES_H
#define TXL_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "txl/IR/TxlDialect.h"

namespace mlir {
namespace txl {

#define GEN_PASS_DECL
#include "txl/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "txl/Transforms/Passes.h.inc"

} // namespace txl
} // namespace mlir

#endif // TXL_TRANSFORMS_PASSES_H
