//===- RelAttentionGradToGpu.cpp - txl.rel_attention_grad as GPU kernels --===//
//
// The GPU form of the fused relative attention's backward (the adjoint of
// paper §3.3's attention, flash-attention-2 style): the probabilities are
// recomputed tile by tile from q, k, r, the biases and each query row's
// log-sum-exp, and neither the qlen × klen scores, the probabilities nor
// their gradients reach global memory. With
//   s_ij = scale ((q_i + u) · k_j + (q_i + v) · r[qlen - 1 - i + j]),
//   P = softmax_j(s) under the decoder mask, dP_ij = dO_i · v_j,
//   D_i = dO_i · O_i = sum_j P_ij dP_ij, dS_ij = scale P_ij (dP_ij - D_i),
// the gradients are three reductions over different index sets:
//   d(q_i + u) = sum_j dS_ij k_j and d(q_i + v) = sum_j dS_ij r_{i,j}
//     (over keys: one workgroup per query tile, kernel `_q`);
//   dk_j = sum_i dS_ij (q_i + u), dv_j = sum_i P_ij dO_i
//     (over queries: one workgroup per key tile, kernel `_kv`);
//   dr_m = sum_{b, i} dS_{i, m - qlen + 1 + i} (q_i + v)
//     (over a diagonal and the batch: one workgroup per tile of r rows and
//     head, kernel `_r`).
// Each output element is owned by one work-item that sums its terms in a
// fixed order, so there are no atomics and two runs give bit-equal
// gradients. `_q` runs first and writes each row's log-sum-exp and D_i
// ([batch, n_head, qlen] floats each) for `_kv` and `_r`: from the
// forward's saved lse and output O when the op has them (`_q_saved`, see
// txl-save-attention-stats), else from an online-softmax pass over the
// keys (the forward's, recomputing O); a second pass accumulates d(q + u)
// and d(q + v). u's and v's gradients are the
// sums of those over positions and batch (txl.sum_leading), q's their sum.
// With dropatt, each pair's multiplier M_ij (0 or 1 / (1 - rate), from the
// Philox counter the CPU lowering gives the same probability) scales P_ij
// in O and dv and dP_ij in dS; the softmax statistics stay undropped.
//
// Layout, as in the forward kernel: workgroups of 4 subgroups of 32
// work-items; the workgroup owns `rowTile` rows (queries, keys or r rows),
// each subgroup rowTile / 4 of them, and walks the other side in tiles of
// 32, lane l taking its element l. Each work-item of a subgroup owns
// output columns l, l + 32, ...; the terms are broadcast across the lanes
// with gpu.shuffle. Tiles live in workgroup memory (rows padded to
// d_head + 1), with the window of r (or k) rows the pair of tiles reads.
//
//===----------------------------------------------------------------------===//

#include "RelAttention.h"
#include "txl/Conversion/KernelModule.h"
#include "txl/Conversion/SizeChecks.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::txl;

namespace {

constexpr int64_t kSubgroup = kSubgroupSize;
/// Subgroups per workgroup.
constexpr int64_t kWarps = 4;
constexpr int64_t kThreads = kWarps * kSubgroup;
/// Rows of the side the lanes walk: one per lane.
constexpr int64_t kLaneTile = kSubgroup;
/// Workgroup memory per workgroup: CUDA's static limit, which every shape
/// that fits keeps.
constexpr int64_t kWorkgroupBytes = 48 * 1024;
/// Workgroup memory of the shapes that do not fit 48 KiB (d_head 128): on
/// CUDA, dynamic shared memory (txl-dynamic-shared-memory); 80 KiB keeps
/// two workgroups per SM on sm_80 (164 KB) and fits the 99 KiB opt-in
/// limit of sm_86, sm_89 and sm_120.
constexpr int64_t kWideWorkgroupBytes = 80 * 1024;
/// Registers per work-item on CUDA (PTX .maxnreg): 4 workgroups per SM.
constexpr int32_t kMaxRegisters = 128;

/// Which gradient a kernel computes (see the file comment).
enum class GradKind { Query, KeyValue, PosKey };

/// The static shape of one backward kernel.
struct GradShape {
  GradKind kind;
  int64_t dHead;
  /// Rows the workgroup owns: query rows (`_q`), key rows (`_kv`) or r rows
  /// (`_r`); a multiple of kWarps.
  int64_t rowTile;
  /// The kernel draws dropatt (its trailing Dropatt arguments).
  bool dropatt;
  /// `_q` reads the forward's lse and output instead of its first pass
  /// (txl.rel_attention_grad's saved group).
  bool saved = false;

  int64_t rowStride() const { return dHead + 1; }
  int64_t rowsPerWarp() const { return rowTile / kWarps; }
  /// Rows of r (`_q`, `_kv`) or of k (`_r`) that a pair of tiles reads.
  int64_t windowRows() const { return rowTile + kLaneTile - 1; }
  int64_t colsPerLane() const { return (dHead + kSubgroup - 1) / kSubgroup; }
  /// The rows of each workgroup tile, the owned tile first: `_q`: q + u,
  /// q + v, dO (rowTile), k (32), r window; `_kv`: k, v (rowTile), q + u,
  /// q + v, dO (32), r window; `_r`: r (rowTile), q + u, q + v, dO (32),
  /// k window.
  SmallVector<int64_t> tileRows() const {
    switch (kind) {
    case GradKind::Query:
      return {rowTile, rowTile, rowTile, kLaneTile, windowRows()};
    case GradKind::KeyValue:
      return {rowTile, rowTile, kLaneTile, kLaneTile, kLaneTile, windowRows()};
    case GradKind::PosKey:
      return {rowTile, kLaneTile, kLaneTile, kLaneTile, windowRows()};
    }
    llvm_unreachable("unknown kind");
  }
  int64_t workgroupBytes() const {
    int64_t rows = 0;
    for (int64_t r : tileRows())
      rows += r;
    return rows * rowStride() * 4;
  }
  StringRef suffix() const {
    switch (kind) {
    case GradKind::Query:
      return saved ? "q_saved" : "q";
    case GradKind::KeyValue:
      return "kv";
    case GradKind::PosKey:
      return "r";
    }
    llvm_unreachable("unknown kind");
  }
};

/// The widest row tile (16, 8 or 4) whose tiles fit in kWorkgroupBytes,
/// else the widest that fits in kWideWorkgroupBytes.
std::optional<GradShape> chooseShape(GradKind kind, int64_t dHead, bool dropatt,
                                     bool saved) {
  for (int64_t limit : {kWorkgroupBytes, kWideWorkgroupBytes})
    for (int64_t rowTile : {16, 8, 4}) {
      GradShape shape{kind, dHead, rowTile, dropatt,
                      saved && kind == GradKind::Query};
      if (shape.workgroupBytes() <= limit)
        return shape;
    }
  return std::nullopt;
}

/// Builds one backward kernel's body. Arguments (all three kernels): dO, q,
/// k, v [len, batch, n_head, d_head], r [klen, n_head, d_head], u, v_bias
/// [n_head, d_head], lse, delta [batch, n_head, qlen], in `_q_saved` the
/// forward's output O [qlen, batch, n_head, d_head], then the outputs
/// (`_q`: d(q + u), d(q + v) [qlen, batch, n_head, d_head]; `_kv`: dk, dv
/// [klen, batch, n_head, d_head]; `_r`: dr [klen, n_head, d_head]), mem_len
/// (index), same_length (i32), scale (f32), and in the dropatt forms the
/// six Dropatt arguments. `_q` writes lse and delta, `_q_saved` reads lse
/// and writes delta; the others read them.
class GradKernelBuilder : public KernelBodyBuilder {
public:
  GradKernelBuilder(gpu::GPUFuncOp func, const GradShape &shape)
      : KernelBodyBuilder(func), s(shape), func(func) {}

