//===- txl-opt.cpp - mlir-opt with the txl dialect and passes ----*- C++
//-*-===//
//
// The txl dialect, every txl and upstream pass and pipeline, and the
// test-only passes of test/lib.
//
//===----------------------------------------------------------------------===//

#include "TestPasses.h"
#include "txl/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::txl::registerAllTxlPasses();
  // Test-only passes (test/lib): txl-opt registers them, txlc never does.
  mlir::txl::test::registerTestAttentionFaultPasses();
  mlir::DialectRegistry registry;
  mlir::txl::registerAllTxlDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "txl optimizer driver\n", registry));
}
