//===- RelAttentionToGpu.cpp - txl.rel_attention as one GPU kernel -*- C++
//-*-===//
//
// The GPU form of the fused relative attention (paper §3.3): one kernel
// launch per op, flash-attention style. A workgroup of kWarps subgroups of
// 32 work-items owns a tile of Bq query rows of one (batch, head) column and
// walks the visible keys in tiles of Bk = 32: lane l of a subgroup scores
// key j0 + l against each of its query rows,
//   s = (q_i + u) · k_j + (q_i + v) · r[qlen - 1 - i + j]   (AC + BD),
// from tiles of q + u, q + v, k and the window of Bq + Bk - 1 rows of r that
// the tile needs, all in workgroup memory (and v's tile where it fits), two
// rows at a time sharing each 16-byte read of the lane's k row (d_head a
// multiple of 4); the causal-with-memory and same_length masks come from
// the indices, the softmax is online (running max and sum per row, carried
// across key tiles), and P·V accumulates in registers for all the
// subgroup's rows at once (lane l owns output columns l, l + 32, ...; each
// v element read once for them). The instructions a warp issues per key
// tile, and the share of them that are FMAs, are held to budgets in
// sass-budgets-attention-f32.test. Neither the
// qlen × klen scores nor the unshifted positional scores exist anywhere:
// the kernel's only global buffers are its operands, its output and, when
// the keys are split over the grid's z (flash-decoding, for grids too small
// for the device), the parts' outputs and log-sum-exps that
// rel_attention_combine joins.
//
// The kernel is written once in the gpu dialect (gpu.func, workgroup
// attributions in numeric address space 3, gpu.barrier, gpu.shuffle with
// width 32), which both the NVVM and the SPIR-V (OpenCL) lowerings accept.
//
//===----------------------------------------------------------------------===//

#include "RelAttention.h"
#include "txl/Conversion/KernelModule.h"
#include "txl/Conversion/Passes.h"
#include "txl/Conversion/SizeChecks.h"
#include "txl/IR/TxlOps.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::txl {
#define GEN_PASS_DEF_CONVERTRELATTENTIONTOGPUPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;
using namespace mlir::txl;

namespace {

/// Work-items per subgroup (CUDA warp); the kernel's shuffles assume it and
/// the OpenCL lowering requires it (intel_reqd_sub_group_size).
constexpr int64_t kSubgroup = kSubgroupSize;
/// Subgroups per workgroup.
constexpr int64_t kWarps = 4;
/// Keys per tile: one per lane.
constexpr int64_t kKeyTile = kSubgroup;
/// Floats per workgroup-memory read of the score loop (16 bytes).
constexpr int64_t kVector = 4;
/// Registers per work-item on CUDA (PTX .maxnreg).
constexpr int32_t kMaxRegisters = 128;
/// Workgroup memory per workgroup: at most CUDA's static limit of 48 KiB;
/// the query tile shrinks for wide heads.
constexpr int64_t kWorkgroupBytes = 48 * 1024;

/// The static shape of one rel_attention kernel.
struct KernelShape {
  int64_t dHead;
  /// Query rows per workgroup (a multiple of kWarps).
  int64_t queryTile;
  /// The kernel draws dropatt (its trailing Dropatt arguments).
  bool dropatt = false;
  /// The kernel also writes each row's log-sum-exp (its last argument).
  bool lse = false;
  /// Rows of a subgroup scored together (the `row-block` option).
  int64_t rowBlock = 1;
  /// V's key tile is staged in workgroup memory beside K's (when it fits).
  bool stageV = false;
  /// The score loop reads the tiles 4 floats (16 bytes) at a time: d_head
  /// a multiple of 4.
  bool vectorized() const { return dHead % kVector == 0; }
  /// Row stride of the workgroup tiles, so that the 32 lanes reading one
  /// column of 32 different rows hit 32 different banks: d_head + 1; when
  /// vectorized an odd number of 16-byte vectors (d_head, or d_head + 4),
  /// so that each 8 lanes of a 16-byte read (one phase) hit 8 different
  /// groups of 4 banks, and every row starts 16-byte aligned.
  int64_t rowStride() const {
    if (!vectorized())
      return dHead + 1;
    return (dHead / kVector) % 2 == 1 ? dHead : dHead + kVector;
  }
  int64_t rowsPerWarp() const { return queryTile / kWarps; }
  /// Rows of r one (query tile, key tile) pair reads.
  int64_t posRows() const { return queryTile + kKeyTile - 1; }
  /// Output columns per lane.
  int64_t colsPerLane() const { return (dHead + kSubgroup - 1) / kSubgroup; }
  int64_t workgroupBytes() const {
    return (2 * queryTile + (stageV ? 2 : 1) * kKeyTile + posRows()) *
           rowStride() * 4;
  }
  /// Resident workgroups per SM on sm_80, the smaller SM of the two default
  /// architectures: 64K registers, 164 KiB of shared memory (1 KiB of it
  /// reserved per workgroup).
  int64_t resident() const {
    return std::min<int64_t>(65536 / (kMaxRegisters * kWarps * kSubgroup),
                             164 * 1024 / (workgroupBytes() + 1024));
  }
};

/// The widest query tile (16, 8 or 4 rows) whose workgroup tiles fit, with
/// V's tile staged if it fits too and leaves as many workgroups resident
/// (d_head 80: 48,048 bytes with it, 3 workgroups on sm_80 where 37,296
/// leave 4).
std::optional<KernelShape> chooseShape(int64_t dHead, bool dropatt, bool lse) {
  for (int64_t queryTile : {16, 8, 4}) {
    KernelShape shape{dHead, queryTile, dropatt, lse};
    if (shape.workgroupBytes() > kWorkgroupBytes)
      continue;
    KernelShape staged = shape;
    staged.stageV = true;
    if (staged.workgroupBytes() <= kWorkgroupBytes &&
        staged.resident() == shape.resident())
      return staged;
    return shape;
  }
  return std::nullopt;
}

/// The workgroup tile [rows, d_head + 1] in address space 3.
MemRefType tileType(MLIRContext *ctx, int64_t rows, const KernelShape &s) {
  return MemRefType::get({rows, s.rowStride()}, Float32Type::get(ctx),
                         MemRefLayoutAttrInterface{},
                         IntegerAttr::get(IntegerType::get(ctx, 64), 3));
}

/// Builds the body of the kernel into `func`. Arguments (see
/// ConvertRelAttentionToGpuPass's description): q, k, v [len, batch,
/// n_head, d_head], r [klen, n_head, d_head], u, v_bias [n_head, d_head],
/// out [qlen, batch, n_head, d_head], mem_len (index), same_length (i32),
/// scale (f32), the Dropatt arguments with dropatt, the rows' log-sum-exp
/// [batch, n_head, qlen] (written) with lse; workgroup tiles q + u, q + v,
/// k, r.
class KernelBuilder : public KernelBodyBuilder {
public:
  KernelBuilder(gpu::GPUFuncOp func, const KernelShape &shape)
      : KernelBodyBuilder(func), s(shape), func(func) {}

