//===- Passes.h - txl conversions --------------------------------*- C++ -*-===//
#ifndef TXL_CONVERSION_PASSES_H
#define TXL_CONVERSION_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "txl/Conversion/Precision.h"
#include "txl/IR/TxlDialect.h"

namespace mlir {
class RewritePatternSet;
namespace txl {

#define GEN_PASS_DECL
#include "txl/Conversion/Passes.h.inc"

/// Patterns lowering every txl op to linalg/tensor/arith/math, one file per
/// op family (Elementwise, Contraction, Normalization, Attention, Memory,
/// Adaptive, Dropout; Gradients for the generic backward ops, whose attention
/// and adaptive ones live with their forward ops; Optimizer).
void populateTxlElementwiseToLinalgPatterns(RewritePatternSet &patterns);
void populateTxlDropoutToLinalgPatterns(RewritePatternSet &patterns);
void populateTxlContractionToLinalgPatterns(RewritePatternSet &patterns);
void populateTxlNormalizationToLinalgPatterns(RewritePatternSet &patterns);
/// `stridedAttention`: ConvertTxlToLinalgPass's strided-attention option.
void populateTxlAttentionToLinalgPatterns(RewritePatternSet &patterns,
                                          bool stridedAttention = false);
void populateTxlMemoryToLinalgPatterns(RewritePatternSet &patterns);
/// Lowers each txl.take_last of a txl.concat_mem under `root` (a segment's
/// new memory, official _update_mems) to the two row ranges it keeps, each
/// inserted into the result, without the concatenation; concatenations left
/// without uses are erased. convert-txl-to-linalg runs it first.
void lowerNewMemories(Operation *root);
void populateTxlAdaptiveToLinalgPatterns(RewritePatternSet &patterns);
/// Whether buffers `a` and `b` are the same memory: one value, or two
/// subviews of one buffer with the same offsets, sizes and strides (what
/// bufferizing an in-place update copies onto itself).
bool isSameView(Value a, Value b);
void populateTxlGradientToLinalgPatterns(RewritePatternSet &patterns);
void populateTxlOptimizerToLinalgPatterns(RewritePatternSet &patterns);

/// The i32 attribute txl-dynamic-shared-memory sets on a kernel gpu.func:
/// the bytes of dynamic shared memory each of its launches passes.
inline constexpr llvm::StringLiteral kDynamicSharedMemoryAttrName =
    "txl.dynamic_shared_memory";

/// Declares that gpu.launch_func may read and write each memref operand
/// (MemoryEffectOpInterface), so that buffer deallocation accepts the
/// launches txl-rel-attention-to-gpu adds before bufferization.
void registerGpuLaunchEffectsExternalModel(DialectRegistry &registry);

#define GEN_PASS_REGISTRATION
#include "txl/Conversion/Passes.h.inc"

} // namespace txl
} // namespace mlir

#endif // TXL_CONVERSION_PASSES_H
