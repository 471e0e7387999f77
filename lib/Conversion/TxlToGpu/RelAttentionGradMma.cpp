//===- RelAttentionGradMma.cpp - dk and dv on tensor cores ----------------===//
//
// `--precision=bf16`'s form of the fused attention backward's `_kv` kernel
// (RelAttentionGradToGpu.cpp): dk and dv of paper §3.3's attention,
// flash-attention-2 style (Dao 2023, Algorithm 2), with every product on
// warp-level tensor cores (nvgpu.mma.sync m16n8k16, bf16 operands, f32
// accumulators; the register layout is MmaBuilder.h's). The probabilities
// are recomputed from q, k, r, the biases and the rows' log-sum-exp and
// D_i that `_q` writes; nothing of qlen × klen reaches global memory.
//
// A workgroup owns 64 keys, j0 + [0, 64), for one (batch, head) column; its
// subgroup w the 16 keys jw = j0 + 16 w + [0, 16), the M of its products.
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
//   per k-step of 16 queries, dv_jw += (P M)^T dO and dk_jw += dS^T q, the
//     B operands (16 queries × 8 columns) from global memory.
// dk then gets (sum_i dS_ij) u at the store. Each key row's dk and dv are
// summed in one lane quad in a fixed order: no atomics, and two runs give
// bit-equal gradients.
//
//===----------------------------------------------------------------------===//

#include "KernelModule.h"
#include "MmaBuilder.h"

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

class MmaKeyValueGradBuilder : public MmaBodyBuilder {
public:
  MmaKeyValueGradBuilder(gpu::GPUFuncOp func, int64_t dHead,
                         FloatType operandType, bool dropatt,
                         const KernelTestHooks &hooks)
      : MmaBodyBuilder(func, dHead, operandType), dropatt(dropatt),
        hooks(hooks), func(func) {}

  void build();

private:
  /// The A fragment of `mem` (k or v) for the subgroup's 16 keys, d_head
  /// k-step `ks`.
  Fragment keyFragment(Value mem, int64_t ks);
  /// The A fragment of q + `bias` for the 16 queries from `row0`, d_head
  /// k-step `ks`.
  Fragment queryFragment(Value row0, int64_t ks, Value bias);
  /// The B fragment (d_head k-step `ks` × 8 queries from `row0`) of
  /// `mem` (q or dO): the transposed query-side operand of AC^T and dP^T.
  Fragment queryColumns(Value mem, Value row0, int64_t ks);
  /// The B fragment (16 queries from `row0` × d_head columns 8 db ..) of
  /// `mem` (dO or q): the right operand of dv and dk.
  Fragment queryRows(Value mem, Value row0, int64_t db);
  /// `mem[i, batch, head, d]`, 0 for i >= qlen, + bias[head, d] when given.
  Value queryAt(Value mem, Value bias, Value i, Value d);

  /// The kernel draws dropatt (its Dropatt arguments after scale).
  bool dropatt;
  KernelTestHooks hooks;
  gpu::GPUFuncOp func;
  // Set first by build().
  Value q, k, qlen, klen, jw;
};

Value MmaKeyValueGradBuilder::queryAt(Value mem, Value bias, Value i, Value d) {
  Value x = loadOrZero(mem, {i, batchIdx, head},
                       cmp(arith::CmpIPredicate::ult, i, qlen), d);
  if (!bias)
    return x;
  Value bi = loadOrZero(bias, {head}, arith::ConstantIntOp::create(b, 1, 1), d);
  return arith::AddFOp::create(b, x, bi);
}

Fragment MmaKeyValueGradBuilder::keyFragment(Value mem, int64_t ks) {
  Fragment frag;
  for (int64_t r = 0; r < 4; ++r) {
    Value j = add(jw, add(g, idx(8 * (r & 1))));
    Value jOk = cmp(arith::CmpIPredicate::ult, j, klen);
    for (int64_t e = 0; e < 2; ++e) {
      Value d = add(mul(t, idx(2)), idx(ks * 16 + e + 8 * (r >> 1)));
      frag.push_back(operand(loadOrZero(mem, {j, batchIdx, head}, jOk, d)));
    }
  }
  return frag;
}

Fragment MmaKeyValueGradBuilder::queryFragment(Value row0, int64_t ks,
                                               Value bias) {
  Fragment frag;
  for (int64_t r = 0; r < 4; ++r) {
    Value i = add(row0, add(g, idx(8 * (r & 1))));
    for (int64_t e = 0; e < 2; ++e) {
      Value d = add(mul(t, idx(2)), idx(ks * 16 + e + 8 * (r >> 1)));
      frag.push_back(operand(queryAt(q, bias, i, d)));
    }
  }
  return frag;
}

