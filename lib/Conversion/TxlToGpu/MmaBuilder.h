//===- MmaBuilder.h - Kernel bodies with warp-level mma.sync ------*- C++
//-*-===//
//
// What the tensor-core kernels (RelAttentionMma.cpp, RelAttentionGradMma.cpp)
// write their bodies with: bf16 or f16 operands rounded from f32, bounded
// loads that keep column offsets immediate, one m16n8k16 product
// (nvgpu.mma.sync, f32 accumulators) and rolled loops.
//
// Register layout of m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16
// with floating point type"), lane = 4 g + t:
//   A (16 × 16, vector<4x2xbf16> or f16): [r][e] holds (g + 8 (r & 1),
//     2 t + e + 8 (r >> 1)),
//   B (16 × 8,  vector<2x2xbf16> or f16): [r][e] holds (2 t + e + 8 r, g),
//   C (16 × 8,  vector<2x2xf32>):  [r][e] holds (g + 8 r, 2 t + e).
// So the C fragments of two neighbouring n-blocks, as they sit in a lane's
// registers, are the A fragment of their 16 columns: A[2 h + r][e] =
// C_h[r][e]. txl-mma-to-nvvm lowers the op to mma.sync on the CUDA target;
// txl-emulate-mma rewrites it into subgroup shuffles with exactly this
// layout on the OpenCL target.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_LIB_CONVERSION_TXLTOGPU_MMABUILDER_H
#define TXL_LIB_CONVERSION_TXLTOGPU_MMABUILDER_H

#include "RelAttention.h"
#include "txl/Conversion/KernelModule.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::txl {

/// A fragment: the scalars of one mma operand in [register][element]
/// order (8 for A, 4 for B and C).
using Fragment = SmallVector<Value, 8>;

class MmaBodyBuilder : public KernelBodyBuilder {
protected:
  /// `dPad`: the products' K width, d_head padded with zero columns (0:
  /// to a multiple of 16, the mma's k-step).
  MmaBodyBuilder(gpu::GPUFuncOp func, int64_t dHead, FloatType operandType,
                 int64_t dPad = 0)
      : KernelBodyBuilder(func), dHead(dHead),
        dPad(dPad ? dPad : int64_t(llvm::alignTo(dHead, 16))),
        operandType(operandType) {}

  Value both(Value x, Value y) { return arith::AndIOp::create(b, x, y); }
  /// `x` rounded to the products' operand type.
  Value operand(Value x) { return arith::TruncFOp::create(b, operandType, x); }

