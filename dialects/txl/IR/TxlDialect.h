//===- TxlDialect.h - The txl dialect ----------------------------*- C++ -*-===//
#ifndef TXL_IR_TXLDIALECT_H
#define TXL_IR_TXLDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "txl/IR/TxlOpsDialect.h.inc"

#endif // TXL_IR_TXLDIALECT_H
