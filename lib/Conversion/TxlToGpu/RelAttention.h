//===- RelAttention.h - The rel_attention kernels' shared parts ---*- C++
//-*-===//
//
// What the f32 (RelAttentionToGpu.cpp) and the bf16 tensor-core
// (RelAttentionMma.cpp) forms of the relative-attention kernel share: the
// kernel's signature and launch geometry, and the helpers that mark the ops
// the negative-control test passes break (txl.sync, txl.rel_shift_row,
// txl.key_part, txl.interior_tile, txl.rescale).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_LIB_CONVERSION_TXLTOGPU_RELATTENTION_H
#define TXL_LIB_CONVERSION_TXLTOGPU_RELATTENTION_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "txl/Conversion/Philox.h"
#include "txl/IR/TxlDialect.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

namespace mlir::txl {

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

  /// A workgroup barrier marked with what it orders (`txl.sync`, one of
  /// TxlDialect::kSyncAttrName's roles), which names it to the
  /// negative-control test pass txl-test-drop-barrier.
  void barrier(StringRef role) {
    gpu::BarrierOp::create(b)->setAttr(TxlDialect::kSyncAttrName,
                                       b.getStringAttr(role));
  }
  /// `row` (an op's index result), marked as the r row a tile of BD starts
  /// at (`txl.rel_shift_row`, for txl-test-rel-shift-offset).
  Value relShiftRow(Value row) {
    row.getDefiningOp()->setAttr(TxlDialect::kRelShiftRowAttrName,
                                 b.getUnitAttr());
    return row;
  }
  /// `rescale` (an op's i1 result), marked as the condition under which a
  /// lane of the tensor-core forward rescales its rows' O (`txl.rescale`,
  /// for txl-test-rescale).
  void markRescale(Value rescale) {
    rescale.getDefiningOp()->setAttr(TxlDialect::kRescaleAttrName,
                                     b.getUnitAttr());
  }
  /// `interior` (an op's i1 result), marked as the condition under which a
  /// key tile skips the mask (`txl.interior_tile`, for
  /// txl-test-interior-tile).
  void markInteriorTile(Value interior) {
    interior.getDefiningOp()->setAttr(TxlDialect::kInteriorTileAttrName,
                                      b.getUnitAttr());
  }
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

  /// The keys a workgroup of a launch split over the keys walks
  /// (flash-decoding): the key tiles of [m.jBegin, m.jEnd) dealt in
  /// consecutive runs of ceil(tiles / parts) to the grid's z workgroups;
  /// with one z, the whole range. The part's tiles and its first key's
  /// offset are marked (`txl.key_part`) for txl-test-whole-key-range.
  struct KeyPart {
    /// The grid's z size and this workgroup's z.
    Value parts, part;
    Value jBegin, jEnd;
  };
  KeyPart keyPart(const DecoderMask &m, int64_t keyTile) {
    Value zero = idx(0);
    KeyPart kp;
    kp.parts = gpu::GridDimOp::create(b, gpu::Dimension::z);
    kp.part = gpu::BlockIdOp::create(b, gpu::Dimension::z);
    Value tiles = arith::CeilDivSIOp::create(
        b, arith::MaxSIOp::create(b, sub(m.jEnd, m.jBegin), zero),
        idx(keyTile));
    Value partTiles = arith::CeilDivSIOp::create(b, tiles, kp.parts);
    partTiles.getDefiningOp()->setAttr(TxlDialect::kKeyPartAttrName,
                                       b.getStringAttr("tiles"));
    Value partKeys = mul(partTiles, idx(keyTile));
    Value offset = mul(kp.part, partKeys);
    offset.getDefiningOp()->setAttr(TxlDialect::kKeyPartAttrName,
                                    b.getStringAttr("offset"));
    kp.jBegin = add(m.jBegin, offset);
    kp.jEnd = arith::MinSIOp::create(b, m.jEnd, add(kp.jBegin, partKeys));
    return kp;
  }

  /// Whether key j is visible to query i under `m` (both index values,
  /// j possibly negative): j <= i + mlen, and with same_length j > i - shift.
  Value visible(const DecoderMask &m, Value i, Value j) {
    using P = arith::CmpIPredicate;
    Value causal = cmp(P::sle, j, add(i, m.mlen));
    Value notSame =
        arith::XOrIOp::create(b, m.same, arith::ConstantIntOp::create(b, 1, 1));
    Value sameOk =
        arith::OrIOp::create(b, notSame, cmp(P::sgt, j, sub(i, m.shift)));
    return arith::AndIOp::create(b, causal, sameOk);
  }

