//===- RelAttentionToCpu.cpp - txl.rel_attention as one tiled CPU kernel -===//
//
// The CPU form of the fused relative attention (paper §3.3), tiled as the
// GPU kernel is: for each (head, batch column) the kernel walks tiles of
// Bq query rows and, for each, the key tiles of Bk keys that any of its
// rows can see. A tile's scores
//   s = (q_i + u) · k_j + (q_i + v) · r[j + qlen - 1 - i]     (AC + BD)
// accumulate in vector registers over d_head, BD from each register
// block's product with the window of r rows the block's rows read, each row
// reading its scores where the rel-shift puts them (index arithmetic, no
// shifted copy); the mask comes from the indices, the softmax is online
// (running max and sum per row) and P·V accumulates into the tile's output
// rows. Nothing of size
// qlen × klen exists: the kernel's buffers are the tile's scores [Bq, Bk],
// its output rows [Bq, d_head] and per-(head, column) packed copies of the
// operands (k and r transposed, v, q + u, q + v; rows padded to whole
// vectors), all O((qlen + klen) · d_head).
//
// The backward (txl.rel_attention_grad) is flash-attention-2's on the same
// pieces: per query tile each row's lse and D = d_result · output, read
// from the forward's saved statistics when the op has them (its `saved`
// group: the training forward's lse form, txl-save-attention-stats) and
// otherwise from the forward pass again; then per key tile the scores, P,
// dP and dS in tile buffers and the gradients accumulated into packed rows
// (dk, dv per (head, column), dr per head through dS placed in the tile's
// rel-shift window, dq per query tile).
//
// Written in scf, memref, arith, math and the vector dialect, with explicit
// register blocking (every product a vector.fma on accumulators carried as
// loop values), so the code is the same whatever LLVM's vectorizer decides.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/CpuKernels.h"
#include "txl/Conversion/KernelBuffers.h"
#include "txl/Conversion/Passes.h"
#include "txl/Conversion/SizeChecks.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_CONVERTRELATTENTIONTOCPUPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

/// Keys per tile.
constexpr int64_t kKeyTile = 64;
/// Register blocking: vectors of keys per score block and of output columns
/// per P·V block (the rows per block are options: 4 × 2 accumulators).
constexpr int64_t kScoreVectors = 2;
constexpr int64_t kOutputVectors = 2;

/// `total` vectors in groups of at most `maxPer`, as even as possible
/// (5 in 2 groups: 3 + 2): [first vector, vectors] per group.
SmallVector<std::pair<int64_t, int64_t>> vectorGroups(int64_t total,
                                                      int64_t maxPer) {
  SmallVector<std::pair<int64_t, int64_t>> groups;
  int64_t count = (total + maxPer - 1) / maxPer;
  for (int64_t g = 0, first = 0; g < count; ++g) {
    int64_t n = (total - first + (count - g) - 1) / (count - g);
    groups.push_back({first, n});
    first += n;
  }
  return groups;
}

/// The packed operands' d_head: whole groups of kOutputVectors vectors of
/// `lanes`.
int64_t paddedHead(int64_t dHead, int64_t lanes) {
  int64_t group = lanes * kOutputVectors;
  return (dHead + group - 1) / group * group;
}

/// The pass's options: the vector width, the rows of a register block, and
/// a test hook (a kernel wrong in a known way, for the numerics harness's
/// negative control).
struct KernelHooks {
  /// Lanes of a vector: vector-bits / 32 (8: one 256-bit register of f32,
  /// AVX2; 16: one 512-bit register, AVX-512); 0 (vector-bits=0): both
  /// kernels, chosen at run time.
  int64_t lanes = 8;
  int64_t scoreRows = 4;
  int64_t outputRows = 4;
  /// Query rows per tile.
  int64_t queryTile = 64;
  /// Rows ahead that the packing loops prefetch (0: none).
  int64_t packPrefetch = 32;
  /// BD through each block's window product (else per-row rT reads).
  bool scoreWindow = true;
  /// The mask only on the key tiles that cross a row's boundary (else on
  /// every tile).
  bool boundaryMasks = true;
  /// math.exp in the unmasked tiles too (else, at f32, expF32UpTo88).
  bool mathExp = false;
  /// The kernel only when the BLAS lowering's scores would take more bytes
  /// (0: always).
  int64_t minScoreBytes = 0;
};

/// Builds the body of one kernel function.
class KernelBuilder {
public:
  KernelBuilder(ImplicitLocOpBuilder &b, func::FuncOp func, int64_t dHead,
                bool withLse, const KernelHooks &hooks)
      : b(b), func(func), dHead(dHead), kLanes(hooks.lanes),
        dPad(paddedHead(dHead, hooks.lanes)), tileRows(hooks.queryTile),
        withLse(withLse), hooks(hooks) {
    et = cast<MemRefType>(func.getArgumentTypes()[0]).getElementType();
    vt = VectorType::get({kLanes}, et);
  }
  /// The forward kernel (txl.rel_attention).
  void build();
  /// The backward kernel (txl.rel_attention_grad).
  void buildBackward();

private:
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value fconst(double v) {
    return arith::ConstantOp::create(b, b.getFloatAttr(et, v));
  }
  Value vconst(double v) {
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(vt, b.getFloatAttr(et, v)));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value minI(Value x, Value y) { return arith::MinSIOp::create(b, x, y); }
  Value maxI(Value x, Value y) { return arith::MaxSIOp::create(b, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, p, x, y);
  }
  Value bcast(Value scalar) {
    return vector::BroadcastOp::create(b, vt, scalar);
  }
  Value vload(Value mem, ValueRange ivs) {
    return vector::LoadOp::create(b, vt, mem, ivs);
  }
  void vstore(Value v, Value mem, ValueRange ivs) {
    vector::StoreOp::create(b, v, mem, ivs);
  }
  /// scf.for from lo to hi by step; body(iv).
  void loop(Value lo, Value hi, Value step, function_ref<void(Value)> body) {
    auto f = scf::ForOp::create(b, lo, hi, step);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(f.getBody());
    body(f.getInductionVar());
  }
  /// scf.for with vector accumulators; returns their final values.
  SmallVector<Value>
  loopAcc(Value lo, Value hi, Value step, ValueRange init,
          function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto f = scf::ForOp::create(b, lo, hi, step, init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(f.getBody());
      SmallVector<Value> next =
          body(f.getInductionVar(), f.getRegionIterArgs());
      scf::YieldOp::create(b, next);
    }
    return SmallVector<Value>(f.getResults());
  }

