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
// the tile needs, all in workgroup memory; the causal-with-memory and
// same_length masks come from the indices, the softmax is online (running
// max and sum per row, carried across key tiles), and P·V accumulates in
// registers (lane l owns output columns l, l + 32, ...). Neither the
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
  /// Row stride of the workgroup tiles: d_head + 1, so that the 32 lanes
  /// reading one column of 32 different rows hit 32 different banks.
  int64_t rowStride() const { return dHead + 1; }
  int64_t rowsPerWarp() const { return queryTile / kWarps; }
  /// Rows of r one (query tile, key tile) pair reads.
  int64_t posRows() const { return queryTile + kKeyTile - 1; }
  /// Output columns per lane.
  int64_t colsPerLane() const { return (dHead + kSubgroup - 1) / kSubgroup; }
  int64_t workgroupBytes() const {
    return (2 * queryTile + kKeyTile + posRows()) * rowStride() * 4;
  }
};

/// The widest query tile (16, 8 or 4 rows) whose workgroup tiles fit.
std::optional<KernelShape> chooseShape(int64_t dHead, bool dropatt, bool lse) {
  for (int64_t queryTile : {16, 8, 4}) {
    KernelShape shape{dHead, queryTile, dropatt, lse};
    if (shape.workgroupBytes() <= kWorkgroupBytes)
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

  KernelShape s;
  gpu::GPUFuncOp func;
  /// The work-item's index in the workgroup (set first by build()).
  Value tid;
};

Value KernelBuilder::subgroupReduce(Value v, bool isMax) {
  return txl::subgroupReduce(b, v, isMax);
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
    forTileElements(kKeyTile, [&](Value row, Value col) {
      Value j = add(j0, row);
      Value inRange = cmp(P::ult, j, jEnd);
      Value x = memref::LoadOp::create(
          b, k, ValueRange{select(inRange, j, zero), batchIdx, head, col});
      memref::StoreOp::create(b, select(inRange, x, fzero), kTile,
                              ValueRange{row, col});
    });
    // Rows qlen - 1 - i + j of r for i in [i0, i0 + Bq), j in [j0, j0 +
    // Bk): window row w holds r row rBase + w, rBase = qlen - i0 - Bq + j0.
    // Rows outside [0, klen) only serve masked pairs and read as zero.
    Value rBase = relShiftRow(sub(add(sub(qlen, i0), j0), idx(s.queryTile)));
    forTileElements(s.posRows(), [&](Value row, Value col) {
      Value p = add(rBase, row);
      Value inRange =
          arith::AndIOp::create(b, cmp(P::sge, p, zero), cmp(P::slt, p, klen));
      Value x = memref::LoadOp::create(
          b, r, ValueRange{select(inRange, p, zero), head, col});
      memref::StoreOp::create(b, select(inRange, x, fzero), rTile,
                              ValueRange{row, col});
    });
    // The tiles are complete before any subgroup reads them.
    barrier("stores-done");

    Value j = add(j0, lane);
    Value keyInRange = cmp(P::ult, j, jEnd);
    SmallVector<Value> next;
    for (int64_t t = 0; t < s.rowsPerWarp(); ++t) {
      ValueRange row = state.slice(t * perRow, perRow);
      Value ri = add(rowBase, idx(t));
      Value i = add(i0, ri);
      // AC + BD for (i, j): lane's k row, window row Bq - 1 - ri + lane.
      Value wRow = add(sub(idx(s.queryTile - 1), ri), lane);
      auto dot = scf::ForOp::create(
          b, zero, idx(s.dHead), one, ValueRange{fzero},
          [&](OpBuilder &nb, Location loc, Value d, ValueRange acc) {
            ImplicitLocOpBuilder ib(loc, nb);
            auto ld = [&](Value tile, Value rr) {
              return memref::LoadOp::create(ib, tile, ValueRange{rr, d});
            };
            Value ac =
                arith::MulFOp::create(ib, ld(quTile, ri), ld(kTile, lane));
            Value bd =
                arith::MulFOp::create(ib, ld(qvTile, ri), ld(rTile, wRow));
            Value sum = arith::AddFOp::create(
                ib, acc[0], arith::AddFOp::create(ib, ac, bd));
            scf::YieldOp::create(ib, sum);
          });
      dot->setAttr("loop_annotation", unrollAttr());
      Value visible =
          arith::AndIOp::create(b, keyInRange, this->visible(mask, i, j));
      Value score = select(
          visible, arith::MulFOp::create(b, dot.getResult(0), scale), negInf());

      // Online softmax: m' = max(m, max_j s), l' = l e^{m - m'} + sum_j
      // e^{s - m'}, o' = o e^{m - m'} + sum_j e^{s - m'} v_j.
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
      Value pDropped = p;
      if (s.dropatt)
        pDropped =
            arith::MulFOp::create(b, p,
                                  dropattMultiplier(dropatt, qlen, klen, nHead,
                                                    i, j, batchIdx, head));
      SmallVector<Value> acc;
      for (int64_t c = 0; c < s.colsPerLane(); ++c)
        acc.push_back(arith::MulFOp::create(b, row[2 + c], alpha));
      auto pv = scf::ForOp::create(
          b, zero, idx(kKeyTile), one, acc,
          [&](OpBuilder &nb, Location loc, Value jj, ValueRange o) {
            ImplicitLocOpBuilder ib(loc, nb);
            Value jj32 = arith::IndexCastOp::create(ib, ib.getI32Type(), jj);
            Value pj = gpu::ShuffleOp::create(
                           ib, pDropped, jj32,
                           arith::ConstantIntOp::create(ib, kSubgroup, 32),
                           gpu::ShuffleMode::IDX)
                           .getShuffleResult();
            Value key = arith::AddIOp::create(ib, j0, jj);
            Value keyOk = arith::CmpIOp::create(ib, P::ult, key, jEnd);
            key = arith::SelectOp::create(
                ib, keyOk, key, arith::ConstantIndexOp::create(ib, 0));
            SmallVector<Value> updated;
            for (int64_t c = 0; c < s.colsPerLane(); ++c) {
              Value d = arith::AddIOp::create(
                  ib, lane, arith::ConstantIndexOp::create(ib, c * kSubgroup));
              d = arith::MinUIOp::create(
                  ib, d, arith::ConstantIndexOp::create(ib, s.dHead - 1));
              Value vj = memref::LoadOp::create(
                  ib, v, ValueRange{key, batchIdx, head, d});
              updated.push_back(arith::AddFOp::create(
                  ib, o[c], arith::MulFOp::create(ib, pj, vj)));
            }
            scf::YieldOp::create(ib, updated);
          });
      pv->setAttr("loop_annotation", unrollAttr());
      next.push_back(mNew);
      next.push_back(lNew);
      llvm::append_range(next, pv.getResults());
    }
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
  // Resident workgroups per SM on sm_80, the smaller SM of the two default
  // architectures: 64K registers, 164 KiB of shared memory (1 KiB of it
  // reserved per workgroup).
  int64_t threads = kWarps * kSubgroup;
  int64_t resident =
      std::min<int64_t>(65536 / (kMaxRegisters * threads),
                        164 * 1024 / (shape.workgroupBytes() + 1024));
  AttentionKernel kernel{nullptr, shape.queryTile, threads, resident};
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
                       int64_t xChains)
      : OpRewritePattern(ctx), module(module), mmaOperandType(mmaOperandType),
        keyParts(keyParts), xChains(xChains) {}

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
    patterns.add<RelAttentionToLaunch>(&getContext(), module, mmaOperandType,
                                       keyParts, xChains);
    populateRelAttentionGradToGpuPatterns(patterns, module, mmaOperandType);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
