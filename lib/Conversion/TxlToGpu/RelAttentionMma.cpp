//===- RelAttentionMma.cpp - the tensor-core attention kernel -------------===//
//
// `--precision=bf16`'s and `--precision=fp16`'s form of the fused relative
// attention (paper §3.3): the same flash-style walk as the f32 kernel
// (RelAttentionToGpu.cpp), with its three products on tensor cores:
// warp-level nvgpu.mma.sync m16n8k16, bf16 or f16 operands, f32 accumulators
// (FlashAttention-2's register layout, Dao 2023 §3.1).
//
// A workgroup has 4 subgroups of 32 (one warpgroup); subgroup w owns 16
// query rows, iw = i0 + 16 w, and walks the keys in tiles of Bk = 32. Per
// key tile the workgroup stages the tile's K and V, rounded, in
// workgroup memory as the B operands of two warpgroup products
// (txl.warpgroup_mma: wgmma on sm_90a, each subgroup's mma.sync
// elsewhere), AC and P·V, for the 64 rows at once, and (d_head up to 128,
// padded with zero columns to 32, 64 or 128: forwardPad) the 96 rows of r
// its subgroups' windows span, whence their X products read their B
// fragments. At those widths key, value and
// pos_key come packed in the operand type by rel_attention_pack_<type>_d<d>
// (rounded, value transposed, klen padded to the key tile with zeros), so
// that every tile stages by asynchronous 16-byte copies (cp.async), the r
// window in a ring of 128 rows of which a tile copies only the 32 its
// window adds, K into two buffers by the tile's parity: a tile issues the
// next tile's copies after its one barrier, and they are in flight during
// its products (the copies of the walk's first tile before the walk); its
// AC is asynchronous (txl.warpgroup_mma async), in flight during X's
// products. At 32 and 64 V takes three buffers, by the tile's index mod 3,
// and the previous tile's P·V is issued after AC, also in flight, AC
// waited for with P·V left in flight, P·V before O is scaled
// (FlashAttention-3's overlap, Shah et al. 2024 §3.2), the last tile's
// P·V after the walk; at 128 V takes two, by parity, and a tile's P·V is
// its own (carrying its probabilities' 16 registers spilled on sm_80:
// carriesPv). Wider heads (padded to a multiple of 16) stage the
// walk's whole key tiles' f32 rows in rolled loops between two barriers,
// and the tail tile, where the keys end inside one, checks them.
// Subgroup w forms
//   AC = (q + u) k^T            16 × 32, 4 n-blocks of 8 keys
//   X  = (q + v) r_window^T     16 × 48, the 16 + 32 - 1 rows of r that the
//                               (16 rows, 32 keys) block reads, row w of the
//                               window being r row qlen - iw - 16 + j0 + w
// over d_head in k-steps of 16 (d_head padded with zeros to a multiple of
// 16). BD(i, j) = X(i - iw, 15 - (i - iw) + (j - j0)) is the rel-shift as
// index arithmetic: X goes through the subgroup's own rows of a workgroup
// tile (16 × 48) and, after a barrier, every lane reads back the skewed X
// entries of its own accumulator positions; AC stays in the registers of
// the lane's positions.
// Masks (one 32-bit unsigned comparison per score against bounds set per row
// and tile, skipped on the interior tiles that every row of the subgroup
// sees whole), online softmax and P·V then follow the f32 kernel, P entering
// the P·V product as the A operand straight from the score accumulators'
// registers.
// As the f32 kernel, it may walk only the grid's z-th part of the keys and
// write that part's rows and log-sum-exps for rel_attention_combine, and
// its lse form writes each row's log-sum-exp for the backward.
//
// The products' register layout is MmaBuilder.h's: P enters P·V as the A
// operand straight from the score accumulators' registers.
//
//===----------------------------------------------------------------------===//

#include "MmaBuilder.h"
#include "txl/Conversion/KernelModule.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "txl/IR/TxlOps.h"

using namespace mlir;
using namespace mlir::txl;

Value MmaBodyBuilder::loadOrZero(Value memref, SmallVector<Value> rowIndices,
                                 Value rowOk, Value d) {
  Value ok = rowOk;
  if (dPad != dHead) {
    ok = both(ok, cmp(arith::CmpIPredicate::ult, d, idx(dHead)));
    d = arith::MinUIOp::create(b, d, idx(dHead - 1));
  }
  Value zero = idx(0);
  for (Value &index : rowIndices)
    index = select(rowOk, index, zero);
  rowIndices.push_back(d);
  Value x = memref::LoadOp::create(b, memref, rowIndices);
  return select(ok, x, f32(0.0));
}

Value MmaBodyBuilder::withBias(const Rows &rows, Value x, Value d) {
  if (!rows.bias)
    return x;
  Value bias =
      loadOrZero(rows.bias, {head}, arith::ConstantIntOp::create(b, 1, 1), d);
  return arith::AddFOp::create(b, x, bias);
}

Value MmaBodyBuilder::wholeRowValue(const Rows &rows, Value row, Value d) {
  SmallVector<Value> indices = {row};
  llvm::append_range(indices, rows.rest);
  return withBias(
      rows,
      loadOrZero(rows.mem, indices, arith::ConstantIntOp::create(b, 1, 1), d),
      d);
}

Value MmaBodyBuilder::rowValue(const Rows &rows, Value row, Value d) {
  SmallVector<Value> indices = {row};
  llvm::append_range(indices, rows.rest);
  Value x = loadOrZero(rows.mem, indices,
                       cmp(arith::CmpIPredicate::ult, row, rows.rowEnd), d);
  return withBias(rows, x, d);
}

Fragment MmaBodyBuilder::rowsA(const Rows &rows, Value row0, int64_t ks) {
  Fragment frag;
  for (int64_t r = 0; r < 4; ++r) {
    Value row = add(row0, add(g, idx(8 * (r & 1))));
    for (int64_t e = 0; e < 2; ++e) {
      Value d = add(mul(t, idx(2)), idx(ks * 16 + e + 8 * (r >> 1)));
      frag.push_back(operand(rowValue(rows, row, d)));
    }
  }
  return frag;
}

Fragment MmaBodyBuilder::rowsAsColumns(const Rows &rows, Value row0,
                                       int64_t ks) {
  Fragment frag;
  Value row = add(row0, g);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t e = 0; e < 2; ++e) {
      Value d = add(mul(t, idx(2)), idx(ks * 16 + e + 8 * r));
      frag.push_back(operand(rowValue(rows, row, d)));
    }
  return frag;
}

Fragment MmaBodyBuilder::rowsB(const Rows &rows, Value row0, int64_t db,
                               Value col0) {
  Fragment frag;
  Value d = add(g, idx(8 * db));
  if (col0)
    d = add(col0, d);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t e = 0; e < 2; ++e) {
      Value row = add(row0, add(mul(t, idx(2)), idx(e + 8 * r)));
      frag.push_back(operand(rowValue(rows, row, d)));
    }
  return frag;
}

std::array<Fragment, 2> MmaBodyBuilder::ldmatrixB(Value tile, Value row0,
                                                  Value col0) {
  // lane = 4 g + t: lane % 8 = 4 (g % 2) + t, lane / 8 = g / 2.
  Value row =
      add(row0, add(mul(arith::RemUIOp::create(b, g, idx(2)), idx(4)), t));
  Value col = add(col0, mul(arith::DivUIOp::create(b, g, idx(2)), idx(8)));
  Value matrices = nvgpu::LdMatrixOp::create(
      b, VectorType::get({4, 2}, operandType), tile, ValueRange{row, col},
      /*transpose=*/false, /*numTiles=*/4);
  std::array<Fragment, 2> frags;
  for (int64_t m = 0; m < 4; ++m)
    for (int64_t e = 0; e < 2; ++e)
      frags[m / 2].push_back(
          vector::ExtractOp::create(b, matrices, ArrayRef<int64_t>{m, e}));
  return frags;
}

Value MmaBodyBuilder::packA(const Fragment &a) {
  return vector::FromElementsOp::create(b, VectorType::get({4, 2}, operandType),
                                        a);
}

Fragment MmaBodyBuilder::mma(const Fragment &a, const Fragment &bOp,
                             const Fragment &c) {
  return mma(packA(a), bOp, c);
}

Fragment MmaBodyBuilder::mma(Value va, const Fragment &bOp, const Fragment &c) {
  Value vb = vector::FromElementsOp::create(
      b, VectorType::get({2, 2}, operandType), bOp);
  Value vc = vector::FromElementsOp::create(
      b, VectorType::get({2, 2}, b.getF32Type()), c);
  Value d =
      nvgpu::MmaSyncOp::create(b, va, vb, vc, ArrayRef<int64_t>{16, 8, 16});
  Fragment result;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t e = 0; e < 2; ++e)
      result.push_back(
          vector::ExtractOp::create(b, d, ArrayRef<int64_t>{r, e}));
  return result;
}

/// txl.warpgroup_mma of the fragments' values (MmaBuilder.h).
static Value createWarpgroupMma(ImplicitLocOpBuilder &b, Type operandType,
                                ArrayRef<Fragment> a, Value tile,
                                ArrayRef<Value> acc, bool async) {
  SmallVector<Value> aScalars;
  for (const Fragment &frag : a)
    llvm::append_range(aScalars, frag);
  int64_t kSteps = a.size(), nBlocks = acc.size() / 4;
  Value va = vector::FromElementsOp::create(
      b, VectorType::get({kSteps, 4, 2}, operandType), aScalars);
  Value vc = vector::FromElementsOp::create(
      b, VectorType::get({nBlocks, 2, 2}, b.getF32Type()), acc);
  auto op = WarpgroupMmaOp::create(b, va, tile, vc);
  op.setAsync(async);
  return op.getResult();
}

/// The accumulators of a warpgroup product's result, n-block by n-block.
static Fragment warpgroupAccumulators(ImplicitLocOpBuilder &b, Value d) {
  int64_t nBlocks = cast<VectorType>(d.getType()).getDimSize(0);
  Fragment result;
  for (int64_t nb = 0; nb < nBlocks; ++nb)
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t e = 0; e < 2; ++e)
        result.push_back(
            vector::ExtractOp::create(b, d, ArrayRef<int64_t>{nb, r, e}));
  return result;
}

Fragment MmaBodyBuilder::warpgroupMma(ArrayRef<Fragment> a, Value tile,
                                      ArrayRef<Value> acc) {
  return warpgroupAccumulators(
      b, createWarpgroupMma(b, operandType, a, tile, acc, /*async=*/false));
}