  void packOperands(Value h, Value c);
  void packPair(Value a, Value transposed, Value other, Value rows, Value h,
                Value c);
  void packRT(Value h);
  Value rowView(Value mem, ArrayRef<Value> fixed);
  void transposeBlock(SmallVectorImpl<Value> &rows);
  void prefetchRow(Value src, Value j, Value n);
  void packTransposed(Value src, Value n, Value dst);
  void packRows(Value src, Value n, Value dst);
  /// scf.if `cond` with then(), else orElse().
  void ifElse(Value cond, function_ref<void()> then,
              function_ref<void()> orElse) {
    auto op = scf::IfOp::create(b, cond, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(op.thenBlock());
    then();
    b.setInsertionPointToStart(op.elseBlock());
    orElse();
  }
  SmallVector<Value> blockProduct(Value lhs, Value row0, Value rhsT, Value col,
                                  int64_t rows, int64_t vectors,
                                  bool perRowColumns);
  void scoreBlock(Value i0, Value ii, Value j0, int64_t rows);
  void softmaxRow(Value i0, Value ii, Value j0);
  void softmaxRowBody(Value i, Value ii, Value j0, bool masked);
  void outputBlock(Value ii, Value j0, int64_t rows);
  void queryTile(Value h, Value c, Value i0);
  Value forwardTile(Value i0);
  void keyRange(Value i0, Value nr, Value &start, Value &end);
  void setUp(ArrayRef<BlockArgument> scalars, Value kIn, Value qIn);
  void allocatePacked();
  void probabilityRow(Value i0, Value ii, Value j0, Value lseRows);
  void accumulate(Value dst, Value dstRow0, int64_t rows, Value count,
                  function_ref<Value(int64_t, Value)> coeff, Value src,
                  Value srcRow0);
  void backwardTile(Value h, Value c, Value i0);
  void backwardKeyTiles(Value h, Value c, Value i0, Value nr);
  void zeroRows(Value mem, Value from, Value to, Value colsFrom, Value cols);
  /// Calls block(ii, rows) for ii in [0, nr): blocks of `rows` rows, then
  /// single rows.
  void rowBlocks(Value nr, int64_t rows,
                 function_ref<void(Value, int64_t)> block);
  /// Vectors per register block of `rows` rows in the forward's products:
  /// 2 with 16 registers (256-bit: 8 accumulators at 4 rows); with 32
  /// (512-bit) up to 20 registers of accumulators (f32 at 4 rows: the 4
  /// key vectors of a 64-key tile, the 5 of its BD window, the 4 output
  /// vectors of d_head 64 in one block each, so that a step's broadcast
  /// feeds 4-5 FMAs and 16-20 independent chains hide the FMA latency).
  int64_t blockVectors(int64_t rows) const {
    if (kLanes < 16)
      return kScoreVectors;
    int64_t registersPerVector = et.getIntOrFloatBitWidth() / 32;
    return std::max<int64_t>(kScoreVectors, 20 / registersPerVector / rows);
  }

  ImplicitLocOpBuilder &b;
  func::FuncOp func;
  int64_t dHead;
  /// Lanes of every vector (hooks.lanes).
  int64_t kLanes;
  int64_t dPad;
  /// Query rows per tile (hooks.queryTile).
  int64_t tileRows;
  bool withLse;
  const KernelHooks &hooks;
  Type et;
  VectorType vt;

  // Arguments and sizes.
  Value q, k, v, r, rwBias, rrBias, out, lse;
  Value memLen, sameLength, scale;
  Value qlen, batch, nHead, klen, mlen, shiftLen;
  /// Whether k, v and r have unit stride along d_head (then packed by
  /// vector loads and stores, else by scalars).
  Value unitRows;
  // Packed operands: kT [d_head, klen + Bk] and rT [d_head, klen + Bq + Bk]
  // (column m of rT is r row m), vP [klen + Bk, dPad], qu and qv [qlen,
  // dPad]; tile buffers: scores [Bq, Bk], output rows [Bq, dPad], running
  // max, sum and rescale factor [Bq].
  Value kT, rT, vP, qu, qv, scores, window, acc, rowMax, rowSum, rowScale;
  // The backward kernel's: its arguments (d_result and the gradients); vᵀ,
  // k and r rows, d_result rows; the gradients' accumulators dk, dv [klen +
  // Bk, dPad] per (head, column), dr [rT's columns, dPad] per head, the
  // biases' [dPad]; per query tile: each row's lse and D = d_result · out
  // [Bq], dS [Bq, Bk], dS placed in the rel-shift window [Bq, Bk + Bq + 1
  // vector], dq's two parts [Bq, dPad].
  Value dOut, dq, dk, dv, dr, du, dvb;
  Value vT, kP, rP, dOP, dKP, dVP, dRP, duAcc, dvbAcc;
  Value lseRow, dRow, dsTile, wd, dQuT, dQvT;
  Value kCols, rCols;
};

void KernelBuilder::rowBlocks(Value nr, int64_t rows,
                              function_ref<void(Value, int64_t)> block) {
  Value c0 = idx(0);
  // Rows [0, nr - nr % rows) in blocks, then the rest one by one.
  Value whole = mul(arith::DivUIOp::create(b, nr, idx(rows)), idx(rows));
  loop(c0, whole, idx(rows), [&](Value ii) { block(ii, rows); });
  loop(whole, nr, idx(1), [&](Value ii) { block(ii, 1); });
}

/// The rows of `mem` (rank 3 or 4, unit stride along its last dimension)
/// at the indices `fixed` of its middle dimensions: a [dim 0, d_head] view,
/// row j at mem[j, fixed..., 0].
Value KernelBuilder::rowView(Value mem, ArrayRef<Value> fixed) {
  auto md = memref::ExtractStridedMetadataOp::create(b, mem);
  Value offset = md.getOffset();
  for (auto [i, at] : llvm::enumerate(fixed))
    offset = add(offset, mul(at, md.getStrides()[i + 1]));
  auto type = MemRefType::get(
      {ShapedType::kDynamic, dHead}, et,
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                             {ShapedType::kDynamic, 1}));
  return memref::ReinterpretCastOp::create(
      b, type, md.getBaseBuffer(), OpFoldResult(offset),
      ArrayRef<OpFoldResult>{md.getSizes()[0], b.getIndexAttr(dHead)},
      ArrayRef<OpFoldResult>{md.getStrides()[0], b.getIndexAttr(1)});
}

/// Transposes the lanes × lanes block in `rows` (row x = rows[x]) in
/// registers: log2(lanes) rounds of two-vector shuffles, round t swapping
/// the off-diagonal t × t blocks of every 2t × 2t block.
void KernelBuilder::transposeBlock(SmallVectorImpl<Value> &rows) {
  for (int64_t t = kLanes / 2; t >= 1; t /= 2) {
    SmallVector<int64_t> lo, hi;
    for (int64_t l = 0; l < kLanes; ++l) {
      lo.push_back((l & t) ? kLanes + l - t : l);
      hi.push_back((l & t) ? kLanes + l : l + t);
    }
    for (int64_t x = 0; x < kLanes; ++x) {
      if (x & t)
        continue;
      Value a = rows[x], c = rows[x + t];
      rows[x] = vector::ShuffleOp::create(b, a, c, lo);
      rows[x + t] = vector::ShuffleOp::create(b, a, c, hi);
    }
  }
}

/// Prefetches into L1 the cache lines of row min(j + hooks.packPrefetch,
/// n - 1) of `src` (a rowView): the rows the packing loops read are a head's
/// d_head floats a whole [batch, n_head, d_head] row apart (8 KiB at the
/// enwik8 cache setting, a page apart at most), which the hardware
/// prefetchers do not follow across pages.
void KernelBuilder::prefetchRow(Value src, Value j, Value n) {
  if (hooks.packPrefetch == 0)
    return;
  Value row = minI(add(j, idx(hooks.packPrefetch)), sub(n, idx(1)));
  int64_t lineElements = 64 / (et.getIntOrFloatBitWidth() / 8);
  for (int64_t d0 = 0; d0 < dHead; d0 += lineElements)
    memref::PrefetchOp::create(b, src, ValueRange{row, idx(d0)},
                               /*isWrite=*/false, /*localityHint=*/3,
                               /*isDataCache=*/true);
}

/// dst[d, j] = src[j, d] for j < n, d < d_head (`src` a rowView): blocks of
/// lanes rows × lanes columns by vector loads, a register transpose and
/// vector stores; the rows and columns past whole blocks by scalars.
void KernelBuilder::packTransposed(Value src, Value n, Value dst) {
  Value c0 = idx(0), c1 = idx(1), lanes = idx(kLanes);
  Value whole = mul(arith::DivUIOp::create(b, n, lanes), lanes);
  int64_t dWhole = dHead / kLanes * kLanes;
  auto scalar = [&](Value j, Value d) {
    memref::StoreOp::create(b, memref::LoadOp::create(b, src, ValueRange{j, d}),
                            dst, ValueRange{d, j});
  };
  loop(c0, whole, lanes, [&](Value j) {
    for (int64_t l = 0; l < kLanes; ++l)
      prefetchRow(src, add(j, idx(l)), n);
    for (int64_t d0 = 0; d0 < dWhole; d0 += kLanes) {
      SmallVector<Value> rows;
      for (int64_t l = 0; l < kLanes; ++l)
        rows.push_back(vload(src, {add(j, idx(l)), idx(d0)}));
      transposeBlock(rows);
      for (int64_t x = 0; x < kLanes; ++x)
        vstore(rows[x], dst, {idx(d0 + x), j});
    }
    if (dWhole < dHead)
      loop(idx(dWhole), idx(dHead), c1, [&](Value d) {
        loop(c0, lanes, c1, [&](Value l) { scalar(add(j, l), d); });
      });
  });
  loop(whole, n, c1, [&](Value j) {
    loop(c0, idx(dHead), c1, [&](Value d) { scalar(j, d); });
  });
}

/// dst[j, d] = src[j, d] for j < n, d < d_head (`src` a rowView): whole
/// vectors, then scalars.
void KernelBuilder::packRows(Value src, Value n, Value dst) {
  Value c0 = idx(0), c1 = idx(1);
  int64_t dWhole = dHead / kLanes * kLanes;
  loop(c0, n, c1, [&](Value j) {
    prefetchRow(src, j, n);
    for (int64_t d0 = 0; d0 < dWhole; d0 += kLanes)
      vstore(vload(src, {j, idx(d0)}), dst, {j, idx(d0)});
    if (dWhole < dHead)
      loop(idx(dWhole), idx(dHead), c1, [&](Value d) {
        memref::StoreOp::create(
            b, memref::LoadOp::create(b, src, ValueRange{j, d}), dst,
            ValueRange{j, d});
      });
  });
}

/// transposed[d, j] = a[j, c, h, d] and rows[j, d] = other[j, c, h, d] for
/// j < klen, d < d_head (a and other: k and v, or v and k).
void KernelBuilder::packPair(Value a, Value transposed, Value other, Value rows,
                             Value h, Value c) {
  Value c0 = idx(0), c1 = idx(1), dh = idx(dHead);
  ifElse(
      unitRows,
      [&] {
        packTransposed(rowView(a, {c, h}), klen, transposed);
        packRows(rowView(other, {c, h}), klen, rows);
      },
      [&] {
        loop(c0, klen, c1, [&](Value j) {
          loop(c0, dh, c1, [&](Value d) {
            memref::StoreOp::create(
                b, memref::LoadOp::create(b, a, ValueRange{j, c, h, d}),
                transposed, ValueRange{d, j});
            memref::StoreOp::create(
                b, memref::LoadOp::create(b, other, ValueRange{j, c, h, d}),
                rows, ValueRange{j, d});
          });
        });
      });
}

void KernelBuilder::packOperands(Value h, Value c) {
  Value c0 = idx(0), c1 = idx(1), dh = idx(dHead);
  // kT[d, j] = k[j, c, h, d]; vP[j, d] = v[j, c, h, d].
  packPair(k, kT, v, vP, h, c);
  // qu[i, d] = q[i, c, h, d] + u[h, d]; qv likewise with the r_r_bias.
  loop(c0, qlen, c1, [&](Value i) {
    loop(c0, dh, c1, [&](Value d) {
      Value x = memref::LoadOp::create(b, q, ValueRange{i, c, h, d});
      Value u = memref::LoadOp::create(b, rwBias, ValueRange{h, d});
      Value w = memref::LoadOp::create(b, rrBias, ValueRange{h, d});
      memref::StoreOp::create(b, arith::AddFOp::create(b, x, u), qu,
                              ValueRange{i, d});
      memref::StoreOp::create(b, arith::AddFOp::create(b, x, w), qv,
                              ValueRange{i, d});
    });
  });
}

