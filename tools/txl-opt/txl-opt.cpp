//===- txl-opt.cpp - mlir-opt with the txl dialect and passes ----*- C++ -*-===//

#include "txl/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::txl::registerAllTxlPasses();
  mlir::DialectRegistry registry;
  mlir::txl::registerAllTxlDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "txl optimizer driver\n", registry));
}