Value MmaBodyBuilder::issueWarpgroupMma(ArrayRef<Fragment> a, Value tile,
                                        ArrayRef<Value> acc) {
  return createWarpgroupMma(b, operandType, a, tile, acc, /*async=*/true);
}

Fragment MmaBodyBuilder::waitWarpgroupMma(Value product, int64_t pending) {
  return warpgroupAccumulators(
      b, WarpgroupMmaWaitOp::create(b, product, pending).getResult());
}

void MmaBodyBuilder::stageOperands(ArrayRef<StagedOperand> operands, Value row0,
                                   int64_t numRows, Value col0, int64_t numCols,
                                   bool unroll, bool checkRows,
                                   bool vectorLoads) {
  // The tensor-core kernels' workgroups are one warpgroup.
  constexpr int64_t threads = 4 * kSubgroupSize;
  assert((numRows * numCols) % threads == 0 &&
         "every work-item stages the same number of elements");
  int64_t steps = numRows * numCols / threads;
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  auto split = [&](Value x) {
    return std::pair<Value, Value>{arith::DivUIOp::create(b, x, idx(8)),
                                   arith::RemUIOp::create(b, x, idx(8))};
  };
  // 4 columns and 2 consecutive rows a work-item, each row's 4 columns in
  // one 16-byte load: an operand stored with its rows along K (V,
  // transposed) then has each column's two rows side by side in its core
  // matrix (one 32-bit store), the other (K) each row's 4 columns. The
  // work-items' pairs of rows span whole core matrices, so a work-item's
  // rows within one stay fixed and step s moves them rowsPerPairStep / 8
  // core matrices down.
  constexpr int64_t kVector = 4;
  int64_t itemsPerRow = numCols / kVector;
  int64_t rowsPerPairStep = itemsPerRow ? 2 * threads / itemsPerRow : 0;
  if (unroll && !checkRows && vectorLoads && dPad == dHead &&
      numCols % kVector == 0 && threads % itemsPerRow == 0 &&
      rowsPerPairStep % 8 == 0 && numRows % rowsPerPairStep == 0 &&
      llvm::none_of(operands,
                    [](const StagedOperand &op) { return op.rows.bias; })) {
    int64_t pairSteps = numRows / rowsPerPairStep;
    Value laneRow =
        mul(arith::DivUIOp::create(b, tid, idx(itemsPerRow)), idx(2));
    Value c =
        mul(arith::RemUIOp::create(b, tid, idx(itemsPerRow)), idx(kVector));
    auto [cBlock, cIn] = split(c);
    auto [laneBlock, rIn] = split(laneRow);
    Value d = col0 ? add(col0, c) : c;
    auto vectorType = VectorType::get({kVector}, b.getF32Type());
    for (const StagedOperand &op : operands) {
      // The work-item's rows of the operand as one view: one address, then
      // a constant offset a row.
      auto type = cast<MemRefType>(op.rows.mem.getType());
      SmallVector<OpFoldResult> offsets = {add(row0, laneRow)};
      SmallVector<OpFoldResult> sizes = {
          b.getIndexAttr((pairSteps - 1) * rowsPerPairStep + 2)};
      SmallVector<OpFoldResult> strides = {b.getIndexAttr(1)};
      for (Value r : op.rows.rest) {
        offsets.push_back(r);
        sizes.push_back(b.getIndexAttr(1));
        strides.push_back(b.getIndexAttr(1));
      }
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(
          OpFoldResult(memref::DimOp::create(b, op.rows.mem, type.getRank() - 1)
                           .getResult()));
      strides.push_back(b.getIndexAttr(1));
      Value view =
          memref::SubViewOp::create(b, op.rows.mem, offsets, sizes, strides);
      for (int64_t s = 0; s < pairSteps; ++s) {
        Value rBlock = add(laneBlock, idx(rowsPerPairStep / 8 * s));
        SmallVector<Value, 2> rows;
        for (int64_t h = 0; h < 2; ++h) {
          SmallVector<Value> indices = {idx(rowsPerPairStep * s + h)};
          indices.append(op.rows.rest.size(), idx(0));
          indices.push_back(d);
          rows.push_back(vector::LoadOp::create(b, vectorType, view, indices,
                                                /*nontemporal=*/false,
                                                llvm::MaybeAlign(16)));
        }
        for (int64_t e = 0; e < kVector; ++e) {
          Value col = add(cIn, idx(e));
          for (int64_t h = 0; h < 2; ++h) {
            Value rowIn = add(rIn, idx(h));
            memref::StoreOp::create(
                b, operand(vector::ExtractOp::create(b, rows[h], e)), op.tile,
                op.rowsAlongK ? ValueRange{cBlock, rBlock, col, rowIn}
                              : ValueRange{rBlock, cBlock, rowIn, col});
          }
        }
      }
    }
    return;
  }
  // Unrolled: a row of the block every rowsPerStep work-items, dividing 8:
  // each work-item keeps its column, and step s adds rowsPerStep s rows,
  // whose offset within a core matrix never carries into the next (rIn =
  // laneRow + (rowsPerStep s) % 8 < 8), so that every step's tile offsets
  // are immediates.
  int64_t rowsPerStep = threads / numCols;
  if (unroll) {
    assert(threads % numCols == 0 && 8 % rowsPerStep == 0 &&
           "unrolled, every work-item keeps a column");
    Value laneRow = arith::DivUIOp::create(b, tid, idx(numCols));
    Value c = arith::RemUIOp::create(b, tid, idx(numCols));
    auto [cBlock, cIn] = split(c);
    // Whole rows: each operand's rows of this work-item as a view whose
    // first row is the work-item's and whose rows are rowsPerStep apart,
    // one address computation per operand, then a constant offset per step.
    SmallVector<StagedOperand> views;
    if (!checkRows)
      for (const StagedOperand &op : operands) {
        auto type = cast<MemRefType>(op.rows.mem.getType());
        SmallVector<OpFoldResult> offsets = {add(row0, laneRow)};
        SmallVector<OpFoldResult> sizes = {b.getIndexAttr(steps)};
        SmallVector<OpFoldResult> strides = {b.getIndexAttr(rowsPerStep)};
        for (Value r : op.rows.rest) {
          offsets.push_back(r);
          sizes.push_back(b.getIndexAttr(1));
          strides.push_back(b.getIndexAttr(1));
        }
        offsets.push_back(b.getIndexAttr(0));
        sizes.push_back(OpFoldResult(
            memref::DimOp::create(b, op.rows.mem, type.getRank() - 1)
                .getResult()));
        strides.push_back(b.getIndexAttr(1));
        Value view =
            memref::SubViewOp::create(b, op.rows.mem, offsets, sizes, strides);
        Rows rows = op.rows;
        rows.mem = view;
        rows.rest.assign(op.rows.rest.size(), idx(0));
        views.push_back({rows, op.tile, op.rowsAlongK});
      }
    Value d = col0 ? add(col0, c) : c;
    for (int64_t s = 0; s < steps; ++s) {
      Value rIn = add(laneRow, idx(rowsPerStep * s % 8));
      Value rBlock = idx(rowsPerStep * s / 8);
      Value row = add(row0, add(laneRow, idx(rowsPerStep * s)));
      for (int64_t o = 0, e = operands.size(); o < e; ++o) {
        const StagedOperand &op = operands[o];
        Value x = checkRows ? rowValue(op.rows, row, d)
                            : wholeRowValue(views[o].rows, idx(s), d);
        memref::StoreOp::create(b, operand(x), op.tile,
                                op.rowsAlongK
                                    ? ValueRange{cBlock, rBlock, cIn, rIn}
                                    : ValueRange{rBlock, cBlock, rIn, cIn});
      }
    }
    return;
  }
  forRange(steps, [&](Value s) {
    Value flat = add(tid, mul(s, idx(threads)));
    Value rr = arith::DivUIOp::create(b, flat, idx(numCols));
    Value c = arith::RemUIOp::create(b, flat, idx(numCols));
    auto [rBlock, rIn] = split(rr);
    auto [cBlock, cIn] = split(c);
    Value row = add(row0, rr), d = col0 ? add(col0, c) : c;
    for (const StagedOperand &op : operands)
      memref::StoreOp::create(b, operand(rowValue(op.rows, row, d)), op.tile,
                              op.rowsAlongK
                                  ? ValueRange{cBlock, rBlock, cIn, rIn}
                                  : ValueRange{rBlock, cBlock, rIn, cIn});
  });
}

scf::ForOp MmaBodyBuilder::loopOver(int64_t n, ValueRange init,
                                    bool keepInvariants) {
  auto loop = scf::ForOp::create(b, idx(0), idx(n), idx(1), init);
  loop->setAttr("loop_annotation",
                parseAttribute(keepInvariants
                                   ? "#llvm.loop_annotation<unroll = <disable "
                                     "= true>, licm = <disable = true>>"
                                   : "#llvm.loop_annotation<unroll = <disable "
                                     "= true>>",
                               b.getContext()));
  return loop;
}

void MmaBodyBuilder::forRange(int64_t n, bool keepInvariants,
                              function_ref<void(Value)> body) {
  scf::ForOp loop = loopOver(n, {}, keepInvariants);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  body(loop.getInductionVar());
}

Value MmaBodyBuilder::quadReduce(Value v, bool isMax) {
  return subgroupReduce(b, v, isMax, /*lanes=*/4);
}

