//===- MmaFragments.h - The tensor-core kernels' products ------*- C++ -*-===//
//
// What the two lowerings of the tensor-core kernels' products share:
// txl-mma-to-nvvm (CUDA, lib/Conversion/KernelsToNvvm) and txl-emulate-mma
// (OpenCL, lib/Conversion/KernelsToSpirv). The products are nvgpu.mma.sync
// m16n8k16 (bf16 or f16 operands, f32 accumulators) and txl.warpgroup_mma,
// as the kernel builders of lib/Conversion/TxlToGpu write them; this is
// their fragments' register layout, wgmma's matrix descriptors, and a
// warpgroup product as the mma.sync products of its subgroups
// (MmaFragments.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_CONVERSION_MMAFRAGMENTS_H
#define TXL_CONVERSION_MMAFRAGMENTS_H

#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::txl {

/// The operand type (bf16 or f16) when `op` is one of the two forms the
/// tensor-core kernels use: m16n8k16, A vector<4x2xT>, B vector<2x2xT>, C
/// and D vector<2x2xf32>; else null.
FloatType getM16N8K16OperandType(nvgpu::MmaSyncOp op);

/// The scalars of a [rows, 2] fragment in [register][element] order.
SmallVector<Value> fragmentElements(ImplicitLocOpBuilder &b, Value fragment);

/// The 32-bit registers of a [rows, 2] bf16 or f16 fragment: elements
/// [r][0] in the low and [r][1] in the high half of register r, as PTX's
/// .bf16x2 and .f16x2 operands.
SmallVector<Value> packRegisters(ImplicitLocOpBuilder &b, Value fragment);

/// Whether `type` is in workgroup (shared) memory: the gpu dialect's
/// workgroup address space, or NVVM's shared memory space (3), which the
/// tensor-core kernels' tiles use.
bool isWorkgroupMemory(MemRefType type);

/// The i64 constant `v`.
inline Value i64Constant(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIntOp::create(b, v, 64);
}

/// wgmma's shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor
/// Format"), no swizzle: the start address in bits 0-13, the leading
/// dimension byte offset (between core matrices along K, for a K-major
/// operand) in bits 16-29 and the stride dimension byte offset (along M or
/// N) in bits 32-45, each in units of 16 bytes; the base offset (bits
/// 49-51) and the swizzle mode (62-63) are 0.
struct MatrixDescriptor {
  /// Bytes of one 8 × 8 core matrix of 2-byte elements, the leading
  /// dimension byte offset of txl.warpgroup_mma's tiles.
  static constexpr int64_t kCoreMatrixBytes = 128;
  /// Bytes of one 16-deep k-step of a tile: two core matrices along K.
  static constexpr int64_t kStepBytes = 2 * kCoreMatrixBytes;

  /// The i64 descriptor of the matrix at byte address `start` (i64; of the
  /// shared memory window, only bits 4-17 are kept) with offsets `lbo` and
  /// `sbo` (multiples of 16 below 2^18).
  static Value encode(ImplicitLocOpBuilder &b, Value start, int64_t lbo,
                      int64_t sbo) {
    auto c64 = [&](int64_t v) { return i64Constant(b, v); };
    Value field = arith::ShRUIOp::create(
        b, arith::AndIOp::create(b, start, c64(0x3ffff)), c64(4));
    int64_t offsets = ((lbo >> 4) << 16) | ((sbo >> 4) << 32);
    return arith::OrIOp::create(b, field, c64(offsets));
  }
  /// The byte count in the 14-bit field at bit `shift` of `descriptor`.
  static Value field(ImplicitLocOpBuilder &b, Value descriptor, int64_t shift) {
    auto c64 = [&](int64_t v) { return i64Constant(b, v); };
    Value bits = arith::AndIOp::create(
        b, arith::ShRUIOp::create(b, descriptor, c64(shift)), c64(0x3fff));
    return arith::ShLIOp::create(b, bits, c64(4));
  }
};

/// The stride dimension byte offset of `op`'s tile: the bytes of one row
/// of core matrices (k_blocks of them).
int64_t warpgroupStrideBytes(txl::WarpgroupMmaOp op);

/// The [k_steps][4 x 2] A fragments or [n_blocks][2 x 2] accumulators of a
/// txl.warpgroup_mma operand, each as the [rows, 2] vector of one mma.sync.
SmallVector<Value> warpgroupSlices(ImplicitLocOpBuilder &b, Value v);

/// `op` as the m16n8k16 products of each subgroup's own 16 rows, each lane
/// reading its B fragment through wgmma's matrix descriptors
/// (MmaFragments.cpp).
void expandToSubgroupProducts(txl::WarpgroupMmaOp op);

/// Expands every txl.warpgroup_mma of `module` (async or not) into subgroup
/// products, computed where they stand, and drops every
/// txl.warpgroup_mma_wait (its result is its product).
void expandWarpgroupProducts(gpu::GPUModuleOp module);

/// Fails (with an error on the op) when an nvgpu.mma.sync is left in
/// `module`.
LogicalResult checkMmaLowered(gpu::GPUModuleOp module);

} // namespace mlir::txl

#endif // TXL_CONVERSION_MMAFRAGMENTS_H