  void build();

private:
  /// `body(row, col)` for every element of a [rows, d_head] tile.
  void forTileElements(int64_t rows,
                       function_ref<void(Value row, Value col)> body) {
    KernelBodyBuilder::forTileElements(tid, kWarps * kSubgroup, rows, s.dHead,
                                       body);
  }
  /// A butterfly reduction over the 32 lanes of a subgroup.
  Value subgroupReduce(Value v, bool isMax);
  /// Stages `rows` rows of a workgroup tile: tile[row, col] =
  /// operand[indices(src, col)] with src = sourceRow(row) (the operand's
  /// first index), zero where inRange(src) is false. When `allInRange` (i1)
  /// holds, a path with no check: where d_head divides the workgroup, each
  /// work-item one column of every (threads / d_head)-th row, unrolled,
  /// each row's element one addition of a flat index from the previous.
  void
  stageTile(Value tile, int64_t rows, Value allInRange, Value operand,
            function_ref<Value(Value row)> sourceRow,
            function_ref<Value(Value src)> inRange,
            function_ref<SmallVector<Value>(Value src, Value col)> indices);

  KernelShape s;
  gpu::GPUFuncOp func;
  /// The work-item's index in the workgroup (set first by build()).
  Value tid;
};

Value KernelBuilder::subgroupReduce(Value v, bool isMax) {
  return txl::subgroupReduce(b, v, isMax);
}

void KernelBuilder::stageTile(
    Value tile, int64_t rows, Value allInRange, Value operand,
    function_ref<Value(Value row)> sourceRow,
    function_ref<Value(Value src)> inRange,
    function_ref<SmallVector<Value>(Value src, Value col)> indices) {
  auto ifAll = scf::IfOp::create(b, allInRange, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifAll.thenBlock());
    int64_t threads = kWarps * kSubgroup;
    if (threads % s.dHead == 0) {
      // The operand as a flat array: element indices[...] at off + Σ index ·
      // stride, so that a work-item's next row is one addition away.
      auto md = memref::ExtractStridedMetadataOp::create(b, operand);
      Value span =
          add(md.getOffset(), mul(md.getSizes()[0], md.getStrides()[0]));
      Value flat = memref::ReinterpretCastOp::create(
          b, MemRefType::get({ShapedType::kDynamic}, b.getF32Type()),
          md.getBaseBuffer(), b.getIndexAttr(0), ArrayRef<OpFoldResult>{span},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
      int64_t step = threads / s.dHead;
      Value col = arith::RemUIOp::create(b, tid, idx(s.dHead));
      Value first = arith::DivUIOp::create(b, tid, idx(s.dHead));
      Value linear = md.getOffset();
      for (auto [index, stride] :
           llvm::zip_equal(indices(sourceRow(first), col), md.getStrides()))
        linear = add(linear, mul(index, stride));
      Value rowStep = mul(idx(step), md.getStrides()[0]);
      for (int64_t n = 0; n * step < rows; ++n) {
        Value row = add(first, idx(n * step));
        Value at = n == 0 ? linear : add(linear, mul(idx(n), rowStep));
        auto stage = [&] {
          Value x = memref::LoadOp::create(b, flat, ValueRange{at});
          memref::StoreOp::create(b, x, tile, ValueRange{row, col});
        };
        if ((n + 1) * step <= rows) {
          stage();
          continue;
        }
        // The last pass covers part of the work-items' rows.
        auto ifRow =
            scf::IfOp::create(b, cmp(arith::CmpIPredicate::ult, row, idx(rows)),
                              /*withElseRegion=*/false);
        OpBuilder::InsertionGuard rowGuard(b);
        b.setInsertionPointToStart(ifRow.thenBlock());
        stage();
      }
    } else {
      forTileElements(rows, [&](Value row, Value col) {
        Value x =
            memref::LoadOp::create(b, operand, indices(sourceRow(row), col));
        memref::StoreOp::create(b, x, tile, ValueRange{row, col});
      });
    }
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifAll.elseBlock());
  forTileElements(rows, [&](Value row, Value col) {
    Value src = sourceRow(row);
    Value ok = inRange(src);
    Value x = memref::LoadOp::create(b, operand,
                                     indices(select(ok, src, idx(0)), col));
    memref::StoreOp::create(b, select(ok, x, f32(0.0)), tile,
                            ValueRange{row, col});
  });
}

void KernelBuilder::build() {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  Value q = entry.getArgument(0), k = entry.getArgument(1),
        v = entry.getArgument(2), r = entry.getArgument(3),
        u = entry.getArgument(4), vb = entry.getArgument(5),
        out = entry.getArgument(6), memLen = entry.getArgument(7),
        sameLength = entry.getArgument(8), scale = entry.getArgument(9);
  Dropatt dropatt{};
  if (s.dropatt)
    dropatt = {entry.getArgument(10), entry.getArgument(11),
               entry.getArgument(12), entry.getArgument(13),
               entry.getArgument(14), entry.getArgument(15)};
  // The last three function arguments: the lse (with s.lse) and the key
  // parts' outputs and log-sum-exps (the block's arguments continue with the
  // workgroup attributions).
  unsigned numInputs = func.getFunctionType().getNumInputs();
  Value lseOut = s.lse ? entry.getArgument(numInputs - 3) : Value();
  Value partOut = entry.getArgument(numInputs - 2),
        partLse = entry.getArgument(numInputs - 1);
  ArrayRef<BlockArgument> tiles = func.getWorkgroupAttributions();
  Value quTile = tiles[0], qvTile = tiles[1], kTile = tiles[2],
        rTile = tiles[3];
  // V's tile when the shape stages it (else P·V reads v in place).
  Value vTile = s.stageV ? Value(tiles[4]) : Value();

  using P = arith::CmpIPredicate;
  Value zero = idx(0), one = idx(1), fzero = f32(0.0);
  Value qlen = memref::DimOp::create(b, q, 0);
  Value nHead = memref::DimOp::create(b, q, 2);
  Value klen = memref::DimOp::create(b, k, 0);
  Value column = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value batchIdx = arith::DivUIOp::create(b, column, nHead);
  Value head = arith::RemUIOp::create(b, column, nHead);
  Value i0 =
      mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(s.queryTile));
  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value warp = arith::DivUIOp::create(b, tid, idx(kSubgroup));
  Value lane = gpu::LaneIdOp::create(b, /*upper_bound=*/IntegerAttr());