/// rows × `vectors` accumulators over d_head: acc[r][x] = sum_d
/// lhs[row0 + r, d] · rhsT[d, col(r) + x·lanes], where col(r) is `col` for
/// every row (the columns shared by the rows) or, with `perRowColumns`,
/// `col` - r. Each step loads the rhs vectors (once when shared, per row
/// otherwise) and broadcasts lhs[row, d] per row.
SmallVector<Value> KernelBuilder::blockProduct(Value lhs, Value row0,
                                               Value rhsT, Value col,
                                               int64_t rows, int64_t vectors,
                                               bool perRowColumns) {
  Value c0 = idx(0), c1 = idx(1);
  SmallVector<Value> init(rows * vectors, vconst(0.0));
  return loopAcc(
      c0, idx(dHead), c1, init,
      [&](Value d, ValueRange accs) -> SmallVector<Value> {
        SmallVector<Value> next(accs.begin(), accs.end());
        SmallVector<Value> shared;
        if (!perRowColumns)
          for (int64_t x = 0; x < vectors; ++x)
            shared.push_back(vload(rhsT, {d, add(col, idx(x * kLanes))}));
        for (int64_t row = 0; row < rows; ++row) {
          Value a = bcast(memref::LoadOp::create(
              b, lhs, ValueRange{add(row0, idx(row)), d}));
          for (int64_t x = 0; x < vectors; ++x) {
            Value v =
                perRowColumns
                    ? vload(rhsT, {d, add(sub(col, idx(row)), idx(x * kLanes))})
                    : shared[x];
            Value &s = next[row * vectors + x];
            s = vector::FMAOp::create(b, a, v, s);
          }
        }
        return next;
      });
}

/// Scores of rows ii .. ii + rows of the query tile at i0 against keys j0 ..
/// j0 + Bk, unscaled, into `scores`. AC: for each group of kScoreVectors
/// vectors of keys, rows × kScoreVectors accumulators over d_head, the key
/// vectors kT[d, j..] shared by the rows, one broadcast of (q + u)[i, d]
/// per row. BD, row i + r reading rT column j + qlen - 1 - (i + r) (the
/// rel-shift):
/// - window (the default): the products X[r, t] = (q + v)[i + r] ·
///   rT[:, m0 + t] of the rows with the Bk + rows - 1 columns from m0 = j0
///   + qlen - 1 - (i + rows - 1) that the rows read, the rT vectors shared
///   by the rows as kT's are (blocks of kScoreVectors vectors), into
///   `window`; then row r adds X[r, jj + rows - 1 - r] to key j0 + jj's
///   score (one unaligned read per score, not per step);
/// - without (score-window=false): in the same accumulators as AC, the rT
///   vectors at each row's own column (per row and step, unaligned).
void KernelBuilder::scoreBlock(Value i0, Value ii, Value j0, int64_t rows) {
  Value c1 = idx(1);
  Value rowBase = add(i0, ii);
  // rT column of key j for row i: j + qlen - 1 - i.
  Value shiftBase = sub(sub(qlen, c1), rowBase);
  // Marked for the negative-control pass txl-test-rel-shift-offset.
  shiftBase.getDefiningOp()->setAttr(TxlDialect::kRelShiftRowAttrName,
                                     b.getUnitAttr());
  // Without the window, AC and BD share accumulators and BD's rT vectors
  // are per row: blocks of kScoreVectors.
  int64_t maxPer = hooks.scoreWindow ? blockVectors(rows) : kScoreVectors;
  for (auto [g, vectors] : vectorGroups(kKeyTile / kLanes, maxPer)) {
    Value jg = add(j0, idx(g * kLanes));
    SmallVector<Value> sums = blockProduct(qu, rowBase, kT, jg, rows, vectors,
                                           /*perRowColumns=*/false);
    if (!hooks.scoreWindow) {
      SmallVector<Value> bd =
          blockProduct(qv, rowBase, rT, add(jg, shiftBase), rows, vectors,
                       /*perRowColumns=*/true);
      for (auto [s, p] : llvm::zip(sums, bd))
        s = arith::AddFOp::create(b, s, p);
    }
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t x = 0; x < vectors; ++x)
        vstore(sums[row * vectors + x], scores,
               {add(ii, idx(row)), idx(g * kLanes + x * kLanes)});
  }
  if (!hooks.scoreWindow)
    return;
  // m0 = j0 + shiftBase - (rows - 1); the window's vectors in blocks of
  // blockVectors(rows).
  Value m0 = sub(add(j0, shiftBase), idx(rows - 1));
  int64_t windowVectors = (kKeyTile + rows - 1 + kLanes - 1) / kLanes;
  for (auto [t, vectors] : vectorGroups(windowVectors, maxPer)) {
    SmallVector<Value> x =
        blockProduct(qv, rowBase, rT, add(m0, idx(t * kLanes)), rows, vectors,
                     /*perRowColumns=*/false);
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t v = 0; v < vectors; ++v)
        vstore(x[row * vectors + v], window, {idx(row), idx((t + v) * kLanes)});
  }
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t v = 0; v < kKeyTile / kLanes; ++v) {
      Value at = idx(v * kLanes);
      Value s = vload(scores, {add(ii, idx(row)), at});
      Value p = vload(window, {idx(row), idx(v * kLanes + rows - 1 - row)});
      vstore(arith::AddFOp::create(b, s, p), scores, {add(ii, idx(row)), at});
    }
}

/// Row ii of the tile at i0, keys j0 .. j0 + Bk: scale and mask its scores
/// (as txl.masked_softmax: key j visible from query i when j <= i + mlen
/// and, with same_length, j + shiftLen > i), then the online softmax: the
/// new running max m', rowScale = exp(m - m'), the scores replaced by
/// exp(s - m'), the running sum rescaled and increased. Only a tile that
/// crosses the row's mask boundary computes the mask: where the row sees
/// all Bk keys (every tile but the last one or two of a row), the scores
/// are scaled on the fly and never written back before their exp.
void KernelBuilder::softmaxRow(Value i0, Value ii, Value j0) {
  Value i = add(i0, ii);
  if (!hooks.boundaryMasks)
    return softmaxRowBody(i, ii, j0, /*masked=*/true);
  // The tile's last key is visible (j0 + Bk - 1 <= i + mlen) and, with
  // same_length, its first (j0 > i - shiftLen).
  Value lastSeen =
      cmp(arith::CmpIPredicate::sle, add(j0, idx(kKeyTile - 1)), add(i, mlen));
  Value firstSeen = arith::OrIOp::create(
      b,
      arith::XOrIOp::create(b, sameLength,
                            arith::ConstantIntOp::create(b, 1, 1)),
      cmp(arith::CmpIPredicate::sgt, j0, sub(i, shiftLen)));
  ifElse(
      arith::AndIOp::create(b, lastSeen, firstSeen),
      [&] { softmaxRowBody(i, ii, j0, /*masked=*/false); },
      [&] { softmaxRowBody(i, ii, j0, /*masked=*/true); });
}

