//===- InitAll.h - Register everything txl tools need ------------*- C++ -*-===//
#ifndef TXL_INITALL_H
#define TXL_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir {
namespace txl {

/// Registers the txl dialect, every upstream dialect and extension the
/// pipelines use (bufferization external models included), and the LLVM IR
/// translations.
void registerAllTxlDialects(DialectRegistry &registry);

/// Registers every txl pass and pipeline, and the upstream passes, so that
/// `txl-opt` accepts any of them by flag.
void registerAllTxlPasses();

} // namespace txl
} // namespace mlir

#endif // TXL_INITALL_H
