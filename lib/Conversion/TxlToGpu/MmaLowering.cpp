//===- MmaLowering.cpp - nvgpu.mma.sync for the two GPU targets -----------===//
//
// The tensor-core kernels' warp-level products (nvgpu.mma.sync m16n8k16,
// bf16 or f16 operands, f32 accumulators) and warpgroup products
// (txl.warpgroup_mma) lowered for each target:
//   txl-mma-to-nvvm   CUDA: nvvm.mma.sync on bf16x2 registers (packed in
//                     i32) or f16x2 vectors (upstream convert-nvgpu-to-nvvm
//                     cannot deduce the PTX types of bf16 operands); a
//                     warpgroup product as wgmma.mma_async on sm_90a, else
//                     as the mma.sync products of its subgroups;
//   txl-emulate-mma   OpenCL: the same product computed by the subgroup from
//                     the same register layout with shuffles, and the
//                     rounding to bf16 or f16 emulated on f32 bits, so that
//                     the kernels that run on tensor cores are checked
//                     numerically on the CPU; a warpgroup product as the
//                     mma.sync products of its subgroups, each lane reading
//                     its B fragment through wgmma's matrix descriptors.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/KernelModule.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::txl {
#define GEN_PASS_DEF_MMATONVVMPASS
#define GEN_PASS_DEF_EMULATEMMAPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;
using namespace mlir::txl;