  /// Row i's visible keys under `m` as one 32-bit range, so that the mask
  /// costs one unsigned comparison per score (`isVisibleKey`): key j,
  /// possibly negative, is visible to row i and below `jEnd` iff
  /// (j - first) <u count, where first = lo + 1 and count = max(hi - lo,
  /// 0), with hi = min(jEnd - 1, i + mlen) and lo = max(i - shift, -1)
  /// with same_length, -1 without. `rowOk` false (a row past qlen) gives
  /// count 0: no key. Both values are i32; i, jEnd and the mask's values
  /// are index values that fit in 32 bits (a launch's sizes do).
  struct VisibleKeys {
    Value first, count;
  };
  Value toI32(Value x) {
    return arith::IndexCastOp::create(b, b.getI32Type(), x);
  }
  VisibleKeys visibleKeys(const DecoderMask &m, Value i, Value jEnd,
                          Value rowOk = {}) {
    Value row = toI32(i);
    Value hi = arith::MinSIOp::create(b, sub(toI32(jEnd), i32(1)),
                                      add(row, toI32(m.mlen)));
    Value lo = select(
        m.same, arith::MaxSIOp::create(b, sub(row, toI32(m.shift)), i32(-1)),
        i32(-1));
    Value count = arith::MaxSIOp::create(b, sub(hi, lo), i32(0));
    if (rowOk)
      count = select(rowOk, count, i32(0));
    return {add(lo, i32(1)), count};
  }
  /// Whether key j (an index value) is in `keys`.
  Value isVisibleKey(const VisibleKeys &keys, Value j) {
    return cmp(arith::CmpIPredicate::ult, sub(toI32(j), keys.first),
               keys.count);
  }

  /// `body(row, col)` for every element of a [rows, dHead] tile, the
  /// `threads` work-items of the workgroup (`tid` the work-item's index)
  /// striding over the elements: consecutive work-items take consecutive
  /// columns, so that global reads coalesce.
  void forTileElements(Value tid, int64_t threads, int64_t rows, int64_t dHead,
                       function_ref<void(Value row, Value col)> body) {
    Value d = idx(dHead);
    scf::ForOp::create(
        b, tid, idx(rows * dHead), idx(threads), ValueRange{},
        [&](OpBuilder &nested, Location loc, Value e, ValueRange) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          body(arith::DivUIOp::create(b, e, d),
               arith::RemUIOp::create(b, e, d));
          scf::YieldOp::create(b);
        });
  }

  /// The LLVM loop annotation of the kernels' d_head and lane loops:
  /// unrolled 4 times. Fully unrolled (LLVM's default for 32 iterations),
  /// ptxas keeps too many workgroup-memory loads in flight and spills.
  Attribute unrollAttr(int count = 4) {
    return parseAttribute("#llvm.loop_annotation<unroll = <count = " +
                              std::to_string(count) + " : i32>>",
                          b.getContext());
  }

  /// The dropatt operands of a kernel that draws the attention's dropout:
  /// seed, offset and stream (i64; stream = dropatt_stream_base +
  /// dropatt_stream), column (i64, the global batch column of batch index
  /// 0), minKept (i32, philox::keepThreshold(rate); 0 when not training)
  /// and scale (f32, 1 / (1 - rate); 1 when not training).
  struct Dropatt {
    Value seed, offset, stream, column, minKept, scale;
  };
  /// The multiplier of the probability of pair (query i, key j) in column
  /// (batchIdx, head): scale if dropatt keeps it, else 0; 1 when `d.minKept`
  /// is 0 (then no Philox is computed). The element's counter is its
  /// row-major index in [batch, qlen, klen, n_head] counted from the global
  /// column `d.column` (txl.dropout with column and batch_dim 2 over the
  /// decomposed [qlen, klen, batch, n_head] scores), as txl-to-linalg's
  /// dropatt draws it, so that both targets see the same masks.
  Value dropattMultiplier(const Dropatt &d, Value qlen, Value klen, Value nHead,
                          Value i, Value j, Value batchIdx, Value head) {
    Value enabled = cmp(arith::CmpIPredicate::ne, d.minKept, i32(0));
    auto ifOp = scf::IfOp::create(
        b, enabled,
        [&](OpBuilder &nb, Location loc) {
          ImplicitLocOpBuilder ib(loc, nb);
          auto add = [&](Value x, Value y) {
            return arith::AddIOp::create(ib, x, y);
          };
          auto mul = [&](Value x, Value y) {
            return arith::MulIOp::create(ib, x, y);
          };
          Value column =
              add(arith::IndexCastOp::create(ib, ib.getIndexType(), d.column),
                  batchIdx);
          Value e = add(
              mul(add(mul(add(mul(column, qlen), i), klen), j), nHead), head);
          Value e64 = arith::IndexCastUIOp::create(ib, ib.getI64Type(), e);
          auto word32 = [&](Value v) {
            return arith::TruncIOp::create(ib, ib.getI32Type(), v);
          };
          Value block = word32(arith::ShRUIOp::create(
              ib, e64, arith::ConstantIntOp::create(ib, 2, 64)));
          Value word = word32(arith::AndIOp::create(
              ib, e64, arith::ConstantIntOp::create(ib, 3, 64)));
          std::pair<Value, Value> offset =
              philox::splitWords(ib, loc, d.offset);
          std::array<Value, 4> words = philox::philox4x32(
              ib, loc, {block, word32(d.stream), offset.first, offset.second},
              philox::roundKeys(ib, loc, philox::splitWords(ib, loc, d.seed)));
          Value keep = philox::isKept(
              ib, loc, philox::selectWord(ib, loc, words, word), d.minKept);
          Value zero = arith::ConstantFloatOp::create(ib, ib.getF32Type(),
                                                      APFloat(0.0f));
          scf::YieldOp::create(
              ib, ValueRange{arith::SelectOp::create(ib, keep, d.scale, zero)});
        },
        [&](OpBuilder &nb, Location loc) {
          scf::YieldOp::create(nb, loc,
                               ValueRange{arith::ConstantFloatOp::create(
                                   nb, loc, nb.getF32Type(), APFloat(1.0f))});
        });
    return ifOp.getResult(0);
  }

  ImplicitLocOpBuilder b;
};