void KernelBuilder::softmaxRowBody(Value i, Value ii, Value j0, bool masked) {
  Value negInf = vconst(-std::numeric_limits<double>::infinity());
  Value scaleV = bcast(scale);
  // The mask by lane: key j0 + col + l is visible when hi - (j0 + col) >= l
  // and, with same_length, lo - (j0 + col) < l (i32 lanes: one compare a
  // vector).
  auto i32 = b.getI32Type();
  auto lanesType = VectorType::get({kLanes}, i32);
  Value iota, hi, lo;
  if (masked) {
    SmallVector<int32_t> lanes;
    for (int64_t l = 0; l < kLanes; ++l)
      lanes.push_back(int32_t(l));
    iota = arith::ConstantOp::create(
        b, DenseElementsAttr::get(lanesType, ArrayRef<int32_t>(lanes)));
    hi = add(i, mlen);
    // Without same_length every key from j0 on passes the lower bound.
    lo = arith::SelectOp::create(b, sameLength, sub(i, shiftLen),
                                 sub(j0, idx(1)));
  }
  auto laneBound = [&](Value bound, Value col) {
    Value rel = arith::IndexCastOp::create(b, i32, sub(bound, add(j0, col)));
    return vector::BroadcastOp::create(b, lanesType, rel);
  };
  auto scaled = [&](Value col) {
    return arith::MulFOp::create(b, vload(scores, {ii, col}), scaleV);
  };
  Value maxV = negInf;
  for (int64_t x = 0; x < kKeyTile / kLanes; ++x) {
    Value col = idx(x * kLanes);
    Value s = scaled(col);
    if (masked) {
      Value visible = arith::AndIOp::create(
          b, cmp(arith::CmpIPredicate::sle, iota, laneBound(hi, col)),
          cmp(arith::CmpIPredicate::sgt, iota, laneBound(lo, col)));
      s = arith::SelectOp::create(b, visible, s, negInf);
      vstore(s, scores, {ii, col});
    }
    // max as the x86 instruction computes it (no NaN fix-up): a NaN score
    // still reaches the output through exp(s - m') and the sum.
    maxV = arith::SelectOp::create(
        b, arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, s, maxV), s,
        maxV);
  }
  // Both reductions as trees of vector operations (not lane by lane in
  // order): nnan lets the max skip NaN fix-ups, reassoc the sum reorder.
  Value tileMax = vector::ReductionOp::create(
      b, vector::CombiningKind::MAXNUMF, maxV, arith::FastMathFlags::nnan);
  Value oldMax = memref::LoadOp::create(b, rowMax, ValueRange{ii});
  Value newMax = arith::MaximumFOp::create(b, oldMax, tileMax);
  // Nothing visible yet: subtract 0, so that exp(-inf - base) is 0, not NaN.
  Value none =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, newMax,
                            fconst(-std::numeric_limits<double>::infinity()));
  Value base = arith::SelectOp::create(b, none, fconst(0.0), newMax);
  Value baseV = bcast(base);
  Value sumV = vconst(0.0);
  for (int64_t x = 0; x < kKeyTile / kLanes; ++x) {
    Value col = idx(x * kLanes);
    Value p;
    if (masked) {
      p = math::ExpOp::create(
          b, arith::SubFOp::create(b, vload(scores, {ii, col}), baseV));
    } else {
      // An unmasked tile's scores were not stored: s · scale − base in one
      // fma. No score is −inf here (none is masked), so f32 takes the
      // kernels' own exp (its −inf would give 1.6e-38, not 0).
      Value x = math::FmaOp::create(b, vload(scores, {ii, col}), scaleV,
                                    arith::NegFOp::create(b, baseV));
      p = et.isF32() && !hooks.mathExp ? expF32UpTo88(b, x)
                                       : Value(math::ExpOp::create(b, x));
    }
    vstore(p, scores, {ii, col});
    sumV = arith::AddFOp::create(b, sumV, p);
  }
  Value alpha = math::ExpOp::create(b, arith::SubFOp::create(b, oldMax, base));
  Value tileSum = vector::ReductionOp::create(
      b, vector::CombiningKind::ADD, sumV, arith::FastMathFlags::reassoc);
  Value oldSum = memref::LoadOp::create(b, rowSum, ValueRange{ii});
  memref::StoreOp::create(
      b,
      arith::AddFOp::create(b, arith::MulFOp::create(b, oldSum, alpha),
                            tileSum),
      rowSum, ValueRange{ii});
  memref::StoreOp::create(b, newMax, rowMax, ValueRange{ii});
  memref::StoreOp::create(b, alpha, rowScale, ValueRange{ii});
}

/// Output rows ii .. ii + rows += P[ii.., :] · vP[j0 .., :], each row first
/// rescaled by its rowScale: for each group of kOutputVectors vectors of
/// columns, rows × kOutputVectors accumulators over the Bk keys, each step
/// the value vectors shared by the rows and one broadcast of P per row.
void KernelBuilder::outputBlock(Value ii, Value j0, int64_t rows) {
  Value c0 = idx(0), c1 = idx(1);
  for (auto group : vectorGroups(dPad / kLanes, blockVectors(rows))) {
    int64_t g = group.first, vectors = group.second;
    SmallVector<Value> init;
    for (int64_t row = 0; row < rows; ++row) {
      Value i = add(ii, idx(row));
      Value alpha = bcast(memref::LoadOp::create(b, rowScale, ValueRange{i}));
      for (int64_t x = 0; x < vectors; ++x)
        init.push_back(arith::MulFOp::create(
            b, vload(acc, {i, idx((g + x) * kLanes)}), alpha));
    }
    SmallVector<Value> sums =
        loopAcc(c0, idx(kKeyTile), c1, init,
                [&](Value jj, ValueRange accs) -> SmallVector<Value> {
                  SmallVector<Value> next(accs.begin(), accs.end());
                  Value j = add(j0, jj);
                  SmallVector<Value> values;
                  for (int64_t x = 0; x < vectors; ++x)
                    values.push_back(vload(vP, {j, idx((g + x) * kLanes)}));
                  for (int64_t row = 0; row < rows; ++row) {
                    Value p = bcast(memref::LoadOp::create(
                        b, scores, ValueRange{add(ii, idx(row)), jj}));
                    for (int64_t x = 0; x < vectors; ++x) {
                      Value &o = next[row * vectors + x];
                      o = vector::FMAOp::create(b, p, values[x], o);
                    }
                  }
                  return next;
                });
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t x = 0; x < vectors; ++x)
        vstore(sums[row * vectors + x], acc,
               {add(ii, idx(row)), idx((g + x) * kLanes)});
  }
}

/// The key tiles some row of the query tile at i0 (nr rows) sees: [start,
/// end) by Bk, the tile's last row seeing up to i + mlen, its first (with
/// same_length) from i - shiftLen + 1; key tiles start at multiples of Bk.
void KernelBuilder::keyRange(Value i0, Value nr, Value &start, Value &end) {
  Value c0 = idx(0), c1 = idx(1), bk = idx(kKeyTile);
  end = minI(klen, add(add(i0, nr), mlen));
  Value first = arith::SelectOp::create(
      b, sameLength, maxI(c0, add(sub(i0, shiftLen), c1)), c0);
  start = mul(arith::DivUIOp::create(b, first, bk), bk);
}

/// The forward pass of the query tile at i0: leaves each row's
/// unnormalized output in `acc`, its running max in `rowMax` and sum in
/// `rowSum`; returns the tile's rows.
Value KernelBuilder::forwardTile(Value i0) {
  Value c0 = idx(0), c1 = idx(1), bk = idx(kKeyTile);
  Value nr = minI(idx(tileRows), sub(qlen, i0));
  loop(c0, nr, c1, [&](Value ii) {
    memref::StoreOp::create(b, fconst(-std::numeric_limits<double>::infinity()),
                            rowMax, ValueRange{ii});
    memref::StoreOp::create(b, fconst(0.0), rowSum, ValueRange{ii});
    loop(c0, idx(dPad / kLanes), c1, [&](Value x) {
      vstore(vconst(0.0), acc, {ii, mul(x, idx(kLanes))});
    });
  });
  Value start, end;
  keyRange(i0, nr, start, end);
  loop(start, end, bk, [&](Value j0) {
    rowBlocks(nr, hooks.scoreRows,
              [&](Value ii, int64_t rows) { scoreBlock(i0, ii, j0, rows); });
    loop(c0, nr, c1, [&](Value ii) { softmaxRow(i0, ii, j0); });
    rowBlocks(nr, hooks.outputRows,
              [&](Value ii, int64_t rows) { outputBlock(ii, j0, rows); });
  });
  return nr;
}

void KernelBuilder::queryTile(Value h, Value c, Value i0) {
  Value c0 = idx(0), c1 = idx(1);
  Value nr = forwardTile(i0);
  // out[i, c, h, :] = acc[i] / sum; lse[c, h, i] = max + log sum.
  loop(c0, nr, c1, [&](Value ii) {
    Value i = add(i0, ii);
    Value sum = memref::LoadOp::create(b, rowSum, ValueRange{ii});
    Value inv = arith::DivFOp::create(b, fconst(1.0), sum);
    loop(c0, idx(dHead), c1, [&](Value d) {
      Value o = memref::LoadOp::create(b, acc, ValueRange{ii, d});
      memref::StoreOp::create(b, arith::MulFOp::create(b, o, inv), out,
                              ValueRange{i, c, h, d});
    });
    if (withLse) {
      Value m = memref::LoadOp::create(b, rowMax, ValueRange{ii});
      memref::StoreOp::create(
          b, arith::AddFOp::create(b, m, math::LogOp::create(b, sum)), lse,
          ValueRange{c, h, i});
    }
  });
}

/// Sizes from the operands (q's [qlen, batch, n_head], k's klen), the
/// same_length shift, the unit-stride test, from the arguments after the
/// tensors: mem_len, same_length, scale.
void KernelBuilder::setUp(ArrayRef<BlockArgument> scalars, Value kIn,
                          Value qIn) {
  memLen = scalars[0];
  sameLength = scalars[1];
  scale = scalars[2];
  Value c0 = idx(0), c1 = idx(1);
  qlen = memref::DimOp::create(b, qIn, 0);
  batch = memref::DimOp::create(b, qIn, 1);
  nHead = memref::DimOp::create(b, qIn, 2);
  klen = memref::DimOp::create(b, kIn, 0);
  mlen = sub(klen, qlen);
  auto unitInner = [&](Value mem) {
    auto md = memref::ExtractStridedMetadataOp::create(b, mem);
    return arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                 md.getStrides().back(), c1);
  };
  unitRows = arith::AndIOp::create(
      b, arith::AndIOp::create(b, unitInner(k), unitInner(v)), unitInner(r));
  // shiftLen of the official same_length mask: qlen - (klen - mem_len) when
  // klen > mem_len, else qlen.
  Value maskLen = sub(klen, memLen);
  shiftLen = arith::SelectOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, maskLen, c0),
      sub(qlen, maskLen), qlen);
}