  // The decoder mask (txl.masked_softmax; KernelBodyBuilder::decoderMask).
  DecoderMask mask =
      decoderMask(qlen, klen, memLen, sameLength, i0, s.queryTile);
  // This workgroup's part of the visible keys.
  KeyPart keys = keyPart(mask, kKeyTile);
  Value parts = keys.parts, part = keys.part;
  Value jBegin = keys.jBegin, jEnd = keys.jEnd;

  // q + u and q + v, rows past qlen zero.
  forTileElements(s.queryTile, [&](Value row, Value col) {
    Value i = add(i0, row);
    Value inRange = cmp(P::ult, i, qlen);
    Value iSafe = select(inRange, i, zero);
    Value x =
        memref::LoadOp::create(b, q, ValueRange{iSafe, batchIdx, head, col});
    x = select(inRange, x, fzero);
    Value ub = memref::LoadOp::create(b, u, ValueRange{head, col});
    Value vbb = memref::LoadOp::create(b, vb, ValueRange{head, col});
    memref::StoreOp::create(b, arith::AddFOp::create(b, x, ub), quTile,
                            ValueRange{row, col});
    memref::StoreOp::create(b, arith::AddFOp::create(b, x, vbb), qvTile,
                            ValueRange{row, col});
  });

  // Per row of this subgroup: running max, running sum, output columns.
  int64_t perRow = 2 + s.colsPerLane();
  SmallVector<Value> init;
  for (int64_t t = 0; t < s.rowsPerWarp(); ++t) {
    init.push_back(negInf());
    init.push_back(fzero);
    for (int64_t c = 0; c < s.colsPerLane(); ++c)
      init.push_back(fzero);
  }
  Value rowBase = mul(warp, idx(s.rowsPerWarp()));

  auto keyLoop = scf::ForOp::create(b, jBegin, jEnd, idx(kKeyTile), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(keyLoop.getBody());
    Value j0 = keyLoop.getInductionVar();
    ValueRange state = keyLoop.getRegionIterArgs();

    // Every subgroup is done reading the previous tiles.
    barrier("reads-done");
    // Rows j0 + row of k (and v), keys past jEnd zero.
    Value keysInRange = cmp(P::ule, add(j0, idx(kKeyTile)), jEnd);
    auto keyRow = [&](Value row) { return add(j0, row); };
    auto keyInTile = [&](Value j) { return cmp(P::ult, j, jEnd); };
    auto keyIndices = [&](Value j, Value col) {
      return SmallVector<Value>{j, batchIdx, head, col};
    };
    stageTile(kTile, kKeyTile, keysInRange, k, keyRow, keyInTile, keyIndices);
    if (vTile)
      stageTile(vTile, kKeyTile, keysInRange, v, keyRow, keyInTile, keyIndices);
    // Rows qlen - 1 - i + j of r for i in [i0, i0 + Bq), j in [j0, j0 +
    // Bk): window row w holds r row rBase + w, rBase = qlen - i0 - Bq + j0.
    // Rows outside [0, klen) only serve masked pairs and read as zero.
    Value rBase = relShiftRow(sub(add(sub(qlen, i0), j0), idx(s.queryTile)));
    Value windowInRange =
        arith::AndIOp::create(b, cmp(P::sge, rBase, zero),
                              cmp(P::sle, add(rBase, idx(s.posRows())), klen));
    stageTile(
        rTile, s.posRows(), windowInRange, r,
        [&](Value row) { return add(rBase, row); },
        [&](Value p) {
          return arith::AndIOp::create(b, cmp(P::sge, p, zero),
                                       cmp(P::slt, p, klen));
        },
        [&](Value p, Value col) {
          return SmallVector<Value>{p, head, col};
        });
    // The tiles are complete before any subgroup reads them.
    barrier("stores-done");

    Value j = add(j0, lane);
    Value keyInRange = cmp(P::ult, j, jEnd);
    int64_t rows = s.rowsPerWarp();
    // AC + BD for (i, j) of every row of this subgroup, in register blocks
    // of s.rowBlock rows that take each d together: the lane's k row
    // element is loaded once for the block's rows, each row adding its q + u
    // and q + v elements (broadcasts) and its window row Bq - 1 - ri + lane
    // of r.
    SmallVector<Value> ri, dots;
    for (int64_t t = 0; t < rows; ++t) {
      ri.push_back(add(rowBase, idx(t)));
      dots.push_back(fzero);
    }
    for (int64_t t0 = 0; t0 < rows; t0 += s.rowBlock) {
      int64_t t1 = std::min(rows, t0 + s.rowBlock);
      SmallVector<Value> wRows, init;
      for (int64_t t = t0; t < t1; ++t) {
        wRows.push_back(add(sub(idx(s.queryTile - 1), ri[t]), lane));
        init.push_back(fzero);
      }
      // d in steps of kVector (16-byte reads, each element's products in
      // order of d) or of 1.
      int64_t width = s.vectorized() ? kVector : 1;
      // An i32 induction variable: its increment and test are one
      // instruction each, not a 64-bit pair.
      auto i32 = [&](int64_t v) {
        return arith::ConstantIntOp::create(b, v, 32).getResult();
      };
      auto dot = scf::ForOp::create(
          b, i32(0), i32(s.dHead), i32(width), init,
          [&](OpBuilder &nb, Location loc, Value d32, ValueRange acc) {
            ImplicitLocOpBuilder ib(loc, nb);
            Value d = arith::IndexCastUIOp::create(ib, ib.getIndexType(), d32);
            // The `width` elements of the tile's row rr from d.
            auto ld = [&](Value tile, Value rr) {
              SmallVector<Value, kVector> elements;
              if (width == 1) {
                elements.push_back(
                    memref::LoadOp::create(ib, tile, ValueRange{rr, d}));
                return elements;
              }
              Value vec = vector::LoadOp::create(
                  ib, VectorType::get({kVector}, ib.getF32Type()), tile,
                  ValueRange{rr, d}, /*nontemporal=*/false,
                  llvm::MaybeAlign(kVector * 4));
              for (int64_t e = 0; e < kVector; ++e)
                elements.push_back(vector::ExtractOp::create(ib, vec, e));
              return elements;
            };
            auto kd = ld(kTile, lane);
            SmallVector<Value> sums(acc);
            for (int64_t t = t0; t < t1; ++t) {
              auto qu = ld(quTile, ri[t]), qv = ld(qvTile, ri[t]),
                   rw = ld(rTile, wRows[t - t0]);
              for (int64_t e = 0; e < width; ++e) {
                Value ac = math::FmaOp::create(ib, qu[e], kd[e], sums[t - t0]);
                sums[t - t0] = math::FmaOp::create(ib, qv[e], rw[e], ac);
              }
            }
            scf::YieldOp::create(ib, sums);
          });
      // Vectorized, a step holds 4 registers per operand row: not unrolled
      // (unrolled twice, ptxas spills at d_head 32, 64 and 80 under the
      // 128-register bound; and where the trip count is odd, as at d_head
      // 12, Intel's OpenCL CPU compiler got wrong scores from the unrolled
      // loop and its remainder: rel_attention_kernel.py's d_head 12 cases).
      int64_t unroll = s.vectorized() ? 1 : 4;
      dot->setAttr("loop_annotation", unrollAttr(unroll));
      for (int64_t t = t0; t < t1; ++t)
        dots[t] = dot.getResult(t - t0);
    }

    // Online softmax per row: m' = max(m, max_j s), l' = l e^{m - m'} +
    // sum_j e^{s - m'}, o' = o e^{m - m'} + sum_j e^{s - m'} v_j.
    SmallVector<Value> next, probabilities, acc;
    for (int64_t t = 0; t < rows; ++t) {
      ValueRange row = state.slice(t * perRow, perRow);
      Value i = add(i0, ri[t]);
      Value visible =
          arith::AndIOp::create(b, keyInRange, this->visible(mask, i, j));
      Value score =
          select(visible, arith::MulFOp::create(b, dots[t], scale), negInf());
      Value m = row[0], l = row[1];
      Value mNew = arith::MaximumFOp::create(b, m, subgroupReduce(score, true));
      Value mWasEmpty =
          arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m, negInf());
      Value alpha =
          select(mWasEmpty, fzero,
                 math::ExpOp::create(b, arith::SubFOp::create(b, m, mNew)));
      Value p = select(
          visible,
          math::ExpOp::create(b, arith::SubFOp::create(b, score, mNew)), fzero);
      Value lNew = arith::AddFOp::create(b, arith::MulFOp::create(b, l, alpha),
                                         subgroupReduce(p, false));
      // P·V takes the probabilities through dropatt (l does not).
      if (s.dropatt)
        p = arith::MulFOp::create(b, p,
                                  dropattMultiplier(dropatt, qlen, klen, nHead,
                                                    i, j, batchIdx, head));
      probabilities.push_back(p);
      for (int64_t c = 0; c < s.colsPerLane(); ++c)
        acc.push_back(arith::MulFOp::create(b, row[2 + c], alpha));
      next.push_back(mNew);
      next.push_back(lNew);
    }

