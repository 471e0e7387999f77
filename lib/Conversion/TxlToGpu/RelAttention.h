//===- RelAttention.h - The rel_attention kernels' shared parts ---*- C++
//-*-===//
//
// What the f32 (RelAttentionToGpu.cpp) and the bf16 tensor-core
// (RelAttentionMma.cpp) forms of the relative-attention kernel share: the
// kernel's signature and launch geometry, and the negative-control hooks.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_LIB_CONVERSION_TXLTOGPU_RELATTENTION_H
#define TXL_LIB_CONVERSION_TXLTOGPU_RELATTENTION_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <limits>

namespace mlir::txl {

/// Ways to break a kernel on purpose, for the negative-control tests only
/// (txl-rel-attention-to-gpu's test-* options): both default to a correct
/// kernel.
struct KernelTestHooks {
  /// Added to the r row of every BD term (any value but 0 is wrong).
  int64_t relShiftOffset = 0;
  /// 1 or 2: the kernel's first or second barrier is left out; 0: none.
  int64_t dropBarrier = 0;
};

/// What both kernel builders write kernel bodies with: a builder at the
/// kernel's location and the index, i32 and f32 arithmetic they use.
class KernelBodyBuilder {
protected:
  explicit KernelBodyBuilder(gpu::GPUFuncOp func)
      : b(func.getLoc(), func.getContext()) {}

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value i32(int64_t v) { return arith::ConstantIntOp::create(b, v, 32); }
  Value f32(double v) {
    return arith::ConstantFloatOp::create(b, b.getF32Type(), APFloat(float(v)));
  }
  Value negInf() { return f32(-std::numeric_limits<float>::infinity()); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, p, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, c, x, y);
  }

  /// The decoder mask (txl.masked_softmax) of a workgroup whose query rows
  /// start at `i0`, `queryTile` of them: key j is visible to query i iff
  /// j <= i + mlen, and with same_length also iff j > i - shift, where
  /// shift = qlen - (klen - mem_len) if klen > mem_len else qlen. [jBegin,
  /// jEnd) are the keys visible to some row of the tile.
  struct DecoderMask {
    Value mlen, shift, same, jBegin, jEnd;
  };
  DecoderMask decoderMask(Value qlen, Value klen, Value memLen,
                          Value sameLength, Value i0, int64_t queryTile) {
    using P = arith::CmpIPredicate;
    Value zero = idx(0);
    DecoderMask m;
    m.mlen = sub(klen, qlen);
    Value maskLen = sub(klen, memLen);
    m.shift = select(cmp(P::sgt, maskLen, zero), sub(qlen, maskLen), qlen);
    m.same = cmp(P::ne, sameLength, i32(0));
    Value firstSame =
        arith::MaxSIOp::create(b, zero, add(sub(i0, m.shift), idx(1)));
    m.jBegin = select(m.same, firstSame, zero);
    m.jEnd =
        arith::MinSIOp::create(b, klen, add(add(i0, idx(queryTile)), m.mlen));
    return m;
  }

  ImplicitLocOpBuilder b;
};

/// A rel_attention kernel and how it is launched: a grid of ceil(qlen /
/// queryTile) × (batch · n_head) workgroups of `threads` work-items.
struct AttentionKernel {
  gpu::GPUFuncOp func;
  int64_t queryTile;
  int64_t threads;
};

/// The memref type a rel_attention kernel takes for an operand of `rank`
/// dimensions whose last one is d_head: any strides and offset, so that
/// every bufferized layout (views of a fused qkv projection included) is
/// passed without a copy. `unitInnerStride`: d_head's stride is 1, so that
/// a column offset is an immediate of the load (a buffer of another layout
/// is then copied by bufferization).
inline MemRefType attentionOperandType(MLIRContext *ctx, int64_t rank,
                                       int64_t dHead,
                                       bool unitInnerStride = false) {
  SmallVector<int64_t> shape(rank, ShapedType::kDynamic);
  shape.back() = dHead;
  SmallVector<int64_t> strides(rank, ShapedType::kDynamic);
  if (unitInnerStride)
    strides.back() = 1;
  auto layout = StridedLayoutAttr::get(ctx, ShapedType::kDynamic, strides);
  return MemRefType::get(shape, Float32Type::get(ctx), layout);
}

/// The kernel's function type: (q, k, v [len, batch, n_head, d_head],
/// r [klen, n_head, d_head], u, v_bias [n_head, d_head], out [qlen, batch,
/// n_head, d_head], mem_len: index, same_length: i32, scale: f32), the
/// memrefs attentionOperandType(..., `unitInnerStride`).
inline FunctionType attentionKernelType(MLIRContext *ctx, int64_t dHead,
                                        bool unitInnerStride) {
  MemRefType t4 = attentionOperandType(ctx, 4, dHead, unitInnerStride);
  MemRefType t3 = attentionOperandType(ctx, 3, dHead, unitInnerStride);
  MemRefType t2 = attentionOperandType(ctx, 2, dHead, unitInnerStride);
  return FunctionType::get(ctx,
                           {t4, t4, t4, t3, t2, t2, t4, IndexType::get(ctx),
                            IntegerType::get(ctx, 32), Float32Type::get(ctx)},
                           {});
}

/// The bf16 tensor-core kernel `rel_attention_bf16_d<d_head>` in `module`'s
/// @txl_kernels, created on first use (RelAttentionMma.cpp): same
/// signature and result as the f32 kernel, products with bf16 operands and
/// f32 accumulation (nvgpu.mma.sync m16n8k16).
AttentionKernel getOrCreateMmaAttentionKernel(ModuleOp module, int64_t dHead,
                                              const KernelTestHooks &hooks);

} // namespace mlir::txl

#endif // TXL_LIB_CONVERSION_TXLTOGPU_RELATTENTION_H
