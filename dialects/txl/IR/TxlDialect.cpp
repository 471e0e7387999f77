//===- TxlDialect.cpp - The txl dialect --------------------------*- C++ -*-===//
#include "txl/IR/TxlDialect.h"
#include "txl/IR/TxlOps.h"

using namespace mlir;
using namespace mlir::txl;

#include "txl/IR/TxlOpsDialect.cpp.inc"

void TxlDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "txl/IR/TxlOps.cpp.inc"
      >();
}
