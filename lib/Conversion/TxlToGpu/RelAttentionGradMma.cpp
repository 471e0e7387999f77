//===- RelAttentionGradMma.cpp - The attention backward on tensor cores ---===//
//
// `--precision=bf16`'s and `--precision=fp16`'s forms of the fused
// attention backward's three kernels (RelAttentionGradToGpu.cpp), the
// gradients of paper §3.3's attention flash-attention-2 style (Dao 2023,
// Algorithm 2), every product on warp-level tensor cores (nvgpu.mma.sync
// m16n8k16, bf16 or f16 operands, f32 accumulators; the register layout is
// MmaBuilder.h's): `_kv` (dk, dv),
// `_q_saved` (D_i, d(q + u), d(q + v)) and `_r` (dr), each in its section
// below. The probabilities are recomputed from q, k, r, the biases and the
// rows' log-sum-exp and D_i; nothing of qlen × klen reaches global memory.
// All three take the f32 kernels' arguments (MmaGradBodyBuilder) and run
// workgroups of 4 subgroups that own 64 rows (keys, queries, r rows).
//
// `_kv`: a workgroup owns 64 keys, j0 + [0, 64), for one (batch, head)
// column; its subgroup w the 16 keys jw = j0 + 16 w + [0, 16), the M of its
// products.
// It walks the queries in tiles of 32, i0 + [0, 32), with the keys as the
// rows of every product (the transposed scores, so that the probabilities
// enter dv's and dk's products as A operands). Per query tile:
//   X = (q + v) r_window^T, 32 queries × 96 window rows (the 32 + 64 - 1
//     rows of r the tile pair reads: window row w is r row qlen - i0 - 32
//     + j0 + w), 2 × 12 blocks of 8, six per subgroup, into a workgroup
//     tile; after a barrier each lane reads BD^T(j, i) = X(i - i0, 31 -
//     (i - i0) + (j - j0)) for its own positions: the rel-shift as index
//     arithmetic;
//   per block of 8 queries, AC^T = k q^T (+ k_j · u, computed once per key
//     row) and dP^T = v dO^T; P = exp(scale (AC + BD) - lse_i) under the
//     decoder mask, M its dropatt multiplier (1 without dropatt) and dS =
//     scale P (M dP - D_i), P M and dS stored in two workgroup tiles at the
//     positions the same lane reads back as A fragments;
//   dv += (P M)^T dO and dk += dS^T q as two warpgroup products
//     (txl.warpgroup_mma: wgmma on sm_90a) for the workgroup's 64 keys, on
//     the tile's dO and q, which the workgroup stages once (rounded) in
//     workgroup memory as the products' B core matrices.
// dk then gets (sum_i dS_ij) u at the store. Each key row's dk and dv are
// summed in one lane quad in a fixed order: no atomics, and two runs give
// bit-equal gradients.
//
//===----------------------------------------------------------------------===//

#include "MmaBuilder.h"
#include "txl/Conversion/KernelModule.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::txl;

namespace {

constexpr int64_t kWarps = 4;
/// Keys per subgroup: the mma's M.
constexpr int64_t kRows = 16;
/// Queries per tile of the walk.
constexpr int64_t kQueryTile = 32;
/// Columns of X: the 32 + 64 - 1 window rows, rounded up to n-blocks of 8.
constexpr int64_t kWindow = kQueryTile + kWarps * kRows;
/// X's n-blocks each subgroup computes: its half of 12, for one of X's two
/// m-blocks of 16 queries.
constexpr int64_t kWindowBlocksPerWarp = kWindow / 8 / 2;
/// Registers per work-item on CUDA (PTX .maxnreg): 2 workgroups of 128 per
/// SM.
constexpr int32_t kMaxRegisters = 255;
/// Up to this padded d_head the key and value fragments stay in registers
/// for the whole query walk; wider heads reload them per query tile.
constexpr int64_t kHeldKeyWidth = 64;

/// The kernel `rel_attention_grad_<kind>_<bf16|f16>[_dropatt]_d<d_head>` in
/// `module`'s @txl_kernels: the one there, or a new one of `type` with 128
/// work-items, kMaxRegisters and f32 workgroup tiles of `tiles` (rows,
/// columns) each, then operand-typed txl.warpgroup_mma B tiles of
/// `coreTiles` (n blocks, k blocks of 8 × 8 core matrices) each, whose body
/// `build` writes.
gpu::GPUFuncOp
getOrCreateMmaGradKernel(ModuleOp module, StringRef kind, int64_t dHead,
                         FloatType operandType, bool dropatt, FunctionType type,
                         ArrayRef<std::pair<int64_t, int64_t>> tiles,
                         function_ref<void(gpu::GPUFuncOp)> build,
                         ArrayRef<std::pair<int64_t, int64_t>> coreTiles = {}) {
  assert((operandType.isBF16() || operandType.isF16()) &&
         "mma.sync m16n8k16 takes bf16 or f16 operands");
  std::string name = ("rel_attention_grad_" + kind + "_" +
                      (operandType.isBF16() ? "bf16" : "f16") +
                      (dropatt ? "_dropatt_d" : "_d") + Twine(dHead))
                         .str();
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  if (auto existing = kernels.lookupSymbol<gpu::GPUFuncOp>(name))
    return existing;
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  SmallVector<Type> tileTypes;
  for (auto [rows, columns] : tiles)
    tileTypes.push_back(MemRefType::get({rows, columns}, b.getF32Type(),
                                        MemRefLayoutAttrInterface{},
                                        b.getI64IntegerAttr(3)));
  for (auto [nBlocks, kBlocks] : coreTiles)
    tileTypes.push_back(MemRefType::get({nBlocks, kBlocks, 8, 8}, operandType,
                                        MemRefLayoutAttrInterface{},
                                        b.getI64IntegerAttr(3)));
  auto func =
      gpu::GPUFuncOp::create(b, kernels.getLoc(), name, type, tileTypes);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({int32_t(kWarps * kSubgroupSize), 1, 1}));
  func->setAttr("nvvm.maxnreg", b.getI32IntegerAttr(kMaxRegisters));
  build(func);
  return func;
}