    // P·V for every row of the subgroup at once: per key jj of the tile,
    // the lane's output columns of v row j0 + jj are loaded once (from V's
    // tile when staged) and each row adds them times its probability of jj
    // (from lane jj).
    SmallVector<Value> vCols;
    for (int64_t c = 0; c < s.colsPerLane(); ++c)
      vCols.push_back(arith::MinUIOp::create(b, add(lane, idx(c * kSubgroup)),
                                             idx(s.dHead - 1)));
    // An i32 induction variable, as the score loop's.
    auto pv = scf::ForOp::create(
        b, arith::ConstantIntOp::create(b, 0, 32),
        arith::ConstantIntOp::create(b, kKeyTile, 32),
        arith::ConstantIntOp::create(b, 1, 32), acc,
        [&](OpBuilder &nb, Location loc, Value jj32, ValueRange o) {
          ImplicitLocOpBuilder ib(loc, nb);
          Value jj = arith::IndexCastUIOp::create(ib, ib.getIndexType(), jj32);
          Value width = arith::ConstantIntOp::create(ib, kSubgroup, 32);
          SmallVector<Value> vj;
          if (vTile) {
            // Rows past jEnd hold zeros.
            for (Value d : vCols)
              vj.push_back(
                  memref::LoadOp::create(ib, vTile, ValueRange{jj, d}));
          } else {
            Value key = arith::AddIOp::create(ib, j0, jj);
            Value keyOk = arith::CmpIOp::create(ib, P::ult, key, jEnd);
            key = arith::SelectOp::create(
                ib, keyOk, key, arith::ConstantIndexOp::create(ib, 0));
            for (Value d : vCols)
              vj.push_back(memref::LoadOp::create(
                  ib, v, ValueRange{key, batchIdx, head, d}));
          }
          SmallVector<Value> updated;
          for (int64_t t = 0; t < rows; ++t) {
            Value pj = gpu::ShuffleOp::create(ib, probabilities[t], jj32, width,
                                              gpu::ShuffleMode::IDX)
                           .getShuffleResult();
            for (int64_t c = 0; c < s.colsPerLane(); ++c) {
              updated.push_back(math::FmaOp::create(
                  ib, pj, vj[c], o[t * s.colsPerLane() + c]));
            }
          }
          scf::YieldOp::create(ib, updated);
        });
    pv->setAttr("loop_annotation", unrollAttr());
    // The loop state is per row: m, l, then the row's output columns.
    SmallVector<Value> interleaved;
    for (int64_t t = 0; t < rows; ++t) {
      interleaved.push_back(next[2 * t]);
      interleaved.push_back(next[2 * t + 1]);
      for (int64_t c = 0; c < s.colsPerLane(); ++c)
        interleaved.push_back(pv.getResult(t * s.colsPerLane() + c));
    }
    next = std::move(interleaved);
    scf::YieldOp::create(b, next);
  }

  // out[i, batch, head, :] = o / l for the rows of this subgroup; with
  // lse, lane 0 writes lse[batch, head, i] = m + log l. A grid of several
  // key parts writes both, lse always, to the part's slice of the
  // workspace instead (part_out[part, i, batch, head, :], part_lse[part,
  // batch, head, i]), for rel_attention_combine; a part without visible
  // keys writes l = 0: o / l NaN, lse -inf.
  Value split = cmp(P::ugt, parts, one);
  for (int64_t t = 0; t < s.rowsPerWarp(); ++t) {
    Value i = add(i0, add(rowBase, idx(t)));
    Value m = keyLoop.getResult(t * perRow);
    Value l = keyLoop.getResult(t * perRow + 1);
    auto ifRow = scf::IfOp::create(b, cmp(P::ult, i, qlen), false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifRow.thenBlock());
    auto ifSplit = scf::IfOp::create(b, split, /*withElseRegion=*/true);
    // The row's stores into `o` at [prefix..., i, batch, head, d] and, when
    // `lseBuffer`, into it at [prefix..., batch, head, i].
    auto storeRow = [&](Block *block, Value o, Value lseBuffer,
                        ValueRange prefix) {
      OpBuilder::InsertionGuard blockGuard(b);
      b.setInsertionPoint(block->getTerminator());
      auto at = [&](std::initializer_list<Value> rest) {
        SmallVector<Value, 5> indices(prefix);
        indices.append(rest);
        return indices;
      };
      if (lseBuffer) {
        auto ifFirst = scf::IfOp::create(b, cmp(P::eq, lane, zero), false);
        OpBuilder::InsertionGuard lseGuard(b);
        b.setInsertionPointToStart(ifFirst.thenBlock());
        memref::StoreOp::create(
            b, arith::AddFOp::create(b, m, math::LogOp::create(b, l)),
            lseBuffer, at({batchIdx, head, i}));
      }
      for (int64_t c = 0; c < s.colsPerLane(); ++c) {
        Value d = add(lane, idx(c * kSubgroup));
        auto ifCol = scf::IfOp::create(b, cmp(P::ult, d, idx(s.dHead)), false);
        OpBuilder::InsertionGuard colGuard(b);
        b.setInsertionPointToStart(ifCol.thenBlock());
        Value value =
            arith::DivFOp::create(b, keyLoop.getResult(t * perRow + 2 + c), l);
        memref::StoreOp::create(b, value, o, at({i, batchIdx, head, d}));
      }
    };
    storeRow(ifSplit.thenBlock(), partOut, partLse, ValueRange{part});
    storeRow(ifSplit.elseBlock(), out, lseOut, ValueRange{});
  }
  gpu::ReturnOp::create(b);
}