namespace {

constexpr int64_t kWarps = 4;
/// Query rows per subgroup: the mma's M.
constexpr int64_t kRows = 16;
/// Keys per tile.
constexpr int64_t kKeyTile = 32;
/// How far (base 2) a tile's maximum score may pass a row's running
/// maximum m before m moves and the row's O and l are rescaled
/// (kLazyRescaleWidth): its probabilities are then at most 2^8 = 256,
/// which f32 accumulators and bf16 / f16 P hold without loss of relative
/// precision, and most tiles skip the rescale (as FlashAttention-4 does on
/// Blackwell).
constexpr float kRescaleThreshold = 8.0f;
/// The widest d_head whose walk skips the rescale when no row's maximum
/// moved (an unpadded one: d_head 32 and 64). There (168 registers, 3
/// warps a scheduler) the walk is issue-bound, and the skip takes 29 of
/// 369 instructions off d_head 64's interior tile at sm_90a (28 of 395 at
/// sm_80; sass-budgets-attention.test). At 128 (255 registers, 2 warps)
/// it is latency-bound: the branch left the interior tile 65 instructions
/// fewer but 15 (sm_90a) and 85 (sm_80) more fixed stall cycles, 475 and
/// 710 issue-or-stall cycles a tile where 467 and 667 were. With the
/// branch ptxas spilled, at sm_80 and 168 registers, a zero-padded pair
/// of d_head 41's held query fragments (padded to 64) and a value of
/// d_head 64's lse form (the training forward), which therefore rescale
/// on every tile too.
constexpr int64_t kLazyRescaleWidth = 64;
/// Columns of X: the 16 + 32 - 1 window rows, rounded up to n-blocks of 8.
constexpr int64_t kWindow = kRows + kKeyTile;
/// The row length of the X tile (64 rows of f32): kWindow + 8, even, so
/// that each lane's two adjacent X entries of a row (columns 2 t, 2 t + 1
/// of a block) are 8-byte aligned and go out as one 64-bit store
/// (STS.64), a half-subgroup's 16 of which meet no bank conflict (row g's
/// words at 56 g + 2 t: 56 g mod 32 = 24 g mod 32 spaces the 4 rows of a
/// half 8 banks apart), and the skewed reads X(i, 15 - i + j) meet 2-way
/// conflicts (55 g + 2 t + ...: no row length makes both free: an even one
/// makes the reads' 55 g odd steps collide at most twice, an odd one the
/// stores' 32-bit pairs). 49 columns, the width plus one, gave 4-way
/// conflicts in both.
constexpr int64_t kXColumns = kWindow + 8;
/// Rows of r a workgroup's key tile reads: its 4 subgroups' windows,
/// 16 rows apart, 48 + 3 * 16.
constexpr int64_t kWindowRows = kWindow + (kWarps - 1) * kRows;
/// Rows of the ring of r rows the packed kernel keeps (4 chunks of a key
/// tile's 32): the window of the tile at j0 (kWindowRows rows from
/// qlen - i0 - 64 + j0) is its rows (j0 - jBegin + [0, kWindowRows)) mod
/// kRingRows, so that each tile copies only the 32 rows its window adds
/// to the previous one's.
constexpr int64_t kRingRows = 4 * kKeyTile;
static_assert(kWindow / 8 == kMmaXBlocks, "X's blocks of 8 window rows");
static_assert(kWindowRows == 3 * kKeyTile && kRingRows % kKeyTile == 0 &&
                  llvm::isPowerOf2_64(kRingRows),
              "a tile's window is 3 chunks of the ring, a power of 2 rows");
/// Whether the kernel stages with asynchronous copies (the packed form):
/// d_head padded to 32, 64 or 128, whose rows are whole 16-byte chunks
/// that divide a warpgroup's work-items (4, 8 or 16 chunks of 8 columns
/// a row; AttentionKernel::packed). d_head 41 and 80 are padded to 64 and
/// 128 (forwardPad); wider heads stage the f32 rows in rolled loops.
bool stagesWhole(int64_t dPad) {
  return dPad == 32 || dPad == 64 || dPad == 128;
}
/// Whether the packed form carries a tile's probabilities into the next
/// tile, which issues their P·V during its own products (three V buffers):
/// up to d_head 64. At 128 the 16 carried registers pass nvvm.maxnreg on
/// sm_80 (spills), and its P·V stays in its tile (two V buffers by
/// parity, as K's).
bool carriesPv(int64_t dPad) { return stagesWhole(dPad) && dPad <= 64; }
/// The forward's padded d_head: up to 128 the next packed width (41 ->
/// 64, 80 -> 128: zero columns cost tensor-core products, where 48's 6
/// and 80's 10 chunks a row, which do not divide the work-items, would
/// stage in rolled loops of loads), wider a multiple of 16.
int64_t forwardPad(int64_t dHead) {
  int64_t dPad = llvm::alignTo(dHead, 16);
  for (int64_t width : {32, 64, 128})
    if (dPad <= width)
      return width;
  return dPad;
}
/// The workgroup memory a kernel may take on every CUDA target (sm_80's
/// dynamic shared memory per workgroup, txl-dynamic-shared-memory's
/// max-bytes).
constexpr int64_t kMaxSharedBytes = 99 * 1024;
/// Padding of each staged r row, in elements: 16 bytes, so that the 8
/// rows and 4 column pairs of a B fragment's 32-bit reads fall in 32
/// different banks.
constexpr int64_t kWindowPad = 8;
/// Registers per work-item on CUDA (PTX .maxnreg) for the forward of
/// padded width `dPad`: 168 up to 64 without dropatt, so that 3 workgroups
/// of 128 fit an SM's 64K registers (their 53,248 bytes of tiles at 64 fit
/// sm_80's 164 KiB three times), which ptxas meets without a spill (it
/// takes 139 to 187 at sm_90a and 252 at sm_80 when free), and each SM
/// scheduler holds 3 warps where it held 2 to issue during one another's
/// stalls (the walk is latency-bound: sass-budgets-attention.test);
/// otherwise 255 (2 workgroups): dropatt spills 8 bytes at 168 on sm_90a,
/// d_head 80 and 128 spill hundreds.
int32_t maxRegisters(int64_t dPad, bool dropatt) {
  return dPad <= 64 && !dropatt ? 168 : 255;
}
/// X's blocks whose mma.sync chains the forward of padded width `dPad`
/// interleaves unless the pass option x-chains says otherwise. Each block
/// accumulates its k-steps in one dependent chain, whose latency the
/// others' products fill. Without dropatt at 128 (d_head 80 and 128: 255
/// registers, 2 warps a scheduler, the walk latency-bound) all 6: 976
/// fixed stall cycles on d_head 128's interior path where 3 left 1,034,
/// and 802 where 885 at 80. Otherwise 3: at 168 registers (up to 64) the
/// walk is issue-bound and 6 add instructions, and with dropatt 6 spill
/// at d_head 128 on sm_90a.
int64_t defaultXChains(int64_t dPad, bool dropatt) {
  return dPad == 128 && !dropatt ? 6 : 3;
}
/// Up to this padded d_head the query fragments stay in registers for the
/// whole key walk; wider heads reload them per key tile.
constexpr int64_t kHeldQueryWidth = 128;

class MmaKernelBuilder : public MmaBodyBuilder {
public:
  MmaKernelBuilder(gpu::GPUFuncOp func, int64_t dHead, FloatType operandType,
                   bool dropatt, bool lse, bool packed, int64_t xChains)
      : MmaBodyBuilder(func, dHead, operandType, forwardPad(dHead)),
        dropatt(dropatt), lse(lse), packed(packed), carryPv(carriesPv(dPad)),
        xChains(xChains),
        lazyRescale(dPad <= kLazyRescaleWidth && dHead == dPad && !lse),
        func(func) {}