/// What the tensor-core backward kernels share: their arguments, in the
/// f32 kernels' layout (RelAttentionGradToGpu.cpp: dO, q, k, v [len, batch,
/// n_head, d_head], r [klen, n_head, d_head], u, v_bias [n_head, d_head],
/// lse, delta [batch, n_head, qlen], then the kernel's own (O and the
/// outputs), mem_len, same_length, scale and, in the dropatt forms, the
/// six Dropatt arguments), the sizes read from them and the operands as
/// Rows.
class MmaGradBodyBuilder : public MmaBodyBuilder {
public:
  MmaGradBodyBuilder(gpu::GPUFuncOp func, int64_t dHead, FloatType operandType,
                     bool dropatt)
      : MmaBodyBuilder(func, dHead, operandType), dropatt(dropatt), func(func) {
  }

protected:
  /// Sets the arguments, `numOwn` of them after delta, with the insertion
  /// point at the kernel's start, then zero, qlen, (with `withBatch`)
  /// batch, nHead and klen.
  void unpackArguments(unsigned numOwn, bool withBatch = false) {
    Block &entry = func.getBody().front();
    b.setInsertionPointToStart(&entry);
    auto arg = [&](unsigned n) -> Value { return entry.getArgument(n); };
    dO = arg(0);
    q = arg(1);
    k = arg(2);
    v = arg(3);
    r = arg(4);
    u = arg(5);
    vb = arg(6);
    lse = arg(7);
    delta = arg(8);
    for (unsigned n = 0; n < numOwn; ++n)
      own.push_back(arg(9 + n));
    unsigned tail = 9 + numOwn;
    memLen = arg(tail);
    sameLength = arg(tail + 1);
    scale = arg(tail + 2);
    if (dropatt)
      drop = {arg(tail + 3), arg(tail + 4), arg(tail + 5),
              arg(tail + 6), arg(tail + 7), arg(tail + 8)};
    zero = idx(0);
    qlen = memref::DimOp::create(b, q, 0);
    if (withBatch)
      batch = memref::DimOp::create(b, q, 1);
    nHead = memref::DimOp::create(b, q, 2);
    klen = memref::DimOp::create(b, k, 0);
  }

  /// Sets partBlocks and colBase: with d_head's output columns in
  /// mmaGradColumnParts(kernel) parts, the workgroup accumulates partBlocks
  /// blocks of 8 from column colBase = 8 partBlocks × the grid's z (colBase
  /// unset with one part, so those kernels index as before).
  void setColumnPart(MmaGradKernel kernel) {
    partBlocks = mmaGradPartBlocks(kernel, dHead, dropatt);
    if (8 * partBlocks < dPad)
      colBase = mul(gpu::BlockIdOp::create(b, gpu::Dimension::z),
                    idx(8 * partBlocks));
  }
  /// Column `d` of the workgroup's part (`d` counted from its first).
  Value partColumn(Value d) { return colBase ? add(colBase, d) : d; }
  /// Whether the loop that draws the dropatt multipliers keeps its
  /// loop-invariant values in it (loopOver): in the split kernels, whose
  /// registers the hoisted Philox round keys would push past 255.
  bool drawsKeepInvariants() const { return dropatt && colBase; }

  /// `mem` (q or dO, + `bias`) of the current (batch, head) column.
  Rows queries(Value mem, Value bias = Value()) {
    return Rows{mem, {batchIdx, head}, qlen, bias};
  }
  /// `mem` (k or v) of the current (batch, head) column.
  Rows keys(Value mem) { return Rows{mem, {batchIdx, head}, klen}; }
  /// r of the current head.
  Rows posKeys() { return Rows{r, {head}, klen}; }

  /// The kernel draws dropatt (its Dropatt arguments after scale).
  bool dropatt;
  gpu::GPUFuncOp func;
  // Set by unpackArguments.
  Value dO, q, k, v, r, u, vb, lse, delta, memLen, sameLength, scale;
  /// The kernel's own arguments between delta and mem_len.
  SmallVector<Value, 3> own;
  Dropatt drop{};
  Value zero, qlen, batch, nHead, klen;
  // Set by setColumnPart.
  int64_t partBlocks = 0;
  Value colBase;
};

class MmaKeyValueGradBuilder : public MmaGradBodyBuilder {
public:
  using MmaGradBodyBuilder::MmaGradBodyBuilder;
  void build();

private:
  // Set first by build().
  Value jw;
};