/// The f32 kernel for `shape` in `module`'s @txl_kernels, both created on
/// first use: one kernel per d_head.
AttentionKernel getOrCreateKernel(ModuleOp module, const KernelShape &shape) {
  int64_t threads = kWarps * kSubgroup;
  AttentionKernel kernel{nullptr, shape.queryTile, threads, shape.resident()};
  std::string name =
      std::string(shape.dropatt ? "rel_attention_dropatt_" : "rel_attention_") +
      (shape.lse ? "lse_d" : "d") + std::to_string(shape.dHead);
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  if ((kernel.func = kernels.lookupSymbol<gpu::GPUFuncOp>(name)))
    return kernel;
  MLIRContext *ctx = kernels.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  SmallVector<Type> tiles = {tileType(ctx, shape.queryTile, shape),
                             tileType(ctx, shape.queryTile, shape),
                             tileType(ctx, kKeyTile, shape),
                             tileType(ctx, shape.posRows(), shape)};
  if (shape.stageV)
    tiles.push_back(tileType(ctx, kKeyTile, shape));
  auto func = gpu::GPUFuncOp::create(
      b, kernels.getLoc(), name,
      attentionKernelType(ctx, shape.dHead,
                          /*unitInnerStride=*/false, shape.dropatt, shape.lse,
                          /*keyParts=*/true),
      tiles);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({int32_t(kernel.threads), 1, 1}));
  // CUDA: at most kMaxRegisters per work-item, so that 4 workgroups fit on
  // an SM (65536 registers); without a bound ptxas caps d_head 64 at 96
  // registers and spills.
  func->setAttr("nvvm.maxnreg", b.getI32IntegerAttr(kMaxRegisters));
  KernelBuilder(func, shape).build();
  kernel.func = func;
  return kernel;
}

/// Work-items per workgroup of rel_attention_combine.
constexpr int64_t kCombineThreads = 128;

/// Builds rel_attention_combine[_lse]: one work-item per element (i, batch,
/// head, d) of the output. With the parts' log-sum-exps λ_z of the row and
/// M = max_z λ_z, w_z = exp(λ_z - M) (0 for a part without keys, λ_z =
/// -inf):
///   out[i, batch, head, d] = Σ_z w_z part_out[z, i, batch, head, d] / Σ_z w_z
/// (each part's output is normalized by its own sum l_z, and w_z ∝ l_z
/// e^{m_z}); with lse, the work-item of d = 0 writes lse[batch, head, i] =
/// M + log Σ_z w_z, the row's log-sum-exp over all its keys.
class CombineBuilder : public KernelBodyBuilder {
public:
  CombineBuilder(gpu::GPUFuncOp func, bool lse)
      : KernelBodyBuilder(func), func(func), lse(lse) {}

  void build() {
    using P = arith::CmpIPredicate;
    Block &entry = func.getBody().front();
    b.setInsertionPointToStart(&entry);
    Value partOut = entry.getArgument(0), partLse = entry.getArgument(1),
          out = entry.getArgument(2);
    Value lseOut = lse ? entry.getArgument(3) : Value();
    Value zero = idx(0), one = idx(1);
    auto dim = [&](Value memref, int64_t d) -> Value {
      return memref::DimOp::create(b, memref, d);
    };
    Value parts = dim(partOut, 0), qlen = dim(out, 0), batch = dim(out, 1),
          nHead = dim(out, 2), dHead = dim(out, 3);
    Value e = add(
        mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(kCombineThreads)),
        gpu::ThreadIdOp::create(b, gpu::Dimension::x));
    Value total = mul(mul(mul(qlen, batch), nHead), dHead);
    auto ifInside = scf::IfOp::create(b, cmp(P::ult, e, total), false);
    b.setInsertionPointToStart(ifInside.thenBlock());
    // e = ((i · batch + batchIdx) · n_head + head) · d_head + d.
    auto div = [&](Value x, Value n) -> Value {
      return arith::DivUIOp::create(b, x, n);
    };
    auto rem = [&](Value x, Value n) -> Value {
      return arith::RemUIOp::create(b, x, n);
    };
    Value d = rem(e, dHead), row = div(e, dHead);
    Value head = rem(row, nHead), rowColumn = div(row, nHead);
    Value batchIdx = rem(rowColumn, batch), i = div(rowColumn, batch);