namespace {

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
SmallVector<Value> elements(ImplicitLocOpBuilder &b, Value fragment) {
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
  SmallVector<Value> scalars = elements(b, fragment), registers;
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

/// The i64 constant `v`.
Value i64Constant(ImplicitLocOpBuilder &b, int64_t v) {
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
/// of core matrices (2 k_steps of them).
int64_t strideBytes(txl::WarpgroupMmaOp op) {
  return op.getKSteps() * MatrixDescriptor::kStepBytes;
}

/// The [k_steps][4 x 2] A fragments or [n_blocks][2 x 2] accumulators of a
/// txl.warpgroup_mma operand, each as the [rows, 2] vector of one mma.sync.
SmallVector<Value> slices(ImplicitLocOpBuilder &b, Value v) {
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
  SmallVector<Value> a = slices(b, op.getA()), acc = slices(b, op.getAcc());
  auto index = [&](Value v) {
    return arith::IndexCastOp::create(b, b.getIndexType(), v);
  };
  for (int64_t s = 0; s < op.getKSteps(); ++s) {
    Value descriptor = MatrixDescriptor::encode(
        b, c64(s * MatrixDescriptor::kStepBytes),
        MatrixDescriptor::kCoreMatrixBytes, strideBytes(op));
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

/// txl.warpgroup_mma as sm_90a's wgmma: wgmma.fence, one
/// wgmma.mma_async.m64nNk16 per k-step (A from registers, B by descriptor,
/// the f32 accumulators in place), then commit and wait for the group, so
/// that the result is in registers where the op stands.
LogicalResult lowerToWgmma(txl::WarpgroupMmaOp op) {
  // A descriptor holds bits 4-17 of the address: the tile must be 16-byte
  // aligned, which its element type (2 bytes) does not give a workgroup
  // attribution by itself.
  auto tile = dyn_cast<BlockArgument>(op.getB());
  auto func = tile ? dyn_cast<gpu::GPUFuncOp>(tile.getOwner()->getParentOp())
                   : gpu::GPUFuncOp();
  if (!func || tile.getArgNumber() < func.getFirstWorkgroupAttributionIndex())
    return op.emitOpError("needs b to be a workgroup attribution of its "
                          "kernel for wgmma (its 16-byte alignment)");
  func.setWorkgroupAttributionAttr(
      tile.getArgNumber() - func.getFirstWorkgroupAttributionIndex(),
      LLVM::LLVMDialect::getAlignAttrName(),
      IntegerAttr::get(IntegerType::get(op.getContext(), 64), 16));
  ImplicitLocOpBuilder b(op.getLoc(), op);
  Type i64 = b.getI64Type(), f32 = b.getF32Type();
  Value base = arith::IndexCastUIOp::create(
      b, i64, memref::ExtractAlignedPointerAsIndexOp::create(b, op.getB()));
  int64_t n = 8 * op.getNBlocks(), accCount = n / 2;
  SmallVector<Value> acc;
  for (Value block : slices(b, op.getAcc()))
    llvm::append_range(acc, elements(b, block));
  StringRef type =
      op.getA().getType().getElementType().isBF16() ? "bf16" : "f16";
  // $0 .. $(accCount - 1): the accumulators, tied to the first accCount
  // inputs; then A's four registers and B's descriptor.
  std::string asmString, constraints;
  llvm::raw_string_ostream os(asmString), cs(constraints);
  os << "wgmma.mma_async.sync.aligned.m64n" << n << "k16.f32." << type << "."
     << type << " {";
  for (int64_t i = 0; i < accCount; ++i)
    os << (i ? ", $" : "$") << i;
  os << "}, {$" << 2 * accCount << ", $" << 2 * accCount + 1 << ", $"
     << 2 * accCount + 2 << ", $" << 2 * accCount + 3 << "}, $"
     << 2 * accCount + 4 << ", 1, 1, 1, 0;";
  for (int64_t i = 0; i < accCount; ++i)
    cs << "=f,";
  for (int64_t i = 0; i < accCount; ++i)
    cs << i << ",";
  cs << "r,r,r,r,l";
  SmallVector<Type> resultTypes(accCount, f32);
  auto resultType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), resultTypes);
  // A's registers and B's descriptors are formed before the fence, which
  // orders the register writes before it with the products after it.
  SmallVector<SmallVector<Value>> stepOperands;
  for (Value a : slices(b, op.getA())) {
    Value start = arith::AddIOp::create(
        b, base,
        arith::ConstantIntOp::create(
            b, stepOperands.size() * MatrixDescriptor::kStepBytes, 64));
    stepOperands.push_back(packRegisters(b, a));
    stepOperands.back().push_back(MatrixDescriptor::encode(
        b, start, MatrixDescriptor::kCoreMatrixBytes, strideBytes(op)));
  }
  NVVM::WgmmaFenceAlignedOp::create(b);
  for (ArrayRef<Value> step : stepOperands) {
    SmallVector<Value> operands(acc);
    llvm::append_range(operands, step);
    auto wgmma = LLVM::InlineAsmOp::create(
        b, resultType, operands, asmString, constraints,
        /*has_side_effects=*/true, /*is_align_stack=*/false,
        LLVM::tailcallkind::TailCallKind::None, /*asm_dialect=*/{},
        /*operand_attrs=*/{});
    for (int64_t i = 0; i < accCount; ++i)
      acc[i] = LLVM::ExtractValueOp::create(b, wgmma.getResult(0), i);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b);
  NVVM::WgmmaWaitGroupSyncOp::create(b, 0);
  op.replaceAllUsesWith(
      vector::FromElementsOp::create(b, op.getType(), acc).getResult());
  op.erase();
  return success();
}

/// wgmma reads its tiles through the async proxy: in every kernel with a
/// warpgroup product, each barrier is preceded by
/// fence.proxy.async.shared::cta, so that the tiles written before it
/// (generic proxy) are what the next wgmma reads.
void fenceBarriersForWgmma(gpu::GPUModuleOp module) {
  module.walk([](gpu::GPUFuncOp func) {
    if (!func.walk([](txl::WarpgroupMmaOp) { return WalkResult::interrupt(); })
             .wasInterrupted())
      return;
    func.walk([](gpu::BarrierOp barrier) {
      ImplicitLocOpBuilder b(barrier.getLoc(), barrier);
      LLVM::InlineAsmOp::create(
          b, /*res=*/Type(), ValueRange{}, "fence.proxy.async.shared::cta;", "",
          /*has_side_effects=*/true, /*is_align_stack=*/false,
          LLVM::tailcallkind::TailCallKind::None, /*asm_dialect=*/{},
          /*operand_attrs=*/{});
    });
  });
}

/// Expands every txl.warpgroup_mma of `module` into subgroup products.
void expandWarpgroupProducts(gpu::GPUModuleOp module) {
  SmallVector<txl::WarpgroupMmaOp> ops;
  module.walk([&](txl::WarpgroupMmaOp op) { ops.push_back(op); });
  for (txl::WarpgroupMmaOp op : ops)
    expandToSubgroupProducts(op);
}

/// OpenCL has no bf16 or f16 memory: each bf16 or f16 workgroup
/// attribution becomes f32, holding the same (rounded) values; its loads
/// round back to the narrow type for their users (exactly), its stores
/// widen what they store (which txl-emulate-mma's rounding then keeps).
LogicalResult widenNarrowAttributions(gpu::GPUModuleOp module) {
  WalkResult walk = module.walk([](gpu::GPUFuncOp func) {
    for (BlockArgument tile : func.getWorkgroupAttributions()) {
      auto type = cast<MemRefType>(tile.getType());
      auto narrow = dyn_cast<FloatType>(type.getElementType());
      if (!narrow || !(narrow.isBF16() || narrow.isF16()))
        continue;
      Type f32 = Float32Type::get(func.getContext());
      tile.setType(MemRefType::get(type.getShape(), f32, type.getLayout(),
                                   type.getMemorySpace()));
      for (Operation *user : llvm::to_vector(tile.getUsers())) {
        ImplicitLocOpBuilder b(user->getLoc(), user);
        if (auto load = dyn_cast<memref::LoadOp>(user)) {
          b.setInsertionPointAfter(load);
          load.getResult().setType(f32);
          auto round = arith::TruncFOp::create(b, narrow, load.getResult());
          load.getResult().replaceAllUsesExcept(round, round);
        } else if (auto store = dyn_cast<memref::StoreOp>(user)) {
          store.getValueMutable().assign(
              arith::ExtFOp::create(b, f32, store.getValueToStore()));
        } else {
          user->emitOpError("uses a ")
              << narrow << " workgroup tile, which txl-emulate-mma widens "
              << "to f32 for OpenCL: only loads and stores can";
          return WalkResult::interrupt();
        }
      }
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// Fails the pass on every nvgpu.mma.sync left in `module`.
LogicalResult checkNoneLeft(gpu::GPUModuleOp module) {
  WalkResult walk = module.walk([](nvgpu::MmaSyncOp op) {
    op.emitOpError("is not lowered: txlc's kernels use m16n8k16 with "
                   "vector<4x2xbf16> A and vector<2x2xbf16> B, or "
                   "vector<4x2xf16> A and vector<2x2xf16> B, and "
                   "vector<2x2xf32> accumulators only");
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

// nvgpu.mma.sync (bf16 or f16) => nvvm.mma.sync: each register of A and B
// holds elements [r][0] (low half) and [r][1] (high half): for bf16 an i32,
// as PTX's .bf16x2 operands, for f16 a vector<2xf16>, as NVVM's f16x2.
struct MmaSyncToNvvm : public OpRewritePattern<nvgpu::MmaSyncOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nvgpu::MmaSyncOp op,
                                PatternRewriter &rewriter) const override {
    FloatType operandType = getM16N8K16OperandType(op);
    if (!operandType)
      return rewriter.notifyMatchFailure(op, "not bf16 or f16 m16n8k16");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto pack = [&](Value fragment) {
      if (!operandType.isF16())
        return packRegisters(b, fragment);
      SmallVector<Value> scalars = elements(b, fragment), registers;
      for (size_t r = 0; r < scalars.size(); r += 2)
        registers.push_back(vector::FromElementsOp::create(
            b, VectorType::get({2}, operandType),
            ValueRange{scalars[r], scalars[r + 1]}));
      return registers;
    };
    SmallVector<Value> a = pack(op.getMatrixA()), bReg = pack(op.getMatrixB());
    SmallVector<Value> c = elements(b, op.getMatrixC());
    Type f32 = b.getF32Type();
    NVVM::MMATypes ptxType =
        operandType.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
    auto resultType =
        LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
    Value d = NVVM::MmaOp::create(
        b, resultType, a, bReg, c, ArrayRef<int64_t>{16, 8, 16},
        /*b1Op=*/std::nullopt, /*intOverflow=*/std::nullopt,
        std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value> scalars;
    for (int64_t n = 0; n < 4; ++n)
      scalars.push_back(LLVM::ExtractValueOp::create(b, d, n));
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(
        op, op.getRes().getType(), scalars);
    return success();
  }
};

// nvgpu.mma.sync (bf16 or f16) => shuffles. Lane 4 g + t holds D[g + 8 r][2 t +
// e] in [r][e]; A[row][k] sits in lane 4 (row % 8) + (k % 8) / 2, register (row
// >= 8) + 2 (k >= 8), element k % 2; B[k][n] in lane 4 n + (k % 8) / 2,
// register k >= 8, element k % 2. Each lane fetches the row of A and the
// column of B it needs and sums the 16 products in f32 (products of bf16
// or f16 values are exact in f32).
struct MmaSyncEmulation : public OpRewritePattern<nvgpu::MmaSyncOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nvgpu::MmaSyncOp op,
                                PatternRewriter &rewriter) const override {
    if (!getM16N8K16OperandType(op))
      return rewriter.notifyMatchFailure(op, "not bf16 or f16 m16n8k16");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Type f32 = b.getF32Type(), i32 = b.getI32Type();
    auto widen = [&](SmallVector<Value> scalars) {
      for (Value &x : scalars)
        x = arith::ExtFOp::create(b, f32, x);
      return scalars;
    };
    SmallVector<Value> a = widen(elements(b, op.getMatrixA()));
    SmallVector<Value> bs = widen(elements(b, op.getMatrixB()));
    SmallVector<Value> d = elements(b, op.getMatrixC());
    auto c32 = [&](int64_t v) {
      return arith::ConstantIntOp::create(b, v, 32);
    };
    Value lane = arith::IndexCastOp::create(
        b, i32, gpu::LaneIdOp::create(b, /*upper_bound=*/IntegerAttr()));
    Value g = arith::DivUIOp::create(b, lane, c32(4));
    Value t = arith::RemUIOp::create(b, lane, c32(4));
    // Each register (two elements) crosses lanes as one i64 shuffle: the
    // lane needs 4 registers from each of lanes 4 g .. 4 g + 3 (rows g and
    // g + 8 of A) and 2 from each of lanes 4 n .. 4 n + 3 for n = 2 t, 2 t
    // + 1 (columns n of B): 32 shuffles per product.
    Type i64 = b.getI64Type();
    auto c64 = [&](int64_t v) { return i64Constant(b, v); };
    auto bits64 = [&](Value x) {
      return arith::ExtUIOp::create(b, i64,
                                    arith::BitcastOp::create(b, i32, x));
    };
    auto fetchRegister = [&](Value low, Value high, Value srcLane) {
      Value packed = arith::OrIOp::create(
          b, bits64(low), arith::ShLIOp::create(b, bits64(high), c64(32)));
      Value got = gpu::ShuffleOp::create(b, packed, srcLane, c32(kSubgroupSize),
                                         gpu::ShuffleMode::IDX)
                      .getShuffleResult();
      auto half = [&](Value v) {
        return arith::BitcastOp::create(b, f32,
                                        arith::TruncIOp::create(b, i32, v));
      };
      return std::array<Value, 2>{
          half(got), half(arith::ShRUIOp::create(b, got, c64(32)))};
    };
    // aRows[r][k] = A[g + 8 r][k]; bCols[e][k] = B[k][2 t + e].
    Value aRows[2][16], bCols[2][16];
    for (int64_t pair = 0; pair < 4; ++pair) {
      Value aSrc = arith::AddIOp::create(b, arith::MulIOp::create(b, g, c32(4)),
                                         c32(pair));
      // Register reg of A holds row g + 8 (reg % 2), columns 8 (reg / 2) + 2
      // pair + {0, 1}.
      for (int64_t reg = 0; reg < 4; ++reg) {
        auto got = fetchRegister(a[2 * reg], a[2 * reg + 1], aSrc);
        for (int64_t e = 0; e < 2; ++e)
          aRows[reg % 2][8 * (reg / 2) + 2 * pair + e] = got[e];
      }
      // Register reg of B holds rows 8 reg + 2 pair + {0, 1} of its column.
      for (int64_t e = 0; e < 2; ++e) {
        Value n = arith::AddIOp::create(b, arith::MulIOp::create(b, t, c32(2)),
                                        c32(e));
        Value bSrc = arith::AddIOp::create(
            b, arith::MulIOp::create(b, n, c32(4)), c32(pair));
        for (int64_t reg = 0; reg < 2; ++reg) {
          auto got = fetchRegister(bs[2 * reg], bs[2 * reg + 1], bSrc);
          for (int64_t h = 0; h < 2; ++h)
            bCols[e][8 * reg + 2 * pair + h] = got[h];
        }
      }
    }
    for (int64_t k = 0; k < 16; ++k)
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t e = 0; e < 2; ++e)
          d[2 * r + e] = arith::AddFOp::create(
              b, d[2 * r + e],
              arith::MulFOp::create(b, aRows[r][k], bCols[e][k]));
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(
        op, op.getRes().getType(), d);
    return success();
  }
};

// extf(truncf(x : f32 to bf16 or f16) to f32) => x rounded on its bits to
// nearest even, like PTX's cvt.rn.bf16.f32 and cvt.rn.f16.f32 (NaN kept).
// bf16 keeps f32's exponent: the low 16 bits round away. f16 keeps 10
// fraction bits (the low 13 round away) and 5 exponent bits: magnitudes of
// 65520 and more (the tie above 65504, the largest f16) become infinity,
// and below 2^-14 (the subnormals) x rounds to a multiple of 2^-24, as
// (|x| + 0.5) - 0.5 does in f32, whose spacing on [0.5, 1) is 2^-24.
struct RoundThroughHalf : public OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rewriter) const override {
    auto trunc = op.getIn().getDefiningOp<arith::TruncFOp>();
    if (!trunc || !(trunc.getType().isBF16() || trunc.getType().isF16()) ||
        !op.getType().isF32() || !trunc.getIn().getType().isF32())
      return rewriter.notifyMatchFailure(op, "not f32 -> bf16/f16 -> f32");
    bool f16 = trunc.getType().isF16();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Type f32 = b.getF32Type(), i32 = b.getI32Type();
    Value x = trunc.getIn();
    auto c32 = [&](int64_t v) {
      return arith::ConstantIntOp::create(b, v, 32);
    };
    auto bitsOf = [&](Value v) { return arith::BitcastOp::create(b, i32, v); };
    // Round to nearest even at bit `drop` of `bits`.
    auto roundAt = [&](Value bits, int64_t drop) -> Value {
      Value lsb = arith::AndIOp::create(
          b, arith::ShRUIOp::create(b, bits, c32(drop)), c32(1));
      return arith::AndIOp::create(
          b,
          arith::AddIOp::create(
              b, arith::AddIOp::create(b, bits, c32((1 << (drop - 1)) - 1)),
              lsb),
          c32(int64_t(uint32_t(-1) << drop)));
    };
    Value bits = bitsOf(x);
    Value roundedBits;
    if (!f16) {
      roundedBits = roundAt(bits, 16);
    } else {
      using P = arith::CmpIPredicate;
      Value magnitude = arith::AndIOp::create(b, bits, c32(0x7fffffff));
      Value overflow = arith::CmpIOp::create(b, P::uge, magnitude,
                                             c32(0x477ff000)); // 65520
      Value subnormal = arith::CmpIOp::create(b, P::ult, magnitude,
                                              c32(0x38800000)); // 2^-14
      Value half = arith::ConstantFloatOp::create(b, b.getF32Type(),
                                                  llvm::APFloat(0.5f));
      Value quantized = arith::SubFOp::create(
          b,
          arith::AddFOp::create(b, arith::BitcastOp::create(b, f32, magnitude),
                                half),
          half);
      Value rounded = arith::SelectOp::create(
          b, overflow, c32(0x7f800000),
          arith::SelectOp::create(b, subnormal, bitsOf(quantized),
                                  roundAt(magnitude, 13)));
      Value sign = arith::AndIOp::create(b, bits, c32(int64_t(0x80000000u)));
      roundedBits = arith::OrIOp::create(b, rounded, sign);
    }
    Value isNan = arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, x, x);
    rewriter.replaceOpWithNewOp<arith::SelectOp>(
        op, isNan, x, arith::BitcastOp::create(b, f32, roundedBits));
    return success();
  }
};

struct MmaToNvvmPass : public txl::impl::MmaToNvvmPassBase<MmaToNvvmPass> {
  using MmaToNvvmPassBase::MmaToNvvmPassBase;

  void runOnOperation() override {
    if (wgmma) {
      fenceBarriersForWgmma(getOperation());
      SmallVector<txl::WarpgroupMmaOp> ops;
      getOperation().walk([&](txl::WarpgroupMmaOp op) { ops.push_back(op); });
      for (txl::WarpgroupMmaOp op : ops)
        if (failed(lowerToWgmma(op)))
          return signalPassFailure();
    } else {
      expandWarpgroupProducts(getOperation());
    }
    RewritePatternSet patterns(&getContext());
    patterns.add<MmaSyncToNvvm>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))) ||
        failed(checkNoneLeft(getOperation())))
      return signalPassFailure();
  }
};