void MmaKeyValueGradBuilder::build() {
  // The `_kv` kernel's own arguments: dk, dv.
  unpackArguments(2);
  Value dk = own[0], dv = own[1];
  Value xTile = func.getWorkgroupAttributions()[0];
  Value pTile = func.getWorkgroupAttributions()[1];
  Value dsTile = func.getWorkgroupAttributions()[2];
  Value doTile = func.getWorkgroupAttributions()[3];
  Value qTile = func.getWorkgroupAttributions()[4];
  using P = arith::CmpIPredicate;
  setColumn(nHead);
  Value j0 =
      mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(kWarps * kRows));
  setLane();
  Value warpKey0 = mul(warp, idx(kRows));
  jw = add(j0, warpKey0);
  // X's m-block (16 queries) and first n-block of this subgroup.
  Value xRow0 = mul(arith::RemUIOp::create(b, warp, idx(2)), idx(16));
  Value xBlock0 =
      mul(arith::DivUIOp::create(b, warp, idx(2)), idx(kWindowBlocksPerWarp));

  DecoderMask mask = decoderMask(qlen, klen, memLen, sameLength, zero, 0);
  // Queries before j0 - mlen see no key of the tile.
  Value iBegin = arith::MaxSIOp::create(b, zero, sub(j0, mask.mlen));

  int64_t kSteps = dPad / 16;
  setColumnPart(MmaGradKernel::KeyValue);
  int64_t dBlocks = partBlocks;
  bool holdKeys = dPad <= kHeldKeyWidth;
  SmallVector<Value> heldK, heldV;
  if (holdKeys)
    for (int64_t ks = 0; ks < kSteps; ++ks) {
      heldK.push_back(packA(rowsA(keys(k), jw, ks)));
      heldV.push_back(packA(rowsA(keys(v), jw, ks)));
    }

  // u enters through k_j · u (AC^T's bias term, constant along the
  // query row) and (sum_i dS_ij) u (dk's), in f32, not through the
  // rounded operands: so no u value is held in registers across the walk.
  // ku[rr] = k_j · u for key row jw + g + 8 rr, summed over the quad.
  SmallVector<Value> ku;
  {
    auto loop = scf::ForOp::create(b, t, idx(dHead), idx(4),
                                   ValueRange{f32(0.0), f32(0.0)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value d = loop.getInductionVar();
    Value ud = memref::LoadOp::create(b, u, ValueRange{head, d});
    SmallVector<Value> next;
    for (int64_t rr = 0; rr < 2; ++rr) {
      Value kd = rowValue(keys(k), add(jw, add(g, idx(8 * rr))), d);
      next.push_back(arith::AddFOp::create(b, loop.getRegionIterArgs()[rr],
                                           arith::MulFOp::create(b, kd, ud)));
    }
    scf::YieldOp::create(b, next);
    b.setInsertionPointAfter(loop);
    for (int64_t rr = 0; rr < 2; ++rr)
      ku.push_back(quadReduce(loop.getResult(rr), /*isMax=*/false));
  }

  // Loop state: the dv accumulators, then dk's, dBlocks fragments of 4
  // each (key rows g, g + 8 of the subgroup, columns 8 db + 2 t + e), then
  // the lane's part of sum_i dS_ij for its two key rows.
  SmallVector<Value> init(2 * dBlocks * 4 + 2, f32(0.0));
  auto queryLoop = scf::ForOp::create(b, iBegin, qlen, idx(kQueryTile), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(queryLoop.getBody());
    Value i0 = queryLoop.getInductionVar();
    ValueRange state = queryLoop.getRegionIterArgs();

    // Every lane is done reading the previous tile's X.
    barrier("reads-done");
    // The workgroup stages the tile's dO and q, rounded, once: B(i, d) of
    // dv's and dk's warpgroup products, at [d / 8][i / 8][d % 8][i % 8]
    // (queries from qlen on and columns from d_head on are zero). Barrier 2
    // below orders these stores before the products.
    stageOperands({{queries(dO), doTile, true}, {queries(q), qTile, true}}, i0,
                  kQueryTile, colBase, 8 * dBlocks);
    // X: this subgroup's 6 blocks of 8 window rows for its 16 queries;
    // window rows outside [0, klen) only serve masked pairs and read as
    // zero.
    Value rBase = relShiftRow(sub(add(sub(qlen, i0), j0), idx(kQueryTile)));
    SmallVector<Fragment> qvs;
    for (int64_t ks = 0; ks < kSteps; ++ks)
      qvs.push_back(rowsA(queries(q, vb), add(i0, xRow0), ks));
    forRange(kWindowBlocksPerWarp, [&](Value nbLocal) {
      Value col0 = mul(add(xBlock0, nbLocal), idx(8));
      Fragment acc = zeros();
      for (int64_t ks = 0; ks < kSteps; ++ks)
        acc = mma(qvs[ks], rowsAsColumns(posKeys(), add(rBase, col0), ks), acc);
      storeC(acc, xTile, xRow0, col0);
    });
    // Every subgroup's X blocks are complete before the lanes read the
    // skewed entries.
    barrier("stores-done");

    // Per n-block of 8 queries (a rolled loop: unrolled, every load of the
    // tile is hoisted ahead of its products and ptxas spills): AC^T and
    // dP^T, then for the lane's 4 pairs P M and dS into the subgroup's rows
    // of two workgroup tiles, at the positions the lane itself reads back
    // as A fragments below (no barrier is needed between).
    forRange(kQueryTile / 8, drawsKeepInvariants(), [&](Value nb) {
      Value blockCol0 = mul(nb, idx(8));
      Value blockRow0 = add(i0, blockCol0);
      Fragment ac = zeros(), dp = zeros();
      for (int64_t ks = 0; ks < kSteps; ++ks) {
        ac = mma(holdKeys ? heldK[ks] : packA(rowsA(keys(k), jw, ks)),
                 rowsAsColumns(queries(q), blockRow0, ks), ac);
        dp = mma(holdKeys ? heldV[ks] : packA(rowsA(keys(v), jw, ks)),
                 rowsAsColumns(queries(dO), blockRow0, ks), dp);
      }
      for (int64_t e = 0; e < 2; ++e) {
        Value ii = add(blockCol0, add(mul(t, idx(2)), idx(e)));
        Value i = add(i0, ii);
        Value iOk = cmp(P::ult, i, qlen);
        Value iSafe = select(iOk, i, zero);
        Value lseI =
            memref::LoadOp::create(b, lse, ValueRange{batchIdx, head, iSafe});
        Value deltaI =
            memref::LoadOp::create(b, delta, ValueRange{batchIdx, head, iSafe});
        VisibleKeys visibleI = visibleKeys(mask, i, klen, iOk);
        for (int64_t rr = 0; rr < 2; ++rr) {
          int64_t n = 2 * rr + e;
          Value jj = add(warpKey0, add(g, idx(8 * rr)));
          Value j = add(j0, jj);
          // BD^T(j, i): X at row ii, column 31 - ii + jj.
          Value bd = memref::LoadOp::create(
              b, xTile, ValueRange{ii, add(sub(idx(kQueryTile - 1), ii), jj)});
          Value sc = arith::MulFOp::create(
              b,
              arith::AddFOp::create(b, arith::AddFOp::create(b, ac[n], ku[rr]),
                                    bd),
              scale);
          Value ok = isVisibleKey(visibleI, j);
          Value p = select(
              ok, math::ExpOp::create(b, arith::SubFOp::create(b, sc, lseI)),
              f32(0.0));
          Value pm = p, dpm = dp[n];
          if (dropatt) {
            Value m = dropattMultiplier(drop, qlen, klen, nHead, i, j, batchIdx,
                                        head);
            pm = arith::MulFOp::create(b, p, m);
            dpm = arith::MulFOp::create(b, dpm, m);
          }
          Value ds = arith::MulFOp::create(
              b,
              arith::MulFOp::create(b, p,
                                    arith::SubFOp::create(b, dpm, deltaI)),
              scale);
          memref::StoreOp::create(b, pm, pTile, ValueRange{jj, ii});
          memref::StoreOp::create(b, ds, dsTile, ValueRange{jj, ii});
        }
      }
    });

    // dv += (P M)^T dO and dk += dS^T q over the tile's 32 queries (two
    // k-steps of 16) as warpgroup products (M = the workgroup's 64 keys, N
    // = its part of d_head) on the staged dO and q: the A fragments are the
    // lane's own entries of the P M and dS tiles.
    SmallVector<Value> next(state);
    SmallVector<Fragment> pas(2), dsas(2);
    for (int64_t ks = 0; ks < 2; ++ks)
      for (int64_t r = 0; r < 4; ++r)
        for (int64_t e = 0; e < 2; ++e) {
          Value jj = add(warpKey0, add(g, idx(8 * (r & 1))));
          Value ii = add(mul(t, idx(2)), idx(16 * ks + e + 8 * (r >> 1)));
          pas[ks].push_back(
              operand(memref::LoadOp::create(b, pTile, ValueRange{jj, ii})));
          Value ds = memref::LoadOp::create(b, dsTile, ValueRange{jj, ii});
          dsas[ks].push_back(operand(ds));
          Value &dsSum = next[8 * dBlocks + (r & 1)];
          dsSum = arith::AddFOp::create(b, dsSum, ds);
        }
    Fragment dvNew =
        warpgroupMma(pas, doTile, ArrayRef<Value>(next).slice(0, 4 * dBlocks));
    Fragment dkNew = warpgroupMma(
        dsas, qTile, ArrayRef<Value>(next).slice(4 * dBlocks, 4 * dBlocks));
    llvm::copy(dvNew, next.begin());
    llvm::copy(dkNew, next.begin() + 4 * dBlocks);
    scf::YieldOp::create(b, next);
  }

  // dv[j, batch, head, d] and dk[j, batch, head, d] = dS^T q + (sum_i
  // dS_ij) u[head, d] for the lane's key rows and columns.
  for (int64_t rr = 0; rr < 2; ++rr) {
    Value j = add(jw, add(g, idx(8 * rr)));
    Value dsRow =
        quadReduce(queryLoop.getResult(8 * dBlocks + rr), /*isMax=*/false);
    for (int64_t db = 0; db < dBlocks; ++db)
      for (int64_t e = 0; e < 2; ++e) {
        Value d = partColumn(add(mul(t, idx(2)), idx(8 * db + e)));
        auto ifIn = scf::IfOp::create(
            b, both(cmp(P::ult, j, klen), cmp(P::ult, d, idx(dHead))), false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifIn.thenBlock());
        int64_t n = 4 * db + 2 * rr + e;
        memref::StoreOp::create(b, queryLoop.getResult(n), dv,
                                ValueRange{j, batchIdx, head, d});
        Value dkj = arith::AddFOp::create(
            b, queryLoop.getResult(4 * dBlocks + n),
            arith::MulFOp::create(
                b, dsRow, memref::LoadOp::create(b, u, ValueRange{head, d})));
        memref::StoreOp::create(b, dkj, dk, ValueRange{j, batchIdx, head, d});
      }
  }
  gpu::ReturnOp::create(b);
}

} // namespace