  void build();

private:
  /// The A fragment of (q + bias) for the subgroup's rows, d_head k-step
  /// `ks`.
  Fragment queryFragment(int64_t ks, Value bias);
  /// Copies rows [rowBegin, rowBegin + rowCount) of the r window that
  /// starts at r row w0 from the packed r into the ring `rTile` (kRingRows
  /// rows, each padded by kWindowPad), window row w at ring row (ringBase +
  /// w) mod kRingRows; d_head padded to 32, 64 or 128 (stagesWhole). A row
  /// outside [0, klen) holds r's row 0 instead: it only serves masked
  /// pairs, whose scores the mask replaces (every packed r row is finite);
  /// columns from d_head on are the packing's zeros. Each work-item copies
  /// the same 8 consecutive columns of every 8th (d_head 128), 16th (64)
  /// or 32nd (32) row (a subgroup copies whole rows), asynchronously
  /// (copyAsync).
  void stageWindow(Value r, Value w0, Value klen, Value rTile, int64_t rowBegin,
                   int64_t rowCount, Value ringBase);
  /// The first r row of the window of the key tile at j0: qlen - i0 - 64 +
  /// j0, marked as the rel-shift's row (relShiftRow).
  Value windowStart(Value j0) {
    return relShiftRow(sub(add(sub(qlen, i0), j0), idx(kWarps * kRows)));
  }
  /// The ring row of `row` (an index that may pass kRingRows).
  Value ringRow(Value row) {
    return arith::AndIOp::create(b, row, idx(kRingRows - 1));
  }
  /// Copies key tile j0 (a multiple of kKeyTile)'s K and V from the
  /// packed operands (getOrCreateMmaPackKernel: rows padded to klenPad
  /// with zeros, so that no tile checks its rows; each tile the image of
  /// kTile's and vTile's core matrices, one contiguous block) into kTile
  /// and vTile, 16 bytes a work-item and step: one row of a core matrix
  /// each, at the same offset in the packed tile and in the workgroup's,
  /// the 8 work-items of a quarter-subgroup the 8 rows of one (128
  /// consecutive bytes of the tile), so that the stores meet no bank
  /// conflict. Step s reads kChunks[s] and vChunks[s] (chunkViews) at the
  /// same indices. Asynchronous (copyAsync).
  void stagePacked(Value j0, Value kTile, Value vTile);
  /// `steps` views of `packed`, step s's starting s * `rowsPerStep` rows
  /// further along dimension `dim` (static, as are `packed`'s strides from
  /// `dim` on: a static offset), so that each step's constant stays out of
  /// the work-item's index: the memref lowering gives the offset its own
  /// address step, which LLVM moves last and ptxas folds into the copy's
  /// immediate (`cp.async.cg.shared.global [..], [%rd + 2048]` at d_head
  /// 128). Step 0's view is `packed` itself. Built once, at the kernel's
  /// entry.
  SmallVector<Value> chunkViews(Value packed, int64_t dim, int64_t steps,
                                int64_t rowsPerStep);
  /// The 8 elements of global `src` at `from` into workgroup `tile` at
  /// `to` (16 bytes, both 16-byte aligned) as one asynchronous copy
  /// (nvgpu.device_async_copy: cp.async.cg on CUDA, which bypasses the
  /// registers and L1), whose token joins `copies`.
  void copyAsync(Value src, ValueRange from, Value tile, ValueRange to);
  /// Commits the work-item's asynchronous copies since the last commit as
  /// one group (nvgpu.device_async_create_group: cp.async.commit_group);
  /// returns its token.
  Value commitCopies();
  /// 2^x, with fastmath afn: ex2.approx on CUDA (libdevice's __nv_exp2f).
  Value exp2(Value x) {
    return math::Exp2Op::create(b, x, arith::FastMathFlags::afn);
  }
  /// The kernel draws dropatt (its Dropatt arguments after scale).
  bool dropatt;
  /// The kernel writes each row's log-sum-exp (its argument before the key
  /// parts' workspace).
  bool lse;
  /// The kernel takes key, value and pos_key packed, and klen
  /// (AttentionKernel::packed).
  bool packed;
  /// The packed form's P·V of a tile issued by the next tile (carriesPv).
  bool carryPv;
  /// X's blocks whose product chains interleave (defaultXChains).
  int64_t xChains;
  /// A row's m moves only past kRescaleThreshold, and O is scaled in a
  /// branch (txl.rescale) that a subgroup skips when no row's m moved
  /// (kLazyRescaleWidth); otherwise m follows the maximum and O is scaled
  /// on every tile. l is scaled on every tile.
  bool lazyRescale;
  gpu::GPUFuncOp func;
  // Set first by build().
  Value q, qlen, i0, iw;
  /// The asynchronous copies issued since the last commitCopies.
  SmallVector<Value> copies;
  /// The views of the packed form's k_packed and v_packed that
  /// stagePacked's steps read (chunkViews).
  SmallVector<Value> kChunks, vChunks;
};

Fragment MmaKernelBuilder::queryFragment(int64_t ks, Value bias) {
  using P = arith::CmpIPredicate;
  Fragment frag;
  for (int64_t r = 0; r < 4; ++r) {
    Value i = add(iw, add(g, idx(8 * (r & 1))));
    for (int64_t e = 0; e < 2; ++e) {
      Value d = add(mul(t, idx(2)), idx(ks * 16 + e + 8 * (r >> 1)));
      Value x = loadOrZero(q, {i, batchIdx, head}, cmp(P::ult, i, qlen), d);
      Value bi =
          loadOrZero(bias, {head}, arith::ConstantIntOp::create(b, 1, 1), d);
      frag.push_back(operand(arith::AddFOp::create(b, x, bi)));
    }
  }
  return frag;
}

void MmaKernelBuilder::stageWindow(Value r, Value w0, Value klen, Value rTile,
                                   int64_t rowBegin, int64_t rowCount,
                                   Value ringBase) {
  using P = arith::CmpIPredicate;
  constexpr int64_t threads = kWarps * kSubgroupSize;
  // d_head padded to 32, 64 or 128 (stagesWhole): 4, 8 or 16 chunks a
  // row, which divide the work-items, so that each keeps its columns and
  // steps down 32, 16 or 8 rows at a time.
  int64_t chunksPerRow = dPad / 8;
  assert(threads % chunksPerRow == 0 &&
         (rowCount * chunksPerRow) % threads == 0 &&
         "every work-item stages whole chunks of fixed columns");
  int64_t rowsPerStep = threads / chunksPerRow;
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value laneRow = arith::DivUIOp::create(b, tid, idx(chunksPerRow));
  Value d0 = mul(arith::RemUIOp::create(b, tid, idx(chunksPerRow)), idx(8));
  for (int64_t row0 = rowBegin; row0 < rowBegin + rowCount;
       row0 += rowsPerStep) {
    Value row = add(laneRow, idx(row0));
    // p in [0, klen) as one unsigned 32-bit comparison (a negative p
    // wraps to more than any klen; rows, klen and the window's start fit
    // 32 bits).
    Value p = add(toI32(w0), toI32(row));
    Value ok = cmp(P::ult, p, toI32(klen));
    Value pIn = arith::IndexCastUIOp::create(b, b.getIndexType(),
                                             select(ok, p, i32(0)));
    // The chunk's 8 columns of the packed r (rows of dPad elements of 2
    // bytes, d0 a multiple of 8): one 16-byte copy.
    copyAsync(r, {head, pIn, d0}, rTile, {ringRow(add(ringBase, row)), d0});
  }
}

SmallVector<Value> MmaKernelBuilder::chunkViews(Value packed, int64_t dim,
                                                int64_t steps,
                                                int64_t rowsPerStep) {
  auto type = cast<MemRefType>(packed.getType());
  assert(!type.isDynamicDim(dim) && "the stepped dimension is static");
  SmallVector<Value> views = {packed};
  for (int64_t s = 1; s < steps; ++s) {
    int64_t rows = s * rowsPerStep;
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
    offsets[dim] = b.getIndexAttr(rows);
    SmallVector<OpFoldResult> sizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      sizes.push_back(
          type.isDynamicDim(d)
              ? OpFoldResult(memref::DimOp::create(b, packed, d).getResult())
              : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
    sizes[dim] = b.getIndexAttr(type.getDimSize(dim) - rows);
    SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
    views.push_back(
        memref::SubViewOp::create(b, packed, offsets, sizes, strides));
  }
  return views;
}

void MmaKernelBuilder::stagePacked(Value j0, Value kTile, Value vTile) {
  constexpr int64_t threads = kWarps * kSubgroupSize;
  int64_t dBlocks = dPad / 8;
  int64_t steps = kKeyTile * dBlocks / threads;
  assert(threads % (8 * dBlocks) == 0 && (kKeyTile * dBlocks) % threads == 0 &&
         "every work-item copies whole chunks of fixed columns");
  assert(kChunks.size() == size_t(steps) && vChunks.size() == size_t(steps) &&
         "one view of k_packed and of v_packed a step");
  // The packed tile and the workgroup's tile are one image: chunk x = tid +
  // 128 s of the packed tile is row x % 8 of core matrix [x / (8 inner), x
  // / 8 % inner] of the workgroup's (inner: K's d blocks, V's key blocks),
  // 128 consecutive bytes a quarter-subgroup, so that K's and V's copies
  // read one offset in their tiles; step s's view starts 128 chunks (2
  // KiB) on.
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value tile = arith::DivUIOp::create(b, j0, idx(kKeyTile));
  auto stage = [&](ArrayRef<Value> chunks, Value dst) {
    // The workgroup's tile as its 16-byte chunks.
    Value dstChunks = memref::CollapseShapeOp::create(
        b, dst, ArrayRef<ReassociationIndices>{{0, 1, 2}, {3}});
    for (int64_t s = 0; s < steps; ++s)
      copyAsync(chunks[s], {batchIdx, head, tile, tid, idx(0)}, dstChunks,
                {add(tid, idx(s * threads)), idx(0)});
  };
  stage(kChunks, kTile);
  stage(vChunks, vTile);
}

void MmaKernelBuilder::copyAsync(Value src, ValueRange from, Value tile,
                                 ValueRange to) {
  copies.push_back(nvgpu::DeviceAsyncCopyOp::create(
      b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tile, to, src, from,
      b.getIndexAttr(8), /*srcElements=*/Value(),
      /*bypassL1=*/b.getUnitAttr()));
}

Value MmaKernelBuilder::commitCopies() {
  assert(!copies.empty() && "a group of at least one copy");
  Value group = nvgpu::DeviceAsyncCreateGroupOp::create(
      b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), copies);
  copies.clear();
  return group;
}

void MmaKernelBuilder::build() {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  q = entry.getArgument(0);
  Value k = entry.getArgument(1), v = entry.getArgument(2),
        r = entry.getArgument(3), u = entry.getArgument(4),
        vb = entry.getArgument(5), out = entry.getArgument(6);
  // The packed form takes klen before mem_len.
  unsigned scalars = packed ? 8 : 7;
  Value memLen = entry.getArgument(scalars),
        sameLength = entry.getArgument(scalars + 1),
        scale = entry.getArgument(scalars + 2);
  Dropatt drop{};
  if (dropatt)
    drop = {entry.getArgument(scalars + 3), entry.getArgument(scalars + 4),
            entry.getArgument(scalars + 5), entry.getArgument(scalars + 6),
            entry.getArgument(scalars + 7), entry.getArgument(scalars + 8)};
  Value xTile = func.getWorkgroupAttributions()[0];
  Value kTile = func.getWorkgroupAttributions()[1];
  Value vTile = func.getWorkgroupAttributions()[2];
  // The packed form: the r ring, then K's and V's second buffers and,
  // carrying P·V, V's third.
  Value rTile, kTileNext, vTileNext, vTileThird;
  if (packed) {
    rTile = func.getWorkgroupAttributions()[3];
    kTileNext = func.getWorkgroupAttributions()[4];
    vTileNext = func.getWorkgroupAttributions()[5];
    constexpr int64_t threads = kWarps * kSubgroupSize;
    int64_t steps = kKeyTile * (dPad / 8) / threads;
    kChunks = chunkViews(k, /*dim=*/3, steps, threads);
    vChunks = chunkViews(v, /*dim=*/3, steps, threads);
  }
  if (carryPv)
    vTileThird = func.getWorkgroupAttributions()[6];

  using P = arith::CmpIPredicate;
  Value zero = idx(0);
  qlen = memref::DimOp::create(b, q, 0);
  Value nHead = memref::DimOp::create(b, q, 2);
  Value klen = packed ? Value(entry.getArgument(7))
                      : Value(memref::DimOp::create(b, k, 0));
  setColumn(nHead);
  int64_t queryTile = kWarps * kRows;
  i0 = mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(queryTile));
  setLane();
  Value warpRow0 = mul(warp, idx(kRows));
  iw = add(i0, warpRow0);

  // The decoder mask, as in the f32 kernel (txl.masked_softmax).
  DecoderMask mask = decoderMask(qlen, klen, memLen, sameLength, i0, queryTile);
  // The packed operands are read a whole key tile at a time from a
  // multiple of the tile (v_packed's tiles, never past klenPad): the walk
  // starts at the tile holding the first visible key (the keys before it
  // are masked).
  if (packed)
    mask.jBegin = mul(arith::DivUIOp::create(b, mask.jBegin, idx(kKeyTile)),
                      idx(kKeyTile));
  // This workgroup's part of the visible keys (grid z).
  KeyPart keys = keyPart(mask, kKeyTile);
  Value jBegin = keys.jBegin, jEnd = keys.jEnd;

  int64_t kSteps = dPad / 16;
  // The k-steps that hold columns of d_head: the query fragments of the
  // others (forwardPad's zero columns: 48 to 63 at d_head 41, 80 to 127 at
  // 80) are zeros, and their products add nothing.
  int64_t dSteps = llvm::divideCeil(dHead, 16);
  // O's blocks of 8 columns that hold d_head's: P·V's N (80 at d_head 80,
  // where V's tile is 128 wide: its zero columns are not multiplied, and
  // O holds 40 accumulators a work-item, not 64).
  int64_t oBlocks = llvm::divideCeil(dHead, 8);
  Value scaleLog2e = arith::MulFOp::create(b, scale, f32(M_LOG2E));
  bool holdQuery = dPad <= kHeldQueryWidth;
  SmallVector<Fragment> heldQu, heldQv;
  if (holdQuery)
    for (int64_t ks = 0; ks < dSteps; ++ks) {
      heldQu.push_back(queryFragment(ks, u));
      heldQv.push_back(queryFragment(ks, vb));
    }