/// The forward's packed operands and tile buffers, the padding the kernel
/// reads zeroed: kT and rT past klen (finite; masked), vP past klen (zero:
/// P there is 0) and past d_head (zero).
void KernelBuilder::allocatePacked() {
  Value c0 = idx(0), c1 = idx(1);
  auto matrix = [&](Value rows, Value cols) -> Value {
    return memref::AllocOp::create(
        b, MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, et),
        ValueRange{rows, cols});
  };
  Value bk = idx(kKeyTile);
  kCols = add(klen, bk);
  // The BD window of a block reads up to 2 vectors past the tile's keys.
  rCols = add(kCols, idx(tileRows + 2 * kScoreVectors * kLanes));
  kT = matrix(idx(dHead), kCols);
  rT = matrix(idx(dHead), rCols);
  vP = matrix(kCols, idx(dPad));
  qu = matrix(qlen, idx(dPad));
  qv = matrix(qlen, idx(dPad));
  scores =
      memref::AllocaOp::create(b, MemRefType::get({tileRows, kKeyTile}, et));
  // A block's BD window: rows × (Bk + rows - 1), in whole vectors.
  int64_t maxRows = std::max<int64_t>(hooks.scoreRows, 1);
  window = memref::AllocaOp::create(
      b, MemRefType::get(
             {maxRows, (kKeyTile + maxRows - 1 + kLanes - 1) / kLanes * kLanes},
             et));
  acc = memref::AllocaOp::create(b, MemRefType::get({tileRows, dPad}, et));
  auto rowType = MemRefType::get({tileRows}, et);
  rowMax = memref::AllocaOp::create(b, rowType);
  rowSum = memref::AllocaOp::create(b, rowType);
  rowScale = memref::AllocaOp::create(b, rowType);

  Value zero = fconst(0.0);
  Value dh = idx(dHead);
  loop(c0, dh, c1, [&](Value d) {
    loop(klen, kCols, c1, [&](Value j) {
      memref::StoreOp::create(b, zero, kT, ValueRange{d, j});
    });
    loop(klen, rCols, c1, [&](Value m) {
      memref::StoreOp::create(b, zero, rT, ValueRange{d, m});
    });
  });
  loop(c0, kCols, c1, [&](Value j) {
    Value from = arith::SelectOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j, klen), dh,
        c0);
    loop(from, idx(dPad), c1, [&](Value d) {
      memref::StoreOp::create(b, zero, vP, ValueRange{j, d});
    });
  });
}

/// rT[d, m] = r[m, h, d], shared by the batch columns.
void KernelBuilder::packRT(Value h) {
  Value c0 = idx(0), c1 = idx(1), dh = idx(dHead);
  ifElse(
      unitRows, [&] { packTransposed(rowView(r, {h}), klen, rT); },
      [&] {
        loop(c0, klen, c1, [&](Value m) {
          loop(c0, dh, c1, [&](Value d) {
            memref::StoreOp::create(
                b, memref::LoadOp::create(b, r, ValueRange{m, h, d}), rT,
                ValueRange{d, m});
          });
        });
      });
}

void KernelBuilder::build() {
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto args = entry->getArguments();
  q = args[0];
  k = args[1];
  v = args[2];
  r = args[3];
  rwBias = args[4];
  rrBias = args[5];
  out = args[6];
  unsigned next = 7;
  if (withLse)
    lse = args[next++];
  setUp(args.drop_front(next), k, q);
  allocatePacked();
  Value c0 = idx(0), c1 = idx(1);
  loop(c0, nHead, c1, [&](Value h) {
    packRT(h);
    loop(c0, batch, c1, [&](Value c) {
      packOperands(h, c);
      loop(c0, qlen, idx(tileRows), [&](Value i0) { queryTile(h, c, i0); });
    });
  });
  func::ReturnOp::create(b);
}

/// mem[i, d] = 0 for i in [from, to), d in [colsFrom, cols).
void KernelBuilder::zeroRows(Value mem, Value from, Value to, Value colsFrom,
                             Value cols) {
  Value c1 = idx(1), zero = fconst(0.0);
  loop(from, to, c1, [&](Value i) {
    loop(colsFrom, cols, c1, [&](Value d) {
      memref::StoreOp::create(b, zero, mem, ValueRange{i, d});
    });
  });
}

/// Row ii of the tile at i0, keys j0 .. j0 + Bk: its unscaled scores
/// replaced by the probabilities P = exp(scale · s − lse) where visible
/// (the forward's mask), 0 elsewhere.
void KernelBuilder::probabilityRow(Value i0, Value ii, Value j0,
                                   Value lseRows) {
  Value i = add(i0, ii);
  Type i64 = b.getI64Type();
  auto ivt = VectorType::get({kLanes}, i64);
  auto toI64 = [&](Value x) { return arith::IndexCastOp::create(b, i64, x); };
  Value hiV = vector::BroadcastOp::create(b, ivt, toI64(add(i, mlen)));
  Value lo = arith::SelectOp::create(b, sameLength, toI64(sub(i, shiftLen)),
                                     arith::ConstantIntOp::create(b, -1, 64));
  Value loV = vector::BroadcastOp::create(b, ivt, lo);
  SmallVector<int64_t> lanes;
  for (int64_t l = 0; l < kLanes; ++l)
    lanes.push_back(l);
  Value iota = arith::ConstantOp::create(
      b, DenseElementsAttr::get(ivt, ArrayRef<int64_t>(lanes)));
  Value scaleV = bcast(scale);
  Value lseV = bcast(memref::LoadOp::create(b, lseRows, ValueRange{ii}));
  for (int64_t x = 0; x < kKeyTile / kLanes; ++x) {
    Value col = idx(x * kLanes);
    Value jv = arith::AddIOp::create(
        b, vector::BroadcastOp::create(b, ivt, toI64(add(j0, col))), iota);
    Value visible = arith::AndIOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::sle, jv, hiV),
        arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, jv, loV));
    Value s = arith::MulFOp::create(b, vload(scores, {ii, col}), scaleV);
    Value p = math::ExpOp::create(b, arith::SubFOp::create(b, s, lseV));
    vstore(arith::SelectOp::create(b, visible, p, vconst(0.0)), scores,
           {ii, col});
  }
}

/// dst[dstRow0 + r, :] += sum_{t < count} coeff(r, t) · src[srcRow0 + t, :]
/// for the `rows` rows r: per group of kOutputVectors vectors of columns,
/// rows × kOutputVectors accumulators over t, each step the src vectors
/// shared by the rows and one broadcast coefficient per row (P·V's form).
void KernelBuilder::accumulate(Value dst, Value dstRow0, int64_t rows,
                               Value count,
                               function_ref<Value(int64_t, Value)> coeff,
                               Value src, Value srcRow0) {
  Value c0 = idx(0), c1 = idx(1);
  for (int64_t g = 0; g < dPad / kLanes; g += kOutputVectors) {
    SmallVector<Value> init;
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t x = 0; x < kOutputVectors; ++x)
        init.push_back(
            vload(dst, {add(dstRow0, idx(row)), idx((g + x) * kLanes)}));
    SmallVector<Value> sums =
        loopAcc(c0, count, c1, init, [&](Value t, ValueRange accs) {
          SmallVector<Value> next(accs.begin(), accs.end());
          SmallVector<Value> values;
          for (int64_t x = 0; x < kOutputVectors; ++x)
            values.push_back(
                vload(src, {add(srcRow0, t), idx((g + x) * kLanes)}));
          for (int64_t row = 0; row < rows; ++row) {
            Value p = bcast(coeff(row, t));
            for (int64_t x = 0; x < kOutputVectors; ++x) {
              Value &o = next[row * kOutputVectors + x];
              o = vector::FMAOp::create(b, p, values[x], o);
            }
          }
          return next;
        });
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t x = 0; x < kOutputVectors; ++x)
        vstore(sums[row * kOutputVectors + x], dst,
               {add(dstRow0, idx(row)), idx((g + x) * kLanes)});
  }
}

/// The backward of the query tile at i0 (flash-attention-2's, on one
/// thread): each row's lse and D_i = d_result_i · out_i, from the saved
/// lse and output (withLse) or else from the forward pass again; then per key
/// tile the scores again, P = exp(scale · s − lse), dP = d_result · vᵀ (AC's
/// register blocks), dS = scale · P ⊙ (dP − D), and the products dv += Pᵀ
/// d_result, dk += dSᵀ (q + u), dq_u += dS k; the positional ones through dS
/// placed in the tile's rel-shift window W[i, t] = dS[i, t − (nr − 1 − i)] (t <
/// Bk + nr − 1, rows of r from m0 = j0 + qlen − 1 − (i0 + nr − 1)): dr[m0 + t]
/// += Σ_i W[i, t] (q + v)_i and dq_v[i] += Σ_t W[i, t] r[m0 + t].
void KernelBuilder::backwardTile(Value h, Value c, Value i0) {
  Value c0 = idx(0), c1 = idx(1);
  if (withLse) {
    // The saved statistics: lse[c, h, i] and D from the saved output.
    Value nr = minI(idx(tileRows), sub(qlen, i0));
    loop(c0, nr, c1, [&](Value ii) {
      Value i = add(i0, ii);
      memref::StoreOp::create(
          b, memref::LoadOp::create(b, lse, ValueRange{c, h, i}), lseRow,
          ValueRange{ii});
      auto dot =
          scf::ForOp::create(b, c0, idx(dHead), c1, ValueRange{fconst(0.0)});
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(dot.getBody());
        Value d = dot.getInductionVar();
        Value o = memref::LoadOp::create(b, out, ValueRange{i, c, h, d});
        Value g = memref::LoadOp::create(b, dOP, ValueRange{i, d});
        scf::YieldOp::create(b, ValueRange{arith::AddFOp::create(
                                    b, dot.getRegionIterArgs()[0],
                                    arith::MulFOp::create(b, o, g))});
      }
      memref::StoreOp::create(b, dot.getResult(0), dRow, ValueRange{ii});
      for (int64_t x = 0; x < dPad / kLanes; ++x) {
        vstore(vconst(0.0), dQuT, {ii, idx(x * kLanes)});
        vstore(vconst(0.0), dQvT, {ii, idx(x * kLanes)});
      }
    });
    backwardKeyTiles(h, c, i0, nr);
    return;
  }
  Value nr = forwardTile(i0);
  // lse and D per row; dq's parts and the window zeroed.
  loop(c0, nr, c1, [&](Value ii) {
    Value i = add(i0, ii);
    Value sum = memref::LoadOp::create(b, rowSum, ValueRange{ii});
    Value m = memref::LoadOp::create(b, rowMax, ValueRange{ii});
    memref::StoreOp::create(
        b, arith::AddFOp::create(b, m, math::LogOp::create(b, sum)), lseRow,
        ValueRange{ii});
    Value dotV = vconst(0.0);
    for (int64_t x = 0; x < dPad / kLanes; ++x) {
      Value col = idx(x * kLanes);
      dotV = vector::FMAOp::create(b, vload(acc, {ii, col}),
                                   vload(dOP, {i, col}), dotV);
      vstore(vconst(0.0), dQuT, {ii, col});
      vstore(vconst(0.0), dQvT, {ii, col});
    }
    Value dot = vector::ReductionOp::create(b, vector::CombiningKind::ADD, dotV,
                                            arith::FastMathFlags::reassoc);
    memref::StoreOp::create(b, arith::DivFOp::create(b, dot, sum), dRow,
                            ValueRange{ii});
  });
  backwardKeyTiles(h, c, i0, nr);
}