gpu::GPUFuncOp
mlir::txl::getOrCreateMmaKeyValueGradKernel(ModuleOp module, int64_t dHead,
                                            FloatType operandType, bool dropatt,
                                            FunctionType type) {
  // X, then the P M and dS tiles, rows padded by one column; then the
  // query tile's dO and q as the B operands (K = the 32 queries, N = the
  // workgroup's part of d_head) of dv's and dk's warpgroup products.
  int64_t partBlocks =
      mmaGradPartBlocks(MmaGradKernel::KeyValue, dHead, dropatt);
  return getOrCreateMmaGradKernel(
      module, "kv", dHead, operandType, dropatt, type,
      {{kQueryTile, kWindow + 1},
       {kWarps * kRows, kQueryTile + 1},
       {kWarps * kRows, kQueryTile + 1}},
      [&](gpu::GPUFuncOp func) {
        MmaKeyValueGradBuilder(func, dHead, operandType, dropatt).build();
      },
      {{partBlocks, kQueryTile / 8}, {partBlocks, kQueryTile / 8}});
}

//===----------------------------------------------------------------------===//
// `_q_saved` on tensor cores: d(q + u) and d(q + v)
//===----------------------------------------------------------------------===//
//
// The backward's `_q_saved` kernel (RelAttentionGradToGpu.cpp) at bf16 or
// f16: it reads the forward's row log-sum-exp and output O, writes D_i =
// dO_i · O_i for `_kv` and `_r`, and accumulates over the keys
//   d(q_i + u) = sum_j dS_ij k_j,  d(q_i + v) = sum_j dS_ij r[qlen-1-i+j].
// A workgroup owns 64 queries, i0 + [0, 64), for one (batch, head) column;
// its subgroup w the 16 queries iw = i0 + 16 w, the M of its products (the
// forward kernel's layout). Per key tile of 32, j0 + [0, 32):
//   X = (q + v) r_window^T, 16 × 48 per subgroup (window row w is r row
//     qlen - iw - 16 + j0 + w), into the subgroup's rows of a workgroup
//     tile, read after a barrier as BD(i, j) = X(i - iw, 15 - (i - iw) +
//     (j - j0));
//   per block of 8 keys (a rolled loop), AC = (q + u) k^T and dP = dO v^T,
//     then P = exp(scale (AC + BD) - lse_i) under the decoder mask and dS =
//     scale P (M dP - D_i); dS goes to two workgroup tiles: as computed
//     (read back by the same lane as the A operand of the k product) and
//     skewed, Y(i - iw, 15 - (i - iw) + (j - j0)) = dS_ij, the band of
//     the 16 × 48 window matrix the r product takes as A (outside the
//     band Y stays 0 from the kernel's start: every tile writes the same
//     positions);
//   after a barrier, d(q + u) += dS k (2 k-steps of 16 keys) as a warpgroup
//     product (txl.warpgroup_mma) on the key tile's k, which the workgroup
//     stages once per tile in workgroup memory, and d(q + v) += Y r_window
//     (3 k-steps of 16 window rows; the window differs per subgroup), its
//     B operands from global memory.
// Each output element is summed by one lane in a fixed order: two runs
// give bit-equal gradients.

namespace {

/// Keys per tile of the `_q` walk.
constexpr int64_t kKeyTile = 32;
/// Window rows of one subgroup's X and Y: 16 + 32 - 1, rounded up to 8.
constexpr int64_t kQueryWindow = kRows + kKeyTile;
/// Queries per workgroup.
constexpr int64_t kQueryRows = kWarps * kRows;
/// Up to this padded d_head the q + u, q + v and dO fragments stay in
/// registers for the whole key walk; wider heads reload them per key tile.
constexpr int64_t kHeldQueryWidth = 64;

class MmaQueryGradBuilder : public MmaGradBodyBuilder {
public:
  using MmaGradBodyBuilder::MmaGradBodyBuilder;
  void build();

private:
  /// A fragment of the lane's own positions of `tile` (the subgroup's 16
  /// rows, columns 16 kk ..): what mma's A operand takes.
  Fragment tileFragment(Value tile, Value kk16);