  /// `memref[rowIndices..., d]` if `rowOk` and d < d_head, else 0, never
  /// reading out of bounds: the row indices are replaced by 0 when !rowOk
  /// and d is clamped to d_head - 1, a check only d_head not a multiple of
  /// 16 needs; so the column offsets stay immediates of the loads.
  Value loadOrZero(Value memref, SmallVector<Value> rowIndices, Value rowOk,
                   Value d);
  /// Rows of a global operand: `mem[row, rest..., d]` for row < `rowEnd`
  /// (an unsigned compare, so a negative row is outside too), else 0; plus
  /// `bias[head, d]` when `bias` is set.
  struct Rows {
    Value mem;
    SmallVector<Value, 2> rest;
    Value rowEnd;
    Value bias = {};
  };
  /// Element (row, d) of `rows`.
  Value rowValue(const Rows &rows, Value row, Value d);
  /// The same for a row known to be below rowEnd: the row index enters the
  /// address unchanged, so that the addresses of rows row + c, c constant,
  /// are one addition apart (NVPTX's straight-line strength reduction)
  /// rather than a 64-bit product each.
  Value wholeRowValue(const Rows &rows, Value row, Value d);
  /// `x` plus `rows.bias[head, d]` when the rows have a bias.
  Value withBias(const Rows &rows, Value x, Value d);
  /// The A fragment of `rows` row0 + [0, 16) (the M), d_head k-step `ks`.
  Fragment rowsA(const Rows &rows, Value row0, int64_t ks);
  /// The B fragment of d_head k-step `ks` (the K) × `rows` row0 + [0, 8)
  /// (the N): the rows as the columns of a product.
  Fragment rowsAsColumns(const Rows &rows, Value row0, int64_t ks);
  /// The B fragment of `rows` row0 + [0, 16) (the K) × d_head columns 8 db
  /// + [0, 8) (the N), from column `col0` on when set.
  Fragment rowsB(const Rows &rows, Value row0, int64_t db, Value col0 = {});
  /// The B fragments of two consecutive k-steps (K = columns col0 + [0,
  /// 32)) × rows row0 + [0, 8) (the N) of `tile`, a row-major workgroup
  /// tile of operandType whose rows are the product's columns, by one
  /// nvgpu.ldmatrix of 4 core matrices (ldmatrix.sync.x4: a shared-memory
  /// load instruction where the lane's own 32-bit reads take 8): lane
  /// 8 m + i gives the address of row i of core matrix m, columns col0 +
  /// 8 m on. Row addresses must be 16-byte aligned (the tile's row length
  /// and col0 multiples of 8 elements). result[s] is k-step s's fragment.
  std::array<Fragment, 2> ldmatrixB(Value tile, Value row0, Value col0);
  /// D = A B + C for one m16n8k16 block.
  Fragment mma(const Fragment &a, const Fragment &bOp, const Fragment &c);
  /// The same with A packed by packA.
  Fragment mma(Value packedA, const Fragment &bOp, const Fragment &c);
  /// D = A B + C for the workgroup's 64 rows (txl.warpgroup_mma): `a`, the
  /// subgroup's A fragment of each k-step; `tile`, B staged in workgroup
  /// memory as the op's core matrices; `acc`, the accumulators of each
  /// n-block in turn (4 each), and so is the result.
  Fragment warpgroupMma(ArrayRef<Fragment> a, Value tile, ArrayRef<Value> acc);
  /// The same product issued asynchronously (txl.warpgroup_mma async): the
  /// result is in flight until waitWarpgroupMma.
  Value issueWarpgroupMma(ArrayRef<Fragment> a, Value tile,
                          ArrayRef<Value> acc);
  /// The accumulators of `product` (issueWarpgroupMma's), ready once at
  /// most `pending` products issued after it are in flight
  /// (txl.warpgroup_mma_wait).
  Fragment waitWarpgroupMma(Value product, int64_t pending);
  /// A global operand staged for txl.warpgroup_mma: `rows` into `tile`, as
  /// B(row, column) (the rows along the product's K) when `rowsAlongK`, at
  /// tile[c / 8][r / 8][c % 8][r % 8], else as B(column, row) at
  /// tile[r / 8][c / 8][r % 8][c % 8] (r, c counted from the staged
  /// block's first row and column).
  struct StagedOperand {
    Rows rows;
    Value tile;
    bool rowsAlongK;
  };
  /// Stores rows row0 + [0, numRows) × columns col0 + [0, numCols) (from
  /// column 0 when `col0` is unset) of each of `operands`, rounded, into
  /// its tile, every element once by the workgroup's 128 work-items (a
  /// warpgroup): work-item x takes the elements x + 128 s of the row-major
  /// block, so that a subgroup reads 32 consecutive columns of a row. Rows
  /// outside the operand's rowEnd and columns from d_head on are zero. numRows
  /// × numCols must be a multiple of 128. With `unroll`, the steps are
  /// written out (straight-line loads that ptxas keeps in flight together)
  /// instead of a rolled loop, each work-item keeping one column and
  /// stepping down the rows: numCols must divide 128 into rows of
  /// work-items that divide a core matrix's 8 (16, 32, 64 or 128 columns).
  /// Then without `checkRows` (every row of the block below its operand's
  /// rowEnd) each operand's rows are read unchecked through one view per
  /// work-item (wholeRowValue), a constant offset apart; with
  /// `vectorLoads` too, when d_head needs no padding, no operand has a bias
  /// and 4 columns of 2 rows a work-item still give pairs of rows of
  /// work-items that are whole core matrices (32 or 64 columns), each
  /// work-item takes 4 consecutive columns of 2 consecutive rows, a row's
  /// in one 16-byte load (the operands' rows are whole multiples of 4
  /// floats from 16-byte aligned device buffers, which the launch checks),
  /// so that a transposed tile gets each column's two rows side by side.
  /// Needs a barrier before the tiles are read.
  void stageOperands(ArrayRef<StagedOperand> operands, Value row0,
                     int64_t numRows, Value col0, int64_t numCols,
                     bool unroll = false, bool checkRows = true,
                     bool vectorLoads = false);
  /// An A fragment as the mma's vector<4x2x(bf16|f16)> operand: a fragment
  /// held across a loop this way stays in 4 registers of two halves each.
  Value packA(const Fragment &a);
  /// A zero accumulator.
  Fragment zeros() { return Fragment(4, f32(0.0)); }
  /// Stores accumulator `acc` (16 rows from `row0` × 8 columns from
  /// `col0`) into `tile`, each lane its own 4 positions.
  void storeC(const Fragment &acc, Value tile, Value row0, Value col0) {
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t e = 0; e < 2; ++e)
        memref::StoreOp::create(
            b, acc[2 * r + e], tile,
            ValueRange{add(row0, add(g, idx(8 * r))),
                       add(col0, add(mul(t, idx(2)), idx(e)))});
  }
  /// `v` reduced over the 4 lanes of a quad (the lanes holding one row).
  Value quadReduce(Value v, bool isMax);
  /// A loop over [0, n) that LLVM keeps rolled: fully unrolled, a tile's
  /// global loads are all hoisted ahead of their products and ptxas runs
  /// out of registers.
  /// With `keepInvariants`, LLVM's LICM also leaves the body's
  /// loop-invariant values in it (llvm.licm.disable): the dropatt Philox
  /// round keys, hoisted, stay live in 18 64-bit registers for the whole
  /// kernel.
  scf::ForOp loopOver(int64_t n, ValueRange init = {},
                      bool keepInvariants = false);
  /// `body(iv)` in a loopOver(n) without loop-carried values.
  void forRange(int64_t n, function_ref<void(Value)> body) {
    forRange(n, /*keepInvariants=*/false, body);
  }
  /// The same, the body's invariants kept in it with `keepInvariants`.
  void forRange(int64_t n, bool keepInvariants, function_ref<void(Value)> body);

  /// Sets batchIdx and head from the grid's y (a (batch, head) column of
  /// `nHead` heads).
  void setColumn(Value nHead) {
    Value column = gpu::BlockIdOp::create(b, gpu::Dimension::y);
    batchIdx = arith::DivUIOp::create(b, column, nHead);
    head = arith::RemUIOp::create(b, column, nHead);
  }
  /// Sets warp (the subgroup) and the lane's g and t (lane = 4 g + t).
  void setLane() {
    Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    warp = arith::DivUIOp::create(b, tid, idx(kSubgroupSize));
    Value lane = gpu::LaneIdOp::create(b, /*upper_bound=*/IntegerAttr());
    g = arith::DivUIOp::create(b, lane, idx(4));
    t = arith::RemUIOp::create(b, lane, idx(4));
  }

  /// Set by setColumn and setLane.
  Value batchIdx, head, warp, g, t;
  /// d_head and d_head padded with zeros to the mma's K, 16.
  int64_t dHead, dPad;
  /// bf16 or f16: the A and B operands of every product.
  FloatType operandType;
};

} // namespace mlir::txl

#endif // TXL_LIB_CONVERSION_TXLTOGPU_MMABUILDER_H