/// backwardTile's walk over the key tiles and dq's write-back, once lseRow,
/// dRow and dq's parts are set for the tile's `nr` rows.
void KernelBuilder::backwardKeyTiles(Value h, Value c, Value i0, Value nr) {
  Value c0 = idx(0), c1 = idx(1), bk = idx(kKeyTile);
  auto tileAt = [&](Value tile, Value row, Value col) -> Value {
    return memref::LoadOp::create(b, tile, ValueRange{row, col});
  };
  zeroRows(wd, c0, idx(tileRows), c0, memref::DimOp::create(b, wd, 1));
  Value shift = sub(nr, c1);
  Value start, end;
  keyRange(i0, nr, start, end);
  loop(start, end, bk, [&](Value j0) {
    // Scores, then P in `scores` and dP in dsTile.
    rowBlocks(nr, hooks.scoreRows,
              [&](Value ii, int64_t rows) { scoreBlock(i0, ii, j0, rows); });
    loop(c0, nr, c1, [&](Value ii) { probabilityRow(i0, ii, j0, lseRow); });
    rowBlocks(nr, hooks.scoreRows, [&](Value ii, int64_t rows) {
      for (int64_t g = 0; g < kKeyTile / kLanes; g += kScoreVectors) {
        SmallVector<Value> dp =
            blockProduct(dOP, add(i0, ii), vT, add(j0, idx(g * kLanes)), rows,
                         kScoreVectors, /*perRowColumns=*/false);
        for (int64_t row = 0; row < rows; ++row)
          for (int64_t x = 0; x < kScoreVectors; ++x)
            vstore(dp[row * kScoreVectors + x], dsTile,
                   {add(ii, idx(row)), idx((g + x) * kLanes)});
      }
    });
    // dS = scale · P ⊙ (dP − D), also placed in the window.
    Value scaleV = bcast(scale);
    loop(c0, nr, c1, [&](Value ii) {
      Value dV = bcast(memref::LoadOp::create(b, dRow, ValueRange{ii}));
      Value at = sub(shift, ii);
      for (int64_t x = 0; x < kKeyTile / kLanes; ++x) {
        Value col = idx(x * kLanes);
        Value p = vload(scores, {ii, col});
        Value ds = arith::MulFOp::create(
            b, arith::MulFOp::create(b, p, scaleV),
            arith::SubFOp::create(b, vload(dsTile, {ii, col}), dV));
        vstore(ds, dsTile, {ii, col});
        vstore(ds, wd, {ii, add(at, col)});
      }
    });
    // dv and dk rows of the key tile: over the tile's query rows.
    rowBlocks(bk, hooks.outputRows, [&](Value jj, int64_t rows) {
      accumulate(
          dVP, add(j0, jj), rows, nr,
          [&](int64_t row, Value t) {
            return tileAt(scores, t, add(jj, idx(row)));
          },
          dOP, i0);
      accumulate(
          dKP, add(j0, jj), rows, nr,
          [&](int64_t row, Value t) {
            return tileAt(dsTile, t, add(jj, idx(row)));
          },
          qu, i0);
    });
    // dq's rows: dS k over the tile's keys, W r over its window.
    Value m0 = sub(add(j0, qlen), add(i0, nr));
    Value span = add(bk, shift);
    rowBlocks(nr, hooks.outputRows, [&](Value ii, int64_t rows) {
      accumulate(
          dQuT, ii, rows, bk,
          [&](int64_t row, Value t) {
            return tileAt(dsTile, add(ii, idx(row)), t);
          },
          kP, j0);
      accumulate(
          dQvT, ii, rows, span,
          [&](int64_t row, Value t) {
            return tileAt(wd, add(ii, idx(row)), t);
          },
          rP, m0);
    });
    // dr's rows of the window: over the tile's query rows.
    rowBlocks(span, hooks.outputRows, [&](Value t0, int64_t rows) {
      accumulate(
          dRP, add(m0, t0), rows, nr,
          [&](int64_t row, Value i) {
            return tileAt(wd, i, add(t0, idx(row)));
          },
          qv, i0);
    });
  });
  // dq = dq_u + dq_v; the biases' gradients are their sums over rows.
  loop(c0, nr, c1, [&](Value ii) {
    Value i = add(i0, ii);
    for (int64_t x = 0; x < dPad / kLanes; ++x) {
      Value col = idx(x * kLanes);
      Value gu = vload(dQuT, {ii, col}), gv = vload(dQvT, {ii, col});
      vstore(arith::AddFOp::create(b, vload(duAcc, {col}), gu), duAcc, {col});
      vstore(arith::AddFOp::create(b, vload(dvbAcc, {col}), gv), dvbAcc, {col});
      vstore(arith::AddFOp::create(b, gu, gv), dQuT, {ii, col});
    }
    loop(c0, idx(dHead), c1, [&](Value d) {
      memref::StoreOp::create(b, tileAt(dQuT, ii, d), dq,
                              ValueRange{i, c, h, d});
    });
  });
}

void KernelBuilder::buildBackward() {
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto args = entry->getArguments();
  dOut = args[0];
  q = args[1];
  k = args[2];
  v = args[3];
  r = args[4];
  rwBias = args[5];
  rrBias = args[6];
  dq = args[7];
  dk = args[8];
  dv = args[9];
  dr = args[10];
  du = args[11];
  dvb = args[12];
  unsigned next = 13;
  if (withLse) {
    lse = args[next++];
    out = args[next++];
  }
  setUp(args.drop_front(next), k, q);
  allocatePacked();
  Value c0 = idx(0), c1 = idx(1), dh = idx(dHead), pad = idx(dPad);
  auto matrix = [&](Value rows, Value cols) -> Value {
    return memref::AllocOp::create(
        b, MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, et),
        ValueRange{rows, cols});
  };
  vT = matrix(dh, kCols);
  kP = matrix(kCols, pad);
  rP = matrix(rCols, pad);
  dOP = matrix(qlen, pad);
  dKP = matrix(kCols, pad);
  dVP = matrix(kCols, pad);
  dRP = matrix(rCols, pad);
  auto vecType = MemRefType::get({dPad}, et);
  duAcc = memref::AllocaOp::create(b, vecType);
  dvbAcc = memref::AllocaOp::create(b, vecType);
  auto rowType = MemRefType::get({tileRows}, et);
  lseRow = memref::AllocaOp::create(b, rowType);
  dRow = memref::AllocaOp::create(b, rowType);
  dsTile =
      memref::AllocaOp::create(b, MemRefType::get({tileRows, kKeyTile}, et));
  // The window: row i's dS at columns nr − 1 − i .. + Bk, read up to Bk +
  // nr − 1 (whole vectors past that are never read).
  wd = memref::AllocaOp::create(
      b, MemRefType::get({tileRows, kKeyTile + tileRows + kLanes}, et));
  auto tileType = MemRefType::get({tileRows, dPad}, et);
  dQuT = memref::AllocaOp::create(b, tileType);
  dQvT = memref::AllocaOp::create(b, tileType);
  // Padding read as whole vectors: zero (vT past klen, the rows' columns
  // past d_head, kP and rP past klen).
  zeroRows(vT, c0, dh, klen, kCols);
  zeroRows(kP, klen, kCols, c0, pad);
  zeroRows(rP, klen, rCols, c0, pad);
  for (Value rows : {kP, rP})
    zeroRows(rows, c0, klen, dh, pad);
  for (Value rows : {qu, qv, dOP})
    zeroRows(rows, c0, qlen, dh, pad);

  loop(c0, nHead, c1, [&](Value h) {
    packRT(h);
    // rP[m, d] = r[m, h, d]; dr's and the biases' accumulators zeroed.
    loop(c0, klen, c1, [&](Value m) {
      loop(c0, dh, c1, [&](Value d) {
        memref::StoreOp::create(
            b, memref::LoadOp::create(b, r, ValueRange{m, h, d}), rP,
            ValueRange{m, d});
      });
    });
    zeroRows(dRP, c0, rCols, c0, pad);
    loop(c0, pad, c1, [&](Value d) {
      memref::StoreOp::create(b, fconst(0.0), duAcc, ValueRange{d});
      memref::StoreOp::create(b, fconst(0.0), dvbAcc, ValueRange{d});
    });
    loop(c0, batch, c1, [&](Value c) {
      packOperands(h, c);
      // vᵀ, k's rows and d_result's rows; dk and dv zeroed.
      packPair(v, vT, k, kP, h, c);
      loop(c0, qlen, c1, [&](Value i) {
        loop(c0, dh, c1, [&](Value d) {
          memref::StoreOp::create(
              b, memref::LoadOp::create(b, dOut, ValueRange{i, c, h, d}), dOP,
              ValueRange{i, d});
        });
      });
      zeroRows(dKP, c0, kCols, c0, pad);
      zeroRows(dVP, c0, kCols, c0, pad);
      loop(c0, qlen, idx(tileRows), [&](Value i0) { backwardTile(h, c, i0); });
      loop(c0, klen, c1, [&](Value j) {
        loop(c0, dh, c1, [&](Value d) {
          memref::StoreOp::create(
              b, memref::LoadOp::create(b, dKP, ValueRange{j, d}), dk,
              ValueRange{j, c, h, d});
          memref::StoreOp::create(
              b, memref::LoadOp::create(b, dVP, ValueRange{j, d}), dv,
              ValueRange{j, c, h, d});
        });
      });
    });
    loop(c0, dh, c1, [&](Value d) {
      loop(c0, klen, c1, [&](Value m) {
        memref::StoreOp::create(
            b, memref::LoadOp::create(b, dRP, ValueRange{m, d}), dr,
            ValueRange{m, h, d});
      });
      memref::StoreOp::create(b,
                              memref::LoadOp::create(b, duAcc, ValueRange{d}),
                              du, ValueRange{h, d});
      memref::StoreOp::create(b,
                              memref::LoadOp::create(b, dvbAcc, ValueRange{d}),
                              dvb, ValueRange{h, d});
    });
  });
  func::ReturnOp::create(b);
}