  // Set first by build().
  Value iw, warpRow0;
};

Fragment MmaQueryGradBuilder::tileFragment(Value tile, Value kk16) {
  Fragment frag;
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t e = 0; e < 2; ++e) {
      Value row = add(warpRow0, add(g, idx(8 * (r & 1))));
      Value col = add(kk16, add(mul(t, idx(2)), idx(e + 8 * (r >> 1))));
      frag.push_back(
          operand(memref::LoadOp::create(b, tile, ValueRange{row, col})));
    }
  return frag;
}

void MmaQueryGradBuilder::build() {
  // The `_q_saved` kernel's own arguments: O, d(q + u), d(q + v).
  unpackArguments(3);
  Value out = own[0], dqu = own[1], dqv = own[2];
  Value xTile = func.getWorkgroupAttributions()[0];
  Value dsTile = func.getWorkgroupAttributions()[1];
  Value yTile = func.getWorkgroupAttributions()[2];
  Value kTile = func.getWorkgroupAttributions()[3];
  using P = arith::CmpIPredicate;
  setColumn(nHead);
  Value i0 = mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(kQueryRows));
  setColumnPart(MmaGradKernel::QuerySaved);
  setLane();
  warpRow0 = mul(warp, idx(kRows));
  iw = add(i0, warpRow0);
  DecoderMask mask =
      decoderMask(qlen, klen, memLen, sameLength, i0, kQueryRows);

  // Y outside its band is 0 for the whole walk.
  {
    Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    int64_t columns = kQueryWindow + 1;
    auto loop = scf::ForOp::create(b, tid, idx(kQueryRows * columns),
                                   idx(kWarps * kSubgroupSize));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value n = loop.getInductionVar();
    memref::StoreOp::create(
        b, f32(0.0), yTile,
        ValueRange{arith::DivUIOp::create(b, n, idx(columns)),
                   arith::RemUIOp::create(b, n, idx(columns))});
  }

  // The lane's rows g and g + 8: lse_i, D_i = dO_i · O_i summed over
  // the quad, which its lane t = 0 writes, and the keys the row sees (one
  // unsigned comparison per score in the walk).
  SmallVector<Value> rowLse, rowDelta;
  SmallVector<VisibleKeys> rowKeys;
  {
    SmallVector<Value> rows, rowOk;
    for (int64_t rr = 0; rr < 2; ++rr) {
      rows.push_back(add(iw, add(g, idx(8 * rr))));
      rowOk.push_back(cmp(P::ult, rows.back(), qlen));
      rowKeys.push_back(visibleKeys(mask, rows.back(), klen, rowOk.back()));
    }
    auto loop = scf::ForOp::create(b, t, idx(dHead), idx(4),
                                   ValueRange{f32(0.0), f32(0.0)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value d = loop.getInductionVar();
      SmallVector<Value> next;
      for (int64_t rr = 0; rr < 2; ++rr) {
        SmallVector<Value> at = {select(rowOk[rr], rows[rr], zero), batchIdx,
                                 head, d};
        Value x = arith::MulFOp::create(b, memref::LoadOp::create(b, dO, at),
                                        memref::LoadOp::create(b, out, at));
        next.push_back(
            arith::AddFOp::create(b, loop.getRegionIterArgs()[rr], x));
      }
      scf::YieldOp::create(b, next);
    }
    for (int64_t rr = 0; rr < 2; ++rr) {
      Value dI = quadReduce(loop.getResult(rr), /*isMax=*/false);
      rowDelta.push_back(dI);
      Value iSafe = select(rowOk[rr], rows[rr], zero);
      rowLse.push_back(
          memref::LoadOp::create(b, lse, ValueRange{batchIdx, head, iSafe}));
      // With the columns in parts, every part computes D_i; the first
      // writes it.
      Value writes = both(rowOk[rr], cmp(P::eq, t, zero));
      if (colBase)
        writes = both(writes, cmp(P::eq, colBase, zero));
      auto ifFirst = scf::IfOp::create(b, writes, false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifFirst.thenBlock());
      memref::StoreOp::create(b, dI, delta,
                              ValueRange{batchIdx, head, rows[rr]});
    }
  }

  int64_t kSteps = dPad / 16;
  int64_t dBlocks = partBlocks;
  bool hold = dPad <= kHeldQueryWidth;
  SmallVector<Value> heldQu, heldQv, heldDo;
  if (hold)
    for (int64_t ks = 0; ks < kSteps; ++ks) {
      heldQu.push_back(packA(rowsA(queries(q, u), iw, ks)));
      heldQv.push_back(packA(rowsA(queries(q, vb), iw, ks)));
      heldDo.push_back(packA(rowsA(queries(dO), iw, ks)));
    }

  // Loop state: the d(q + u) accumulators, then d(q + v)'s, dBlocks
  // fragments of 4 each (rows g, g + 8, columns 8 db + 2 t + e).
  SmallVector<Value> init(2 * dBlocks * 4, f32(0.0));
  auto keyLoop =
      scf::ForOp::create(b, mask.jBegin, mask.jEnd, idx(kKeyTile), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(keyLoop.getBody());
    Value j0 = keyLoop.getInductionVar();

    // Every lane is done reading the previous tile's X, dS and Y (and the
    // zeros of Y are stored, on the first tile).
    barrier("reads-done");
    // The workgroup stages the key tile's k, rounded, once: B(j, d) of
    // d(q + u)'s warpgroup product, at [d / 8][j / 8][d % 8][j % 8] (keys
    // from klen on and columns from d_head on are zero). Barriers 2 and 3
    // below order these stores before the product.
    stageOperands({{keys(k), kTile, true}}, j0, kKeyTile, colBase,
                  8 * dBlocks);
    Value rBase = relShiftRow(sub(add(sub(qlen, iw), j0), idx(kRows)));
    forRange(kQueryWindow / 8, [&](Value xb) {
      Value col0 = mul(xb, idx(8));
      Fragment acc = zeros();
      for (int64_t ks = 0; ks < kSteps; ++ks)
        acc = mma(hold ? heldQv[ks] : packA(rowsA(queries(q, vb), iw, ks)),
                  rowsAsColumns(posKeys(), add(rBase, col0), ks), acc);
      storeC(acc, xTile, warpRow0, col0);
    });
    // The subgroup's X is complete before its lanes read the skewed
    // entries.
    barrier("stores-done");

    // Per block of 8 keys: AC, dP, then the lane's 4 pairs' dS into the
    // dS tile (its own positions) and Y (skewed).
    forRange(kKeyTile / 8, drawsKeepInvariants(), [&](Value nb) {
      Value col0 = mul(nb, idx(8));
      Value jb = add(j0, col0);
      Fragment ac = zeros(), dp = zeros();
      for (int64_t ks = 0; ks < kSteps; ++ks) {
        ac = mma(hold ? heldQu[ks] : packA(rowsA(queries(q, u), iw, ks)),
                 rowsAsColumns(keys(k), jb, ks), ac);
        dp = mma(hold ? heldDo[ks] : packA(rowsA(queries(dO), iw, ks)),
                 rowsAsColumns(keys(v), jb, ks), dp);
      }
      for (int64_t rr = 0; rr < 2; ++rr) {
        Value ii = add(g, idx(8 * rr));
        Value i = add(iw, ii);
        for (int64_t e = 0; e < 2; ++e) {
          int64_t n = 2 * rr + e;
          Value jj = add(col0, add(mul(t, idx(2)), idx(e)));
          Value j = add(j0, jj);
          Value skew = add(sub(idx(kRows - 1), ii), jj);
          Value bd = memref::LoadOp::create(
              b, xTile, ValueRange{add(warpRow0, ii), skew});
          Value sc = arith::MulFOp::create(
              b, arith::AddFOp::create(b, ac[n], bd), scale);
          Value ok = isVisibleKey(rowKeys[rr], j);
          Value p = select(
              ok,
              math::ExpOp::create(b, arith::SubFOp::create(b, sc, rowLse[rr])),
              f32(0.0));
          Value dpm = dp[n];
          if (dropatt)
            dpm =
                arith::MulFOp::create(b, dpm,
                                      dropattMultiplier(drop, qlen, klen, nHead,
                                                        i, j, batchIdx, head));
          Value ds = arith::MulFOp::create(
              b,
              arith::MulFOp::create(
                  b, p, arith::SubFOp::create(b, dpm, rowDelta[rr])),
              scale);
          memref::StoreOp::create(b, ds, dsTile,
                                  ValueRange{add(warpRow0, ii), jj});
          memref::StoreOp::create(b, ds, yTile,
                                  ValueRange{add(warpRow0, ii), skew});
        }
      }
    });
    // Y (written by other lanes of the subgroup) is complete.
    barrier("ds-stored");

    // d(q + u) += dS k over the tile's keys (two k-steps of 16) as a
    // warpgroup product (M = the workgroup's 64 queries, N = its part of
    // d_head) on the staged k, the A fragments the subgroup's rows of the
    // dS tile; then d(q + v) += Y r_window over the subgroup's own 48
    // window rows in three k-steps, a rolled loop carrying the
    // accumulators.
    SmallVector<Value> state(keyLoop.getRegionIterArgs());
    {
      SmallVector<Fragment> dsas;
      for (int64_t ks = 0; ks < kKeyTile / 16; ++ks)
        dsas.push_back(tileFragment(dsTile, idx(16 * ks)));
      Fragment dquNew = warpgroupMma(
          dsas, kTile, ArrayRef<Value>(state).slice(0, 4 * dBlocks));
      llvm::copy(dquNew, state.begin());
    }
    auto accumulate = [&](int64_t steps, int64_t first, Value tile,
                          function_ref<Fragment(Value, int64_t)> right) {
      scf::ForOp loop =
          loopOver(steps, ValueRange(state).slice(first, 4 * dBlocks));
      OpBuilder::InsertionGuard loopGuard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value kk16 = mul(loop.getInductionVar(), idx(16));
      Value a = packA(tileFragment(tile, kk16));
      SmallVector<Value> next;
      for (int64_t db = 0; db < dBlocks; ++db) {
        Fragment acc(loop.getRegionIterArgs().slice(4 * db, 4));
        llvm::append_range(next, mma(a, right(kk16, db), acc));
      }
      scf::YieldOp::create(b, next);
      llvm::copy(loop.getResults(), state.begin() + first);
    };
    accumulate(kQueryWindow / 16, 4 * dBlocks, yTile,
               [&](Value kk16, int64_t db) {
                 return rowsB(posKeys(), add(rBase, kk16), db, colBase);
               });
    scf::YieldOp::create(b, state);
  }

  // d(q + u)[i, batch, head, d] and d(q + v)[i, batch, head, d] for the
  // lane's rows and columns.
  for (int64_t rr = 0; rr < 2; ++rr) {
    Value i = add(iw, add(g, idx(8 * rr)));
    for (int64_t db = 0; db < dBlocks; ++db)
      for (int64_t e = 0; e < 2; ++e) {
        Value d = partColumn(add(mul(t, idx(2)), idx(8 * db + e)));
        auto ifIn = scf::IfOp::create(
            b, both(cmp(P::ult, i, qlen), cmp(P::ult, d, idx(dHead))), false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifIn.thenBlock());
        int64_t n = 4 * db + 2 * rr + e;
        memref::StoreOp::create(b, keyLoop.getResult(n), dqu,
                                ValueRange{i, batchIdx, head, d});
        memref::StoreOp::create(b, keyLoop.getResult(4 * dBlocks + n), dqv,
                                ValueRange{i, batchIdx, head, d});
      }
  }
  gpu::ReturnOp::create(b);
}

} // namespace