    auto partLseAt = [&](OpBuilder &nb, Location loc, Value z) -> Value {
      return memref::LoadOp::create(nb, loc, partLse,
                                    ValueRange{z, batchIdx, head, i});
    };
    auto maxLoop = scf::ForOp::create(
        b, zero, parts, one, ValueRange{negInf()},
        [&](OpBuilder &nb, Location loc, Value z, ValueRange acc) {
          Value m =
              arith::MaximumFOp::create(nb, loc, acc[0], partLseAt(nb, loc, z));
          scf::YieldOp::create(nb, loc, m);
        });
    Value maxLse = maxLoop.getResult(0);
    Value fzero = f32(0.0), ninf = negInf();
    auto sumLoop = scf::ForOp::create(
        b, zero, parts, one, ValueRange{fzero, fzero},
        [&](OpBuilder &nb, Location loc, Value z, ValueRange acc) {
          ImplicitLocOpBuilder ib(loc, nb);
          Value lz = partLseAt(nb, loc, z);
          Value empty =
              arith::CmpFOp::create(ib, arith::CmpFPredicate::OEQ, lz, ninf);
          Value w = arith::SelectOp::create(
              ib, empty, fzero,
              math::ExpOp::create(ib, arith::SubFOp::create(ib, lz, maxLse)));
          Value o = memref::LoadOp::create(ib, partOut,
                                           ValueRange{z, i, batchIdx, head, d});
          // An empty part's output is NaN (0 / 0): taken as 0, not w · o.
          Value wo = arith::SelectOp::create(ib, empty, fzero,
                                             arith::MulFOp::create(ib, w, o));
          scf::YieldOp::create(
              ib, ValueRange{arith::AddFOp::create(ib, acc[0], w),
                             arith::AddFOp::create(ib, acc[1], wo)});
        });
    Value weights = sumLoop.getResult(0);
    memref::StoreOp::create(
        b, arith::DivFOp::create(b, sumLoop.getResult(1), weights), out,
        ValueRange{i, batchIdx, head, d});
    if (lseOut) {
      auto ifFirst = scf::IfOp::create(b, cmp(P::eq, d, zero), false);
      b.setInsertionPointToStart(ifFirst.thenBlock());
      memref::StoreOp::create(
          b, arith::AddFOp::create(b, maxLse, math::LogOp::create(b, weights)),
          lseOut, ValueRange{batchIdx, head, i});
    }
    b.setInsertionPointToEnd(&entry);
    gpu::ReturnOp::create(b);
  }

private:
  gpu::GPUFuncOp func;
  bool lse;
};