/// The kernel's name for an element type, d_head and lse form.
std::string kernelName(Type et, int64_t dHead, bool withLse, bool grad,
                       const KernelHooks &hooks) {
  std::string name =
      grad ? "txl_rel_attention_grad_cpu_" : "txl_rel_attention_cpu_";
  llvm::raw_string_ostream os(name);
  et.print(os);
  os << "_d" << dHead;
  if (withLse)
    os << (grad ? "_saved" : "_lse");
  if (hooks.lanes != 8)
    os << "_v" << hooks.lanes * 32;
  if (hooks.scoreRows != 4 || hooks.outputRows != 4)
    os << "_rows" << hooks.scoreRows << "x" << hooks.outputRows;
  if (!hooks.scoreWindow)
    os << "_nowindow";
  if (hooks.queryTile != 64)
    os << "_q" << hooks.queryTile;
  if (hooks.packPrefetch != 32)
    os << "_pf" << hooks.packPrefetch;
  if (!hooks.boundaryMasks)
    os << "_allmasks";
  if (hooks.mathExp)
    os << "_mathexp";
  return name;
}

/// Any-layout memref of `rank` dimensions of `et` (the kernel's operands:
/// views of whatever layout bufferization gives the tensors).
MemRefType anyLayout(MLIRContext *ctx, int64_t rank, Type et) {
  return cpuKernelOperandType(ctx, rank, et);
}

/// The forward kernel (with `withLse`, its lse form) or, with `grad`, the
/// backward kernel: (d_result, q, k, v, r, u, v_bias, dq, dk, dv, dr, du,
/// dv_bias, mem_len, same_length, scale); with `grad` and `withLse`, the
/// backward on the forward's saved statistics, lse [batch, n_head, qlen]
/// and output after dv_bias.
func::FuncOp getOrCreateKernel(ModuleOp module, Type et, int64_t dHead,
                               bool withLse, bool grad,
                               const KernelHooks &hooks) {
  std::string name = kernelName(et, dHead, withLse, grad, hooks);
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  MLIRContext *ctx = module.getContext();
  SmallVector<Type> args;
  if (grad)
    args.push_back(anyLayout(ctx, 4, et));
  // q, k, v, r, u, v_bias; the output, or the gradients of all six.
  for (int64_t rank : {4, 4, 4, 3, 2, 2})
    args.push_back(anyLayout(ctx, rank, et));
  if (grad)
    for (int64_t rank : {4, 4, 4, 3, 2, 2})
      args.push_back(anyLayout(ctx, rank, et));
  else
    args.push_back(anyLayout(ctx, 4, et));
  if (withLse)
    args.push_back(anyLayout(ctx, 3, et));
  if (withLse && grad)
    args.push_back(anyLayout(ctx, 4, et));
  Builder builder(ctx);
  args.append({builder.getIndexType(), builder.getI1Type(), et});
  ImplicitLocOpBuilder b(module.getLoc(), ctx);
  b.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(b, name, b.getFunctionType(args, {}));
  func.setPrivate();
  KernelBuilder kernelBuilder(b, func, dHead, withLse, hooks);
  if (grad)
    kernelBuilder.buildBackward();
  else
    kernelBuilder.build();
  return func;
}

/// The kernels of one op: with vector-bits=0 both forms (CpuKernels).
CpuKernels getOrCreateKernels(ModuleOp module, Type et, int64_t dHead,
                              bool withLse, bool grad,
                              const KernelHooks &hooks) {
  return getOrCreateCpuKernels(hooks.lanes, [&](int64_t lanes) {
    KernelHooks h = hooks;
    h.lanes = lanes;
    return getOrCreateKernel(module, et, dHead, withLse, grad, h);
  });
}

/// A new buffer of tensor type `t` whose sizes are those of `like`'s
/// dimensions `dims` (like's dimension dims[i] for t's i).
Value allocLike(ImplicitLocOpBuilder &b, RankedTensorType t, Value like,
                ArrayRef<int64_t> dims) {
  SmallVector<Value> dynamic;
  for (auto [i, dim] : llvm::enumerate(dims))
    if (t.isDynamicDim(i))
      dynamic.push_back(tensor::DimOp::create(b, like, dim));
  return memref::AllocOp::create(
      b, MemRefType::get(t.getShape(), t.getElementType()), dynamic);
}

/// Whether the scores convert-txl-to-linalg's lowering would write for
/// query and key, n_head · batch · qlen · (klen + 1) elements of `et`, take
/// more than `minBytes` bytes; null when minBytes is 0 (always the kernel).
Value scoresExceed(ImplicitLocOpBuilder &b, Value q, Value key, Type et,
                   int64_t minBytes) {
  if (minBytes <= 0)
    return nullptr;
  Value elements = arith::MulIOp::create(
      b,
      arith::MulIOp::create(
          b,
          arith::MulIOp::create(b, tensor::DimOp::create(b, q, 2),
                                tensor::DimOp::create(b, q, 1)),
          tensor::DimOp::create(b, q, 0)),
      arith::AddIOp::create(b, tensor::DimOp::create(b, key, 0),
                            arith::ConstantIndexOp::create(b, 1)));
  Value bytes = arith::MulIOp::create(
      b, elements,
      arith::ConstantIndexOp::create(b, et.getIntOrFloatBitWidth() / 8));
  return arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, bytes,
                               arith::ConstantIndexOp::create(b, minBytes));
}

/// When the kernel runs for an attention op (forward or backward):
/// always (null); with dropatt, when not training (dropatt is then the
/// identity); with min-score-bytes, when the scores convert-txl-to-linalg's
/// lowering would write take more bytes than that.
template <typename OpTy>
Value kernelCondition(ImplicitLocOpBuilder &b, OpTy op, Type et,
                      int64_t minScoreBytes) {
  Value useKernel;
  if (op.getDropatt())
    useKernel = arith::XOrIOp::create(b, op.getDropattTraining(),
                                      arith::ConstantIntOp::create(b, 1, 1));
  if (Value large =
          scoresExceed(b, op.getQuery(), op.getKey(), et, minScoreBytes))
    useKernel = useKernel ? arith::AndIOp::create(b, useKernel, large) : large;
  return useKernel;
}

/// Replaces `op` by call()'s results, or with `useKernel` by an scf.if of
/// them where it holds and of the op itself (for convert-txl-to-linalg's
/// lowering, which draws dropatt's masks) elsewhere.
void replaceByCall(PatternRewriter &rewriter, ImplicitLocOpBuilder &b,
                   Operation *op, Value useKernel,
                   function_ref<SmallVector<Value>()> call) {
  if (!useKernel) {
    rewriter.replaceOp(op, call());
    return;
  }
  auto ifOp = scf::IfOp::create(b, op->getResultTypes(), useKernel,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    scf::YieldOp::create(b, call());
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, b.clone(*op)->getResults());
  }
  rewriter.replaceOp(op, ifOp.getResults());
}

// txl.rel_attention (static d_head) => bufferization.to_buffer of the
// operands, memref.alloc of the output (and lse), func.call of the kernel,
// to_tensor; with dropatt or min-score-bytes, that where the kernel runs
// and the op itself elsewhere (scf.if).
struct RelAttentionToCall : public OpRewritePattern<RelAttentionOp> {
  RelAttentionToCall(MLIRContext *ctx, ModuleOp module,
                     const KernelHooks &hooks)
      : OpRewritePattern(ctx), module(module), hooks(hooks) {}