gpu::GPUFuncOp mlir::txl::getOrCreateMmaQueryGradKernel(ModuleOp module,
                                                        int64_t dHead,
                                                        FloatType operandType,
                                                        bool dropatt,
                                                        FunctionType type) {
  // X, dS and Y, rows padded by one column; then the key tile's k as the
  // B operand (K = the 32 keys, N = the workgroup's part of d_head) of
  // d(q + u)'s warpgroup product.
  int64_t partBlocks =
      mmaGradPartBlocks(MmaGradKernel::QuerySaved, dHead, dropatt);
  return getOrCreateMmaGradKernel(
      module, "q_saved", dHead, operandType, dropatt, type,
      {{kQueryRows, kQueryWindow + 1},
       {kQueryRows, kKeyTile + 1},
       {kQueryRows, kQueryWindow + 1}},
      [&](gpu::GPUFuncOp func) {
        MmaQueryGradBuilder(func, dHead, operandType, dropatt).build();
      },
      {{partBlocks, kKeyTile / 8}});
}

//===----------------------------------------------------------------------===//
// `_r` on tensor cores: dr
//===----------------------------------------------------------------------===//
//
// The backward's `_r` kernel (RelAttentionGradToGpu.cpp) at bf16 or f16:
//   dr_m = sum_{b, i} dS_{i, j(m, i)} (q_i + v),  j(m, i) = m - qlen + 1 + i,
// the pairs whose positional term read r row m. A workgroup owns 64 r
// rows, m0 + [0, 64), for one head; its subgroup w the 16 rows mw = m0 +
// 16 w, the M of its products. It walks the batch and, per batch column,
// the queries in tiles of 32, i0 + [0, 32); the pairs of (m, i) in the
// tile read the 64 + 32 - 1 keys of a window, window row w being key
// jBase + w, jBase = m0 - qlen + 1 + i0. Per query tile:
//   Z = (q + u) k_window^T and V = dO v_window^T, 32 queries × 96 window
//     rows each, 2 × 12 blocks of 8, six of each per subgroup, into two
//     workgroup tiles; after a barrier each lane reads AC^T(m, i) =
//     Z(i - i0, (m - m0) + (i - i0)) and dP^T(m, i) likewise from V: the
//     rel-shift as index arithmetic, the other way round from `_q`'s;
//   BD^T = r_mw (q + v)^T, 16 rows × 32 queries per subgroup, the r
//     fragments held in registers for the whole kernel (up to d_head 48);
//   per block of 8 queries (a rolled loop), P^T = exp(scale (AC^T + BD^T)
//     - lse_i) under the decoder mask and dS^T = scale P^T (M dP^T - D_i),
//     stored to a workgroup tile at the positions the same lane reads back
//     as the A operand of dr += dS^T (q + v), a warpgroup product
//     (txl.warpgroup_mma) for the workgroup's 64 r rows over the tile's
//     32 queries, on the tile's q + v, which the workgroup stages once in
//     workgroup memory.
// Each dr element is summed by one lane over the batch and the query tiles
// in a fixed order: two runs give bit-equal gradients.