  void build();

private:
  void buildQuery();
  void buildKeyValue();
  void buildPosKey();

  /// Fills the [rows, d_head] workgroup tile `tile` with `load(row, col)`.
  void fillTile(Value tile, int64_t rows,
                function_ref<Value(Value row, Value col)> load) {
    forTileElements(tid, kThreads, rows, s.dHead, [&](Value row, Value col) {
      memref::StoreOp::create(b, load(row, col), tile, ValueRange{row, col});
    });
  }
  /// `mem[row, rest..., col]` if 0 <= row < limit (signed), else 0.
  Value loadRow(Value mem, Value row, Value limit, ValueRange rest, Value col) {
    using P = arith::CmpIPredicate;
    Value inRange = arith::AndIOp::create(b, cmp(P::sge, row, idx(0)),
                                          cmp(P::slt, row, limit));
    SmallVector<Value> indices = {select(inRange, row, idx(0))};
    llvm::append_range(indices, rest);
    indices.push_back(col);
    Value x = memref::LoadOp::create(b, mem, indices);
    return select(inRange, x, f32(0.0));
  }
  /// Fills q + u, q + v and dO tiles from query rows i0 + row of column
  /// (batchIdx, head); rows past qlen are zero (q + u then is u).
  void fillQueryTiles(Value quTile, Value qvTile, Value doTile, int64_t rows,
                      Value i0);
  /// `body(d)`'s values summed over d in [0, d_head): as many sums as
  /// `init` has values.
  SmallVector<Value> sumOverHead(
      ValueRange init,
      function_ref<SmallVector<Value>(ImplicitLocOpBuilder &, Value d)> terms);
  /// A row of a workgroup tile: (tile, row index).
  using TileRow = std::pair<Value, Value>;
  /// The pair's score scale ((q + u) · k + (q + v) · r) and, when `vAt` is
  /// given, dP = dO · v, each a sum over d_head of workgroup-tile rows (v
  /// at d: `vAt(d)`, a tile row or global memory).
  SmallVector<Value>
  scoreAndDp(TileRow qu, TileRow k, TileRow qv, TileRow r, TileRow dO,
             function_ref<Value(ImplicitLocOpBuilder &, Value d)> vAt);
  /// Row `row` of the global [len, batch, n_head, d_head] `mem` of this
  /// work-item's column, at d.
  auto globalRow(Value mem, Value row) {
    return [this, mem, row](ImplicitLocOpBuilder &ib, Value d) -> Value {
      return memref::LoadOp::create(ib, mem,
                                    ValueRange{row, batchIdx, head, d});
    };
  }
  /// Output columns of this lane: lane + 32 c, clamped to d_head - 1 (the
  /// stores check the bound).
  Value laneColumn(ImplicitLocOpBuilder &ib, int64_t c) {
    Value d = arith::AddIOp::create(
        ib, lane, arith::ConstantIndexOp::create(ib, c * kSubgroup));
    return arith::MinUIOp::create(
        ib, d, arith::ConstantIndexOp::create(ib, s.dHead - 1));
  }
  /// acc[t · colsPerLane + c] += sum over lanes jj of coeffs[t] (from lane
  /// jj) · source(t, jj, column c), jj in a fixed order.
  SmallVector<Value> accumulateOverLanes(
      ValueRange acc, ArrayRef<Value> coeffs,
      function_ref<Value(ImplicitLocOpBuilder &, unsigned t, Value jj, Value d)>
          source);
  /// Stores `values` (this lane's columns) at mem[row, rest..., d] when
  /// `rowOk`.
  void storeColumns(Value mem, Value row, ValueRange rest, Value rowOk,
                    ValueRange values);
  /// The probability of a pair, P = exp(score - lse) where visible, else
  /// 0; P through dropatt, P M (M = `mult`, or 1 when null); and dS =
  /// scale P (M dP - delta).
  struct PairGrad {
    Value p, pDropped, ds;
  };
  PairGrad probabilityAndGrad(Value score, Value visible, Value lse,
                              Value delta, Value dp, Value mult);
  /// The dropatt multiplier of pair (i, j) in column (batchIdx, head), or
  /// null without dropatt.
  Value dropattAt(Value i, Value j) {
    if (!s.dropatt)
      return nullptr;
    return dropattMultiplier(dropatt, qlen, klen, nHead, i, j, batchIdx, head);
  }