/// rel_attention_combine (or, with `lse`, rel_attention_combine_lse) in
/// `module`'s @txl_kernels, created on first use: (part_out [parts, qlen,
/// batch, n_head, d_head], part_lse [parts, batch, n_head, qlen], out
/// [qlen, batch, n_head, d_head] of any strides, and with lse the rows'
/// log-sum-exp [batch, n_head, qlen]), one kernel for every d_head;
/// launched over ceil(qlen · batch · n_head · d_head / 128) workgroups of
/// 128 work-items.
gpu::GPUFuncOp getOrCreateCombineKernel(ModuleOp module, bool lse) {
  std::string name =
      lse ? "rel_attention_combine_lse" : "rel_attention_combine";
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  if (auto func = kernels.lookupSymbol<gpu::GPUFuncOp>(name))
    return func;
  MLIRContext *ctx = kernels.getContext();
  SmallVector<Type> inputs = {
      partOutputType(ctx, ShapedType::kDynamic), partLseType(ctx),
      attentionOperandType(ctx, 4, ShapedType::kDynamic)};
  if (lse)
    inputs.push_back(rowStatsType(ctx));
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  auto func = gpu::GPUFuncOp::create(b, kernels.getLoc(), name,
                                     FunctionType::get(ctx, inputs, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({int32_t(kCombineThreads), 1, 1}));
  CombineBuilder(func, lse).build();
  return func;
}

// txl.rel_attention (f32) => bufferization.to_buffer of the operands,
// memref.alloc of the output, the launch of the kernel (f32, or the
// tensor-core one with mmaOperandType) over its key parts, the combine when
// there are several, to_tensor. With dropatt, the kernel's dropatt form
// draws the masks (rel_attention[_bf16|_f16]_dropatt_d<d_head>).
struct RelAttentionToLaunch : public OpRewritePattern<RelAttentionOp> {
  RelAttentionToLaunch(MLIRContext *ctx, ModuleOp module,
                       FloatType mmaOperandType, int64_t keyParts,
                       int64_t xChains, int64_t rowBlock)
      : OpRewritePattern(ctx), module(module), mmaOperandType(mmaOperandType),
        keyParts(keyParts), xChains(xChains), rowBlock(rowBlock) {}

  LogicalResult matchAndRewrite(RelAttentionOp op,
                                PatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getResult().getType());
    if (!resultType.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "only f32 has a GPU kernel");
    Value lse = op.getLse();
    bool mma = static_cast<bool>(mmaOperandType);
    int64_t dHead = resultType.getDimSize(3);
    if (ShapedType::isDynamic(dHead))
      return rewriter.notifyMatchFailure(op, "d_head must be static");
    bool dropatt = op.getDropattSeed() != nullptr;
    AttentionKernel kernel;
    if (mma) {
      kernel = getOrCreateMmaAttentionKernel(module, dHead, mmaOperandType,
                                             dropatt, !!lse, xChains);
    } else {
      std::optional<KernelShape> shape = chooseShape(dHead, dropatt, !!lse);
      if (!shape)
        return rewriter.notifyMatchFailure(op, "d_head too wide for one tile");
      // By default all of a subgroup's rows, or 2 with 16-byte reads (4
      // rows' reads in flight take more than kMaxRegisters: ptxas spills).
      int64_t block = rowBlock > 0          ? rowBlock
                      : shape->vectorized() ? 2
                                            : shape->rowsPerWarp();
      shape->rowBlock = std::min(block, shape->rowsPerWarp());
      kernel = getOrCreateKernel(module, *shape);
    }

    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    // The kernels index key, value, pos_key and the biases by the query's
    // sizes and klen: dynamic sizes are checked before the launch.
    assertEqualSizes(b, b.getLoc(), op,
                     relAttentionSizeEqualities(
                         op.getQuery(), op.getKey(), op.getValue(),
                         op.getPosKey(), op.getRWBias(), op.getRRBias()));
    rewriter.replaceOp(op, launch(b, op, kernel, dropatt));
    return success();
  }

  /// One launch of `kernel` for `op` at `b` (with dropatt's arguments when
  /// `dropatt`); returns the output (and the lse) as tensors.
  SmallVector<Value> launch(ImplicitLocOpBuilder &b, RelAttentionOp op,
                            AttentionKernel kernel, bool dropatt) const {
    auto resultType = cast<RankedTensorType>(op.getResult().getType());
    Value lse = op.getLse();
    // Operand n as the kernel's argument n takes it; static dimensions stay
    // static in the view.
    auto toBuffer = [&](Value tensor, unsigned n) -> Value {
      return toKernelBuffer(
          b, tensor, cast<MemRefType>(kernel.func.getArgumentTypes()[n]));
    };
    Value q = op.getQuery();
    SmallVector<Value> dynamicDims;
    for (int64_t dim = 0; dim < 3; ++dim)
      if (resultType.isDynamicDim(dim))
        dynamicDims.push_back(tensor::DimOp::create(b, q, dim));
    auto outType =
        MemRefType::get(resultType.getShape(), resultType.getElementType());
    Value out = memref::AllocOp::create(b, outType, dynamicDims);

    Value qlen = tensor::DimOp::create(b, q, 0);
    Value batch = tensor::DimOp::create(b, q, 1);
    Value nHead = tensor::DimOp::create(b, q, 2);
    Value c1 = arith::ConstantIndexOp::create(b, 1);
    Value gridX = arith::CeilDivUIOp::create(
        b, qlen, arith::ConstantIndexOp::create(b, kernel.queryTile));
    Value gridY = arith::MulIOp::create(b, batch, nHead);
    Value threads = arith::ConstantIndexOp::create(b, kernel.threads);
    Value same = arith::ExtUIOp::create(b, b.getI32Type(), op.getSameLength());
    Value scale =
        arith::ConstantFloatOp::create(b, b.getF32Type(), op.getScale());
    SmallVector<Value> args = {
        toBuffer(q, 0),
        Value(),
        Value(),
        Value(),
        toBuffer(op.getRWBias(), 4),
        toBuffer(op.getRRBias(), 5),
        memref::CastOp::create(b, kernel.func.getArgumentTypes()[6], out),
        op.getMemLen(),
        same,
        scale};
    if (kernel.packed) {
      // key, value and pos_key packed first (rounded, value transposed,
      // klen padded to the key tile), then passed with klen.
      Value klen = tensor::DimOp::create(b, op.getKey(), 0);
      std::array<Value, 3> packed = pack(b, op, klen, batch, nHead);
      std::copy(packed.begin(), packed.end(), args.begin() + 1);
      args.insert(args.begin() + 7, klen);
    } else {
      args[1] = toBuffer(op.getKey(), 1);
      args[2] = toBuffer(op.getValue(), 2);
      args[3] = toBuffer(op.getPosKey(), 3);
    }
    if (dropatt)
      llvm::append_range(
          args, dropattLaunchArguments(
                    b, op.getDropattSeed(), op.getDropattOffset(),
                    op.getDropattTraining(), op.getDropattStreamBase(),
                    op.getDropattColumn(), op.getDropatt()->convertToDouble(),
                    *op.getDropattStream()));
    Value lseBuffer, lseArgument;
    if (lse) {
      auto lseType = cast<RankedTensorType>(lse.getType());
      SmallVector<Value> lseDims;
      SmallVector<Value, 3> sizes = {batch, nHead, qlen};
      for (auto [dim, size] : llvm::enumerate(sizes))
        if (lseType.isDynamicDim(dim))
          lseDims.push_back(size);
      lseBuffer = memref::AllocOp::create(
          b, MemRefType::get(lseType.getShape(), lseType.getElementType()),
          lseDims);
      lseArgument =
          memref::CastOp::create(b, rowStatsType(getContext()), lseBuffer);
      args.push_back(lseArgument);
    }
    {
      // The keys in `parts` parts (grid z), each part's output and lse in a
      // workspace of `parts` slices (none when 1: the kernel writes out and
      // lse itself), then rel_attention_combine.
      Value parts = keyPartsFor(b, kernel, gridX, gridY,
                                tensor::DimOp::create(b, op.getKey(), 0));
      Value split =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, parts, c1);
      Value slices = arith::SelectOp::create(
          b, split, parts, arith::ConstantIndexOp::create(b, 0));
      MLIRContext *ctx = getContext();
      int64_t dHead = resultType.getDimSize(3);
      Value partOut = memref::AllocOp::create(
          b,
          MemRefType::get(partOutputType(ctx, dHead).getShape(),
                          b.getF32Type()),
          ValueRange{slices, qlen, batch, nHead});
      Value partLse = memref::AllocOp::create(
          b, partLseType(ctx), ValueRange{slices, batch, nHead, qlen});
      args.push_back(partOut);
      args.push_back(partLse);
      gpu::LaunchFuncOp::create(b, kernel.func,
                                gpu::KernelDim3{gridX, gridY, parts},
                                gpu::KernelDim3{threads, c1, c1},
                                /*dynamicSharedMemorySize=*/Value(), args);
      // A number of parts known here (the key-parts option) needs no test.
      if (keyParts == 1)
        return toTensors(b, op, out, lseBuffer);
      OpBuilder::InsertionGuard guard(b);
      if (keyParts == 0) {
        auto ifSplit = scf::IfOp::create(b, split, /*withElseRegion=*/false);
        b.setInsertionPointToStart(ifSplit.thenBlock());
      }
      gpu::GPUFuncOp combine = getOrCreateCombineKernel(module, !!lse);
      SmallVector<Value> combineArgs = {
          memref::CastOp::create(b, combine.getArgumentTypes()[0], partOut),
          partLse,
          memref::CastOp::create(b, combine.getArgumentTypes()[2], out)};
      if (lse)
        combineArgs.push_back(lseArgument);
      Value elements = arith::MulIOp::create(
          b,
          arith::MulIOp::create(b, arith::MulIOp::create(b, qlen, batch),
                                nHead),
          arith::ConstantIndexOp::create(b, dHead));
      Value combineThreads = arith::ConstantIndexOp::create(b, kCombineThreads);
      gpu::LaunchFuncOp::create(
          b, combine,
          gpu::KernelDim3{
              arith::CeilDivUIOp::create(b, elements, combineThreads), c1, c1},
          gpu::KernelDim3{combineThreads, c1, c1},
          /*dynamicSharedMemorySize=*/Value(), combineArgs);
    }
    return toTensors(b, op, out, lseBuffer);
  }

  /// The launch of rel_attention_pack_<bf16|f16>_d<d_head> for `op`'s key,
  /// value and pos_key (klen rows, `batch` × `nHead` heads) at `b`: the
  /// packed buffers, klen padded to kMmaPackKeys and one key tile more
  /// (getOrCreateMmaPackKernel).
  std::array<Value, 3> pack(ImplicitLocOpBuilder &b, RelAttentionOp op,
                            Value klen, Value batch, Value nHead) const {
    int64_t dHead =
        cast<RankedTensorType>(op.getResult().getType()).getDimSize(3);
    gpu::GPUFuncOp kernel =
        getOrCreateMmaPackKernel(module, dHead, mmaOperandType);
    TypeRange types = kernel.getArgumentTypes();
    Value keyTile = arith::ConstantIndexOp::create(b, kMmaPackKeys);
    Value tiles =
        arith::AddIOp::create(b, arith::CeilDivUIOp::create(b, klen, keyTile),
                              arith::ConstantIndexOp::create(b, 1));
    Value klenPad = arith::MulIOp::create(b, tiles, keyTile);
    std::array<Value, 3> packed = {
        memref::AllocOp::create(b, cast<MemRefType>(types[3]),
                                ValueRange{batch, nHead, tiles}),
        memref::AllocOp::create(b, cast<MemRefType>(types[4]),
                                ValueRange{batch, nHead, tiles}),
        memref::AllocOp::create(b, cast<MemRefType>(types[5]),
                                ValueRange{nHead, klenPad})};
    SmallVector<Value> args = {
        toKernelBuffer(b, op.getKey(), cast<MemRefType>(types[0])),
        toKernelBuffer(b, op.getValue(), cast<MemRefType>(types[1])),
        toKernelBuffer(b, op.getPosKey(), cast<MemRefType>(types[2]))};
    llvm::append_range(args, packed);
    Value c1 = arith::ConstantIndexOp::create(b, 1);
    gpu::LaunchFuncOp::create(
        b, kernel,
        gpu::KernelDim3{tiles, arith::MulIOp::create(b, batch, nHead), c1},
        gpu::KernelDim3{
            arith::ConstantIndexOp::create(b, (*kernel.getKnownBlockSize())[0]),
            c1, c1},
        /*dynamicSharedMemorySize=*/Value(), args);
    return packed;
  }

  /// The op's results from the buffers the kernels wrote: the output and,
  /// when the op has one, the lse.
  static SmallVector<Value> toTensors(ImplicitLocOpBuilder &b,
                                      RelAttentionOp op, Value out,
                                      Value lseBuffer) {
    auto toTensor = [&](Type type, Value buffer) -> Value {
      return bufferization::ToTensorOp::create(b, type, buffer,
                                               /*restrict=*/b.getUnitAttr(),
                                               /*writable=*/b.getUnitAttr());
    };
    SmallVector<Value> results = {toTensor(op.getResult().getType(), out)};
    if (Value lse = op.getLse())
      results.push_back(toTensor(lse.getType(), lseBuffer));
    return results;
  }

  /// The number of key parts of a launch of `kernel` over gridX × gridY
  /// workgroups with `klen` keys: the pass's key-parts option when set,
  /// else what the runtime chooses for the device
  /// (txl_device_attention_parts).
  Value keyPartsFor(ImplicitLocOpBuilder &b, const AttentionKernel &kernel,
                    Value gridX, Value gridY, Value klen) const {
    if (keyParts > 0)
      return arith::ConstantIndexOp::create(b, keyParts);
    auto i64 = [&](Value index) -> Value {
      return arith::IndexCastOp::create(b, b.getI64Type(), index);
    };
    Value keyTiles = arith::CeilDivUIOp::create(
        b, klen, arith::ConstantIndexOp::create(b, kKeyTile));
    Value workgroups = arith::MulIOp::create(b, gridX, gridY);
    func::FuncOp chooser = getOrDeclareAttentionParts(b.getContext());
    Value parts =
        func::CallOp::create(b, chooser,
                             ValueRange{i64(workgroups),
                                        arith::ConstantIntOp::create(
                                            b, kernel.residentWorkgroups, 64),
                                        i64(keyTiles)})
            .getResult(0);
    return arith::IndexCastOp::create(b, b.getIndexType(), parts);
  }

  /// `int64_t txl_device_attention_parts(int64_t workgroups, int64_t
  /// resident, int64_t key_tiles)` of the runtime (txl/device.h), declared
  /// in the module on first use.
  func::FuncOp getOrDeclareAttentionParts(MLIRContext *ctx) const {
    constexpr llvm::StringLiteral name = "txl_device_attention_parts";
    ModuleOp module = this->module;
    if (auto found = module.lookupSymbol<func::FuncOp>(name))
      return found;
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    Type i64 = b.getI64Type();
    auto decl = func::FuncOp::create(b, module.getLoc(), name,
                                     b.getFunctionType({i64, i64, i64}, {i64}));
    decl.setPrivate();
    return decl;
  }

  ModuleOp module;
  /// bf16 or f16: the tensor-core kernel with these operands instead of
  /// the f32 one; null: the f32 kernel.
  FloatType mmaOperandType;
  /// The key-parts option: 0, chosen at run time; N >= 1, always N.
  int64_t keyParts = 0;
  /// The x-chains option (getOrCreateMmaAttentionKernel): 0, per kernel.
  int64_t xChains = 0;
  /// The row-block option (KernelShape::rowBlock): 0, chosen per kernel.
  int64_t rowBlock = 0;
};