  LogicalResult matchAndRewrite(RelAttentionOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getResult().getType());
    // f32 or f64 (the op's types).
    Type et = type.getElementType();
    int64_t dHead = type.getDimSize(3);
    if (ShapedType::isDynamic(dHead))
      return rewriter.notifyMatchFailure(op, "d_head must be static");
    Value lse = op.getLse();
    CpuKernels kernel =
        getOrCreateKernels(module, et, dHead, !!lse, /*grad=*/false, hooks);
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    replaceByCall(rewriter, b, op,
                  kernelCondition(b, op, et, hooks.minScoreBytes),
                  [&] { return callKernel(b, op, kernel); });
    return success();
  }

  /// The call of `kernels` for `op` at `b` (with a wide one, of the one
  /// the CPU runs): its output (and lse) as tensors.
  SmallVector<Value> callKernel(ImplicitLocOpBuilder &b, RelAttentionOp op,
                                const CpuKernels &kernels) const {
    func::FuncOp kernel = kernels.narrow;
    auto type = cast<RankedTensorType>(op.getResult().getType());
    Type et = type.getElementType();
    Value lse = op.getLse();
    assertEqualSizes(b, b.getLoc(), op,
                     relAttentionSizeEqualities(
                         op.getQuery(), op.getKey(), op.getValue(),
                         op.getPosKey(), op.getRWBias(), op.getRRBias()));
    auto toBuffer = [&](Value tensor, unsigned n) -> Value {
      return toKernelBuffer(b, tensor,
                            cast<MemRefType>(kernel.getArgumentTypes()[n]));
    };
    auto alloc = [&](RankedTensorType t, ArrayRef<Value> sizes) -> Value {
      SmallVector<Value> dynamic;
      for (auto [dim, size] : llvm::enumerate(sizes))
        if (t.isDynamicDim(dim))
          dynamic.push_back(size);
      return memref::AllocOp::create(
          b, MemRefType::get(t.getShape(), t.getElementType()), dynamic);
    };
    Value q = op.getQuery();
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < 4; ++d)
      sizes.push_back(tensor::DimOp::create(b, q, d));
    Value outBuf = alloc(type, sizes);
    SmallVector<Value> args = {
        toBuffer(q, 0),
        toBuffer(op.getKey(), 1),
        toBuffer(op.getValue(), 2),
        toBuffer(op.getPosKey(), 3),
        toBuffer(op.getRWBias(), 4),
        toBuffer(op.getRRBias(), 5),
        memref::CastOp::create(b, kernel.getArgumentTypes()[6], outBuf)};
    Value lseBuf;
    if (lse) {
      auto lseType = cast<RankedTensorType>(lse.getType());
      lseBuf = alloc(lseType, {sizes[1], sizes[2], sizes[0]});
      args.push_back(
          memref::CastOp::create(b, kernel.getArgumentTypes()[7], lseBuf));
    }
    args.push_back(op.getMemLen());
    args.push_back(op.getSameLength());
    args.push_back(arith::ConstantOp::create(
        b, b.getFloatAttr(et, op.getScale().convertToDouble())));
    callCpuKernels(b, module, kernels, args);
    SmallVector<Value> results = {bufferization::ToTensorOp::create(
        b, type, outBuf, /*restrict=*/b.getUnitAttr(),
        /*writable=*/b.getUnitAttr())};
    if (lse)
      results.push_back(bufferization::ToTensorOp::create(
          b, lse.getType(), lseBuf, /*restrict=*/b.getUnitAttr(),
          /*writable=*/b.getUnitAttr()));
    return results;
  }

  ModuleOp module;
  const KernelHooks &hooks;
};

// txl.rel_attention_grad (static d_head) => the backward kernel's call on
// the operands' buffers and new buffers for the six gradients; with
// dropatt or min-score-bytes, that where the kernel runs (as for the
// forward) and the op itself otherwise (scf.if). With the saved group
// (lse, output), the kernel form that reads them instead of recomputing
// the forward.
struct RelAttentionGradToCall : public OpRewritePattern<RelAttentionGradOp> {
  RelAttentionGradToCall(MLIRContext *ctx, ModuleOp module,
                         const KernelHooks &hooks)
      : OpRewritePattern(ctx), module(module), hooks(hooks) {}

  LogicalResult matchAndRewrite(RelAttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getDQuery().getType());
    int64_t dHead = type.getDimSize(3);
    if (ShapedType::isDynamic(dHead))
      return rewriter.notifyMatchFailure(op, "d_head must be static");
    CpuKernels kernels =
        getOrCreateKernels(module, type.getElementType(), dHead,
                           /*withLse=*/!!op.getLse(), /*grad=*/true, hooks);
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    replaceByCall(
        rewriter, b, op,
        kernelCondition(b, op, type.getElementType(), hooks.minScoreBytes),
        [&] { return callKernel(b, op, kernels); });
    return success();
  }

  SmallVector<Value> callKernel(ImplicitLocOpBuilder &b, RelAttentionGradOp op,
                                const CpuKernels &kernels) const {
    func::FuncOp kernel = kernels.narrow;
    Type et = cast<RankedTensorType>(op.getDQuery().getType()).getElementType();
    assertEqualSizes(b, b.getLoc(), op,
                     relAttentionGradSizeEqualities(
                         op.getQuery(), op.getKey(), op.getValue(),
                         op.getPosKey(), op.getRWBias(), op.getRRBias(),
                         op.getDResult(), op.getLse(), op.getOutput()));
    SmallVector<Value> args;
    Value operands[] = {op.getDResult(), op.getQuery(),  op.getKey(),
                        op.getValue(),   op.getPosKey(), op.getRWBias(),
                        op.getRRBias()};
    for (auto [n, operand] : llvm::enumerate(operands))
      args.push_back(toKernelBuffer(
          b, operand, cast<MemRefType>(kernel.getArgumentTypes()[n])));
    // The gradients, each of its operand's shape.
    SmallVector<Value> grads;
    for (auto [n, result] : llvm::enumerate(op->getResults())) {
      Value like = operands[n + 1];
      auto t = cast<RankedTensorType>(result.getType());
      SmallVector<int64_t> dims;
      for (int64_t d = 0; d < t.getRank(); ++d)
        dims.push_back(d);
      grads.push_back(allocLike(b, t, like, dims));
      args.push_back(memref::CastOp::create(
          b, kernel.getArgumentTypes()[args.size()], grads.back()));
    }
    for (Value saved : {op.getLse(), op.getOutput()})
      if (saved)
        args.push_back(toKernelBuffer(
            b, saved,
            cast<MemRefType>(kernel.getArgumentTypes()[args.size()])));
    args.push_back(op.getMemLen());
    args.push_back(op.getSameLength());
    args.push_back(arith::ConstantOp::create(
        b, b.getFloatAttr(et, op.getScale().convertToDouble())));
    callCpuKernels(b, module, kernels, args);
    SmallVector<Value> results;
    for (auto [grad, result] : llvm::zip(grads, op->getResults()))
      results.push_back(bufferization::ToTensorOp::create(
          b, result.getType(), grad, /*restrict=*/b.getUnitAttr(),
          /*writable=*/b.getUnitAttr()));
    return results;
  }

  ModuleOp module;
  const KernelHooks &hooks;
};

struct ConvertRelAttentionToCpuPass
    : public txl::impl::ConvertRelAttentionToCpuPassBase<
          ConvertRelAttentionToCpuPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (scoreRows < 1 || outputRows < 1) {
      getOperation().emitError("score-rows and output-rows must be >= 1");
      return signalPassFailure();
    }
    // The tile buffers are on the stack: at most 256 rows (256 × 64 scores).
    if (queryTile < 1 || queryTile > 256) {
      getOperation().emitError("query-tile must be in [1, 256]");
      return signalPassFailure();
    }
    if (packPrefetch < 0) {
      getOperation().emitError("pack-prefetch must be >= 0");
      return signalPassFailure();
    }
    if (vectorBits != 0 && vectorBits != 256 && vectorBits != 512) {
      getOperation().emitError("vector-bits must be 0, 256 or 512");
      return signalPassFailure();
    }
    KernelHooks hooks;
    hooks.lanes = vectorBits / 32;
    hooks.scoreRows = scoreRows;
    hooks.scoreWindow = scoreWindow;
    hooks.boundaryMasks = boundaryMasks;
    hooks.mathExp = mathExp;
    hooks.minScoreBytes = minScoreBytes;
    hooks.outputRows = outputRows;
    hooks.queryTile = queryTile;
    hooks.packPrefetch = packPrefetch;
    RewritePatternSet patterns(&getContext());
    patterns.add<RelAttentionToCall>(&getContext(), module, hooks);
    if (grad)
      patterns.add<RelAttentionGradToCall>(&getContext(), module, hooks);
    // Only the ops themselves: the kernels the pattern adds are not walked
    // again, and nothing else is folded.
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<RelAttentionOp>(op) || (grad && isa<RelAttentionGradOp>(op)))
        ops.push_back(op);
    });
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingOps);
    config.enableFolding(false);
    if (failed(applyOpPatternsGreedily(ops, std::move(patterns), config)))
      return signalPassFailure();
  }
};

} // namespace
