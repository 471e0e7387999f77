//===- EmulateMma.cpp - The tensor-core products for OpenCL --------------===//
//
// txl-emulate-mma: the tensor-core kernels' products (nvgpu.mma.sync
// m16n8k16, bf16 or f16 operands, f32 accumulators) computed by the
// subgroup from the same register layout with shuffles, and the rounding to
// bf16 or f16 emulated on f32 bits, so that the kernels that run on tensor
// cores are checked numerically on the CPU (Intel's OpenCL runtime); a
// warpgroup product (txl.warpgroup_mma) as the mma.sync products of its
// subgroups, each lane reading its B fragment through wgmma's matrix
// descriptors (txl/Conversion/MmaFragments.h); nvgpu.ldmatrix as each
// lane's loads of what ldmatrix.sync gives it; nvgpu.device_async_copy as
// the work-item's load and store; txl.subgroup_barrier as SPIR-V's
// OpControlBarrier of subgroup scope; bf16 and f16 memory as f32 tiles and
// i16 global buffers. The CUDA target's form is
// txl-mma-to-nvvm (lib/Conversion/KernelsToNvvm).
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/KernelModule.h"
#include "txl/Conversion/MmaFragments.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
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
#define GEN_PASS_DEF_EMULATEMMAPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;
using namespace mlir::txl;