struct EmulateMmaPass : public txl::impl::EmulateMmaPassBase<EmulateMmaPass> {
  void runOnOperation() override {
    gpu::GPUModuleOp module = getOperation();
    expandWarpgroupProducts(module);
    if (failed(widenNarrowAttributions(module)))
      return signalPassFailure();
    // Intel's OpenCL CPU compiler miscompiles (out-of-bounds workgroup
    // stores) a rolled loop whose body has both emulated products and
    // stores to workgroup memory: such loops around nvgpu.mma.sync with a
    // constant trip count of at most 8 (the bf16 kernels' block loops) are
    // unrolled first, innermost first. Unrolling every loop around a
    // product would triple the kernels' code and the OpenCL compile time.
    SmallVector<scf::ForOp> loops;
    module.walk([&](scf::ForOp loop) {
      std::optional<APInt> trips = loop.getStaticTripCount();
      if (!trips || trips->getSExtValue() > 8)
        return;
      Block *body = loop.getBody();
      bool hasMma =
          body->walk([](nvgpu::MmaSyncOp) { return WalkResult::interrupt(); })
              .wasInterrupted();
      bool storesWorkgroup =
          body->walk([](Operation *op) {
                bool writes = hasEffect<MemoryEffects::Write>(op);
                for (Value operand : op->getOperands()) {
                  auto type = dyn_cast<MemRefType>(operand.getType());
                  if (writes && type && isWorkgroupMemory(type))
                    return WalkResult::interrupt();
                }
                return WalkResult::advance();
              })
              .wasInterrupted();
      if (hasMma && storesWorkgroup)
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops)
      if (failed(loopUnrollFull(loop)))
        return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    patterns.add<MmaSyncEmulation, RoundThroughHalf>(&getContext());
    if (failed(applyPatternsGreedily(module, std::move(patterns))) ||
        failed(checkNoneLeft(module)))
      return signalPassFailure();
    // The kernels' OpenCL SPIR-V has no bf16 or f16: every such value must
    // be gone.
    WalkResult walk = module.walk([](Operation *op) {
      for (Type type : op->getResultTypes()) {
        Type element = getElementTypeOrSelf(type);
        if (element.isBF16() || element.isF16()) {
          op->emitOpError("keeps a ")
              << (element.isBF16() ? "bf16" : "f16")
              << " value that txl-emulate-mma cannot express on OpenCL (only "
                 "f32 -> bf16/f16 -> f32 roundings and mma.sync operands are)";
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
