//===- MmaFragments.cpp - The tensor-core kernels' products ---------------===//
//
// txl/Conversion/MmaFragments.h: the fragments' layout and the warpgroup
// product's subgroup form, shared by txl-mma-to-nvvm and txl-emulate-mma.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/MmaFragments.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace mlir::txl {

/// The operand type (bf16 or f16) when `op` is one of the two forms the
/// tensor-core kernels use: m16n8k16, A vector<4x2xT>, B vector<2x2xT>, C
/// and D vector<2x2xf32>; else null.
FloatType getM16N8K16OperandType(nvgpu::MmaSyncOp op) {
  auto is = [](Value v, int64_t rows, Type element) {
    auto type = cast<VectorType>(v.getType());
    return type.getShape() == ArrayRef<int64_t>{rows, 2} &&
           type.getElementType() == element;
  };
  Builder b(op.getContext());
  SmallVector<int64_t> shape =
      llvm::to_vector(llvm::map_range(op.getMmaShape(), [](Attribute a) {
        return cast<IntegerAttr>(a).getInt();
      }));
  for (FloatType operand : {FloatType(b.getBF16Type()), b.getF16Type()})
    if (shape == ArrayRef<int64_t>{16, 8, 16} &&
        is(op.getMatrixA(), 4, operand) && is(op.getMatrixB(), 2, operand) &&
        is(op.getMatrixC(), 2, b.getF32Type()) &&
        is(op.getRes(), 2, b.getF32Type()))
      return operand;
  return {};
}

/// The scalars of a [rows, 2] fragment in [register][element] order.
SmallVector<Value> fragmentElements(ImplicitLocOpBuilder &b, Value fragment) {
  int64_t rows = cast<VectorType>(fragment.getType()).getDimSize(0);
  SmallVector<Value> result;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t e = 0; e < 2; ++e)
      result.push_back(
          vector::ExtractOp::create(b, fragment, ArrayRef<int64_t>{r, e}));
  return result;
}

/// The 32-bit registers of a [rows, 2] bf16 or f16 fragment: elements
/// [r][0] in the low and [r][1] in the high half of register r, as PTX's
/// .bf16x2 and .f16x2 operands.
SmallVector<Value> packRegisters(ImplicitLocOpBuilder &b, Value fragment) {
  Type i16 = b.getI16Type(), i32 = b.getI32Type();
  SmallVector<Value> scalars = fragmentElements(b, fragment), registers;
  auto half = [&](Value x) {
    return arith::ExtUIOp::create(b, i32, arith::BitcastOp::create(b, i16, x));
  };
  for (size_t r = 0; r < scalars.size(); r += 2) {
    Value high = arith::ShLIOp::create(b, half(scalars[r + 1]),
                                       arith::ConstantIntOp::create(b, 16, 32));
    registers.push_back(arith::OrIOp::create(b, half(scalars[r]), high));
  }
  return registers;
}

/// Whether `type` is in workgroup (shared) memory: the gpu dialect's
/// workgroup address space, or NVVM's shared memory space (3), which the
/// tensor-core kernels' tiles use.
bool isWorkgroupMemory(MemRefType type) {
  if (gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(type))
    return true;
  auto space = dyn_cast_or_null<IntegerAttr>(type.getMemorySpace());
  return space &&
         space.getInt() == static_cast<int64_t>(NVVM::NVVMMemorySpace::Shared);
}

/// The stride dimension byte offset of `op`'s tile: the bytes of one row
/// of core matrices (2 k_steps of them).
int64_t warpgroupStrideBytes(txl::WarpgroupMmaOp op) {
  return op.getKSteps() * MatrixDescriptor::kStepBytes;
}

/// The [k_steps][4 x 2] A fragments or [n_blocks][2 x 2] accumulators of a
/// txl.warpgroup_mma operand, each as the [rows, 2] vector of one mma.sync.
SmallVector<Value> warpgroupSlices(ImplicitLocOpBuilder &b, Value v) {
  SmallVector<Value> result;
  for (int64_t i = 0, n = cast<VectorType>(v.getType()).getDimSize(0); i < n;
       ++i)
    result.push_back(vector::ExtractOp::create(b, v, ArrayRef<int64_t>{i}));
  return result;
}