  // Loop state: running max (base 2) and sum of rows g and g + 8, then the P·V
  // accumulators, oBlocks fragments of 4; carrying P·V then the previous
  // tile's 16 probabilities, whose P·V the tile issues (0 before the first
  // tile), and the tile's index from jBegin's mod 3 (i32: which of V's
  // three buffers it reads).
  SmallVector<Value> init = {negInf(), negInf(), f32(0.0), f32(0.0)};
  for (int64_t n = 0; n < oBlocks * 4; ++n)
    init.push_back(f32(0.0));
  const int64_t probState = init.size();
  if (carryPv) {
    for (int64_t n = 0; n < 16; ++n)
      init.push_back(f32(0.0));
    init.push_back(i32(0));
  }
  // The whole tiles that need no mask, as the (first, count) of their
  // first keys (set before the walk).
  VisibleKeys interiorStarts;
  // The packed form's first group of copies (before the walk).
  Value prologue;
  // The packed form stages each key tile into one of two buffers of K
  // (kTile and kTileNext by the tile's parity from jBegin), of V (the same
  // by parity, or carrying P·V one of three: vBuffer) and the r ring, so
  // that tile j0 + 32's copies are in flight during tile j0's products,
  // into the buffers tile j0 does not read: `evenTile` or `oddTile` by
  // `odd`.
  auto byParity = [&](Value odd, Value evenTile, Value oddTile) {
    return arith::SelectOp::create(b, odd, oddTile, evenTile).getResult();
  };
  // V's buffer of key tile `index` (from jBegin's, 0) carrying P·V: the
  // three in turn, index mod 3 given as `mod3` (the loop state's);
  // `shift` 1 names the next tile's, 2 the previous tile's.
  std::array<Value, 3> vBuffers = {vTile, vTileNext, vTileThird};
  auto vBuffer = [&](Value mod3, int64_t shift) {
    auto is = [&](int64_t m) { return cmp(P::eq, mod3, i32(m)); };
    // Index mod 3 = 0, 1, 2 reads buffer (m + shift) mod 3.
    Value other = arith::SelectOp::create(b, is(2), vBuffers[(2 + shift) % 3],
                                          vBuffers[(0 + shift) % 3]);
    return arith::SelectOp::create(b, is(1), vBuffers[(1 + shift) % 3], other)
        .getResult();
  };
  // P (the 16 probabilities of the lane's scores, 4 blocks of 8 keys) as
  // the A fragments of P·V: for keys 16 kk.. the score blocks 2 kk and 2 kk
  // + 1 as they sit in the lane's registers.
  auto probFragments = [&](ValueRange prob) {
    SmallVector<Fragment> pas(2);
    for (int64_t kk = 0; kk < 2; ++kk)
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t rr = 0; rr < 2; ++rr)
          for (int64_t e = 0; e < 2; ++e)
            pas[kk].push_back(operand(prob[4 * (2 * kk + half) + 2 * rr + e]));
    return pas;
  };
  // One key tile from j0 on, given the loop state; returns the next state.
  // A `tail` tile (the walk's last when its keys end inside it) stages its
  // keys under bounds checks (the packed form: copies nothing next); the
  // whole tiles before it read every row, so that their addresses are one
  // addition apart.
  auto keyTile = [&](Value j0, ValueRange state,
                     bool tail) -> SmallVector<Value> {
    Value ringBase = sub(j0, jBegin);
    Value kCur = kTile, vCur = vTile, vPrev;
    if (packed) {
      // The tile's K, V and the last 32 rows of its r window were copied
      // by the previous tile (the walk's first tile, by the prologue): the
      // work-item's own copies complete (every group it committed: the
      // token names the first, the count 0 takes them all), then the one
      // barrier of the tile, after which every work-item's copies are
      // visible and every work-item is done reading the previous tile's
      // buffers, ring chunk and X.
      nvgpu::DeviceAsyncWaitOp::create(b, prologue, b.getI32IntegerAttr(0));
      barrier("kv-staged");
      Value odd =
          cmp(P::ne, arith::AndIOp::create(b, ringBase, idx(kKeyTile)), zero);
      Value mod3 = carryPv ? state.back() : Value();
      kCur = byParity(odd, kTile, kTileNext);
      // Carrying P·V, the previous tile's V, which its P·V, issued by this
      // tile, reads; otherwise this tile's.
      if (carryPv)
        vPrev = vBuffer(mod3, 2);
      else
        vCur = byParity(odd, vTile, vTileNext);
      // The next tile's K into the other buffer, its V into the other
      // buffer or, carrying P·V, the one that the P·V before the previous
      // one read last, and the 32 rows its window adds into the ring's
      // chunk that the previous tile read last, as one group, waited for
      // at the next tile's start. The last whole
      // tile copies the tail tile or, when there is none, rows no tile
      // reads (the packed operands' klenPad holds a key tile past the
      // last one any walk reaches: getOrCreateMmaPackKernel); the tail tile
      // copies nothing.
      if (!tail) {
        Value next = add(j0, idx(kKeyTile));
        stagePacked(next, byParity(odd, kTileNext, kTile),
                    carryPv ? vBuffer(mod3, 1)
                            : byParity(odd, vTileNext, vTile));
        stageWindow(r, windowStart(next), klen, rTile, 2 * kKeyTile, kKeyTile,
                    add(ringBase, idx(kKeyTile)));
        commitCopies();
      }
    } else {
      // Every lane is done reading the previous tile's X, K and V.
      barrier("reads-done");
      // The workgroup stages the key tile's K and V once, rounded, as the
      // B operands of the two warpgroup products (txl.warpgroup_mma's
      // packed core matrices): K as B(d, j) at kTile[j / 8][d / 8][j %
      // 8][d % 8], V as B(j, d) at vTile[d / 8][j / 8][d % 8][j % 8];
      // columns from d_head on are zero, and so are keys from jEnd on
      // (those between jEnd and klen are masked). In a rolled loop: d_head
      // over 128, whose loads all in flight would spill.
      stageOperands({{Rows{k, {batchIdx, head}, jEnd}, kTile, false},
                     {Rows{v, {batchIdx, head}, jEnd}, vTile, true}},
                    j0, kKeyTile, Value(), dPad, /*unroll=*/false,
                    /*checkRows=*/tail, /*vectorLoads=*/false);
      // K and V are staged before the products read them.
      barrier("kv-staged");
    }
    SmallVector<Fragment> qus, qvs;
    for (int64_t ks = 0; ks < dSteps; ++ks) {
      qus.push_back(holdQuery ? heldQu[ks] : queryFragment(ks, u));
      qvs.push_back(holdQuery ? heldQv[ks] : queryFragment(ks, vb));
    }
    // AC: M = the workgroup's 64 rows, N = the 32 keys, K = 16 dSteps (K's
    // tile is dPad wide: its zero columns past them are skipped); it stays
    // in the registers it is accumulated in, which hold the lane's own
    // score positions. Issued asynchronously (sm_90a: wgmma without its
    // wait), it is in flight during X's products and the skew's round
    // trip through workgroup memory, and waited for by the scores. (A
    // product over the zero k-steps gave sm_90a's wgmma one register for
    // all four A registers, and ptxas serialized every wgmma of the kernel:
    // ptxas-budgets.test.)
    Value acProduct =
        issueWarpgroupMma(qus, kCur, SmallVector<Value>(16, f32(0.0)));
    // Carrying P·V, the previous tile's, issued after AC (products
    // complete in order: AC's wait can leave it in flight) onto O, which the
    // previous tile scaled by its alpha: in flight during X's products and
    // this tile's softmax, waited for before O is scaled by this tile's
    // alpha (FlashAttention-3's overlap, Shah et al. 2024 §3.2).
    Value pvProduct;
    if (carryPv)
      pvProduct =
          issueWarpgroupMma(probFragments(state.slice(probState, 16)), vPrev,
                            SmallVector<Value>(state.slice(4, 4 * oBlocks)));
    // X: 6 blocks of 8 window rows; the subgroup's window row w is r row
    // rBase + w. Block xb's B fragment elements are those of window row
    // `row` (the lane's g-th of the block), columns d, from `element`.
    auto xBlock = [&](Value xb, Value row,
                      function_ref<Value(Value row, Value d)> element) {
      Fragment acc = zeros();
      for (int64_t ks = 0; ks < dSteps; ++ks) {
        Fragment rf;
        for (int64_t rr = 0; rr < 2; ++rr)
          for (int64_t e = 0; e < 2; ++e)
            rf.push_back(
                element(row, add(mul(t, idx(2)), idx(ks * 16 + e + 8 * rr))));
        acc = mma(qvs[ks], rf, acc);
      }
      storeC(acc, xTile, warpRow0, mul(xb, idx(8)));
    };
    if (rTile) {
      // The subgroup's 48 rows start at window row 48 - 16 w (its rBase =
      // the window's start + 48 - 16 w). Each block's B fragments come two
      // k-steps an ldmatrix (the window's rows are 16-byte aligned: dPad +
      // kWindowPad elements of 2 bytes).
      // A block's 8 rows are one run of the ring (its first row and the
      // ring's chunks are multiples of 8). The k-steps past dSteps
      // (forwardPad's zero columns) add nothing: the ldmatrix of a pair
      // wholly past them (96 to 127 at d_head 80) and the product of a
      // k-step past them (80 to 95) are skipped.
      Value wRow0 = add(ringBase, sub(idx(kWindowRows - kWindow), warpRow0));
      int64_t xSteps = std::min<int64_t>(kSteps, llvm::alignTo(dSteps, 2));
      // Each block's products are one chain of dependent mma.sync (each
      // accumulates onto the last); the blocks of a group of xChains run
      // their chains interleaved, k-step by k-step, so that each product's
      // latency is spent issuing the others' (one chain at a time, ptxas
      // fills the wait with stalls and NOPs: sass-budgets-attention.test's
      // stall budgets, which x-chains=1 fails).
      for (int64_t xb0 = 0; xb0 < kWindow / 8; xb0 += xChains) {
        SmallVector<Fragment> acc(xChains, zeros());
        SmallVector<Value> blockRow;
        for (int64_t x = 0; x < xChains; ++x)
          blockRow.push_back(ringRow(add(wRow0, idx(8 * (xb0 + x)))));
        for (int64_t ks = 0; ks < xSteps; ks += 2) {
          SmallVector<std::array<Fragment, 2>> rf;
          for (int64_t x = 0; x < xChains; ++x)
            rf.push_back(ldmatrixB(rTile, blockRow[x], idx(16 * ks)));
          for (int64_t h = 0; h < 2 && ks + h < dSteps; ++h)
            for (int64_t x = 0; x < xChains; ++x)
              acc[x] = mma(qvs[ks + h], rf[x][h], acc[x]);
        }
        for (int64_t x = 0; x < xChains; ++x)
          storeC(acc[x], xTile, warpRow0, idx(8 * (xb0 + x)));
      }
    } else {
      // Without a staged window, each lane reads its B fragments' r rows;
      // rows outside [0, klen) only serve masked pairs and read as zero.
      Value rBase = relShiftRow(sub(add(sub(qlen, iw), j0), idx(kRows)));
      forRange(kWindow / 8, [&](Value xb) {
        Value p = add(rBase, add(g, mul(xb, idx(8))));
        Value pOk = both(cmp(P::sge, p, zero), cmp(P::slt, p, klen));
        xBlock(xb, p, [&](Value row, Value d) {
          return operand(loadOrZero(r, {row, head}, pOk, d));
        });
      });
    }
    // The subgroup's X is complete before its lanes read each other's
    // entries; only the subgroup reads its rows of X (and the next tile's
    // X is stored after the next tile's first barrier).
    txl::SubgroupBarrierOp::create(b)->setAttr(TxlDialect::kSyncAttrName,
                                               b.getStringAttr("stores-done"));

    // Scores of the lane's 16 positions, rows g + 8 rr, keys j0 + 8 nb +
    // 2 t + e, unscaled: AC + BD. The softmax scales them into base 2 with
    // the subtraction of the row's running maximum (kept in base 2), so
    // that each probability is one fma and one exp2 (ex2.approx on CUDA):
    // exp2(s scale log2(e) - m).
    // The mask (txl.masked_softmax's) as one unsigned comparison per
    // score, in 32 bits (visibleKeys): row i sees the keys j with
    // (j - first_i) <u count_i, where j - first_i = col + (j0 - first_i)
    // and col, the score's key in the tile, is the lane's constant.
    // BD's entries are read before AC is waited for.
    SmallVector<Value> bd(16), score(16);
    for (int64_t nb = 0; nb < 4; ++nb)
      for (int64_t rr = 0; rr < 2; ++rr)
        for (int64_t e = 0; e < 2; ++e) {
          int64_t n = 4 * nb + 2 * rr + e;
          Value row = add(g, idx(8 * rr));
          Value col = add(mul(t, idx(2)), idx(8 * nb + e));
          bd[n] = memref::LoadOp::create(
              b, xTile,
              ValueRange{add(warpRow0, row),
                         add(sub(idx(kRows - 1), row), col)});
        }
    Fragment ac = waitWarpgroupMma(acProduct, /*pending=*/carryPv ? 1 : 0);
    for (int64_t n = 0; n < 16; ++n)
      score[n] = arith::AddFOp::create(b, ac[n], bd[n]);
    auto applyMask = [&](SmallVector<Value> scores) {
      SmallVector<Value> keyBase(2), keyCount(2);
      for (int64_t rr = 0; rr < 2; ++rr) {
        VisibleKeys rowKeys =
            visibleKeys(mask, add(iw, add(g, idx(8 * rr))), jEnd);
        keyCount[rr] = rowKeys.count;
        keyBase[rr] = sub(toI32(j0), rowKeys.first);
      }
      for (int64_t nb = 0; nb < 4; ++nb)
        for (int64_t rr = 0; rr < 2; ++rr)
          for (int64_t e = 0; e < 2; ++e) {
            int64_t n = 4 * nb + 2 * rr + e;
            Value col = add(mul(t, idx(2)), idx(8 * nb + e));
            Value ok = cmp(P::ult, add(toI32(col), keyBase[rr]), keyCount[rr]);
            scores[n] = select(ok, scores[n], negInf());
          }
      return scores;
    };
    if (tail) {
      score = applyMask(score);
    } else {
      // An interior tile (interiorStarts) branches past the mask,
      // uniformly for the subgroup.
      Value interior = isVisibleKey(interiorStarts, j0);
      markInteriorTile(interior);
      auto ifInterior = scf::IfOp::create(b, TypeRange(ValueRange(score)),
                                          interior, /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifInterior.thenBlock());
      scf::YieldOp::create(b, score);
      b.setInsertionPointToStart(ifInterior.elseBlock());
      scf::YieldOp::create(b, applyMask(score));
      score.assign(ifInterior.getResults().begin(),
                   ifInterior.getResults().end());
    }

    // Online softmax per row, with the f32 kernel's running maximum m and
    // sum l, except that (lazyRescale) m moves, and O and l are rescaled,
    // only when the tile's maximum passes it by more than
    // kRescaleThreshold (base 2): a probability is then at most
    // 2^kRescaleThreshold, and O / l, the lse (m + log2 l) and the key
    // parts' combine are the same with any m that O and l share.
    SmallVector<Value> next(4), prob(16), grows(2), rowSums(2), mDrop(2),
        alpha(2);
    for (int64_t rr = 0; rr < 2; ++rr) {
      Value m = state[rr];
      Value tileMax = negInf();
      for (int64_t nb = 0; nb < 4; ++nb)
        for (int64_t e = 0; e < 2; ++e)
          tileMax =
              arith::MaximumFOp::create(b, tileMax, score[4 * nb + 2 * rr + e]);
      // The tile's maximum scaled once (scaling by a positive factor keeps
      // the order, and its rounding is monotonic).
      Value seen = arith::MaximumFOp::create(
          b, m,
          arith::MulFOp::create(b, quadReduce(tileMax, true), scaleLog2e));
      // m = -inf (no visible key yet: O and l are 0) grows to any finite
      // maximum; -inf + threshold is -inf.
      Value mNew = seen;
      if (lazyRescale) {
        grows[rr] = arith::CmpFOp::create(
            b, arith::CmpFPredicate::OGT, seen,
            arith::AddFOp::create(b, m, f32(kRescaleThreshold)));
        mNew = select(grows[rr], seen, m);
      }
      // A masked score is -inf, its probability exp2(-inf) = 0; only a row
      // with no visible key yet (mNew = -inf) subtracts 0 instead.
      Value mSub = select(
          arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mNew, negInf()),
          f32(0.0), mNew);
      // alpha = exp2(m - mNew) scales the row's O and l: 0 when m was
      // -inf (O and l are 0, and -inf - -inf would be NaN). With
      // lazyRescale it is taken after P·V's wait, as exp2(m - mSub) (1
      // where m stays; never NaN: mSub is finite or m is -inf); otherwise
      // here, by the f32 kernel's select (the form above, here, spilled
      // d_head 41's lse kernel at sm_80).
      if (lazyRescale)
        mDrop[rr] = arith::SubFOp::create(b, m, mSub);
      else
        alpha[rr] = select(
            arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m, negInf()),
            f32(0.0), exp2(arith::SubFOp::create(b, m, mNew)));
      Value rowSum = f32(0.0), mNeg = arith::NegFOp::create(b, mSub);
      for (int64_t nb = 0; nb < 4; ++nb)
        for (int64_t e = 0; e < 2; ++e) {
          int64_t n = 4 * nb + 2 * rr + e;
          prob[n] = exp2(math::FmaOp::create(b, score[n], scaleLog2e, mNeg));
          rowSum = arith::AddFOp::create(b, rowSum, prob[n]);
        }
      next[rr] = mNew;
      rowSums[rr] = quadReduce(rowSum, false);
      if (!lazyRescale)
        next[2 + rr] = arith::AddFOp::create(
            b, arith::MulFOp::create(b, state[2 + rr], alpha[rr]), rowSums[rr]);
    }

    // P·V takes the probabilities through dropatt (l does not), each
    // pair's multiplier from its own Philox counter, as the f32 kernel.
    if (dropatt)
      for (int64_t nb = 0; nb < 4; ++nb)
        for (int64_t rr = 0; rr < 2; ++rr)
          for (int64_t e = 0; e < 2; ++e) {
            int64_t n = 4 * nb + 2 * rr + e;
            Value i = add(iw, add(g, idx(8 * rr)));
            Value j = add(j0, add(mul(t, idx(2)), idx(8 * nb + e)));
            prob[n] =
                arith::MulFOp::create(b, prob[n],
                                      dropattMultiplier(drop, qlen, klen, nHead,
                                                        i, j, batchIdx, head));
          }

    // O = O alpha + P V (M = 64 rows, N = 8 oBlocks, K = the 32 keys).
    // Carrying P·V: O (with the previous tile's P·V, waited for now) scaled
    // by alpha, this tile's P carried to the next tile (or after the walk),
    // which issues its P·V; otherwise P·V here, on O scaled.
    SmallVector<Value> oPrev(state.slice(4, 4 * oBlocks));
    if (carryPv)
      oPrev = waitWarpgroupMma(pvProduct, /*pending=*/0);
    // O scaled by alpha; with lazyRescale (l scaled here) in a branch
    // (txl.rescale) that a subgroup skips when none of its rows' m moved,
    // most tiles once the first have set m (l's two products stay out of
    // it: with them the branch's values took one more register, which
    // d_head 64 spilled at sm_80).
    if (lazyRescale)
      for (int64_t rr = 0; rr < 2; ++rr) {
        alpha[rr] = exp2(mDrop[rr]);
        next[2 + rr] = arith::AddFOp::create(
            b, arith::MulFOp::create(b, state[2 + rr], alpha[rr]), rowSums[rr]);
      }
    SmallVector<Value> oScaled(oPrev);
    auto rescale = [&] {
      SmallVector<Value> values;
      for (int64_t n = 0; n < int64_t(oScaled.size()); ++n)
        values.push_back(
            arith::MulFOp::create(b, oScaled[n], alpha[n % 4 / 2]));
      return values;
    };
    if (lazyRescale) {
      Value anyGrows = arith::OrIOp::create(b, grows[0], grows[1]);
      markRescale(anyGrows);
      auto ifGrows = scf::IfOp::create(b, TypeRange(ValueRange(oScaled)),
                                       anyGrows, /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifGrows.thenBlock());
      scf::YieldOp::create(b, rescale());
      b.setInsertionPointToStart(ifGrows.elseBlock());
      scf::YieldOp::create(b, oScaled);
      oScaled.assign(ifGrows.getResults().begin(), ifGrows.getResults().end());
    } else {
      oScaled = rescale();
    }
    if (carryPv) {
      llvm::append_range(next, oScaled);
      llvm::append_range(next, prob);
      Value mod3 = state.back();
      next.push_back(select(cmp(P::eq, mod3, i32(2)), i32(0),
                            arith::AddIOp::create(b, mod3, i32(1))));
    } else {
      llvm::append_range(next,
                         warpgroupMma(probFragments(prob), vCur, oScaled));
    }
    return next;
  };
  // The whole tiles of [jBegin, jEnd), then the tail tile if any.
  Value wholeEnd =
      add(jBegin, mul(arith::DivUIOp::create(
                          b, arith::MaxSIOp::create(b, sub(jEnd, jBegin), zero),
                          idx(kKeyTile)),
                      idx(kKeyTile)));
  // Masks only where a tile needs them: a row's visible keys are an
  // interval whose two ends never decrease with the row, so every row of
  // the subgroup sees every key of the tile from j0 on iff its last row
  // sees key j0 (j0 >= that row's first key) and its first row key j0 +
  // 31 (j0 <= that row's last key - 31). Such interior tiles are all but
  // those along the diagonal, the same_length edge and a key part's end;
  // whether a tile is one costs a subtraction and an unsigned comparison.
  {
    VisibleKeys top = visibleKeys(mask, iw, jEnd);
    VisibleKeys bottom = visibleKeys(mask, add(iw, idx(kRows - 1)), jEnd);
    Value lastStart = sub(add(top.first, top.count), i32(kKeyTile));
    interiorStarts = {
        bottom.first,
        arith::MaxSIOp::create(b, add(sub(lastStart, bottom.first), i32(1)),
                               i32(0))};
  }
  // The walk's first tile: its K and V (when no tile runs, rows of the
  // packed operands that none reads) into the first buffers and its whole
  // r window (96 rows) at the ring's start, one group that the first
  // tile's wait takes.
  // Carrying P·V, V's third buffer holds zeros for the first tile, which
  // issues the P·V of a tile before it with P = 0 (workgroup memory starts
  // undefined, and 0 times a NaN is NaN); the first tile's barrier orders
  // the stores.
  if (packed) {
    stagePacked(jBegin, kTile, vTile);
    stageWindow(r, windowStart(jBegin), klen, rTile, 0, kWindowRows, zero);
    prologue = commitCopies();
  }
  if (carryPv) {
    constexpr int64_t threads = kWarps * kSubgroupSize;
    auto type = cast<MemRefType>(vTileThird.getType());
    Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    Value zeroOperand = operand(f32(0.0));
    for (int64_t n = 0; n < type.getNumElements() / threads; ++n) {
      // Element tid + threads n of the tile, row-major.
      Value e = add(tid, idx(threads * n));
      SmallVector<Value, 4> at;
      for (int64_t dim = type.getRank() - 1; dim >= 0; --dim) {
        at.insert(at.begin(),
                  arith::RemUIOp::create(b, e, idx(type.getDimSize(dim))));
        e = arith::DivUIOp::create(b, e, idx(type.getDimSize(dim)));
      }
      memref::StoreOp::create(b, zeroOperand, vTileThird, at);
    }
  }
  auto wholeLoop = scf::ForOp::create(b, jBegin, wholeEnd, idx(kKeyTile), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(wholeLoop.getBody());
    scf::YieldOp::create(b, keyTile(wholeLoop.getInductionVar(),
                                    wholeLoop.getRegionIterArgs(),
                                    /*tail=*/false));
  }
  auto keyLoop = scf::IfOp::create(b, TypeRange(ValueRange(init)),
                                   cmp(P::slt, wholeEnd, jEnd),
                                   /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(keyLoop.thenBlock());
    scf::YieldOp::create(b, keyTile(wholeEnd, wholeLoop.getResults(),
                                    /*tail=*/true));
    b.setInsertionPointToStart(keyLoop.elseBlock());
    scf::YieldOp::create(b, wholeLoop.getResults());
  }
  // No copy outlives the walk (the last whole tile's of the rows after it,
  // the prologue's when no tile ran).
  if (prologue)
    nvgpu::DeviceAsyncWaitOp::create(b, prologue, b.getI32IntegerAttr(0));
  // Carrying P·V: the last tile's P·V (of a tile before the first, P = 0
  // on the zeros of V's third buffer, when no tile ran), from the buffer
  // of the walk's last tile: the previous one of the index the state
  // holds after it.
  SmallVector<Value> result(keyLoop.getResults());
  if (carryPv) {
    Fragment o = warpgroupMma(
        probFragments(ValueRange(result).slice(probState, 16)),
        vBuffer(result.back(), 2),
        SmallVector<Value>(ValueRange(result).slice(4, 4 * oBlocks)));
    std::copy(o.begin(), o.end(), result.begin() + 4);
  }

  // out[i, batch, head, d] = o / l for the lane's rows and columns and,
  // in the lse form, lse[batch, head, i] = m + log l from the lanes with t
  // = 0 (each quad holds its rows' m and l). Split over the keys, the
  // part's slice of the workspace instead: part_out[part, i, batch, head,
  // d] and part_lse[part, batch, head, i], lse or not.
  unsigned numInputs = func.getFunctionType().getNumInputs();
  Value partOut = entry.getArgument(numInputs - 2),
        partLse = entry.getArgument(numInputs - 1);
  Value lseOut = lse ? entry.getArgument(numInputs - 3) : Value();
  auto ifSplit = scf::IfOp::create(b, cmp(P::ugt, keys.parts, idx(1)),
                                   /*withElseRegion=*/true);
  for (bool split : {true, false}) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(split ? ifSplit.thenBlock()->getTerminator()
                              : ifSplit.elseBlock()->getTerminator());
    auto at = [&](std::initializer_list<Value> rest) {
      SmallVector<Value, 5> indices;
      if (split)
        indices.push_back(keys.part);
      indices.append(rest);
      return indices;
    };
    for (int64_t rr = 0; rr < 2; ++rr) {
      Value i = add(iw, add(g, idx(8 * rr)));
      Value l = result[2 + rr];
      if (Value lseBuffer = split ? partLse : lseOut) {
        auto ifLse = scf::IfOp::create(
            b, both(cmp(P::ult, i, qlen), cmp(P::eq, t, zero)), false);
        OpBuilder::InsertionGuard lseGuard(b);
        b.setInsertionPointToStart(ifLse.thenBlock());
        Value rowLse = arith::AddFOp::create(
            b, arith::MulFOp::create(b, result[rr], f32(M_LN2)),
            math::LogOp::create(b, l));
        memref::StoreOp::create(b, rowLse, lseBuffer, at({batchIdx, head, i}));
      }
      for (int64_t db = 0; db < oBlocks; ++db)
        for (int64_t e = 0; e < 2; ++e) {
          Value d = add(mul(t, idx(2)), idx(8 * db + e));
          auto ifIn = scf::IfOp::create(
              b, both(cmp(P::ult, i, qlen), cmp(P::ult, d, idx(dHead))), false);
          OpBuilder::InsertionGuard storeGuard(b);
          b.setInsertionPointToStart(ifIn.thenBlock());
          Value o =
              arith::DivFOp::create(b, result[4 + 4 * db + 2 * rr + e], l);
          memref::StoreOp::create(b, o, split ? partOut : out,
                                  at({i, batchIdx, head, d}));
        }
    }
  }
  gpu::ReturnOp::create(b);
}