  GradShape s;
  gpu::GPUFuncOp func;
  // Set by build(): operands, sizes and the work-item's coordinates.
  Value dO, q, k, v, r, u, vb, lse, delta, memLen, sameLength, scale;
  /// The forward's output (`_q_saved` only).
  Value out;
  Value qlen, klen, nHead, batch, tid, warp, lane, rowBase;
  Value batchIdx, head, column;
  Dropatt dropatt{};
};

void GradKernelBuilder::fillQueryTiles(Value quTile, Value qvTile, Value doTile,
                                       int64_t rows, Value i0) {
  forTileElements(tid, kThreads, rows, s.dHead, [&](Value row, Value col) {
    Value i = add(i0, row);
    Value x = loadRow(q, i, qlen, ValueRange{batchIdx, head}, col);
    Value ub = memref::LoadOp::create(b, u, ValueRange{head, col});
    Value vbb = memref::LoadOp::create(b, vb, ValueRange{head, col});
    memref::StoreOp::create(b, arith::AddFOp::create(b, x, ub), quTile,
                            ValueRange{row, col});
    memref::StoreOp::create(b, arith::AddFOp::create(b, x, vbb), qvTile,
                            ValueRange{row, col});
    memref::StoreOp::create(
        b, loadRow(dO, i, qlen, ValueRange{batchIdx, head}, col), doTile,
        ValueRange{row, col});
  });
}

SmallVector<Value> GradKernelBuilder::sumOverHead(
    ValueRange init,
    function_ref<SmallVector<Value>(ImplicitLocOpBuilder &, Value)> terms) {
  auto loop = scf::ForOp::create(
      b, idx(0), idx(s.dHead), idx(1), init,
      [&](OpBuilder &nb, Location loc, Value d, ValueRange acc) {
        ImplicitLocOpBuilder ib(loc, nb);
        SmallVector<Value> next;
        for (auto [a, t] : llvm::zip_equal(acc, terms(ib, d)))
          next.push_back(arith::AddFOp::create(ib, a, t));
        scf::YieldOp::create(ib, next);
      });
  loop->setAttr("loop_annotation", unrollAttr());
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value> GradKernelBuilder::accumulateOverLanes(
    ValueRange acc, ArrayRef<Value> coeffs,
    function_ref<Value(ImplicitLocOpBuilder &, unsigned, Value, Value)>
        source) {
  auto loop = scf::ForOp::create(
      b, idx(0), idx(kSubgroup), idx(1), acc,
      [&](OpBuilder &nb, Location loc, Value jj, ValueRange a) {
        ImplicitLocOpBuilder ib(loc, nb);
        Value jj32 = arith::IndexCastOp::create(ib, ib.getI32Type(), jj);
        Value width = arith::ConstantIntOp::create(ib, kSubgroup, 32);
        SmallVector<Value> next;
        for (auto [t, coeff] : llvm::enumerate(coeffs)) {
          Value c = gpu::ShuffleOp::create(ib, coeff, jj32, width,
                                           gpu::ShuffleMode::IDX)
                        .getShuffleResult();
          for (int64_t col = 0; col < s.colsPerLane(); ++col) {
            Value x = source(ib, t, jj, laneColumn(ib, col));
            next.push_back(
                arith::AddFOp::create(ib, a[t * s.colsPerLane() + col],
                                      arith::MulFOp::create(ib, c, x)));
          }
        }
        scf::YieldOp::create(ib, next);
      });
  loop->setAttr("loop_annotation", unrollAttr());
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value> GradKernelBuilder::scoreAndDp(
    TileRow qu, TileRow k, TileRow qv, TileRow r, TileRow dO,
    function_ref<Value(ImplicitLocOpBuilder &, Value)> vAt) {
  SmallVector<Value> init = {f32(0.0)};
  if (vAt)
    init.push_back(f32(0.0));
  SmallVector<Value> sums =
      sumOverHead(init, [&](ImplicitLocOpBuilder &ib, Value d) {
        auto ld = [&](TileRow x) -> Value {
          return memref::LoadOp::create(ib, x.first, ValueRange{x.second, d});
        };
        SmallVector<Value> terms = {
            arith::AddFOp::create(ib, arith::MulFOp::create(ib, ld(qu), ld(k)),
                                  arith::MulFOp::create(ib, ld(qv), ld(r)))};
        if (vAt)
          terms.push_back(arith::MulFOp::create(ib, ld(dO), vAt(ib, d)));
        return terms;
      });
  sums[0] = arith::MulFOp::create(b, sums[0], scale);
  return sums;
}

void GradKernelBuilder::storeColumns(Value mem, Value row, ValueRange rest,
                                     Value rowOk, ValueRange values) {
  using P = arith::CmpIPredicate;
  auto ifRow = scf::IfOp::create(b, rowOk, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifRow.thenBlock());
  for (auto [c, value] : llvm::enumerate(values)) {
    Value d = add(lane, idx(c * kSubgroup));
    auto ifCol = scf::IfOp::create(b, cmp(P::ult, d, idx(s.dHead)), false);
    OpBuilder::InsertionGuard colGuard(b);
    b.setInsertionPointToStart(ifCol.thenBlock());
    SmallVector<Value> indices = {row};
    llvm::append_range(indices, rest);
    indices.push_back(d);
    memref::StoreOp::create(b, value, mem, indices);
  }
}

GradKernelBuilder::PairGrad
GradKernelBuilder::probabilityAndGrad(Value score, Value visible, Value lseI,
                                      Value deltaI, Value dp, Value mult) {
  Value p = select(
      visible, math::ExpOp::create(b, arith::SubFOp::create(b, score, lseI)),
      f32(0.0));
  Value pDropped = p;
  if (mult) {
    pDropped = arith::MulFOp::create(b, p, mult);
    dp = arith::MulFOp::create(b, dp, mult);
  }
  Value ds = arith::MulFOp::create(
      b, arith::MulFOp::create(b, p, arith::SubFOp::create(b, dp, deltaI)),
      scale);
  return {p, pDropped, ds};
}

void GradKernelBuilder::build() {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  dO = entry.getArgument(0);
  q = entry.getArgument(1);
  k = entry.getArgument(2);
  v = entry.getArgument(3);
  r = entry.getArgument(4);
  u = entry.getArgument(5);
  vb = entry.getArgument(6);
  lse = entry.getArgument(7);
  delta = entry.getArgument(8);
  if (s.saved)
    out = entry.getArgument(9);
  unsigned tail = func.getFunctionType().getNumInputs() - 3;
  if (s.dropatt) {
    tail -= 6;
    dropatt = {entry.getArgument(tail + 3), entry.getArgument(tail + 4),
               entry.getArgument(tail + 5), entry.getArgument(tail + 6),
               entry.getArgument(tail + 7), entry.getArgument(tail + 8)};
  }
  memLen = entry.getArgument(tail);
  sameLength = entry.getArgument(tail + 1);
  scale = entry.getArgument(tail + 2);

  qlen = memref::DimOp::create(b, q, 0);
  batch = memref::DimOp::create(b, q, 1);
  nHead = memref::DimOp::create(b, q, 2);
  klen = memref::DimOp::create(b, k, 0);
  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  warp = arith::DivUIOp::create(b, tid, idx(kSubgroup));
  lane = gpu::LaneIdOp::create(b, /*upper_bound=*/IntegerAttr());
  rowBase = mul(warp, idx(s.rowsPerWarp()));
  if (s.kind != GradKind::PosKey) {
    column = gpu::BlockIdOp::create(b, gpu::Dimension::y);
    batchIdx = arith::DivUIOp::create(b, column, nHead);
    head = arith::RemUIOp::create(b, column, nHead);
  } else {
    head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  }
  switch (s.kind) {
  case GradKind::Query:
    buildQuery();
    break;
  case GradKind::KeyValue:
    buildKeyValue();
    break;
  case GradKind::PosKey:
    buildPosKey();
    break;
  }
  gpu::ReturnOp::create(b);
}

void GradKernelBuilder::buildQuery() {
  using P = arith::CmpIPredicate;
  ArrayRef<BlockArgument> tiles = func.getWorkgroupAttributions();
  Value quTile = tiles[0], qvTile = tiles[1], doTile = tiles[2],
        kTile = tiles[3], rTile = tiles[4];
  unsigned firstOutput = s.saved ? 10 : 9;
  Value dqu = func.getArgument(firstOutput),
        dqv = func.getArgument(firstOutput + 1);
  Value i0 = mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(s.rowTile));
  DecoderMask mask = decoderMask(qlen, klen, memLen, sameLength, i0, s.rowTile);
  fillQueryTiles(quTile, qvTile, doTile, s.rowTile, i0);
  int64_t cols = s.colsPerLane();

  // The key loop of both passes: `step(j0, state)` after the k tile and
  // the r window of key tile j0 are loaded (rows of r qlen - 1 - i + j for
  // the tile's pairs: window row w is r row rBase + w).
  auto keyLoop = [&](ValueRange init,
                     function_ref<SmallVector<Value>(Value, ValueRange)> step) {
    auto loop =
        scf::ForOp::create(b, mask.jBegin, mask.jEnd, idx(kLaneTile), init);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j0 = loop.getInductionVar();
    // Every subgroup is done reading the previous tiles.
    gpu::BarrierOp::create(b);
    fillTile(kTile, kLaneTile, [&](Value row, Value col) {
      return loadRow(k, add(j0, row), mask.jEnd, ValueRange{batchIdx, head},
                     col);
    });
    Value rBase = relShiftRow(sub(add(sub(qlen, i0), j0), idx(s.rowTile)));
    fillTile(rTile, s.windowRows(), [&](Value row, Value col) {
      return loadRow(r, add(rBase, row), klen, ValueRange{head}, col);
    });
    // The tiles are complete before any subgroup reads them.
    gpu::BarrierOp::create(b);
    scf::YieldOp::create(b, step(j0, loop.getRegionIterArgs()));
    return SmallVector<Value>(loop.getResults());
  };
  // The score of (i, j0 + lane) for subgroup row `ri` and, `withDp`,
  // dP = dO_i · v_j with v read from global memory.
  auto scoreAndDpAt = [&](Value ri, Value j, bool withDp) {
    Value wRow = add(sub(idx(s.rowTile - 1), ri), lane);
    Value jSafe = select(cmp(P::ult, j, klen), j, idx(0));
    auto vAt = globalRow(v, jSafe);
    return scoreAndDp(
        {quTile, ri}, {kTile, lane}, {qvTile, ri}, {rTile, wRow}, {doTile, ri},
        withDp ? function_ref<Value(ImplicitLocOpBuilder &, Value)>(vAt)
               : nullptr);
  };

  // Each row's lse and D_i = dO_i · O_i, which lane 0 writes for `_kv`
  // and `_r` (lse only when this kernel computed it).
  SmallVector<Value> rowLse, rowDelta;
  auto storeRowStats = [&](Value i, Value lseI, Value dI) {
    rowLse.push_back(lseI);
    rowDelta.push_back(dI);
    Value first = arith::AndIOp::create(b, cmp(P::eq, lane, idx(0)),
                                        cmp(P::ult, i, qlen));
    auto ifFirst = scf::IfOp::create(b, first, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifFirst.thenBlock());
    if (!s.saved)
      memref::StoreOp::create(b, lseI, lse, ValueRange{batchIdx, head, i});
    memref::StoreOp::create(b, dI, delta, ValueRange{batchIdx, head, i});
  };
  // dO_ri · o over d_head: this lane's columns c (column d, clamped) of
  // the dO tile times o(c, d), summed over the subgroup.
  auto dotDo = [&](Value ri, function_ref<Value(int64_t c, Value d)> o) {
    Value partial = f32(0.0);
    for (int64_t c = 0; c < cols; ++c) {
      Value d = add(lane, idx(c * kSubgroup));
      Value ok = cmp(P::ult, d, idx(s.dHead));
      Value dSafe = select(ok, d, idx(0));
      Value x = arith::MulFOp::create(
          b, memref::LoadOp::create(b, doTile, ValueRange{ri, dSafe}),
          o(c, dSafe));
      partial = arith::AddFOp::create(b, partial, select(ok, x, f32(0.0)));
    }
    return txl::subgroupReduce(b, partial, /*isMax=*/false);
  };
  if (s.saved) {
    // The forward's lse, and D from its output O, read against the dO
    // tile, which every subgroup must have stored first.
    gpu::BarrierOp::create(b);
    for (int64_t t = 0; t < s.rowsPerWarp(); ++t) {
      Value ri = add(rowBase, idx(t));
      Value i = add(i0, ri);
      Value iSafe = select(cmp(P::ult, i, qlen), i, idx(0));
      Value dI = dotDo(ri, [&](int64_t, Value d) -> Value {
        return memref::LoadOp::create(b, out,
                                      ValueRange{iSafe, batchIdx, head, d});
      });
      storeRowStats(
          i, memref::LoadOp::create(b, lse, ValueRange{batchIdx, head, iSafe}),
          dI);
    }
  } else {
    // Pass 1 (the forward's online softmax): per row, the running max m and
    // sum l and O = sum_j e^{s - m} v_j in this lane's columns.
    int64_t perRow = 2 + cols;
    SmallVector<Value> init;
    for (int64_t t = 0; t < s.rowsPerWarp(); ++t) {
      init.push_back(negInf());
      init.push_back(f32(0.0));
      init.append(cols, f32(0.0));
    }
    SmallVector<Value> stats = keyLoop(init, [&](Value j0, ValueRange state) {
      SmallVector<Value> next;
      Value j = add(j0, lane);
      for (int64_t t = 0; t < s.rowsPerWarp(); ++t) {
        ValueRange row = state.slice(t * perRow, perRow);
        Value ri = add(rowBase, idx(t));
        Value i = add(i0, ri);
        Value score = scoreAndDpAt(ri, j, /*withDp=*/false)[0];
        Value vis = arith::AndIOp::create(b, cmp(P::ult, j, mask.jEnd),
                                          visible(mask, i, j));
        score = select(vis, score, negInf());
        Value mNew = arith::MaximumFOp::create(
            b, row[0], txl::subgroupReduce(b, score, /*isMax=*/true));
        Value wasEmpty = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                               row[0], negInf());
        Value alpha = select(
            wasEmpty, f32(0.0),
            math::ExpOp::create(b, arith::SubFOp::create(b, row[0], mNew)));
        Value p = select(
            vis, math::ExpOp::create(b, arith::SubFOp::create(b, score, mNew)),
            f32(0.0));
        Value lNew =
            arith::AddFOp::create(b, arith::MulFOp::create(b, row[1], alpha),
                                  txl::subgroupReduce(b, p, /*isMax=*/false));
        // O takes the probabilities through dropatt (l does not).
        if (Value mult = dropattAt(i, j))
          p = arith::MulFOp::create(b, p, mult);
        SmallVector<Value> acc;
        for (int64_t c = 0; c < cols; ++c)
          acc.push_back(arith::MulFOp::create(b, row[2 + c], alpha));
        SmallVector<Value> o = accumulateOverLanes(
            acc, {p},
            [&](ImplicitLocOpBuilder &ib, unsigned, Value jj, Value d) {
              Value key = arith::AddIOp::create(ib, j0, jj);
              Value ok = arith::CmpIOp::create(ib, P::ult, key, mask.jEnd);
              key = arith::SelectOp::create(
                  ib, ok, key, arith::ConstantIndexOp::create(ib, 0));
              return memref::LoadOp::create(ib, v,
                                            ValueRange{key, batchIdx, head, d});
            });
        next.push_back(mNew);
        next.push_back(lNew);
        llvm::append_range(next, o);
      }
      return next;
    });

    // lse = m + log l and D = dO · O / l per row.
    for (int64_t t = 0; t < s.rowsPerWarp(); ++t) {
      Value ri = add(rowBase, idx(t));
      Value i = add(i0, ri);
      Value m = stats[t * perRow], l = stats[t * perRow + 1];
      Value dI = arith::DivFOp::create(
          b,
          dotDo(ri,
                [&](int64_t c, Value) { return stats[t * perRow + 2 + c]; }),
          l);
      Value lseI = arith::AddFOp::create(b, m, math::LogOp::create(b, l));
      storeRowStats(i, lseI, dI);
    }
  }

  // Pass 2: d(q + u)_i = sum_j dS_ij k_j and d(q + v)_i = sum_j dS_ij
  // r[qlen - 1 - i + j], per row in this lane's columns.
  SmallVector<Value> zeros(s.rowsPerWarp() * 2 * cols, f32(0.0));
  SmallVector<Value> grads = keyLoop(zeros, [&](Value j0, ValueRange state) {
    SmallVector<Value> next;
    Value j = add(j0, lane);
    for (int64_t t = 0; t < s.rowsPerWarp(); ++t) {
      Value ri = add(rowBase, idx(t));
      Value i = add(i0, ri);
      SmallVector<Value> sums = scoreAndDpAt(ri, j, /*withDp=*/true);
      Value vis = arith::AndIOp::create(b, cmp(P::ult, j, mask.jEnd),
                                        visible(mask, i, j));
      Value ds = probabilityAndGrad(sums[0], vis, rowLse[t], rowDelta[t],
                                    sums[1], dropattAt(i, j))
                     .ds;
      Value wBase = sub(idx(s.rowTile - 1), ri);
      llvm::append_range(
          next,
          accumulateOverLanes(
              state.slice(t * 2 * cols, 2 * cols), {ds, ds},
              [&](ImplicitLocOpBuilder &ib, unsigned term, Value jj,
                  Value d) -> Value {
                if (term == 0)
                  return memref::LoadOp::create(ib, kTile, ValueRange{jj, d});
                Value w = arith::AddIOp::create(ib, wBase, jj);
                return memref::LoadOp::create(ib, rTile, ValueRange{w, d});
              }));
    }
    return next;
  });
  for (int64_t t = 0; t < s.rowsPerWarp(); ++t) {
    Value i = add(i0, add(rowBase, idx(t)));
    Value ok = cmp(P::ult, i, qlen);
    ValueRange g = ValueRange(grads).slice(t * 2 * cols, 2 * cols);
    storeColumns(dqu, i, ValueRange{batchIdx, head}, ok, g.take_front(cols));
    storeColumns(dqv, i, ValueRange{batchIdx, head}, ok, g.drop_front(cols));
  }
}

void GradKernelBuilder::buildKeyValue() {
  using P = arith::CmpIPredicate;
  ArrayRef<BlockArgument> tiles = func.getWorkgroupAttributions();
  Value kTile = tiles[0], vTile = tiles[1], quTile = tiles[2],
        qvTile = tiles[3], doTile = tiles[4], rTile = tiles[5];
  Value dk = func.getArgument(9), dv = func.getArgument(10);
  Value j0 = mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(s.rowTile));
  DecoderMask mask = decoderMask(qlen, klen, memLen, sameLength, idx(0), 0);
  int64_t cols = s.colsPerLane();
  fillTile(kTile, s.rowTile, [&](Value row, Value col) {
    return loadRow(k, add(j0, row), klen, ValueRange{batchIdx, head}, col);
  });
  fillTile(vTile, s.rowTile, [&](Value row, Value col) {
    return loadRow(v, add(j0, row), klen, ValueRange{batchIdx, head}, col);
  });
  // Queries before j0 - mlen see no key of the tile.
  Value iBegin = arith::MaxSIOp::create(b, idx(0), sub(j0, mask.mlen));
  SmallVector<Value> zeros(s.rowsPerWarp() * 2 * cols, f32(0.0));
  auto loop = scf::ForOp::create(b, iBegin, qlen, idx(kLaneTile), zeros);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value i0 = loop.getInductionVar();
    ValueRange state = loop.getRegionIterArgs();
    gpu::BarrierOp::create(b);
    fillQueryTiles(quTile, qvTile, doTile, kLaneTile, i0);
    // r rows qlen - 1 - i + j for i in [i0, i0 + 32), j in [j0, j0 +
    // rowTile): window row w is r row rBase + w.
    Value rBase = relShiftRow(sub(add(sub(qlen, i0), j0), idx(kLaneTile)));
    fillTile(rTile, s.windowRows(), [&](Value row, Value col) {
      return loadRow(r, add(rBase, row), klen, ValueRange{head}, col);
    });
    gpu::BarrierOp::create(b);