/// A rel_attention kernel and how it is launched: a grid of ceil(qlen /
/// queryTile) × (batch · n_head) × parts workgroups of `threads`
/// work-items.
struct AttentionKernel {
  gpu::GPUFuncOp func;
  int64_t queryTile = 0;
  int64_t threads = 0;
  /// Its workgroups that fit on one compute unit at once (the occupancy
  /// its ptxas budget asserts), for the choice of the number of key parts
  /// (grid z; the kernel's last two arguments are the parts' workspace).
  int64_t residentWorkgroups = 1;
  /// The kernel takes key, value and pos_key packed by
  /// rel_attention_pack_<bf16|f16>_d<d_head> (getOrCreateMmaPackKernel),
  /// and klen as an argument: (q, k_packed, v_packed, r_packed, u, v_bias,
  /// out, klen, mem_len, same_length, scale, ...) (the tensor-core kernel
  /// where its r window is staged, d_head padded to 32, 64 or 128).
  bool packed = false;
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

/// A per-row softmax statistic of the attention kernels (the forward's
/// saved log-sum-exp, the backward's lse and D): [batch, n_head, qlen] f32,
/// contiguous (txl.rel_attention's `lse` result).
inline MemRefType rowStatsType(MLIRContext *ctx) {
  return MemRefType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic, ShapedType::kDynamic},
      Float32Type::get(ctx));
}

/// The key parts' outputs of a rel_attention kernel split over the keys
/// (flash-decoding): [parts, qlen, batch, n_head, d_head] f32, contiguous,
/// each part's rows normalized by its own softmax sum.
inline MemRefType partOutputType(MLIRContext *ctx, int64_t dHead) {
  SmallVector<int64_t> shape(4, ShapedType::kDynamic);
  shape.push_back(dHead);
  return MemRefType::get(shape, Float32Type::get(ctx));
}

/// The key parts' log-sum-exps: [parts, batch, n_head, qlen] f32,
/// contiguous (-inf for a part without visible keys).
inline MemRefType partLseType(MLIRContext *ctx) {
  return MemRefType::get(SmallVector<int64_t>(4, ShapedType::kDynamic),
                         Float32Type::get(ctx));
}