namespace {

/// OpenCL has no bf16 or f16 memory: each bf16 or f16 workgroup
/// attribution becomes f32, holding the same (rounded) values; its loads
/// round back to the narrow type for their users (exactly), its stores
/// widen what they store (which txl-emulate-mma's rounding then keeps).
/// An arith.select among such tiles (a kernel's two buffers chosen by a
/// tile's parity) becomes a select among the widened tiles, and a
/// memref.collapse_shape of one (a tile as its 16-byte chunks) a view of
/// the widened tile, their uses widened alike.
LogicalResult widenNarrowAttributions(gpu::GPUModuleOp module) {
  WalkResult walk = module.walk([](gpu::GPUFuncOp func) {
    SmallVector<Value> worklist;
    for (BlockArgument tile : func.getWorkgroupAttributions())
      worklist.push_back(tile);
    llvm::SmallPtrSet<Operation *, 4> selects;
    for (size_t i = 0; i < worklist.size(); ++i) {
      Value tile = worklist[i];
      auto type = cast<MemRefType>(tile.getType());
      auto narrow = dyn_cast<FloatType>(type.getElementType());
      if (!narrow || !(narrow.isBF16() || narrow.isF16()))
        continue;
      Type f32 = Float32Type::get(func.getContext());
      tile.setType(MemRefType::get(type.getShape(), f32, type.getLayout(),
                                   type.getMemorySpace()));
      for (Operation *user : llvm::to_vector(tile.getUsers())) {
        ImplicitLocOpBuilder b(user->getLoc(), user);
        if (auto choice = dyn_cast<arith::SelectOp>(user)) {
          if (selects.insert(choice).second)
            worklist.push_back(choice.getResult());
        } else if (auto chunks = dyn_cast<memref::CollapseShapeOp>(user)) {
          worklist.push_back(chunks.getResult());
        } else if (auto load = dyn_cast<memref::LoadOp>(user)) {
          b.setInsertionPointAfter(load);
          load.getResult().setType(f32);
          auto round = arith::TruncFOp::create(b, narrow, load.getResult());
          load.getResult().replaceAllUsesExcept(round, round);
        } else if (auto store = dyn_cast<memref::StoreOp>(user)) {
          store.getValueMutable().assign(
              arith::ExtFOp::create(b, f32, store.getValueToStore()));
        } else if (auto store = dyn_cast<vector::StoreOp>(user)) {
          auto type = cast<VectorType>(store.getValueToStore().getType());
          store.getValueToStoreMutable().assign(arith::ExtFOp::create(
              b, type.clone(f32), store.getValueToStore()));
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
/// `x` (f32) rounded to bf16 or (`f16`) f16 on its bits, to nearest even,
/// as an f32: like PTX's cvt.rn.bf16.f32 and cvt.rn.f16.f32 (NaN kept).
/// bf16 keeps f32's exponent: the low 16 bits round away. f16 keeps 10
/// fraction bits (the low 13 round away) and 5 exponent bits: magnitudes of
/// 65520 and more (the tie above 65504, the largest f16) become infinity,
/// and below 2^-14 (the subnormals) x rounds to a multiple of 2^-24, as
/// (|x| + 0.5) - 0.5 does in f32, whose spacing on [0.5, 1) is 2^-24.
Value roundThroughHalf(ImplicitLocOpBuilder &b, Value x, bool f16) {
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  auto c32 = [&](int64_t v) { return arith::ConstantIntOp::create(b, v, 32); };
  auto bitsOf = [&](Value v) { return arith::BitcastOp::create(b, i32, v); };
  // Round to nearest even at bit `drop` of `bits`.
  auto roundAt = [&](Value bits, int64_t drop) -> Value {
    Value lsb = arith::AndIOp::create(
        b, arith::ShRUIOp::create(b, bits, c32(drop)), c32(1));
    return arith::AndIOp::create(
        b,
        arith::AddIOp::create(
            b, arith::AddIOp::create(b, bits, c32((1 << (drop - 1)) - 1)), lsb),
        c32(int64_t(uint32_t(-1) << drop)));
  };
  Value bits = bitsOf(x);
  Value roundedBits;
  if (!f16) {
    roundedBits = roundAt(bits, 16);
  } else {
    using P = arith::CmpIPredicate;
    Value magnitude = arith::AndIOp::create(b, bits, c32(0x7fffffff));
    Value overflow =
        arith::CmpIOp::create(b, P::uge, magnitude, c32(0x477ff000)); // 65520
    Value subnormal =
        arith::CmpIOp::create(b, P::ult, magnitude, c32(0x38800000)); // 2^-14
    Value half =
        arith::ConstantFloatOp::create(b, b.getF32Type(), llvm::APFloat(0.5f));
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
  return arith::SelectOp::create(b, isNan, x,
                                 arith::BitcastOp::create(b, f32, roundedBits));
}

/// The 16 bits of bf16 or (`f16`) f16 that hold `y`, an f32 that one of
/// them represents exactly (roundThroughHalf's result); a NaN becomes the
/// quiet NaN of its sign.
Value narrowBits(ImplicitLocOpBuilder &b, Value y, bool f16) {
  using P = arith::CmpIPredicate;
  Type i32 = b.getI32Type();
  auto c32 = [&](int64_t v) { return arith::ConstantIntOp::create(b, v, 32); };
  Value bits = arith::BitcastOp::create(b, i32, y);
  Value sign = arith::AndIOp::create(
      b, arith::ShRUIOp::create(b, bits, c32(16)), c32(0x8000));
  Value magnitude = arith::AndIOp::create(b, bits, c32(0x7fffffff));
  Value isNan = arith::CmpIOp::create(b, P::ugt, magnitude, c32(0x7f800000));
  Value result;
  if (!f16) {
    result = arith::SelectOp::create(b, isNan,
                                     arith::OrIOp::create(b, sign, c32(0x7fc0)),
                                     arith::ShRUIOp::create(b, bits, c32(16)));
  } else {
    // Normal: the exponent rebiased (127 -> 15) and 10 fraction bits;
    // subnormal (below 2^-14): y · 2^24, an integer below 1024; infinity
    // and NaN with exponent 31.
    Value normal = arith::ShRUIOp::create(
        b, arith::SubIOp::create(b, magnitude, c32(0x38000000)), c32(13));
    Value scaled = arith::MulFOp::create(
        b, arith::BitcastOp::create(b, b.getF32Type(), magnitude),
        arith::ConstantFloatOp::create(b, b.getF32Type(),
                                       llvm::APFloat(16777216.0f)));
    Value subnormal = arith::FPToUIOp::create(b, i32, scaled);
    Value h = arith::SelectOp::create(
        b, arith::CmpIOp::create(b, P::ult, magnitude, c32(0x38800000)),
        subnormal, normal);
    h = arith::SelectOp::create(
        b, arith::CmpIOp::create(b, P::eq, magnitude, c32(0x7f800000)),
        c32(0x7c00), h);
    h = arith::SelectOp::create(b, isNan, c32(0x7e00), h);
    result = arith::OrIOp::create(b, sign, h);
  }
  return arith::TruncIOp::create(b, b.getI16Type(), result);
}

/// The f32 value of the bf16 or (`f16`) f16 `bits` (i16), exactly.
Value widenBits(ImplicitLocOpBuilder &b, Value bits, bool f16) {
  using P = arith::CmpIPredicate;
  FloatType f32 = b.getF32Type();
  Type i32 = b.getI32Type();
  auto c32 = [&](int64_t v) { return arith::ConstantIntOp::create(b, v, 32); };
  Value h = arith::ExtUIOp::create(b, i32, bits);
  if (!f16)
    return arith::BitcastOp::create(b, f32,
                                    arith::ShLIOp::create(b, h, c32(16)));
  Value sign = arith::ShLIOp::create(
      b, arith::AndIOp::create(b, h, c32(0x8000)), c32(16));
  Value exponent = arith::AndIOp::create(
      b, arith::ShRUIOp::create(b, h, c32(10)), c32(0x1f));
  Value fraction = arith::AndIOp::create(b, h, c32(0x3ff));
  Value shifted = arith::ShLIOp::create(b, fraction, c32(13));
  // Normal: exponent + 112 (15 -> 127); 31: infinity or NaN.
  Value normal = arith::OrIOp::create(
      b,
      arith::ShLIOp::create(b, arith::AddIOp::create(b, exponent, c32(112)),
                            c32(23)),
      shifted);
  Value special = arith::OrIOp::create(b, c32(0x7f800000), shifted);
  // Subnormal or zero: fraction · 2^-24, exact in f32.
  Value subnormal = arith::BitcastOp::create(
      b, i32,
      arith::MulFOp::create(
          b, arith::UIToFPOp::create(b, f32, fraction),
          arith::ConstantFloatOp::create(b, f32, llvm::APFloat(0x1p-24f))));
  Value magnitude = arith::SelectOp::create(
      b, arith::CmpIOp::create(b, P::eq, exponent, c32(0)), subnormal,
      arith::SelectOp::create(
          b, arith::CmpIOp::create(b, P::eq, exponent, c32(31)), special,
          normal));
  return arith::BitcastOp::create(b, f32,
                                  arith::OrIOp::create(b, sign, magnitude));
}

/// OpenCL has no bf16 or f16 memory: each kernel argument that is a global
/// memref of bf16 or f16 (the tensor-core attention's packed operands)
/// becomes one of i16 holding the same bits, so that the buffers the host
/// code allocates keep their layout. A load widens the bits to f32 exactly
/// (an extension of the load to f32 is that value; other users get it
/// rounded back, exactly); a store takes an f32 value rounded to the
/// narrow type (truncf's operand) and stores its bits rounded to nearest
/// even. Vector loads and stores go element by element. A subview of such
/// an argument (packed K's and V's steps at a static offset) becomes the same
/// view of i16, whose users are treated the same way; memref.dim of either
/// stays. Runs after the narrow tiles are widened, whose stores then extend
/// what a load gives.
LogicalResult narrowGlobalArguments(gpu::GPUModuleOp module) {
  WalkResult walk = module.walk([](gpu::GPUFuncOp func) {
    SmallVector<Type> inputs(func.getArgumentTypes());
    for (BlockArgument arg : func.getArguments()) {
      auto type = dyn_cast<MemRefType>(arg.getType());
      auto narrow =
          type ? dyn_cast<FloatType>(type.getElementType()) : FloatType();
      if (!narrow || !(narrow.isBF16() || narrow.isF16()))
        continue;
      bool f16 = narrow.isF16();
      Type i16 = IntegerType::get(func.getContext(), 16);
      Type f32 = Float32Type::get(func.getContext());
      arg.setType(type.clone(i16));
      inputs[arg.getArgNumber()] = arg.getType();
      // The argument and its subviews (packed K's and V's steps at a static
      // offset), each retyped to i16 with the same layout, and the other
      // users of each with the view they use.
      SmallVector<Value> views = {arg};
      SmallVector<std::pair<Operation *, Value>> users;
      for (size_t v = 0; v < views.size(); ++v)
        for (Operation *user : views[v].getUsers()) {
          if (auto view = dyn_cast<memref::SubViewOp>(user)) {
            view.getResult().setType(
                cast<MemRefType>(view.getType().clone(i16)));
            views.push_back(view.getResult());
          } else if (!isa<memref::DimOp>(user)) {
            users.push_back({user, views[v]});
          }
        }
      for (auto [user, view] : users) {
        ImplicitLocOpBuilder b(user->getLoc(), user);
        // The widened value (f32, of the load's shape) of a narrow load's
        // bits, for its users.
        auto replaceLoad = [&](Value result, Value wide) {
          for (OpOperand &use : llvm::make_early_inc_range(result.getUses())) {
            auto ext = dyn_cast<arith::ExtFOp>(use.getOwner());
            if (ext && getElementTypeOrSelf(ext.getType()).isF32()) {
              ext.getResult().replaceAllUsesWith(wide);
              ext.erase();
              continue;
            }
            b.setInsertionPoint(use.getOwner());
            use.set(arith::TruncFOp::create(b, result.getType(), wide));
          }
        };
        // The f32 value a narrow store's value is rounded from.
        auto roundedFrom = [&](Operation *store, Value value) -> Value {
          auto trunc = value.getDefiningOp<arith::TruncFOp>();
          if (trunc && getElementTypeOrSelf(trunc.getIn().getType()).isF32())
            return trunc.getIn();
          store->emitOpError("stores a ")
              << narrow << " value not rounded from f32 to a " << narrow
              << " kernel argument, which txl-emulate-mma cannot express on "
                 "OpenCL";
          return Value();
        };
        if (auto load = dyn_cast<memref::LoadOp>(user)) {
          b.setInsertionPointAfter(load);
          Value bits = memref::LoadOp::create(b, view, load.getIndices());
          replaceLoad(load.getResult(), widenBits(b, bits, f16));
          load.erase();
        } else if (auto load = dyn_cast<vector::LoadOp>(user)) {
          auto vectorType = cast<VectorType>(load.getType());
          assert(vectorType.getRank() == 1 && "a row of elements");
          b.setInsertionPointAfter(load);
          auto bitsLoad = vector::LoadOp::create(
              b, vectorType.clone(i16), view, load.getIndices(),
              load.getNontemporal(),
              load.getAlignment() ? llvm::MaybeAlign(*load.getAlignment())
                                  : llvm::MaybeAlign());
          SmallVector<Value> elements;
          for (int64_t e = 0; e < vectorType.getDimSize(0); ++e)
            elements.push_back(
                widenBits(b, vector::ExtractOp::create(b, bitsLoad, e), f16));
          Value wide = vector::FromElementsOp::create(b, vectorType.clone(f32),
                                                      elements);
          replaceLoad(load.getResult(), wide);
          load.erase();
        } else if (auto store = dyn_cast<memref::StoreOp>(user)) {
          Value x = roundedFrom(store, store.getValueToStore());
          if (!x)
            return WalkResult::interrupt();
          store.getValueMutable().assign(
              narrowBits(b, roundThroughHalf(b, x, f16), f16));
        } else if (auto store = dyn_cast<vector::StoreOp>(user)) {
          Value x = roundedFrom(store, store.getValueToStore());
          if (!x)
            return WalkResult::interrupt();
          auto vectorType = cast<VectorType>(x.getType());
          SmallVector<Value> elements;
          for (int64_t e = 0; e < vectorType.getDimSize(0); ++e)
            elements.push_back(narrowBits(
                b, roundThroughHalf(b, vector::ExtractOp::create(b, x, e), f16),
                f16));
          store.getValueToStoreMutable().assign(vector::FromElementsOp::create(
              b, vectorType.clone(i16), elements));
        } else {
          user->emitOpError("uses a ")
              << narrow << " kernel argument, which txl-emulate-mma makes i16 "
              << "for OpenCL: only loads, stores, subviews and memref.dim "
                 "can";
          return WalkResult::interrupt();
        }
      }
    }
    func.setFunctionType(FunctionType::get(func.getContext(), inputs, {}));
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// nvgpu.device_async_copy => the work-item's own load and store of the
/// same elements, done where the copy is issued; its groups and waits go
/// (a copy is complete when issued). The kernels' barrier after the wait
/// orders the stores for the workgroup as it orders cp.async's. Zero-fill
/// (a source size) is an error.
LogicalResult emulateAsyncCopies(gpu::GPUModuleOp module) {
  SmallVector<nvgpu::DeviceAsyncCopyOp> copies;
  SmallVector<Operation *> syncs;
  module.walk([&](Operation *op) {
    if (auto copy = dyn_cast<nvgpu::DeviceAsyncCopyOp>(op))
      copies.push_back(copy);
    else if (isa<nvgpu::DeviceAsyncCreateGroupOp, nvgpu::DeviceAsyncWaitOp>(op))
      syncs.push_back(op);
  });
  for (nvgpu::DeviceAsyncCopyOp copy : copies)
    if (copy.getSrcElements())
      return copy.emitOpError(
          "is not emulated: txl-emulate-mma takes whole copies, without a "
          "source size");
  for (Operation *op : llvm::reverse(syncs))
    op->erase();
  for (nvgpu::DeviceAsyncCopyOp copy : copies) {
    ImplicitLocOpBuilder b(copy.getLoc(), copy);
    auto type = VectorType::get(
        {int64_t(copy.getDstElements().getZExtValue())},
        cast<MemRefType>(copy.getDst().getType()).getElementType());
    Value chunk =
        vector::LoadOp::create(b, type, copy.getSrc(), copy.getSrcIndices());
    vector::StoreOp::create(b, chunk, copy.getDst(), copy.getDstIndices());
    copy.erase();
  }
  return success();
}

/// The lane's g and t (lane = 4 g + t), i32: its quad and its place in it,
/// the coordinates of the mma.sync and ldmatrix register layouts.
std::pair<Value, Value> laneQuad(ImplicitLocOpBuilder &b) {
  Value four = arith::ConstantIntOp::create(b, 4, 32);
  Value lane = arith::IndexCastOp::create(
      b, b.getI32Type(),
      gpu::LaneIdOp::create(b, /*upper_bound=*/IntegerAttr()));
  return {arith::DivUIOp::create(b, lane, four),
          arith::RemUIOp::create(b, lane, four)};
}

/// nvgpu.ldmatrix (not transposed; 1, 2 or 4 core matrices of 8 rows of 8
/// 16-bit elements) => each lane's own loads, as ldmatrix.sync delivers
/// them: lane 4 g + t gets elements 2 t and 2 t + 1 of row g of core
/// matrix m in result[m], the row whose address lane 8 m + g gave, so
/// each lane fetches that lane's row start (a linear offset of the static
/// row-major tile) with a shuffle. Runs before the
/// narrow tiles are widened (the loads it makes are theirs to widen).
LogicalResult emulateLdMatrix(gpu::GPUModuleOp module) {
  SmallVector<nvgpu::LdMatrixOp> ops;
  module.walk([&](nvgpu::LdMatrixOp op) { ops.push_back(op); });
  for (nvgpu::LdMatrixOp op : ops) {
    auto type = cast<VectorType>(op.getRes().getType());
    if (op.getTranspose() || type.getRank() != 2 || type.getDimSize(1) != 2 ||
        type.getElementTypeBitWidth() != 16 ||
        type.getDimSize(0) != op.getNumTiles())
      return op.emitOpError(
          "is not emulated: txl-emulate-mma takes 1, 2 or 4 core matrices "
          "of 16-bit elements, not transposed, as vector<Nx2x(bf16|f16)>");
    auto memref = cast<MemRefType>(op.getSrcMemref().getType());
    if (!memref.hasStaticShape() || !memref.getLayout().isIdentity())
      return op.emitOpError("is not emulated: txl-emulate-mma takes an "
                            "ldmatrix of a static row-major tile");
    ImplicitLocOpBuilder b(op.getLoc(), op);
    Type i32 = b.getI32Type();
    auto c32 = [&](int64_t v) {
      return arith::ConstantIntOp::create(b, v, 32);
    };
    auto [g, t] = laneQuad(b);
    SmallVector<Value> indices(op.getIndices());
    // The lane's row start crosses lanes as one linear offset of the tile
    // (the attention tiles are 2-D and 4-D).
    SmallVector<int64_t> strides(memref.getRank(), 1);
    for (int64_t d = memref.getRank() - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * memref.getDimSize(d + 1);
    Value offset = c32(0);
    for (auto [index, stride] : llvm::zip(indices, strides))
      offset = arith::AddIOp::create(
          b, offset,
          arith::MulIOp::create(b, arith::IndexCastOp::create(b, i32, index),
                                c32(stride)));
    SmallVector<Value> elements;
    for (int64_t m = 0; m < type.getDimSize(0); ++m) {
      Value src = arith::AddIOp::create(b, g, c32(8 * m));
      Value got = gpu::ShuffleOp::create(b, offset, src, c32(kSubgroupSize),
                                         gpu::ShuffleMode::IDX)
                      .getShuffleResult();
      SmallVector<Value> at;
      for (auto [d, stride] : llvm::enumerate(strides)) {
        Value index = arith::DivUIOp::create(b, got, c32(stride));
        if (d > 0)
          index = arith::RemUIOp::create(b, index, c32(memref.getDimSize(d)));
        at.push_back(arith::IndexCastOp::create(b, b.getIndexType(), index));
      }
      for (int64_t e = 0; e < 2; ++e) {
        SmallVector<Value> element = at;
        element.back() = arith::AddIOp::create(
            b, at.back(),
            arith::IndexCastOp::create(
                b, b.getIndexType(),
                arith::AddIOp::create(b, arith::MulIOp::create(b, t, c32(2)),
                                      c32(e))));
        elements.push_back(
            memref::LoadOp::create(b, op.getSrcMemref(), element));
      }
    }
    op.replaceAllUsesWith(
        vector::FromElementsOp::create(b, type, elements).getResult());
    op.erase();
  }
  return success();
}

/// txl.subgroup_barrier => SPIR-V's OpControlBarrier of subgroup scope
/// (execution and memory scope Subgroup, semantics SequentiallyConsistent |
/// WorkgroupMemory), as the call __spirv_ControlBarrier(3, 3, 0x110) that
/// LLVM's SPIR-V backend turns into the instruction (gpu.barrier's OpenCL
/// barrier() becomes the same instruction of workgroup scope).
void lowerSubgroupBarriers(gpu::GPUModuleOp module) {
  SmallVector<txl::SubgroupBarrierOp> ops;
  module.walk([&](txl::SubgroupBarrierOp op) { ops.push_back(op); });
  if (ops.empty())
    return;
  constexpr StringLiteral kName = "_Z22__spirv_ControlBarrieriii";
  MLIRContext *context = module.getContext();
  Type i32 = IntegerType::get(context, 32);
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(context),
                                          {i32, i32, i32});
  auto func = module.lookupSymbol<LLVM::LLVMFuncOp>(kName);
  if (!func) {
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    func = LLVM::LLVMFuncOp::create(b, module.getLoc(), kName, type);
    func.setCConv(LLVM::CConv::SPIR_FUNC);
    func.setConvergent(true);
    func.setNoUnwind(true);
    func.setWillReturn(true);
  }
  for (txl::SubgroupBarrierOp op : ops) {
    ImplicitLocOpBuilder b(op.getLoc(), op);
    constexpr int64_t kSubgroupScope = 3, kSemantics = 0x110;
    Value scope = arith::ConstantIntOp::create(b, kSubgroupScope, 32);
    Value semantics = arith::ConstantIntOp::create(b, kSemantics, 32);
    auto call =
        LLVM::CallOp::create(b, func, ValueRange{scope, scope, semantics});
    call.setCConv(LLVM::CConv::SPIR_FUNC);
    call.setConvergent(true);
    call.setNoUnwind(true);
    call.setWillReturn(true);
    op.erase();
  }
}

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
    SmallVector<Value> a = widen(fragmentElements(b, op.getMatrixA()));
    SmallVector<Value> bs = widen(fragmentElements(b, op.getMatrixB()));
    SmallVector<Value> d = fragmentElements(b, op.getMatrixC());
    auto c32 = [&](int64_t v) {
      return arith::ConstantIntOp::create(b, v, 32);
    };
    auto [g, t] = laneQuad(b);
    // Each register (two elements) crosses lanes as one i64 shuffle,
    // element 0 in the low word.
    Type i64 = b.getI64Type();
    auto c64 = [&](int64_t v) { return i64Constant(b, v); };
    auto bits64 = [&](Value x) {
      return arith::ExtUIOp::create(b, i64,
                                    arith::BitcastOp::create(b, i32, x));
    };
    auto packRegisters = [&](ArrayRef<Value> elements) {
      SmallVector<Value> regs;
      for (size_t reg = 0; 2 * reg < elements.size(); ++reg)
        regs.push_back(arith::OrIOp::create(
            b, bits64(elements[2 * reg]),
            arith::ShLIOp::create(b, bits64(elements[2 * reg + 1]), c64(32))));
      return regs;
    };
    SmallVector<Value> aRegs = packRegisters(a), bRegs = packRegisters(bs);
    // The first lane of A's quad (4 g) and of B's column 2 t + e (4 (2 t +
    // e)).
    Value aLane = arith::MulIOp::create(b, g, c32(4));
    Value bLane[2];
    for (int64_t e = 0; e < 2; ++e)
      bLane[e] = arith::MulIOp::create(
          b,
          arith::AddIOp::create(b, arith::MulIOp::create(b, t, c32(2)), c32(e)),
          c32(4));
    // The products run as a loop of 8 steps, not unrolled: the OpenCL
    // driver's compile time grows with the emulated code (the d_head 32
    // attention kernel has 57 products). Step s = 4 h + p takes k = 8 h +
    // 2 p and 8 h + 2 p + 1: register h of B or 2 h + r of A (row g + 8 r)
    // from lane 4 g + p (A) or 4 (2 t + e) + p (B, column 2 t + e); 4
    // shuffles a step, 32 a product. Each D element sums its 16 products
    // in the order of k.
    Value zero = arith::ConstantIndexOp::create(b, 0);
    Value steps = arith::ConstantIndexOp::create(b, 8);
    Value one = arith::ConstantIndexOp::create(b, 1);
    auto loop = scf::ForOp::create(b, zero, steps, one, d);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(loop.getBody());
      ImplicitLocOpBuilder lb(op.getLoc(), rewriter);
      Value s = arith::IndexCastOp::create(lb, i32, loop.getInductionVar());
      Value p = arith::AndIOp::create(lb, s, c32(3));
      Value high =
          arith::CmpIOp::create(lb, arith::CmpIPredicate::uge, s, c32(4));
      // Element j of register `highReg` (k >= 8) or `lowReg` of lane
      // `lane` + p: its k = 8 h + 2 p + j.
      auto fetch = [&](Value lowReg, Value highReg, Value lane) {
        Value own = arith::SelectOp::create(lb, high, highReg, lowReg);
        Value got =
            gpu::ShuffleOp::create(lb, own, arith::AddIOp::create(lb, lane, p),
                                   c32(kSubgroupSize), gpu::ShuffleMode::IDX)
                .getShuffleResult();
        auto half = [&](Value v) {
          return arith::BitcastOp::create(lb, f32,
                                          arith::TruncIOp::create(lb, i32, v));
        };
        return std::array<Value, 2>{
            half(got), half(arith::ShRUIOp::create(lb, got, c64(32)))};
      };
      // aRow[r][j] = A[g + 8 r][k]; bCol[e][j] = B[k][2 t + e].
      std::array<Value, 2> aRow[2], bCol[2];
      for (int64_t r = 0; r < 2; ++r)
        aRow[r] = fetch(aRegs[r], aRegs[2 + r], aLane);
      for (int64_t e = 0; e < 2; ++e)
        bCol[e] = fetch(bRegs[0], bRegs[1], bLane[e]);
      SmallVector<Value> sums(loop.getRegionIterArgs());
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t e = 0; e < 2; ++e)
            sums[2 * r + e] = arith::AddFOp::create(
                lb, sums[2 * r + e],
                arith::MulFOp::create(lb, aRow[r][j], bCol[e][j]));
      scf::YieldOp::create(lb, sums);
    }
    d.assign(loop.getResults().begin(), loop.getResults().end());
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(
        op, op.getRes().getType(), d);
    return success();
  }
};

// extf(truncf(x : f32 to bf16 or f16) to f32) => x rounded on its bits
// (roundThroughHalf).
struct RoundThroughHalf : public OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rewriter) const override {
    auto trunc = op.getIn().getDefiningOp<arith::TruncFOp>();
    if (!trunc || !(trunc.getType().isBF16() || trunc.getType().isF16()) ||
        !op.getType().isF32() || !trunc.getIn().getType().isF32())
      return rewriter.notifyMatchFailure(op, "not f32 -> bf16/f16 -> f32");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    rewriter.replaceOp(
        op, roundThroughHalf(b, trunc.getIn(), trunc.getType().isF16()));
    return success();
  }
};

struct EmulateMmaPass : public txl::impl::EmulateMmaPassBase<EmulateMmaPass> {
  void runOnOperation() override {
    gpu::GPUModuleOp module = getOperation();
    expandWarpgroupProducts(module);
    lowerSubgroupBarriers(module);
    if (failed(emulateAsyncCopies(module)) || failed(emulateLdMatrix(module)) ||
        failed(widenNarrowAttributions(module)) ||
        failed(narrowGlobalArguments(module)))
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
        failed(checkMmaLowered(module)))
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