    Value i = add(i0, lane);
    Value iOk = cmp(P::ult, i, qlen);
    Value iSafe = select(iOk, i, idx(0));
    Value lseI =
        memref::LoadOp::create(b, lse, ValueRange{batchIdx, head, iSafe});
    Value deltaI =
        memref::LoadOp::create(b, delta, ValueRange{batchIdx, head, iSafe});
    SmallVector<Value> next;
    for (int64_t t = 0; t < s.rowsPerWarp(); ++t) {
      Value jr = add(rowBase, idx(t));
      Value j = add(j0, jr);
      Value wRow = add(sub(idx(kLaneTile - 1), lane), jr);
      SmallVector<Value> sums = scoreAndDp(
          {quTile, lane}, {kTile, jr}, {qvTile, lane}, {rTile, wRow},
          {doTile, lane}, [&](ImplicitLocOpBuilder &ib, Value d) -> Value {
            return memref::LoadOp::create(ib, vTile, ValueRange{jr, d});
          });
      Value score = sums[0];
      Value vis = arith::AndIOp::create(
          b, arith::AndIOp::create(b, iOk, cmp(P::ult, j, klen)),
          visible(mask, i, j));
      PairGrad g = probabilityAndGrad(score, vis, lseI, deltaI, sums[1],
                                      dropattAt(i, j));
      // dv_j += sum_i P_ij M_ij dO_i, dk_j += sum_i dS_ij (q_i + u).
      llvm::append_range(
          next, accumulateOverLanes(
                    state.slice(t * 2 * cols, 2 * cols), {g.pDropped, g.ds},
                    [&](ImplicitLocOpBuilder &ib, unsigned term, Value ii,
                        Value d) -> Value {
                      return memref::LoadOp::create(
                          ib, term == 0 ? doTile : quTile, ValueRange{ii, d});
                    }));
    }
    scf::YieldOp::create(b, next);
  }
  for (int64_t t = 0; t < s.rowsPerWarp(); ++t) {
    Value j = add(j0, add(rowBase, idx(t)));
    Value ok = cmp(P::ult, j, klen);
    ValueRange g = ValueRange(loop.getResults()).slice(t * 2 * cols, 2 * cols);
    storeColumns(dv, j, ValueRange{batchIdx, head}, ok, g.take_front(cols));
    storeColumns(dk, j, ValueRange{batchIdx, head}, ok, g.drop_front(cols));
  }
}

