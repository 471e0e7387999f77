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
/// .bf16x2 and .f16x2 operands. Each register is its pair as a 2-element
/// vector bitcast to i32, so that a pair rounded from f32 (the
/// probabilities) becomes one cvt.rn.bf16x2.f32 (F2FP) and a pair that an
/// ldmatrix delivered stays the register it came in.
SmallVector<Value> packRegisters(ImplicitLocOpBuilder &b, Value fragment) {
  SmallVector<Value> scalars = fragmentElements(b, fragment), registers;
  Type element = scalars.front().getType();
  for (size_t r = 0; r < scalars.size(); r += 2) {
    Value pair =
        vector::FromElementsOp::create(b, VectorType::get({2}, element),
                                       ValueRange{scalars[r], scalars[r + 1]});
    Value bits = vector::BitCastOp::create(
        b, VectorType::get({1}, b.getI32Type()), pair);
    registers.push_back(
        vector::ExtractOp::create(b, bits, ArrayRef<int64_t>{0}));
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
/// of core matrices (k_blocks of them).
int64_t warpgroupStrideBytes(txl::WarpgroupMmaOp op) {
  return op.getKBlocks() * MatrixDescriptor::kCoreMatrixBytes;
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
/// rows, their B fragments read by ldmatrix: the 2 core matrices of
/// n-block nb at k-step s (r = 0, 1: k 8 r + [0, 8)) start at byte start +
/// nb SBO + r LBO of the tile, with the k-step's descriptor decoded as
/// wgmma decodes it (the tile's own address taken as 0), so the tile
/// layout and the descriptors that sm_90a's wgmma reads are what this form
/// computes with. One nvgpu.ldmatrix of 4 core matrices takes two n-blocks
/// (an odd last one, 2): lane 8 m + i gives the address of row i of core
/// matrix m (n-block nb + m / 2, r = m % 2), 16 bytes on from row i - 1;
/// lane 4 g + t receives B(k = 8 r + 2 t + e, n = g) of each, as
/// mma.sync's B fragment holds them.
void expandToSubgroupProducts(txl::WarpgroupMmaOp op) {
  ImplicitLocOpBuilder b(op.getLoc(), op);
  Type i64 = b.getI64Type();
  auto c64 = [&](int64_t v) { return i64Constant(b, v); };
  Value lane = arith::IndexCastOp::create(
      b, i64, gpu::LaneIdOp::create(b, /*upper_bound=*/IntegerAttr()));
  // The core matrix (m) and the row (i) whose address the lane gives.
  Value m = arith::DivUIOp::create(b, lane, c64(8));
  Value i = arith::RemUIOp::create(b, lane, c64(8));
  int64_t kBlocks = op.getKBlocks();
  SmallVector<Value> a = warpgroupSlices(b, op.getA()),
                     acc = warpgroupSlices(b, op.getAcc());
  auto index = [&](Value v) {
    return arith::IndexCastOp::create(b, b.getIndexType(), v);
  };
  Type operand = op.getA().getType().getElementType();
  for (int64_t s = 0; s < op.getKSteps(); ++s) {
    Value descriptor = MatrixDescriptor::encode(
        b, c64(s * MatrixDescriptor::kStepBytes),
        MatrixDescriptor::kCoreMatrixBytes, warpgroupStrideBytes(op));
    Value start = MatrixDescriptor::field(b, descriptor, 0);
    Value lbo = MatrixDescriptor::field(b, descriptor, 16);
    Value sbo = MatrixDescriptor::field(b, descriptor, 32);
    for (int64_t nb = 0; nb < op.getNBlocks(); nb += 2) {
      int64_t matrices = std::min<int64_t>(4, 2 * (op.getNBlocks() - nb));
      // With 2 matrices, lanes 16-31 repeat lanes 0-15's addresses (PTX
      // reads only lanes 0-15's).
      Value lm = matrices == 4 ? m : arith::RemUIOp::create(b, m, c64(2));
      Value bytes = arith::AddIOp::create(
          b,
          arith::AddIOp::create(
              b, start,
              arith::MulIOp::create(
                  b, sbo,
                  arith::AddIOp::create(
                      b, c64(nb), arith::DivUIOp::create(b, lm, c64(2))))),
          arith::AddIOp::create(
              b,
              arith::MulIOp::create(b, lbo,
                                    arith::RemUIOp::create(b, lm, c64(2))),
              arith::MulIOp::create(b, i, c64(16))));
      // The row's first element in the packed [n/8][k/8][8][8] tile.
      Value element = arith::DivUIOp::create(b, bytes, c64(2));
      Value coreMatrix = arith::DivUIOp::create(b, element, c64(64));
      Value fragments = nvgpu::LdMatrixOp::create(
          b, VectorType::get({matrices, 2}, operand), op.getB(),
          ValueRange{
              index(arith::DivUIOp::create(b, coreMatrix, c64(kBlocks))),
              index(arith::RemUIOp::create(b, coreMatrix, c64(kBlocks))),
              index(arith::RemUIOp::create(
                  b, arith::DivUIOp::create(b, element, c64(8)), c64(8))),
              index(arith::RemUIOp::create(b, element, c64(8)))},
          /*transpose=*/false, /*numTiles=*/matrices);
      for (int64_t half = 0; half < matrices / 2; ++half) {
        SmallVector<Value> fragment;
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t e = 0; e < 2; ++e)
            fragment.push_back(vector::ExtractOp::create(
                b, fragments, ArrayRef<int64_t>{2 * half + r, e}));
        Value bOp = vector::FromElementsOp::create(
            b, VectorType::get({2, 2}, operand), fragment);
        acc[nb + half] = nvgpu::MmaSyncOp::create(b, a[s], bOp, acc[nb + half],
                                                  ArrayRef<int64_t>{16, 8, 16});
      }
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

/// Expands every txl.warpgroup_mma of `module` into subgroup products
/// (`async` ones too: computed where they stand), and each
/// txl.warpgroup_mma_wait into its product, ready.
void expandWarpgroupProducts(gpu::GPUModuleOp module) {
  SmallVector<txl::WarpgroupMmaWaitOp> waits;
  module.walk([&](txl::WarpgroupMmaWaitOp op) { waits.push_back(op); });
  for (txl::WarpgroupMmaWaitOp op : waits) {
    op.replaceAllUsesWith(op.getProduct());
    op.erase();
  }
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