/// The packed operands' types (getOrCreateMmaPackKernel): k_packed and
/// v_packed [batch, n_head, klenPad / kMmaPackKeys, kMmaPackKeys * dPad /
/// 8, 8] (key tiles of 16-byte chunks), r_packed [n_head, klenPad, dPad]
/// of `operandType`, contiguous.
std::array<Type, 3> mmaPackedTypes(MLIRContext *ctx, int64_t dHead,
                                   FloatType operandType) {
  int64_t dPad = forwardPad(dHead), dyn = ShapedType::kDynamic;
  static_assert(kMmaPackKeys == kKeyTile, "the packed tiles are key tiles");
  auto tiles =
      MemRefType::get({dyn, dyn, dyn, kMmaPackKeys * dPad / 8, 8}, operandType);
  return {tiles, tiles, MemRefType::get({dyn, dyn, dPad}, operandType)};
}

/// Builds rel_attention_pack_<bf16|f16>_d<d_head> (RelAttention.h). Each
/// work-item writes chunks of 8 consecutive elements of a packed row (16
/// bytes), each read as 8 f32 of the operand; the rounding of a chunk is
/// one vector truncation (cvt.rn.bf16x2.f32 a pair on CUDA).
class PackKernelBuilder : public KernelBodyBuilder {
public:
  PackKernelBuilder(gpu::GPUFuncOp func, int64_t dHead, FloatType operandType)
      : KernelBodyBuilder(func), func(func), dHead(dHead),
        dPad(forwardPad(dHead)), operandType(operandType) {}