void GradKernelBuilder::buildPosKey() {
  using P = arith::CmpIPredicate;
  ArrayRef<BlockArgument> tiles = func.getWorkgroupAttributions();
  Value rTile = tiles[0], quTile = tiles[1], qvTile = tiles[2],
        doTile = tiles[3], kWin = tiles[4];
  Value dr = func.getArgument(9);
  Value m0 = mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(s.rowTile));
  DecoderMask mask = decoderMask(qlen, klen, memLen, sameLength, idx(0), 0);
  int64_t cols = s.colsPerLane();
  fillTile(rTile, s.rowTile, [&](Value row, Value col) {
    return loadRow(r, add(m0, row), klen, ValueRange{head}, col);
  });
  // r row m pairs query i with key j = m - qlen + 1 + i, a key only when
  // j >= 0: queries before qlen - m0 - rowTile pair with none of the tile.
  Value iBegin =
      arith::MaxSIOp::create(b, idx(0), sub(sub(qlen, m0), idx(s.rowTile)));
  SmallVector<Value> zeros(s.rowsPerWarp() * cols, f32(0.0));
  auto batchLoop = scf::ForOp::create(b, idx(0), batch, idx(1), zeros);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(batchLoop.getBody());
    batchIdx = batchLoop.getInductionVar();
    auto loop = scf::ForOp::create(b, iBegin, qlen, idx(kLaneTile),
                                   batchLoop.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard innerGuard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value i0 = loop.getInductionVar();
      ValueRange state = loop.getRegionIterArgs();
      gpu::BarrierOp::create(b);
      fillQueryTiles(quTile, qvTile, doTile, kLaneTile, i0);
      // k rows m - qlen + 1 + i for m in [m0, m0 + rowTile), i in [i0, i0 +
      // 32): window row w is k row jBase + w.
      Value jBase = relShiftRow(add(sub(m0, qlen), add(i0, idx(1))));
      fillTile(kWin, s.windowRows(), [&](Value row, Value col) {
        return loadRow(k, add(jBase, row), klen, ValueRange{batchIdx, head},
                       col);
      });
      gpu::BarrierOp::create(b);

      Value i = add(i0, lane);
      Value iOk = cmp(P::ult, i, qlen);
      Value iSafe = select(iOk, i, idx(0));
      Value lseI =
          memref::LoadOp::create(b, lse, ValueRange{batchIdx, head, iSafe});
      Value deltaI =
          memref::LoadOp::create(b, delta, ValueRange{batchIdx, head, iSafe});
      SmallVector<Value> next;
      for (int64_t t = 0; t < s.rowsPerWarp(); ++t) {
        Value mr = add(rowBase, idx(t));
        Value m = add(m0, mr);
        Value w = add(mr, lane);
        Value j = add(jBase, w);
        Value jOk = arith::AndIOp::create(b, cmp(P::sge, j, idx(0)),
                                          cmp(P::slt, j, klen));
        Value jSafe = select(jOk, j, idx(0));
        SmallVector<Value> sums =
            scoreAndDp({quTile, lane}, {kWin, w}, {qvTile, lane}, {rTile, mr},
                       {doTile, lane}, globalRow(v, jSafe));
        Value score = sums[0];
        Value vis = arith::AndIOp::create(
            b,
            arith::AndIOp::create(b, arith::AndIOp::create(b, iOk, jOk),
                                  cmp(P::ult, m, klen)),
            visible(mask, i, j));
        Value ds = probabilityAndGrad(score, vis, lseI, deltaI, sums[1],
                                      dropattAt(i, j))
                       .ds;
        // dr_m += sum_i dS_ij (q_i + v).
        llvm::append_range(
            next,
            accumulateOverLanes(
                state.slice(t * cols, cols), {ds},
                [&](ImplicitLocOpBuilder &ib, unsigned, Value ii,
                    Value d) -> Value {
                  return memref::LoadOp::create(ib, qvTile, ValueRange{ii, d});
                }));
      }
      scf::YieldOp::create(b, next);
    }
    scf::YieldOp::create(b, loop.getResults());
  }
  for (int64_t t = 0; t < s.rowsPerWarp(); ++t) {
    Value m = add(m0, add(rowBase, idx(t)));
    storeColumns(dr, m, ValueRange{head}, cmp(P::ult, m, klen),
                 ValueRange(batchLoop.getResults()).slice(t * cols, cols));
  }
}