namespace {

/// r rows per workgroup.
constexpr int64_t kPosRows = kWarps * kRows;
/// Key window rows of a (64 r rows, 32 queries) tile pair: 64 + 32 - 1,
/// rounded up to n-blocks of 8.
constexpr int64_t kPosWindow = kPosRows + kQueryTile;
/// Up to this padded d_head the r fragments stay in registers for the
/// whole kernel: held at d_head 64 too, they made ptxas spill (40 bytes at
/// sm_90a).
constexpr int64_t kHeldPosWidth = 48;

class MmaPosGradBuilder : public MmaGradBodyBuilder {
public:
  using MmaGradBodyBuilder::MmaGradBodyBuilder;
  void build();
};

void MmaPosGradBuilder::build() {
  // The `_r` kernel's own argument: dr.
  unpackArguments(1, /*withBatch=*/true);
  Value dr = own[0];
  Value zTile = func.getWorkgroupAttributions()[0];
  Value vTile = func.getWorkgroupAttributions()[1];
  Value dsTile = func.getWorkgroupAttributions()[2];
  Value qvTile = func.getWorkgroupAttributions()[3];
  using P = arith::CmpIPredicate;
  head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value m0 = mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(kPosRows));
  setLane();
  Value warpRow0 = mul(warp, idx(kRows));
  Value mw = add(m0, warpRow0);
  // Z's and V's m-block (16 queries) and first n-block of this subgroup.
  Value zRow0 = mul(arith::RemUIOp::create(b, warp, idx(2)), idx(16));
  Value zBlock0 =
      mul(arith::DivUIOp::create(b, warp, idx(2)), idx(kWindowBlocksPerWarp));
  DecoderMask mask = decoderMask(qlen, klen, memLen, sameLength, zero, 0);

  int64_t kSteps = dPad / 16;
  setColumnPart(MmaGradKernel::PosKey);
  int64_t dBlocks = partBlocks;
  // The subgroup's r rows as A fragments, held for the whole kernel up to
  // kHeldPosWidth, else loaded per block of BD^T.
  bool hold = dPad <= kHeldPosWidth;
  auto rFragment = [&](int64_t ks) { return packA(rowsA(posKeys(), mw, ks)); };
  SmallVector<Value> heldR;
  if (hold)
    for (int64_t ks = 0; ks < kSteps; ++ks)
      heldR.push_back(rFragment(ks));

