//===- TxlOps.h - txl dialect operations -------------------------*- C++ -*-===//
#ifndef TXL_IR_TXLOPS_H
#define TXL_IR_TXLOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "txl/IR/TxlDialect.h"

#include "txl/IR/TxlInterfaces.h.inc"

#define GET_OP_CLASSES
#include "txl/IR/TxlOps.h.inc"

#endif // TXL_IR_TXLOPS_H