/// The trailing arguments of a kernel that draws dropatt
/// (KernelBodyBuilder::Dropatt): seed, offset, stream, column (i64),
/// minKept (i32), scale (f32).
inline SmallVector<Type> dropattArgumentTypes(MLIRContext *ctx) {
  Type i64 = IntegerType::get(ctx, 64);
  return {i64, i64, i64, i64, IntegerType::get(ctx, 32), Float32Type::get(ctx)};
}

/// The values of those arguments for a fused attention op with dropatt
/// `rate` and `stream` and operands seed, offset, training (i1),
/// stream_base and column: when not training, minKept 0 and scale 1 (the
/// identity).
inline SmallVector<Value> dropattLaunchArguments(ImplicitLocOpBuilder &b,
                                                 Value seed, Value offset,
                                                 Value training,
                                                 Value streamBase, Value column,
                                                 double rate, int64_t stream) {
  Value streamValue = arith::AddIOp::create(
      b, streamBase, arith::ConstantIntOp::create(b, stream, 64));
  Value minKept = arith::SelectOp::create(
      b, training,
      philox::constantI32(b, b.getLoc(), philox::keepThreshold(rate)),
      arith::ConstantIntOp::create(b, 0, 32));
  auto f32 = [&](double v) {
    return arith::ConstantFloatOp::create(b, b.getF32Type(), APFloat(float(v)));
  };
  Value scale =
      arith::SelectOp::create(b, training, f32(1.0 / (1.0 - rate)), f32(1.0));
  return {seed, offset, streamValue, column, minKept, scale};
}

/// The kernel's function type: (q, k, v [len, batch, n_head, d_head],
/// r [klen, n_head, d_head], u, v_bias [n_head, d_head], out [qlen, batch,
/// n_head, d_head], mem_len: index, same_length: i32, scale: f32), the
/// memrefs attentionOperandType(..., `unitInnerStride`); with `dropatt`,
/// then dropattArgumentTypes; with `lse`, then the rows' log-sum-exp
/// (rowStatsType); with `keyParts`, then the key parts' outputs and
/// log-sum-exps (partOutputType, partLseType).
inline FunctionType attentionKernelType(MLIRContext *ctx, int64_t dHead,
                                        bool unitInnerStride,
                                        bool dropatt = false, bool lse = false,
                                        bool keyParts = false) {
  MemRefType t4 = attentionOperandType(ctx, 4, dHead, unitInnerStride);
  MemRefType t3 = attentionOperandType(ctx, 3, dHead, unitInnerStride);
  MemRefType t2 = attentionOperandType(ctx, 2, dHead, unitInnerStride);
  SmallVector<Type> inputs = {t4,
                              t4,
                              t4,
                              t3,
                              t2,
                              t2,
                              t4,
                              IndexType::get(ctx),
                              IntegerType::get(ctx, 32),
                              Float32Type::get(ctx)};
  if (dropatt)
    llvm::append_range(inputs, dropattArgumentTypes(ctx));
  if (lse)
    inputs.push_back(rowStatsType(ctx));
  if (keyParts) {
    inputs.push_back(partOutputType(ctx, dHead));
    inputs.push_back(partLseType(ctx));
  }
  return FunctionType::get(ctx, inputs, {});
}

/// The blocks of 8 window rows of the tensor-core forward's positional
/// term X: a subgroup's 16 query rows see 16 + 32 - 1 rows of r in a key
/// tile of 32, padded to 48.
inline constexpr int64_t kMmaXBlocks = 6;

/// The tensor-core kernel `rel_attention_<bf16|f16>_d<d_head>` in
/// `module`'s @txl_kernels, created on first use (RelAttentionMma.cpp):
/// same signature (key parts included) and result as the f32 kernel,
/// products with `operandType` (bf16 or f16) operands and f32 accumulation
/// (nvgpu.mma.sync m16n8k16); with `dropatt`, its dropatt form
/// `rel_attention_<bf16|f16>_dropatt_d<d_head>` (the f32 dropatt kernel's
/// arguments and masks); with `lse`, the form `..._lse_d<d_head>` that also
/// writes each row's log-sum-exp ([batch, n_head, qlen] f32, the argument
/// before the key parts') for the backward, as the f32 lse kernel.
/// `xChains` (a divisor of kMmaXBlocks, or 0: chosen per kernel) is
/// how many of the positional term's blocks of 8 window rows run their
/// mma.sync chains interleaved (the pass option x-chains); the first
/// request of a kernel name fixes it for the module.
AttentionKernel getOrCreateMmaAttentionKernel(ModuleOp module, int64_t dHead,
                                              FloatType operandType,
                                              bool dropatt, bool lse,
                                              int64_t xChains = 0);