  // r row m pairs query i with key j = m - qlen + 1 + i, a key only when
  // j >= 0: queries before qlen - m0 - 64 pair with none of the tile.
  Value iBegin =
      arith::MaxSIOp::create(b, zero, sub(sub(qlen, m0), idx(kPosRows)));
  SmallVector<Value> init(dBlocks * 4, f32(0.0));
  auto batchLoop = scf::ForOp::create(b, zero, batch, idx(1), init);
  {
    OpBuilder::InsertionGuard batchGuard(b);
    b.setInsertionPointToStart(batchLoop.getBody());
    batchIdx = batchLoop.getInductionVar();
    auto queryLoop = scf::ForOp::create(b, iBegin, qlen, idx(kQueryTile),
                                        batchLoop.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(queryLoop.getBody());
      Value i0 = queryLoop.getInductionVar();

      // Every lane is done reading the previous tile's Z and V.
      barrier("reads-done");
      // The workgroup stages the tile's q + v, rounded, once: B(i, d) of
      // dr's warpgroup product, at [d / 8][i / 8][d % 8][i % 8] (queries
      // from qlen on and columns from d_head on are zero). Barrier 2 below
      // orders these stores before the product.
      stageOperands({{queries(q, vb), qvTile, true}}, i0, kQueryTile, colBase,
                    8 * dBlocks);
      Value jBase = relShiftRow(add(sub(m0, qlen), add(i0, idx(1))));
      SmallVector<Value> qus, dos;
      for (int64_t ks = 0; ks < kSteps; ++ks) {
        qus.push_back(packA(rowsA(queries(q, u), add(i0, zRow0), ks)));
        dos.push_back(packA(rowsA(queries(dO), add(i0, zRow0), ks)));
      }
      forRange(kWindowBlocksPerWarp, [&](Value nbLocal) {
        Value col0 = mul(add(zBlock0, nbLocal), idx(8));
        Fragment z = zeros(), vv = zeros();
        for (int64_t ks = 0; ks < kSteps; ++ks) {
          z = mma(qus[ks], rowsAsColumns(keys(k), add(jBase, col0), ks), z);
          vv = mma(dos[ks], rowsAsColumns(keys(v), add(jBase, col0), ks), vv);
        }
        storeC(z, zTile, zRow0, col0);
        storeC(vv, vTile, zRow0, col0);
      });
      // Every subgroup's Z and V blocks are complete before the lanes read
      // the skewed entries.
      barrier("stores-done");

      // Per block of 8 queries (a rolled loop: unrolled, ptxas hoists every
      // load of the tile ahead of its products and spills): BD^T, then for
      // the lane's 4 pairs dS^T into the subgroup's rows of a workgroup
      // tile, at the positions the same lane reads back as A fragments
      // below (no barrier is needed between).
      forRange(kQueryTile / 8, [&](Value nb) {
        Value blockCol0 = mul(nb, idx(8));
        Fragment bd = zeros();
        for (int64_t ks = 0; ks < kSteps; ++ks)
          bd = mma(hold ? heldR[ks] : rFragment(ks),
                   rowsAsColumns(queries(q, vb), add(i0, blockCol0), ks), bd);
        for (int64_t e = 0; e < 2; ++e) {
          Value ii = add(blockCol0, add(mul(t, idx(2)), idx(e)));
          Value i = add(i0, ii);
          Value iOk = cmp(P::ult, i, qlen);
          Value iSafe = select(iOk, i, zero);
          Value lseI =
              memref::LoadOp::create(b, lse, ValueRange{batchIdx, head, iSafe});
          Value deltaI = memref::LoadOp::create(
              b, delta, ValueRange{batchIdx, head, iSafe});
          VisibleKeys visibleI = visibleKeys(mask, i, klen, iOk);
          for (int64_t rr = 0; rr < 2; ++rr) {
            Value mm = add(warpRow0, add(g, idx(8 * rr)));
            Value m = add(m0, mm);
            // Window row of key j(m, i): (m - m0) + (i - i0).
            SmallVector<Value> at = {ii, add(mm, ii)};
            Value ac = memref::LoadOp::create(b, zTile, at);
            Value dp = memref::LoadOp::create(b, vTile, at);
            Value j = add(jBase, add(mm, ii));
            Value sc = arith::MulFOp::create(
                b, arith::AddFOp::create(b, ac, bd[2 * rr + e]), scale);
            Value ok = both(cmp(P::ult, m, klen), isVisibleKey(visibleI, j));
            Value p = select(
                ok, math::ExpOp::create(b, arith::SubFOp::create(b, sc, lseI)),
                f32(0.0));
            if (dropatt)
              dp = arith::MulFOp::create(b, dp,
                                         dropattMultiplier(drop, qlen, klen,
                                                           nHead, i, j,
                                                           batchIdx, head));
            Value ds = arith::MulFOp::create(
                b,
                arith::MulFOp::create(b, p,
                                      arith::SubFOp::create(b, dp, deltaI)),
                scale);
            memref::StoreOp::create(b, ds, dsTile, ValueRange{mm, ii});
          }
        }
      });

      // dr += dS^T (q + v) over the tile's 32 queries (two k-steps of 16)
      // as a warpgroup product (M = the workgroup's 64 r rows, N = its part
      // of d_head) on the staged q + v: the A fragments are the lane's own
      // entries of the dS^T tile.
      SmallVector<Fragment> dsas(kQueryTile / 16);
      for (int64_t ks = 0; ks < kQueryTile / 16; ++ks)
        for (int64_t rr = 0; rr < 4; ++rr)
          for (int64_t e = 0; e < 2; ++e) {
            Value mm = add(warpRow0, add(g, idx(8 * (rr & 1))));
            Value ii = add(mul(t, idx(2)), idx(16 * ks + e + 8 * (rr >> 1)));
            dsas[ks].push_back(
                operand(memref::LoadOp::create(b, dsTile, ValueRange{mm, ii})));
          }
      SmallVector<Value> acc(queryLoop.getRegionIterArgs());
      scf::YieldOp::create(b, warpgroupMma(dsas, qvTile, acc));
    }
    scf::YieldOp::create(b, queryLoop.getResults());
  }

  // dr[m, head, d] for the lane's rows and columns.
  for (int64_t rr = 0; rr < 2; ++rr) {
    Value m = add(mw, add(g, idx(8 * rr)));
    for (int64_t db = 0; db < dBlocks; ++db)
      for (int64_t e = 0; e < 2; ++e) {
        Value d = partColumn(add(mul(t, idx(2)), idx(8 * db + e)));
        auto ifIn = scf::IfOp::create(
            b, both(cmp(P::ult, m, klen), cmp(P::ult, d, idx(dHead))), false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifIn.thenBlock());
        memref::StoreOp::create(b, batchLoop.getResult(4 * db + 2 * rr + e), dr,
                                ValueRange{m, head, d});
      }
  }
  gpu::ReturnOp::create(b);
}

} // namespace

gpu::GPUFuncOp mlir::txl::getOrCreateMmaPosGradKernel(ModuleOp module,
                                                      int64_t dHead,
                                                      FloatType operandType,
                                                      bool dropatt,
                                                      FunctionType type) {
  // Z, V and dS^T, rows padded by one column; then the query tile's q + v
  // as the B operand (K = the 32 queries, N = the workgroup's part of
  // d_head) of dr's warpgroup product.
  int64_t partBlocks = mmaGradPartBlocks(MmaGradKernel::PosKey, dHead, dropatt);
  return getOrCreateMmaGradKernel(
      module, "r", dHead, operandType, dropatt, type,
      {{kQueryTile, kPosWindow + 1},
       {kQueryTile, kPosWindow + 1},
       {kPosRows, kQueryTile + 1}},
      [&](gpu::GPUFuncOp func) {
        MmaPosGradBuilder(func, dHead, operandType, dropatt).build();
      },
      {{partBlocks, kQueryTile / 8}});
}