Fragment MmaKeyValueGradBuilder::queryColumns(Value mem, Value row0,
                                              int64_t ks) {
  Fragment frag;
  Value i = add(row0, g);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t e = 0; e < 2; ++e) {
      Value d = add(mul(t, idx(2)), idx(ks * 16 + e + 8 * r));
      frag.push_back(operand(queryAt(mem, Value(), i, d)));
    }
  return frag;
}

Fragment MmaKeyValueGradBuilder::queryRows(Value mem, Value row0, int64_t db) {
  Fragment frag;
  Value d = add(g, idx(8 * db));
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t e = 0; e < 2; ++e) {
      Value i = add(row0, add(mul(t, idx(2)), idx(e + 8 * r)));
      frag.push_back(operand(queryAt(mem, Value(), i, d)));
    }
  return frag;
}

void MmaKeyValueGradBuilder::build() {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  // The `_kv` kernel's arguments (RelAttentionGradToGpu.cpp).
  Value dO = entry.getArgument(0);
  q = entry.getArgument(1);
  k = entry.getArgument(2);
  Value v = entry.getArgument(3), r = entry.getArgument(4),
        u = entry.getArgument(5), vb = entry.getArgument(6),
        lse = entry.getArgument(7), delta = entry.getArgument(8),
        dk = entry.getArgument(9), dv = entry.getArgument(10),
        memLen = entry.getArgument(11), sameLength = entry.getArgument(12),
        scale = entry.getArgument(13);
  Dropatt drop{};
  if (dropatt)
    drop = {entry.getArgument(14), entry.getArgument(15),
            entry.getArgument(16), entry.getArgument(17),
            entry.getArgument(18), entry.getArgument(19)};
  Value xTile = func.getWorkgroupAttributions()[0];
  Value pTile = func.getWorkgroupAttributions()[1];
  Value dsTile = func.getWorkgroupAttributions()[2];

  using P = arith::CmpIPredicate;
  Value zero = idx(0);
  qlen = memref::DimOp::create(b, q, 0);
  Value nHead = memref::DimOp::create(b, q, 2);
  klen = memref::DimOp::create(b, k, 0);
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
  int64_t dBlocks = dPad / 8;
  bool holdKeys = dPad <= kHeldKeyWidth;
  SmallVector<Value> heldK, heldV;
  if (holdKeys)
    for (int64_t ks = 0; ks < kSteps; ++ks) {
      heldK.push_back(packA(keyFragment(k, ks)));
      heldV.push_back(packA(keyFragment(v, ks)));
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
      Value j = add(jw, add(g, idx(8 * rr)));
      Value kd = loadOrZero(k, {j, batchIdx, head}, cmp(P::ult, j, klen), d);
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
    if (hooks.dropBarrier != 1)
      gpu::BarrierOp::create(b);
    // X: this subgroup's 6 blocks of 8 window rows for its 16 queries;
    // window rows outside [0, klen) only serve masked pairs and read as
    // zero.
    Value rBase = add(sub(add(sub(qlen, i0), j0), idx(kQueryTile)),
                      idx(hooks.relShiftOffset));
    SmallVector<Fragment> qvs;
    for (int64_t ks = 0; ks < kSteps; ++ks)
      qvs.push_back(queryFragment(add(i0, xRow0), ks, vb));
    forRange(kWindowBlocksPerWarp, [&](Value nbLocal) {
      Value col0 = mul(add(xBlock0, nbLocal), idx(8));
      Value p = add(rBase, add(col0, g));
      Value pOk = both(cmp(P::sge, p, zero), cmp(P::slt, p, klen));
      Fragment acc = zeros();
      for (int64_t ks = 0; ks < kSteps; ++ks) {
        Fragment rf;
        for (int64_t rr = 0; rr < 2; ++rr)
          for (int64_t e = 0; e < 2; ++e) {
            Value d = add(mul(t, idx(2)), idx(ks * 16 + e + 8 * rr));
            rf.push_back(operand(loadOrZero(r, {p, head}, pOk, d)));
          }
        acc = mma(qvs[ks], rf, acc);
      }
      for (int64_t rr = 0; rr < 2; ++rr)
        for (int64_t e = 0; e < 2; ++e)
          memref::StoreOp::create(
              b, acc[2 * rr + e], xTile,
              ValueRange{add(xRow0, add(g, idx(8 * rr))),
                         add(col0, add(mul(t, idx(2)), idx(e)))});
    });
    // Every subgroup's X blocks are complete before the lanes read the
    // skewed entries.
    if (hooks.dropBarrier != 2)
      gpu::BarrierOp::create(b);

    // Per n-block of 8 queries (a rolled loop: unrolled, every load of the
    // tile is hoisted ahead of its products and ptxas spills): AC^T and
    // dP^T, then for the lane's 4 pairs P M and dS into the subgroup's rows
    // of two workgroup tiles, at the positions the lane itself reads back
    // as A fragments below (no barrier is needed between).
    forRange(kQueryTile / 8, [&](Value nb) {
      Value blockCol0 = mul(nb, idx(8));
      Value blockRow0 = add(i0, blockCol0);
      Fragment ac = zeros(), dp = zeros();
      for (int64_t ks = 0; ks < kSteps; ++ks) {
        ac = mma(holdKeys ? heldK[ks] : packA(keyFragment(k, ks)),
                 queryColumns(q, blockRow0, ks), ac);
        dp = mma(holdKeys ? heldV[ks] : packA(keyFragment(v, ks)),
                 queryColumns(dO, blockRow0, ks), dp);
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
          Value ok = both(both(iOk, cmp(P::ult, j, klen)), visible(mask, i, j));
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

    // dv += (P M)^T dO and dk += dS^T q over the tile's queries in
    // two k-steps of 16, a rolled loop carrying the accumulators: the A
    // fragments are the lane's own entries of the P M and dS tiles.
    scf::ForOp kLoop = loopOver(2, state);
    {
      OpBuilder::InsertionGuard kGuard(b);
      b.setInsertionPointToStart(kLoop.getBody());
      Value kk16 = mul(kLoop.getInductionVar(), idx(16));
      SmallVector<Value> next(kLoop.getRegionIterArgs());
      Fragment pa, dsa;
      for (int64_t r = 0; r < 4; ++r)
        for (int64_t e = 0; e < 2; ++e) {
          Value jj = add(warpKey0, add(g, idx(8 * (r & 1))));
          Value ii = add(kk16, add(mul(t, idx(2)), idx(e + 8 * (r >> 1))));
          pa.push_back(
              operand(memref::LoadOp::create(b, pTile, ValueRange{jj, ii})));
          Value ds = memref::LoadOp::create(b, dsTile, ValueRange{jj, ii});
          dsa.push_back(operand(ds));
          Value &dsSum = next[8 * dBlocks + (r & 1)];
          dsSum = arith::AddFOp::create(b, dsSum, ds);
        }
      Value row0 = add(i0, kk16);
      for (int64_t db = 0; db < dBlocks; ++db) {
        MutableArrayRef<Value> dvAcc(next.data() + 4 * db, 4);
        MutableArrayRef<Value> dkAcc(next.data() + 4 * (dBlocks + db), 4);
        Fragment dvNew = mma(pa, queryRows(dO, row0, db),
                             Fragment(dvAcc.begin(), dvAcc.end()));
        Fragment dkNew = mma(dsa, queryRows(q, row0, db),
                             Fragment(dkAcc.begin(), dkAcc.end()));
        llvm::copy(dvNew, dvAcc.begin());
        llvm::copy(dkNew, dkAcc.begin());
      }
      scf::YieldOp::create(b, next);
    }
    scf::YieldOp::create(b, kLoop.getResults());
  }

  // dv[j, batch, head, d] and dk[j, batch, head, d] = dS^T q + (sum_i
  // dS_ij) u[head, d] for the lane's key rows and columns.
  for (int64_t rr = 0; rr < 2; ++rr) {
    Value j = add(jw, add(g, idx(8 * rr)));
    Value dsRow =
        quadReduce(queryLoop.getResult(8 * dBlocks + rr), /*isMax=*/false);
    for (int64_t db = 0; db < dBlocks; ++db)
      for (int64_t e = 0; e < 2; ++e) {
        Value d = add(mul(t, idx(2)), idx(8 * db + e));
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

gpu::GPUFuncOp mlir::txl::getOrCreateMmaKeyValueGradKernel(
    ModuleOp module, int64_t dHead, FloatType operandType, bool dropatt,
    FunctionType type, const KernelTestHooks &hooks) {
  assert((operandType.isBF16() || operandType.isF16()) &&
         "mma.sync m16n8k16 takes bf16 or f16 operands");
  std::string name = std::string("rel_attention_grad_kv_") +
                     (operandType.isBF16() ? "bf16" : "f16") +
                     (dropatt ? "_dropatt_d" : "_d") + std::to_string(dHead);
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  if (auto existing = kernels.lookupSymbol<gpu::GPUFuncOp>(name))
    return existing;
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  auto xTile =
      MemRefType::get({kQueryTile, kWindow + 1}, b.getF32Type(),
                      MemRefLayoutAttrInterface{}, b.getI64IntegerAttr(3));
  auto pairTile =
      MemRefType::get({kWarps * kRows, kQueryTile + 1}, b.getF32Type(),
                      MemRefLayoutAttrInterface{}, b.getI64IntegerAttr(3));
  auto func = gpu::GPUFuncOp::create(b, kernels.getLoc(), name, type,
                                     TypeRange{xTile, pairTile, pairTile});
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({int32_t(kWarps * kSubgroupSize), 1, 1}));
  func->setAttr("nvvm.maxnreg", b.getI32IntegerAttr(kMaxRegisters));
  MmaKeyValueGradBuilder(func, dHead, operandType, dropatt, hooks).build();
  return func;
}