  void build() {
    using P = arith::CmpIPredicate;
    constexpr int64_t threads = kWarps * kSubgroupSize;
    Block &entry = func.getBody().front();
    b.setInsertionPointToStart(&entry);
    Value k = entry.getArgument(0), v = entry.getArgument(1),
          r = entry.getArgument(2), kPacked = entry.getArgument(3),
          vPacked = entry.getArgument(4), rPacked = entry.getArgument(5);
    Value klen = memref::DimOp::create(b, k, 0);
    Value nHead = memref::DimOp::create(b, k, 2);
    Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    // The workgroup's tile of keys [j0, j0 + kMmaPackKeys).
    Value tile = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    Value j0 = mul(tile, idx(kMmaPackKeys));
    Value column = gpu::BlockIdOp::create(b, gpu::Dimension::y);
    Value batch = arith::DivUIOp::create(b, column, nHead);
    Value head = arith::RemUIOp::create(b, column, nHead);
    int64_t chunksPerRow = dPad / 8;
    assert((kMmaPackKeys * chunksPerRow) % threads == 0 &&
           (kMmaPackKeys / 8 * dPad) % threads == 0 &&
           "every work-item packs whole chunks");
    // Element (row, d) of `mem` (at [row, rest..., d]), or 0 for a row
    // from klen on or a column from d_head on, never read out of bounds.
    auto element = [&](Value mem, Value row, ValueRange rest,
                       Value d) -> Value {
      Value ok = cmp(P::ult, row, klen);
      if (dPad != dHead)
        ok = arith::AndIOp::create(b, ok, cmp(P::ult, d, idx(dHead)));
      SmallVector<Value> indices = {select(ok, row, idx(0))};
      llvm::append_range(indices, rest);
      indices.push_back(
          dPad == dHead ? d : arith::MinUIOp::create(b, d, idx(dHead - 1)));
      return select(ok, memref::LoadOp::create(b, mem, indices), f32(0.0));
    };
    // 8 f32 values rounded, as one 16-byte store at `indices`.
    auto store = [&](ArrayRef<Value> values, Value mem, ValueRange indices) {
      Value chunk = vector::FromElementsOp::create(
          b, VectorType::get({8}, b.getF32Type()), values);
      Value rounded =
          arith::TruncFOp::create(b, VectorType::get({8}, operandType), chunk);
      vector::StoreOp::create(b, rounded, mem, indices, /*nontemporal=*/false,
                              llvm::MaybeAlign(16));
    };
    // r row-major: chunk x = tid + 128 s is row j0 + x / chunksPerRow,
    // columns 8 (x % chunksPerRow) + [0, 8), so that a subgroup reads and
    // writes consecutive columns of consecutive rows.
    auto packRows = [&](Value src, ValueRange rest, Value dst) {
      for (int64_t x0 = 0; x0 < kMmaPackKeys * chunksPerRow; x0 += threads) {
        Value x = add(tid, idx(x0));
        Value row = add(j0, arith::DivUIOp::create(b, x, idx(chunksPerRow)));
        Value d0 = mul(arith::RemUIOp::create(b, x, idx(chunksPerRow)), idx(8));
        SmallVector<Value, 8> values;
        for (int64_t e = 0; e < 8; ++e)
          values.push_back(element(src, row, rest, add(d0, idx(e))));
        SmallVector<Value> indices(rest);
        indices.push_back(row);
        indices.push_back(d0);
        store(values, dst, indices);
      }
    };
    // Chunk c of a packed key tile is row c % 8 of core matrix [c / (8
    // inner), c / 8 % inner] of the forward kernel's workgroup tile
    // (inner: K's d blocks, V's key blocks).
    auto chunkOf = [&](Value outer, int64_t inner, Value block, Value row) {
      return add(mul(add(mul(outer, idx(inner)), block), idx(8)), row);
    };
    // K by the tile's chunks: chunk c = tid + 128 s is key j0 + 8 (c /
    // dPad) + c % 8, columns 8 (c / 8 % chunksPerRow) + [0, 8), so that
    // the store's index is c and a subgroup writes 512 consecutive bytes.
    for (int64_t c0 = 0; c0 < kMmaPackKeys * chunksPerRow; c0 += threads) {
      Value c = add(tid, idx(c0));
      Value rest = arith::DivUIOp::create(b, c, idx(8));
      Value key =
          add(mul(arith::DivUIOp::create(b, rest, idx(chunksPerRow)), idx(8)),
              arith::RemUIOp::create(b, c, idx(8)));
      Value d0 =
          mul(arith::RemUIOp::create(b, rest, idx(chunksPerRow)), idx(8));
      SmallVector<Value, 8> values;
      for (int64_t e = 0; e < 8; ++e)
        values.push_back(
            element(k, add(j0, key), {batch, head}, add(d0, idx(e))));
      store(values, kPacked, {batch, head, tile, c, idx(0)});
    }
    // V transposed: chunk x = tid + 128 s is column d = x % dPad, keys j0 +
    // 8 kb + [0, 8) (kb = x / dPad), so that a subgroup's loads of one key
    // read consecutive columns; it goes to chunk (d / 8 * 4 + kb) * 8 + d %
    // 8 of the tile.
    for (int64_t x0 = 0; x0 < kMmaPackKeys / 8 * dPad; x0 += threads) {
      Value x = add(tid, idx(x0));
      Value d = arith::RemUIOp::create(b, x, idx(dPad));
      Value kb = arith::DivUIOp::create(b, x, idx(dPad));
      Value row = add(j0, mul(kb, idx(8)));
      SmallVector<Value, 8> values;
      for (int64_t e = 0; e < 8; ++e)
        values.push_back(element(v, add(row, idx(e)), {batch, head}, d));
      Value chunk =
          chunkOf(arith::DivUIOp::create(b, d, idx(8)), kMmaPackKeys / 8, kb,
                  arith::RemUIOp::create(b, d, idx(8)));
      store(values, vPacked, {batch, head, tile, chunk, idx(0)});
    }
    // r (klen rows, as the launch checks) by the workgroups of batch 0.
    auto ifFirst =
        scf::IfOp::create(b, cmp(P::eq, batch, idx(0)), /*withElse=*/false);
    b.setInsertionPointToStart(ifFirst.thenBlock());
    packRows(r, {head}, rPacked);
    b.setInsertionPointAfter(ifFirst);
    gpu::ReturnOp::create(b);
  }

private:
  gpu::GPUFuncOp func;
  int64_t dHead, dPad;
  FloatType operandType;
};

} // namespace