/// Whether the tensor-core kernel of `dHead` takes its key, value and
/// pos_key packed (AttentionKernel::packed): d_head up to 128, padded to
/// 32, 64 or 128, the widths whose r window it stages.
bool mmaAttentionPacksOperands(int64_t dHead);

/// Keys per workgroup of rel_attention_pack_<bf16|f16>_d<d_head>, and the
/// multiple the packed operands' klen is padded to (klenPad, with one tile
/// more): the tensor-core kernel's key tile.
inline constexpr int64_t kMmaPackKeys = 32;

/// `rel_attention_pack_<bf16|f16>_d<d_head>` in `module`'s @txl_kernels,
/// created on first use (RelAttentionMma.cpp): (k, v [klen, batch, n_head,
/// d_head], r [klen, n_head, d_head] f32, as attentionOperandType with a
/// unit inner stride; k_packed and v_packed [batch, n_head, klenPad /
/// kMmaPackKeys, kMmaPackKeys * dPad / 8, 8], r_packed [n_head, klenPad,
/// dPad] of `operandType`, contiguous), with dPad d_head padded to 16 and
/// klenPad klen to kMmaPackKeys, plus one key tile (the forward kernel's
/// walk copies the tile after its last, unread, and reads no row past it):
/// the operands of the tensor-core kernel rounded to nearest even, every
/// element past klen or d_head zero. Each key tile of K and of V is the
/// image of the forward kernel's workgroup tile, 16-byte chunks in the
/// order of its 8 x 8 core matrices (txl.warpgroup_mma's B operands): K's
/// chunk c is row c % 8 of core matrix [c / dPad, c / 8 % (dPad / 8)]
/// (keys 8 (c / dPad) + c % 8, columns 8 (c / 8 % (dPad / 8)) + [0, 8)),
/// V's row c % 8 of core matrix [c / 32, c / 8 % 4] (column 8 (c / 32) + c
/// % 8, keys 8 (c / 8 % 4) + [0, 8)), so that a tile's copies are one
/// address and static offsets and chunk c lands at the same byte offset
/// of the workgroup's tile.
/// Grid (klenPad / kMmaPackKeys, batch · n_head), 128 work-items; a
/// workgroup packs its keys of one (batch, head), and those of batch 0 its
/// rows of r.
gpu::GPUFuncOp getOrCreateMmaPackKernel(ModuleOp module, int64_t dHead,
                                        FloatType operandType);

/// Keys per workgroup of the tensor-core `_kv` backward kernel.
inline constexpr int64_t kMmaGradKeyTile = 64;
/// The widest d_head whose output columns one workgroup of the tensor-core
/// backward kernels accumulates: wider, `_kv`'s dk and dv accumulators (2
/// d_head / 4 per work-item) spill past 255 registers (d_head 128: 192
/// bytes at sm_80), and the columns are split over the grid's z.
inline constexpr int64_t kMmaGradMaxHead = 80;
/// The widest d_head the tensor-core backward kernels serve, their output
/// columns in mmaGradColumnParts parts: the paper models' widest heads
/// (enwik8_large, text8_large, lm1b_base). Wider heads, whose parts would
/// hold more columns than d_head 64's accumulators, keep the f32 kernels.
inline constexpr int64_t kMmaGradSplitMaxHead = 128;

/// The tensor-core backward kernels (RelAttentionGradMma.cpp).
enum class MmaGradKernel { QuerySaved, KeyValue, PosKey };

