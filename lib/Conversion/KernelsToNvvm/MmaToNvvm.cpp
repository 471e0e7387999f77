//===- MmaToNvvm.cpp - The tensor-core products for CUDA -----------------===//
//
// txl-mma-to-nvvm: the tensor-core kernels' warp-level products
// (nvgpu.mma.sync m16n8k16, bf16 or f16 operands, f32 accumulators) as
// nvvm.mma.sync on bf16x2 registers (packed in i32) or f16x2 vectors
// (upstream convert-nvgpu-to-nvvm cannot deduce the PTX types of bf16
// operands); a warpgroup product (txl.warpgroup_mma) as wgmma.mma_async on
// sm_90a, else as the mma.sync products of its subgroups
// (txl/Conversion/MmaFragments.h), their B fragments by nvgpu.ldmatrix
// (lowered by upstream's convert-nvgpu-to-nvvm), whose tiles get 16-byte
// alignment; txl.subgroup_barrier as bar.warp.sync; and f32 math.exp2
// with fastmath afn
// (the attention kernels' probabilities) as ex2.approx.ftz. The OpenCL
// target's form is txl-emulate-mma (lib/Conversion/KernelsToSpirv).
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/MmaFragments.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <functional>

namespace mlir::txl {
#define GEN_PASS_DEF_MMATONVVMPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;
using namespace mlir::txl;

namespace {

/// Whether `tile` is a view of the kernel's dynamic shared memory (as
/// txl-dynamic-shared-memory makes of a workgroup attribution when a
/// kernel's tiles pass 48 KiB) at a constant multiple of 16 bytes: the
/// buffer is 16-byte aligned (the NVVM lowering's global), and so is the
/// view.
bool isAlignedDynamicSharedView(Value tile) {
  auto view = tile.getDefiningOp<memref::ViewOp>();
  if (!view)
    return false;
  Value buffer = view.getSource();
  if (auto cast = buffer.getDefiningOp<memref::MemorySpaceCastOp>())
    buffer = cast.getSource();
  APInt shift;
  return buffer.getDefiningOp<gpu::DynamicSharedMemoryOp>() &&
         matchPattern(view.getByteShift(), m_ConstantInt(&shift)) &&
         shift.urem(16) == 0;
}

/// Gives `tile`, which `op` reads or writes 16 bytes at a time at 16-byte
/// aligned addresses, 16-byte alignment (`llvm.align`), which a 2-byte
/// element type does not give a workgroup attribution by itself; the
/// offsets within it are the kernels' to keep aligned. `role` names the
/// operand in the error when the tile is not a workgroup attribution of
/// its kernel, a 16-byte aligned view of its dynamic shared memory
/// (isAlignedDynamicSharedView: aligned already), an arith.select of
/// such tiles (a kernel's buffers chosen by a tile's parity) or a
/// memref.collapse_shape of one (a tile as its 16-byte chunks): each is
/// aligned.
LogicalResult alignTile(Operation *op, Value tile, StringRef role) {
  if (auto choice = tile.getDefiningOp<arith::SelectOp>())
    return success(succeeded(alignTile(op, choice.getTrueValue(), role)) &&
                   succeeded(alignTile(op, choice.getFalseValue(), role)));
  if (auto chunks = tile.getDefiningOp<memref::CollapseShapeOp>())
    return alignTile(op, chunks.getSrc(), role);
  if (isAlignedDynamicSharedView(tile))
    return success();
  auto arg = dyn_cast<BlockArgument>(tile);
  auto func = arg ? dyn_cast<gpu::GPUFuncOp>(arg.getOwner()->getParentOp())
                  : gpu::GPUFuncOp();
  if (!func || arg.getArgNumber() < func.getFirstWorkgroupAttributionIndex())
    return op->emitOpError("needs ")
           << role
           << " to be a workgroup attribution of its kernel or a view of its "
              "dynamic shared memory at a multiple of 16 bytes (its 16-byte "
              "alignment)";
  func.setWorkgroupAttributionAttr(
      arg.getArgNumber() - func.getFirstWorkgroupAttributionIndex(),
      LLVM::LLVMDialect::getAlignAttrName(),
      IntegerAttr::get(IntegerType::get(op->getContext(), 64), 16));
  return success();
}

/// Aligns every workgroup tile that an nvgpu.ldmatrix reads (16-byte
/// rows) or an nvgpu.device_async_copy writes (cp.async of 16 bytes)
/// (alignTile).
LogicalResult alignCopiedTiles(gpu::GPUModuleOp module) {
  WalkResult walk = module.walk([](Operation *op) {
    LogicalResult aligned = success();
    if (auto ldmatrix = dyn_cast<nvgpu::LdMatrixOp>(op))
      aligned = alignTile(op, ldmatrix.getSrcMemref(), "its source");
    else if (auto copy = dyn_cast<nvgpu::DeviceAsyncCopyOp>(op))
      aligned = alignTile(op, copy.getDst(), "its destination");
    return failed(aligned) ? WalkResult::interrupt() : WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// txl.warpgroup_mma as sm_90a's wgmma: wgmma.fence, one
/// wgmma.mma_async.m64nNk16 per k-step (A from registers, B by descriptor,
/// the f32 accumulators in place), then commit and wait for the group, so
/// that the result is in registers where the op stands; an `async` one
/// only commits (its txl.warpgroup_mma_wait waits: lowerWait).
LogicalResult lowerToWgmma(txl::WarpgroupMmaOp op) {
  // A descriptor holds bits 4-17 of the address: the tile must be 16-byte
  // aligned.
  if (failed(alignTile(op, op.getB(), "b")))
    return failure();
  ImplicitLocOpBuilder b(op.getLoc(), op);
  Type i64 = b.getI64Type(), f32 = b.getF32Type();
  // B's k-step descriptors: of its tile, or of a tile that arith.selects
  // choose (a kernel's buffers by a key tile's parity, or among three by
  // selects of selects) the last false one's (`reference`),
  // loop-invariant, plus the same selects of each tile's difference from
  // it (0 for itself) in the descriptors' low 32 bits. Shared-memory
  // addresses are below 2^18, so that the difference of two start fields
  // never carries out of the field: the selects and one 32-bit addition a
  // step, where selecting the tiles would re-encode every descriptor.
  llvm::SmallDenseMap<Value, Value, 2> bases;
  auto encode = [&](Value tile, int64_t step) {
    Value &base = bases[tile];
    if (!base)
      base = arith::IndexCastUIOp::create(
          b, i64, memref::ExtractAlignedPointerAsIndexOp::create(b, tile));
    Value start =
        arith::AddIOp::create(b, base,
                              arith::ConstantIntOp::create(
                                  b, step * MatrixDescriptor::kStepBytes, 64));
    return MatrixDescriptor::encode(
        b, start, MatrixDescriptor::kCoreMatrixBytes, warpgroupStrideBytes(op));
  };
  auto choice = op.getB().getDefiningOp<arith::SelectOp>();
  Value reference = op.getB(), lowDelta;
  while (auto inner = reference.getDefiningOp<arith::SelectOp>())
    reference = inner.getFalseValue();
  if (choice) {
    Type i32 = b.getI32Type();
    std::function<Value(Value)> deltaOf = [&](Value tile) -> Value {
      if (auto select = tile.getDefiningOp<arith::SelectOp>())
        return arith::SelectOp::create(b, select.getCondition(),
                                       deltaOf(select.getTrueValue()),
                                       deltaOf(select.getFalseValue()));
      if (tile == reference)
        return arith::ConstantIntOp::create(b, 0, 32);
      return arith::SubIOp::create(
          b, arith::TruncIOp::create(b, i32, encode(tile, 0)),
          arith::TruncIOp::create(b, i32, encode(reference, 0)));
    };
    lowDelta = deltaOf(op.getB());
  }
  auto descriptor = [&](int64_t step) -> Value {
    if (!choice)
      return encode(op.getB(), step);
    Value base = encode(reference, step);
    Type i32 = b.getI32Type();
    Value low = arith::AddIOp::create(b, arith::TruncIOp::create(b, i32, base),
                                      lowDelta);
    Value high = arith::AndIOp::create(
        b, base, arith::ConstantIntOp::create(b, ~int64_t(0xffffffff), 64));
    return arith::OrIOp::create(b, high, arith::ExtUIOp::create(b, i64, low));
  };
  int64_t n = 8 * op.getNBlocks(), accCount = n / 2;
  SmallVector<Value> acc;
  for (Value block : warpgroupSlices(b, op.getAcc()))
    llvm::append_range(acc, fragmentElements(b, block));
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
  for (Value a : warpgroupSlices(b, op.getA())) {
    int64_t step = stepOperands.size();
    stepOperands.push_back(packRegisters(b, a));
    stepOperands.back().push_back(descriptor(step));
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
  if (!op.getAsync())
    NVVM::WgmmaWaitGroupSyncOp::create(b, 0);
  op.replaceAllUsesWith(
      vector::FromElementsOp::create(b, op.getType(), acc).getResult());
  op.erase();
  return success();
}

/// txl.warpgroup_mma_wait as wgmma.wait_group `pending`, then every
/// register of the product passed through one empty volatile asm whose
/// outputs are tied to them: the wait orders nothing by itself, and the
/// registers that the uses read are those outputs, which the volatile asm
/// keeps after the wait (CUTLASS's warpgroup_fence_operand).
void lowerWait(txl::WarpgroupMmaWaitOp op) {
  ImplicitLocOpBuilder b(op.getLoc(), op);
  NVVM::WgmmaWaitGroupSyncOp::create(b, op.getPending());
  SmallVector<Value> registers;
  for (Value block : warpgroupSlices(b, op.getProduct()))
    llvm::append_range(registers, fragmentElements(b, block));
  std::string constraints;
  llvm::raw_string_ostream cs(constraints);
  for (size_t i = 0; i < registers.size(); ++i)
    cs << "=f,";
  for (size_t i = 0; i < registers.size(); ++i)
    cs << (i ? "," : "") << i;
  Type f32 = b.getF32Type();
  auto resultType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), SmallVector<Type>(registers.size(), f32));
  auto fence = LLVM::InlineAsmOp::create(
      b, resultType, registers, "", constraints,
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None, /*asm_dialect=*/{},
      /*operand_attrs=*/{});
  for (size_t i = 0; i < registers.size(); ++i)
    registers[i] = LLVM::ExtractValueOp::create(b, fence.getResult(0), i);
  op.replaceAllUsesWith(
      vector::FromElementsOp::create(b, op.getType(), registers).getResult());
  op.erase();
}

/// Whether `op` or an op nested in it may write one of `tiles`: a use
/// whose effects are a write, unknown, or a view of the tile (an alias
/// whose writes this does not follow).
bool writesTile(Operation *op, const llvm::SmallPtrSetImpl<Value> &tiles) {
  return op
      ->walk([&](Operation *inner) {
        bool usesTile = llvm::any_of(
            inner->getOperands(), [&](Value v) { return tiles.contains(v); });
        if (!usesTile)
          return WalkResult::advance();
        auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
        bool view = llvm::any_of(inner->getResultTypes(), [](Type type) {
          return isa<BaseMemRefType>(type);
        });
        if (!effects || view || effects.hasEffect<MemoryEffects::Write>())
          return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

/// Whether a write to one of `tiles` may come between the barrier that
/// runs last before `op` (in program order, around loops) and `op`: the
/// ops before it in its block back to a barrier; at the block's start, a
/// loop's blocks each from its end back to a barrier (the previous
/// iteration) and then what comes before the loop; any other region, what
/// comes before its op; the kernel's start ends the search.
bool tileWrittenSinceBarrier(Operation *op,
                             const llvm::SmallPtrSetImpl<Value> &tiles) {
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (isa<gpu::BarrierOp>(prev))
      return false;
    if (writesTile(prev, tiles))
      return true;
  }
  Operation *parent = op->getParentOp();
  if (isa<gpu::GPUFuncOp>(parent))
    return false;
  if (isa<LoopLikeOpInterface>(parent)) {
    // The previous iteration: each block of the loop from its end back.
    for (Region &region : parent->getRegions())
      for (Block &block : region)
        for (Operation &prev : llvm::reverse(block)) {
          if (isa<gpu::BarrierOp>(prev))
            break;
          if (writesTile(&prev, tiles))
            return true;
        }
  }
  return tileWrittenSinceBarrier(parent, tiles);
}

/// wgmma reads its tiles through the async proxy: in every kernel with a
/// warpgroup product, each barrier that may follow a write (generic
/// proxy) to one of its products' tiles is preceded by
/// fence.proxy.async.shared::cta, so that what was written is what the
/// next wgmma reads (tileWrittenSinceBarrier). A barrier behind which no
/// such tile was written (the forward's before the next tile's staging,
/// and after X's stores) gets none: the fence waits for the work-item's
/// outstanding memory operations (MEMBAR.ALL.CTA in SASS).
void fenceBarriersForWgmma(gpu::GPUModuleOp module) {
  module.walk([](gpu::GPUFuncOp func) {
    // The products' tiles, and the tiles arith.selects (of selects)
    // choose among for one: any other use of those that yields a memref
    // (the select that chooses where the next tile's copies go) counts as
    // a write.
    llvm::SmallPtrSet<Value, 4> tiles;
    std::function<void(Value)> addTiles = [&](Value tile) {
      tiles.insert(tile);
      if (auto choice = tile.getDefiningOp<arith::SelectOp>()) {
        addTiles(choice.getTrueValue());
        addTiles(choice.getFalseValue());
      }
    };
    func.walk([&](txl::WarpgroupMmaOp op) { addTiles(op.getB()); });
    if (tiles.empty())
      return;
    SmallVector<gpu::BarrierOp> barriers;
    func.walk([&](gpu::BarrierOp barrier) {
      if (tileWrittenSinceBarrier(barrier, tiles))
        barriers.push_back(barrier);
    });
    for (gpu::BarrierOp barrier : barriers) {
      ImplicitLocOpBuilder b(barrier.getLoc(), barrier);
      LLVM::InlineAsmOp::create(
          b, /*res=*/Type(), ValueRange{}, "fence.proxy.async.shared::cta;", "",
          /*has_side_effects=*/true, /*is_align_stack=*/false,
          LLVM::tailcallkind::TailCallKind::None, /*asm_dialect=*/{},
          /*operand_attrs=*/{});
    }
  });
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
      SmallVector<Value> scalars = fragmentElements(b, fragment), registers;
      for (size_t r = 0; r < scalars.size(); r += 2)
        registers.push_back(vector::FromElementsOp::create(
            b, VectorType::get({2}, operandType),
            ValueRange{scalars[r], scalars[r + 1]}));
      return registers;
    };
    SmallVector<Value> a = pack(op.getMatrixA()), bReg = pack(op.getMatrixB());
    SmallVector<Value> c = fragmentElements(b, op.getMatrixC());
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
// f32 math.exp2 with fastmath afn => PTX ex2.approx.ftz.f32 (one MUFU.EX2),
// where libdevice's __nv_exp2f wraps ex2.approx.f32 in a fix-up for
// subnormal results (two multiplications, a compare and a select).
struct Exp2ToApproxFtz : public OpRewritePattern<math::Exp2Op> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::Exp2Op op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().isF32() ||
        !bitEnumContainsAll(op.getFastmath(), arith::FastMathFlags::afn))
      return rewriter.notifyMatchFailure(op, "not f32 with afn");
    rewriter.replaceOpWithNewOp<LLVM::CallIntrinsicOp>(
        op, op.getType(),
        rewriter.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"),
        ValueRange{op.getOperand()});
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
      SmallVector<txl::WarpgroupMmaWaitOp> waits;
      getOperation().walk(
          [&](txl::WarpgroupMmaWaitOp op) { waits.push_back(op); });
      for (txl::WarpgroupMmaWaitOp op : waits)
        lowerWait(op);
    } else {
      expandWarpgroupProducts(getOperation());
    }
    if (failed(alignCopiedTiles(getOperation())))
      return signalPassFailure();
    // txl.subgroup_barrier => bar.warp.sync over the whole warp.
    SmallVector<txl::SubgroupBarrierOp> warpBarriers;
    getOperation().walk(
        [&](txl::SubgroupBarrierOp op) { warpBarriers.push_back(op); });
    for (txl::SubgroupBarrierOp op : warpBarriers) {
      ImplicitLocOpBuilder b(op.getLoc(), op);
      NVVM::SyncWarpOp::create(b, arith::ConstantIntOp::create(b, -1, 32));
      op.erase();
    }
    RewritePatternSet patterns(&getContext());
    patterns.add<MmaSyncToNvvm, Exp2ToApproxFtz>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))) ||
        failed(checkMmaLowered(getOperation())))
      return signalPassFailure();
  }
};

} // namespace