AttentionKernel mlir::txl::getOrCreateMmaAttentionKernel(ModuleOp module,
                                                         int64_t dHead,
                                                         FloatType operandType,
                                                         bool dropatt, bool lse,
                                                         int64_t xChains) {
  assert((operandType.isBF16() || operandType.isF16()) &&
         "mma.sync m16n8k16 takes bf16 or f16 operands");
  int64_t dPad = forwardPad(dHead);
  if (xChains == 0)
    xChains = defaultXChains(dPad, dropatt);
  assert(xChains > 0 && kMmaXBlocks % xChains == 0 &&
         "xChains divides X's blocks");
  // Resident workgroups per SM: the register file (64K) over maxRegisters
  // per work-item (the tiles, at most 80 KiB at d_head 128, allow as
  // many in sm_80's 164 KiB of shared memory).
  int64_t threads = kWarps * kSubgroupSize;
  bool packed = mmaAttentionPacksOperands(dHead);
  int32_t registers = maxRegisters(dPad, dropatt);
  AttentionKernel kernel{nullptr, kWarps * kRows, threads,
                         65536 / (registers * threads), packed};
  std::string name = std::string("rel_attention_") +
                     (operandType.isBF16() ? "bf16" : "f16") +
                     (dropatt ? "_dropatt" : "") + (lse ? "_lse_d" : "_d") +
                     std::to_string(dHead);
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  if ((kernel.func = kernels.lookupSymbol<gpu::GPUFuncOp>(name)))
    return kernel;
  MLIRContext *ctx = kernels.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  auto tile = [&](int64_t columns) {
    return MemRefType::get({kWarps * kRows, columns}, b.getF32Type(),
                           MemRefLayoutAttrInterface{}, b.getI64IntegerAttr(3));
  };
  // K and V of a key tile as txl.warpgroup_mma's B operands: core
  // matrices of 8 × 8 (N blocks × K blocks).
  int64_t dBlocks = dPad / 8;
  auto coreMatrices = [&](int64_t nBlocks, int64_t kBlocks) {
    return MemRefType::get({nBlocks, kBlocks, 8, 8}, operandType,
                           MemRefLayoutAttrInterface{}, b.getI64IntegerAttr(3));
  };
  // The r window is staged in the packed form (d_head padded to 32, 64 or
  // 128: asynchronous copies, which take no registers). With V's third
  // buffer the tiles pass PTX's 48 KiB of static shared memory at d_head
  // 64 (53,248 bytes), and at d_head 128 they take 81,920 bytes: on CUDA
  // txl-dynamic-shared-memory moves them into dynamic shared memory.
  SmallVector<Type> tiles = {tile(kXColumns),
                             coreMatrices(kKeyTile / 8, dBlocks),
                             coreMatrices(dBlocks, kKeyTile / 8)};
  auto window =
      MemRefType::get({kRingRows, 8 * dBlocks + kWindowPad}, operandType,
                      MemRefLayoutAttrInterface{}, b.getI64IntegerAttr(3));
  auto bytesOf = [](Type t) {
    auto type = cast<MemRefType>(t);
    return type.getNumElements() * type.getElementTypeBitWidth() / 8;
  };
  if (packed) {
    // The r ring, then K's and V's second buffers (the next key tile's
    // copies fly into them during this tile's products) and, carrying P·V,
    // V's third (the previous tile's P·V reads its V during this tile's).
    tiles.push_back(window);
    tiles.push_back(tiles[1]);
    tiles.push_back(tiles[2]);
    if (carriesPv(dPad))
      tiles.push_back(tiles[2]);
    int64_t bytes = 0;
    for (Type t : tiles)
      bytes += bytesOf(t);
    if (bytes > kMaxSharedBytes)
      llvm::report_fatal_error("the tensor-core attention's tiles exceed "
                               "the dynamic shared memory of an sm_80 "
                               "workgroup");
  }
  FunctionType type = attentionKernelType(ctx, dHead, /*unitInnerStride=*/true,
                                          dropatt, lse, /*keyParts=*/true);
  if (packed) {
    // key, value and pos_key packed (getOrCreateMmaPackKernel), then klen.
    SmallVector<Type> inputs(type.getInputs());
    std::array<Type, 3> packedTypes = mmaPackedTypes(ctx, dHead, operandType);
    std::copy(packedTypes.begin(), packedTypes.end(), inputs.begin() + 1);
    inputs.insert(inputs.begin() + 7, IndexType::get(ctx));
    type = FunctionType::get(ctx, inputs, {});
  }
  kernel.func = gpu::GPUFuncOp::create(b, kernels.getLoc(), name, type, tiles);
  kernel.func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                       b.getUnitAttr());
  kernel.func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({int32_t(kernel.threads), 1, 1}));
  kernel.func->setAttr("nvvm.maxnreg", b.getI32IntegerAttr(registers));
  MmaKernelBuilder(kernel.func, dHead, operandType, dropatt, lse, packed,
                   xChains)
      .build();
  return kernel;
}

bool mlir::txl::mmaAttentionPacksOperands(int64_t dHead) {
  return stagesWhole(forwardPad(dHead));
}

gpu::GPUFuncOp mlir::txl::getOrCreateMmaPackKernel(ModuleOp module,
                                                   int64_t dHead,
                                                   FloatType operandType) {
  assert(mmaAttentionPacksOperands(dHead) && "a width the kernel packs for");
  std::string name = std::string("rel_attention_pack_") +
                     (operandType.isBF16() ? "bf16" : "f16") + "_d" +
                     std::to_string(dHead);
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  if (auto func = kernels.lookupSymbol<gpu::GPUFuncOp>(name))
    return func;
  MLIRContext *ctx = kernels.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  SmallVector<Type> inputs = {
      attentionOperandType(ctx, 4, dHead, /*unitInnerStride=*/true),
      attentionOperandType(ctx, 4, dHead, /*unitInnerStride=*/true),
      attentionOperandType(ctx, 3, dHead, /*unitInnerStride=*/true)};
  llvm::append_range(inputs, mmaPackedTypes(ctx, dHead, operandType));
  auto func = gpu::GPUFuncOp::create(b, kernels.getLoc(), name,
                                     FunctionType::get(ctx, inputs, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({int32_t(kWarps * kSubgroupSize), 1, 1}));
  PackKernelBuilder(func, dHead, operandType).build();
  return func;
}