/// The parts `kernel` (with `dropatt`) splits d_head's output columns into,
/// one workgroup each along the grid's z (each recomputes the probabilities
/// over the whole d_head and accumulates its own columns): 1 up to
/// kMmaGradMaxHead; up to kMmaGradSplitMaxHead 4 for `_kv` and for the
/// dropatt forms, else 2. In 2 parts ptxas spilled 4 to 44 bytes of each of
/// those at d_head 128 (`_q_saved` dropatt at sm_80 and sm_90a; `_kv` and
/// `_r` dropatt at f16, sm_90a, with their B operands staged per
/// workgroup); the others take 255 registers in 2 parts without spilling.
/// Each part is a multiple of 8 columns of d_head padded to 16. 0 (no
/// tensor-core kernel) beyond.
inline int64_t mmaGradColumnParts(MmaGradKernel kernel, int64_t dHead,
                                  bool dropatt) {
  if (dHead <= kMmaGradMaxHead)
    return 1;
  if (dHead > kMmaGradSplitMaxHead)
    return 0;
  return dropatt || kernel == MmaGradKernel::KeyValue ? 4 : 2;
}

/// The 8-column blocks of d_head (padded to 16) that one workgroup of
/// `kernel` accumulates: d_head's in mmaGradColumnParts parts.
inline int64_t mmaGradPartBlocks(MmaGradKernel kernel, int64_t dHead,
                                 bool dropatt) {
  int64_t parts = mmaGradColumnParts(kernel, dHead, dropatt);
  assert(parts > 0 && "d_head too wide for the tensor-core kernels");
  return llvm::alignTo(dHead, 16) / 8 / parts;
}

/// The tensor-core form of the attention backward's `_kv` kernel,
/// `rel_attention_grad_kv_<bf16|f16>[_dropatt]_d<d_head>`, in `module`'s
/// @txl_kernels, created on first use (RelAttentionGradMma.cpp): the f32
/// `_kv` kernel's function type `type` and results (dk, dv), launched over
/// ceil(klen / kMmaGradKeyTile) × (batch · n_head) × mmaGradColumnParts
/// workgroups of 128, its products with `operandType` operands and f32
/// accumulation.
gpu::GPUFuncOp getOrCreateMmaKeyValueGradKernel(ModuleOp module, int64_t dHead,
                                                FloatType operandType,
                                                bool dropatt,
                                                FunctionType type);

/// Queries per workgroup of the tensor-core `_q_saved` kernel.
inline constexpr int64_t kMmaGradQueryTile = 64;

/// The tensor-core form of the attention backward's `_q_saved` kernel,
/// `rel_attention_grad_q_saved_<bf16|f16>[_dropatt]_d<d_head>`, in
/// `module`'s @txl_kernels, created on first use (RelAttentionGradMma.cpp):
/// the f32 `_q_saved` kernel's function type `type` and results (D_i,
/// d(q + u), d(q + v)) from the forward's lse and output, launched over
/// ceil(qlen / kMmaGradQueryTile) × (batch · n_head) × mmaGradColumnParts
/// workgroups of 128 (D_i written by the first part), its products with
/// `operandType` operands and f32 accumulation.
gpu::GPUFuncOp getOrCreateMmaQueryGradKernel(ModuleOp module, int64_t dHead,
                                             FloatType operandType,
                                             bool dropatt, FunctionType type);

/// r rows per workgroup of the tensor-core `_r` kernel.
inline constexpr int64_t kMmaGradPosTile = 64;

/// The tensor-core form of the attention backward's `_r` kernel,
/// `rel_attention_grad_r_<bf16|f16>[_dropatt]_d<d_head>`, in `module`'s
/// @txl_kernels, created on first use (RelAttentionGradMma.cpp): the f32
/// `_r` kernel's function type `type` and result (dr), launched over
/// ceil(klen / kMmaGradPosTile) × n_head × mmaGradColumnParts workgroups of
/// 128, its products with `operandType` operands and f32 accumulation.
gpu::GPUFuncOp getOrCreateMmaPosGradKernel(ModuleOp module, int64_t dHead,
                                           FloatType operandType, bool dropatt,
                                           FunctionType type);

/// Adds the pattern that rewrites an f32 `txl.rel_attention_grad` into the
/// three launches of the fused backward kernels
/// (RelAttentionGradToGpu.cpp), created in `module`'s @txl_kernels on first
/// use; with `mmaOperandType` (bf16
/// or f16) and d_head up to kMmaGradSplitMaxHead, the `_kv` and `_r` launches,
/// and `_q` after a forward that saved its statistics, are the tensor-core
/// kernels'.
void populateRelAttentionGradToGpuPatterns(RewritePatternSet &patterns,
                                           ModuleOp module,
                                           FloatType mmaOperandType);

} // namespace mlir::txl

#endif // TXL_LIB_CONVERSION_TXLTOGPU_RELATTENTION_H
