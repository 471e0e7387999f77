//===- PrecompiledHeaders.h - Headers precompiled for the compiler --------===//
//
// Build-time only: no source includes this file. CMake precompiles it once
// (with the flags of obj.MLIRTxl) and every library of dialects/ and lib/
// reuses the result (TXL_PRECOMPILED_HEADERS, the top-level CMakeLists.txt).
// Parsing these headers is most of a translation unit's compile time (about
// 20 of 25 s at -O3); with the precompiled header a unit takes 3 to 5 s.
// The list is the MLIR headers most units include and the txl dialect's ops
// and conversion passes, which include most of the others; a unit still
// includes what it uses, so the build is the same without this file.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"