struct ConvertRelAttentionToGpuPass
    : public txl::impl::ConvertRelAttentionToGpuPassBase<
          ConvertRelAttentionToGpuPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    RewritePatternSet patterns(&getContext());
    FloatType mmaOperandType;
    if (precision == Precision::Bf16)
      mmaOperandType = BFloat16Type::get(&getContext());
    else if (precision == Precision::Fp16)
      mmaOperandType = Float16Type::get(&getContext());
    if (keyParts < 0) {
      module.emitError("key-parts must be 0 (chosen at run time) or a "
                       "number of parts, not ")
          << static_cast<int64_t>(keyParts);
      return signalPassFailure();
    }
    if (xChains < 0 || (xChains > 0 && kMmaXBlocks % xChains != 0)) {
      module.emitError("x-chains must be 0 (chosen per kernel) or divide "
                       "the positional term's ")
          << kMmaXBlocks << " blocks (1, 2, 3 or 6), not "
          << static_cast<int64_t>(xChains);
      return signalPassFailure();
    }
    if (rowBlock < 0) {
      module.emitError("row-block must be 0 (chosen per kernel) or a number "
                       "of rows, not ")
          << static_cast<int64_t>(rowBlock);
      return signalPassFailure();
    }
    patterns.add<RelAttentionToLaunch>(&getContext(), module, mmaOperandType,
                                       keyParts, xChains, rowBlock);
    populateRelAttentionGradToGpuPatterns(patterns, module, mmaOperandType);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