/// txl.warpgroup_mma as the m16n8k16 products of each subgroup's own 16
/// rows: lane 4 g + t reads B(k, n) of its fragments (k = 2 t + e + 8 r, n
/// = g, of n-block nb and k-step s) at the byte address that the k-step's
/// descriptor gives, start + nb SBO + g 16 + r LBO + (2 t + e) 2, with the
/// tile's own address taken as 0 and the fields decoded as wgmma decodes
/// them; so the tile layout and the descriptors that sm_90a's wgmma reads
/// are what this form computes with.
void expandToSubgroupProducts(txl::WarpgroupMmaOp op) {
  ImplicitLocOpBuilder b(op.getLoc(), op);
  Type i64 = b.getI64Type();
  auto c64 = [&](int64_t v) { return i64Constant(b, v); };
  Value lane = arith::IndexCastOp::create(
      b, i64, gpu::LaneIdOp::create(b, /*upper_bound=*/IntegerAttr()));
  Value g = arith::DivUIOp::create(b, lane, c64(4));
  Value t = arith::RemUIOp::create(b, lane, c64(4));
  int64_t kBlocks = 2 * op.getKSteps();
  SmallVector<Value> a = warpgroupSlices(b, op.getA()),
                     acc = warpgroupSlices(b, op.getAcc());
  auto index = [&](Value v) {
    return arith::IndexCastOp::create(b, b.getIndexType(), v);
  };
  for (int64_t s = 0; s < op.getKSteps(); ++s) {
    Value descriptor = MatrixDescriptor::encode(
        b, c64(s * MatrixDescriptor::kStepBytes),
        MatrixDescriptor::kCoreMatrixBytes, warpgroupStrideBytes(op));
    Value start = MatrixDescriptor::field(b, descriptor, 0);
    Value lbo = MatrixDescriptor::field(b, descriptor, 16);
    Value sbo = MatrixDescriptor::field(b, descriptor, 32);
    Value rowBytes =
        arith::AddIOp::create(b, start, arith::MulIOp::create(b, g, c64(16)));
    for (int64_t nb = 0; nb < op.getNBlocks(); ++nb) {
      Value blockBytes = arith::AddIOp::create(
          b, rowBytes, arith::MulIOp::create(b, sbo, c64(nb)));
      SmallVector<Value> fragment;
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t e = 0; e < 2; ++e) {
          Value k = arith::AddIOp::create(
              b, arith::MulIOp::create(b, t, c64(2)), c64(e));
          Value bytes = arith::AddIOp::create(
              b,
              arith::AddIOp::create(b, blockBytes,
                                    arith::MulIOp::create(b, lbo, c64(r))),
              arith::MulIOp::create(b, k, c64(2)));
          // The element's position in the packed [n/8][k/8][8][8] tile.
          Value element = arith::DivUIOp::create(b, bytes, c64(2));
          Value coreMatrix = arith::DivUIOp::create(b, element, c64(64));
          fragment.push_back(memref::LoadOp::create(
              b, op.getB(),
              ValueRange{
                  index(arith::DivUIOp::create(b, coreMatrix, c64(kBlocks))),
                  index(arith::RemUIOp::create(b, coreMatrix, c64(kBlocks))),
                  index(arith::RemUIOp::create(
                      b, arith::DivUIOp::create(b, element, c64(8)), c64(8))),
                  index(arith::RemUIOp::create(b, element, c64(8)))}));
        }
      Value bOp = vector::FromElementsOp::create(
          b, VectorType::get({2, 2}, op.getA().getType().getElementType()),
          fragment);
      acc[nb] = nvgpu::MmaSyncOp::create(b, a[s], bOp, acc[nb],
                                         ArrayRef<int64_t>{16, 8, 16});
    }
  }
  Value result =
      arith::ConstantOp::create(b, op.getType(), b.getZeroAttr(op.getType()));
  for (int64_t nb = 0; nb < op.getNBlocks(); ++nb)
    result =
        vector::InsertOp::create(b, acc[nb], result, ArrayRef<int64_t>{nb});
  op.replaceAllUsesWith(result);
  op.erase();
}

/// Expands every txl.warpgroup_mma of `module` into subgroup products.
void expandWarpgroupProducts(gpu::GPUModuleOp module) {
  SmallVector<txl::WarpgroupMmaOp> ops;
  module.walk([&](txl::WarpgroupMmaOp op) { ops.push_back(op); });
  for (txl::WarpgroupMmaOp op : ops)
    expandToSubgroupProducts(op);
}

/// Fails the pass on every nvgpu.mma.sync left in `module`.
LogicalResult checkMmaLowered(gpu::GPUModuleOp module) {
  WalkResult walk = module.walk([](nvgpu::MmaSyncOp op) {
    op.emitOpError("is not lowered: txlc's kernels use m16n8k16 with "
                   "vector<4x2xbf16> A and vector<2x2xbf16> B, or "
                   "vector<4x2xf16> A and vector<2x2xf16> B, and "
                   "vector<2x2xf32> accumulators only");
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

} // namespace mlir::txl