/// The kernel's function type (see GradKernelBuilder); `unitInnerStride`:
/// its memrefs have a unit stride along d_head (attentionOperandType).
FunctionType gradKernelType(MLIRContext *ctx, const GradShape &s,
                            bool unitInnerStride = false) {
  MemRefType t4 = attentionOperandType(ctx, 4, s.dHead, unitInnerStride);
  MemRefType t3 = attentionOperandType(ctx, 3, s.dHead, unitInnerStride);
  MemRefType t2 = attentionOperandType(ctx, 2, s.dHead, unitInnerStride);
  MemRefType rowStats = rowStatsType(ctx);
  SmallVector<Type> inputs = {t4, t4, t4, t4, t3, t2, t2, rowStats, rowStats};
  if (s.saved)
    inputs.push_back(t4);
  if (s.kind == GradKind::PosKey)
    inputs.push_back(t3);
  else
    inputs.append({t4, t4});
  inputs.append(
      {IndexType::get(ctx), IntegerType::get(ctx, 32), Float32Type::get(ctx)});
  if (s.dropatt)
    llvm::append_range(inputs, dropattArgumentTypes(ctx));
  return FunctionType::get(ctx, inputs, {});
}

/// The kernel `rel_attention_grad_<kind>_d<d_head>` in `module`'s
/// @txl_kernels, created on first use.
gpu::GPUFuncOp getOrCreateGradKernel(ModuleOp module, const GradShape &shape) {
  std::string name =
      ("rel_attention_grad_" + shape.suffix() +
       (shape.dropatt ? "_dropatt_d" : "_d") + Twine(shape.dHead))
          .str();
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  if (auto existing = kernels.lookupSymbol<gpu::GPUFuncOp>(name))
    return existing;
  MLIRContext *ctx = kernels.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  SmallVector<Type> tiles;
  for (int64_t rows : shape.tileRows())
    tiles.push_back(
        MemRefType::get({rows, shape.rowStride()}, Float32Type::get(ctx),
                        MemRefLayoutAttrInterface{},
                        IntegerAttr::get(IntegerType::get(ctx, 64), 3)));
  auto func = gpu::GPUFuncOp::create(b, kernels.getLoc(), name,
                                     gradKernelType(ctx, shape), tiles);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({int32_t(kThreads), 1, 1}));
  func->setAttr("nvvm.maxnreg", b.getI32IntegerAttr(kMaxRegisters));
  GradKernelBuilder(func, shape).build();
  return func;
}

