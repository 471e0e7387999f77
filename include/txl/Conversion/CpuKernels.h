//===- CpuKernels.h - Generated CPU kernels in two widths --------*- C++
//-*-===//
//
// What the CPU kernel passes (txl-rel-attention-to-cpu,
// txl-linear-nll-to-cpu) share: kernel argument types, and the 256-bit and
// 512-bit forms of one kernel with the call that picks one at run time.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_CONVERSION_CPUKERNELS_H
#define TXL_CONVERSION_CPUKERNELS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::txl {

/// The memref of `rank` dynamic dimensions of `et` with a fully dynamic
/// strided layout (a kernel operand: a view of whatever layout
/// bufferization gives the tensor); with `unitInner`, the innermost stride
/// is 1 (operands read by vector loads or passed to BLAS).
MemRefType cpuKernelOperandType(MLIRContext *ctx, int64_t rank, Type et,
                                bool unitInner = false);

/// The byte the runtime sets when the CPU runs x86-64-v4 code
/// (txl/Target/ObjectEmitter.h, kX86_64V4Flag;
/// runtime/src/device/host/CpuBlas.cpp).
inline constexpr llvm::StringLiteral kCpuX86_64V4Flag = "txl_rt_x86_64_v4";

/// Whether the CPU runs x86-64-v4 code: the runtime's byte, declared in
/// `module` on first use, nonzero (i1).
Value cpuHasX86_64V4(ImplicitLocOpBuilder &b, ModuleOp module);

/// The forms of one kernel: `narrow` (256-bit vectors, the module's CPU),
/// and when both are compiled `wide` (512-bit, compiled for x86-64-v4),
/// which runs when the runtime says the CPU has it.
struct CpuKernels {
  func::FuncOp narrow, wide;
};

/// Marks `kernel` to be compiled for x86-64-v4 whatever the module's CPU
/// (the llvm.func's target_cpu).
void setX86_64V4(func::FuncOp kernel);

/// The kernels `create(lanes)` makes: with `lanes` (a forced width), that
/// one form alone; with 0, the 8-lane form and the 16-lane form marked
/// x86-64-v4 (setX86_64V4), between which callCpuKernels chooses.
CpuKernels
getOrCreateCpuKernels(int64_t lanes,
                      llvm::function_ref<func::FuncOp(int64_t)> create);

/// The call of `kernels` with `args` at `b`: with a wide one, of the one
/// the CPU runs (scf.if on cpuHasX86_64V4).
void callCpuKernels(ImplicitLocOpBuilder &b, ModuleOp module,
                    const CpuKernels &kernels, ArrayRef<Value> args);

/// exp(x) of a vector of f32 for x <= 88, the kernels' own: exp(x) = 2^n ·
/// exp(f) with n = round(x / ln 2) and f = x − n·ln 2 in [−ln 2 / 2, ln 2 /
/// 2] (Cody-Waite: ln 2 in two parts), exp(f) by its Taylor polynomial of
/// degree 6 (relative error < 2e-7), 2^n added to the exponent bits. x is
/// first raised to −87 (exp(−87) ≈ 1.6e-38, so 2^n stays a normal number:
/// terms below that are counted as exp(−87), and −inf gives 1.6e-38, not
/// 0); no overflow check, so x must be at most 88. A NaN stays NaN (the
/// clamp is a select that keeps it: one vmaxps with the NaN operand
/// last). About 13 instructions a vector where math.exp's polynomial
/// (which also handles overflow and −inf) takes about 19.
Value expF32UpTo88(ImplicitLocOpBuilder &b, Value x);

} // namespace mlir::txl

#endif // TXL_CONVERSION_CPUKERNELS_H