// txl.rel_attention_grad (f32) => the `_q` (with a saved group: `_q_saved`),
// `_kv` and `_r` launches in that order on allocated outputs and row
// statistics (lse: the saved one, or allocated for `_q`), then
// dq = d(q + u) + d(q + v), du and dv_bias their sums over positions and
// batch (txl.add, txl.sum_leading). At bf16 or f16 up to
// kMmaGradSplitMaxHead, the tensor-core kernels take the same arguments
// with a unit stride along d_head, 64 rows per workgroup, d_head's output
// columns over mmaGradColumnParts workgroups along z.
struct RelAttentionGradToLaunch : public OpRewritePattern<RelAttentionGradOp> {
  RelAttentionGradToLaunch(MLIRContext *ctx, ModuleOp module,
                           FloatType mmaOperandType)
      : OpRewritePattern(ctx), module(module), mmaOperandType(mmaOperandType) {}

  LogicalResult matchAndRewrite(RelAttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    auto qType = cast<RankedTensorType>(op.getQuery().getType());
    auto rType = cast<RankedTensorType>(op.getPosKey().getType());
    if (!qType.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "only f32 has GPU kernels");
    bool dropatt = op.getDropattSeed() != nullptr;
    bool saved = op.getLse() != nullptr;
    int64_t dHead = qType.getDimSize(3);
    if (ShapedType::isDynamic(dHead))
      return rewriter.notifyMatchFailure(op, "d_head must be static");
    SmallVector<GradShape> shapes;
    for (GradKind kind :
         {GradKind::Query, GradKind::KeyValue, GradKind::PosKey}) {
      std::optional<GradShape> shape = chooseShape(kind, dHead, dropatt, saved);
      if (!shape)
        return rewriter.notifyMatchFailure(op, "d_head too wide for a tile");
      shapes.push_back(*shape);
    }

    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    // The kernels index every operand by the query's sizes and klen:
    // dynamic sizes are checked before the launches.
    assertEqualSizes(b, b.getLoc(), op,
                     relAttentionGradSizeEqualities(
                         op.getQuery(), op.getKey(), op.getValue(),
                         op.getPosKey(), op.getRWBias(), op.getRRBias(),
                         op.getDResult(), op.getLse(), op.getOutput()));
    SmallVector<gpu::GPUFuncOp> funcs;
    // Per launch: rows per workgroup, and the grid's z (the tensor-core
    // kernels' column parts).
    SmallVector<int64_t> rowTiles, columnParts;
    for (const GradShape &shape : shapes) {
      // bf16 and f16 alike; at f16 the scaled dO and dS keep the operands
      // out of f16's subnormals, which is what `--precision=fp16`'s dynamic
      // loss scale is for. `_q` has a tensor-core form with the forward's
      // saved statistics only.
      bool mma = mmaOperandType && dHead <= kMmaGradSplitMaxHead;
      FunctionType mmaType = gradKernelType(rewriter.getContext(), shape,
                                            /*unitInnerStride=*/true);
      if (mma && shape.kind == GradKind::Query && saved) {
        funcs.push_back(getOrCreateMmaQueryGradKernel(
            module, dHead, mmaOperandType, dropatt, mmaType));
        rowTiles.push_back(kMmaGradQueryTile);
        columnParts.push_back(
            mmaGradColumnParts(MmaGradKernel::QuerySaved, dHead, dropatt));
        continue;
      }
      if (mma && shape.kind == GradKind::KeyValue) {
        funcs.push_back(getOrCreateMmaKeyValueGradKernel(
            module, dHead, mmaOperandType, dropatt, mmaType));
        rowTiles.push_back(kMmaGradKeyTile);
        columnParts.push_back(
            mmaGradColumnParts(MmaGradKernel::KeyValue, dHead, dropatt));
        continue;
      }
      if (mma && shape.kind == GradKind::PosKey) {
        funcs.push_back(getOrCreateMmaPosGradKernel(
            module, dHead, mmaOperandType, dropatt, mmaType));
        rowTiles.push_back(kMmaGradPosTile);
        columnParts.push_back(
            mmaGradColumnParts(MmaGradKernel::PosKey, dHead, dropatt));
        continue;
      }
      funcs.push_back(getOrCreateGradKernel(module, shape));
      rowTiles.push_back(shape.rowTile);
      columnParts.push_back(1);
    }
    Value q = op.getQuery(), key = op.getKey();
    Value qlen = tensor::DimOp::create(b, q, 0);
    Value batch = tensor::DimOp::create(b, q, 1);
    Value nHead = tensor::DimOp::create(b, q, 2);
    Value klen = tensor::DimOp::create(b, key, 0);
    Value columns = arith::MulIOp::create(b, batch, nHead);

    // Operand `tensor` as argument n of `func` takes it.
    auto toBuffer = [&](gpu::GPUFuncOp func, Value tensor,
                        unsigned n) -> Value {
      return toKernelBuffer(b, tensor,
                            cast<MemRefType>(func.getArgumentTypes()[n]));
    };
    // A new buffer of `type`'s shape with leading sizes `sizes`.
    auto alloc = [&](RankedTensorType type, ArrayRef<Value> sizes) {
      SmallVector<Value> dynamic;
      for (auto [dim, size] : llvm::enumerate(sizes))
        if (type.isDynamicDim(dim))
          dynamic.push_back(size);
      return memref::AllocOp::create(
          b, MemRefType::get(type.getShape(), type.getElementType()), dynamic);
    };
    MemRefType statsType = rowStatsType(b.getContext());
    // The forward's lse (read only), or a buffer `_q` fills.
    Value lse = saved ? toKernelBuffer(b, op.getLse(), statsType)
                      : memref::AllocOp::create(b, statsType,
                                                ValueRange{batch, nHead, qlen});
    Value delta =
        memref::AllocOp::create(b, statsType, ValueRange{batch, nHead, qlen});
    auto kType = cast<RankedTensorType>(key.getType());
    Value dqu = alloc(qType, {qlen, batch, nHead});
    Value dqv = alloc(qType, {qlen, batch, nHead});
    Value dk = alloc(kType, {klen, batch, nHead});
    auto vType = cast<RankedTensorType>(op.getValue().getType());
    Value dv = alloc(vType, {klen, batch, nHead});
    Value dr = alloc(rType, {klen, nHead});

    Value same = arith::ExtUIOp::create(b, b.getI32Type(), op.getSameLength());
    Value scale =
        arith::ConstantFloatOp::create(b, b.getF32Type(), op.getScale());
    Value c1 = arith::ConstantIndexOp::create(b, 1);
    Value threads = arith::ConstantIndexOp::create(b, kThreads);
    SmallVector<Value> inputs = {
        op.getDResult(), q, key, op.getValue(), op.getPosKey(), op.getRWBias(),
        op.getRRBias()};
    SmallVector<Value> dropattArgs;
    if (dropatt)
      dropattArgs = dropattLaunchArguments(
          b, op.getDropattSeed(), op.getDropattOffset(),
          op.getDropattTraining(), op.getDropattStreamBase(),
          op.getDropattColumn(), op.getDropatt()->convertToDouble(),
          *op.getDropattStream());
    // The three kernels take the inputs with the same types.
    SmallVector<Value> buffers;
    for (auto [a, input] : llvm::enumerate(inputs))
      buffers.push_back(toBuffer(funcs[0], input, a));
    auto launch = [&](unsigned n, Value rows, Value gridY,
                      ArrayRef<Value> outputs) {
      gpu::GPUFuncOp func = funcs[n];
      SmallVector<Value> args = buffers;
      // The tensor-core kernel takes its operands with a unit stride along
      // d_head.
      for (auto [a, input] : llvm::enumerate(inputs))
        if (args[a].getType() != func.getArgumentTypes()[a])
          args[a] = toBuffer(func, input, a);
      args.append({lse, delta});
      if (shapes[n].saved)
        args.push_back(toBuffer(func, op.getOutput(), args.size()));
      for (Value out : outputs)
        args.push_back(memref::CastOp::create(
            b, func.getArgumentTypes()[args.size()], out));
      args.append({op.getMemLen(), same, scale});
      llvm::append_range(args, dropattArgs);
      Value gridX = arith::CeilDivUIOp::create(
          b, rows, arith::ConstantIndexOp::create(b, rowTiles[n]));
      Value gridZ = columnParts[n] == 1
                        ? c1
                        : arith::ConstantIndexOp::create(b, columnParts[n]);
      gpu::LaunchFuncOp::create(b, func, gpu::KernelDim3{gridX, gridY, gridZ},
                                gpu::KernelDim3{threads, c1, c1},
                                /*dynamicSharedMemorySize=*/Value(), args);
    };
    launch(0, qlen, columns, {dqu, dqv});
    launch(1, klen, columns, {dk, dv});
    launch(2, klen, nHead, {dr});

    auto toTensor = [&](Type type, Value buffer) -> Value {
      return bufferization::ToTensorOp::create(b, type, buffer,
                                               /*restrict=*/b.getUnitAttr(),
                                               /*writable=*/b.getUnitAttr());
    };
    Value dquT = toTensor(qType, dqu), dqvT = toTensor(qType, dqv);
    Value dq = AddOp::create(b, dquT, dqvT);
    Type biasType = op.getRWBias().getType();
    Value du = SumLeadingOp::create(b, biasType, dquT);
    Value dvb = SumLeadingOp::create(b, biasType, dqvT);
    rewriter.replaceOp(op, {dq, toTensor(kType, dk), toTensor(vType, dv),
                            toTensor(rType, dr), du, dvb});
    return success();
  }

  ModuleOp module;
  /// bf16: the `_q_saved`, `_kv` and `_r` kernels are the tensor-core ones
  /// (RelAttentionGradMma.cpp) up to kMmaGradSplitMaxHead, and f16
  /// likewise; null: f32.
  FloatType mmaOperandType;
};

} // namespace

void mlir::txl::populateRelAttentionGradToGpuPatterns(
    RewritePatternSet &patterns, ModuleOp module, FloatType mmaOperandType) {
  patterns.add<RelAttentionGradToLaunch>(patterns.getContext(), module,
                                         mmaOperandType);
}
