//===- EmbeddingGradToGpu.cpp - txl.embedding_grad as sort + segments ----===//
//
// The GPU form of the embedding table's gradient (the scatter-add
// d_table[t] = init[t] + sum over positions p with tokens[p] = t of
// d_result[p], positions in order). Without this pass the generic lowering
// leaves a sequential loop over positions and columns, which runs as one
// work-item (a `_serial` kernel). Here, with N = qlen · batch positions
// numbered row-major (p = i · batch + b, the CPU lowering's order):
//
//   `embedding_grad_sort`: one work-item per position p computes its rank
//     among the positions ordered by (token, position), a stable counting
//     sort: rank_p = #{q : tokens[q] < tokens[p] or (tokens[q] = tokens[p]
//     and q < p)}, reading the tokens in tiles of 256 through workgroup
//     memory, and writes order[rank_p] = p, sorted[rank_p] = tokens[p]. The
//     ranks are a permutation, so the writes never collide. O(N²)
//     comparisons: 2 M for ptb_small's 1280 positions, 127 M for
//     enwik8_base's 11264, a fraction of a millisecond on a GPU.
//   `embedding_grad_rows`: one subgroup per sorted index s; the subgroup
//     whose s starts a run of equal tokens (a segment) owns that token's
//     row: lane l walks columns l, l + 32, ... (coalesced), adding the
//     segment's rows of d_result in sorted order, which is position order,
//     onto the row of the output (a copy of init, or zeros) and writing it
//     once.
//
// No float atomics: each output element is summed by one work-item in
// position order, the CPU lowering's order, so the result is bit-equal to
// the CPU target's and to itself from run to run. Tokens outside
// [0, n_token) (which the runtime's readers never produce) are skipped
// rather than written out of bounds.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/KernelModule.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::txl {
#define GEN_PASS_DEF_CONVERTEMBEDDINGGRADTOGPUPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;
using namespace mlir::txl;

namespace {

/// Work-items per workgroup of both kernels, and the sort's token tile.
constexpr int64_t kThreads = 256;
/// Sorted indices per workgroup of `embedding_grad_rows`: one per subgroup.
constexpr int64_t kRowsPerWorkgroup = kThreads / kSubgroupSize;

/// memref<?xT, strided<[?], offset: ?>>.
MemRefType vectorType(Type element) {
  MLIRContext *ctx = element.getContext();
  return MemRefType::get({ShapedType::kDynamic}, element,
                         StridedLayoutAttr::get(ctx, ShapedType::kDynamic,
                                                {ShapedType::kDynamic}));
}

/// memref<?x?xf32, strided<[?, 1], offset: ?>>: rows of d_result and of the
/// table.
MemRefType rowsType(MLIRContext *ctx) {
  return MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic},
                         Float32Type::get(ctx),
                         StridedLayoutAttr::get(ctx, ShapedType::kDynamic,
                                                {ShapedType::kDynamic, 1}));
}

Value idx(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}

/// `embedding_grad_sort(tokens [N] i64, order [N] i64, sorted [N] i64)`;
/// `reverseTies`: equal tokens by descending position (negative controls).
void buildSortKernel(gpu::GPUFuncOp func, bool reverseTies) {
  Block &entry = func.getBody().front();
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToStart(&entry);
  Value tokens = entry.getArgument(0), order = entry.getArgument(1),
        sorted = entry.getArgument(2);
  Value tile = func.getWorkgroupAttributions()[0];
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value p = arith::AddIOp::create(
      b,
      arith::MulIOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::x),
                            idx(b, kThreads)),
      tid);
  Value n = memref::DimOp::create(b, tokens, 0);
  Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, p, n);
  Type i64 = b.getI64Type();
  Value zero64 = arith::ConstantIntOp::create(b, i64, 0);
  // Work-items past the end take part in the tile loads and barriers.
  auto mine = scf::IfOp::create(
      b, valid,
      [&](OpBuilder &nb, Location loc) {
        Value t = memref::LoadOp::create(nb, loc, tokens, ValueRange{p});
        scf::YieldOp::create(nb, loc, t);
      },
      [&](OpBuilder &nb, Location loc) {
        scf::YieldOp::create(nb, loc, zero64);
      });
  Value token = mine.getResult(0);
  Value step = idx(b, kThreads);
  auto tiles = scf::ForOp::create(b, idx(b, 0), n, step, ValueRange{zero64});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(tiles.getBody());
    Value base = tiles.getInductionVar();
    Value q = arith::AddIOp::create(b, base, tid);
    auto load = scf::IfOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, q, n),
        /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(load.thenBlock());
      Value t = memref::LoadOp::create(b, tokens, ValueRange{q});
      memref::StoreOp::create(b, t, tile, ValueRange{tid});
    }
    gpu::BarrierOp::create(b);
    Value count =
        arith::MinUIOp::create(b, step, arith::SubIOp::create(b, n, base));
    auto scan = scf::ForOp::create(b, idx(b, 0), count, idx(b, 1),
                                   tiles.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(scan.getBody());
      Value j = scan.getInductionVar();
      Value other = memref::LoadOp::create(b, tile, ValueRange{j});
      Value less =
          arith::CmpIOp::create(b, arith::CmpIPredicate::slt, other, token);
      Value same =
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, other, token);
      Value before = arith::CmpIOp::create(
          b,
          reverseTies ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::ult,
          arith::AddIOp::create(b, base, j), p);
      Value precedes =
          arith::OrIOp::create(b, less, arith::AndIOp::create(b, same, before));
      Value rank =
          arith::AddIOp::create(b, scan.getRegionIterArgs()[0],
                                arith::ExtUIOp::create(b, i64, precedes));
      scf::YieldOp::create(b, rank);
    }
    // The next tile overwrites this one.
    gpu::BarrierOp::create(b);
    scf::YieldOp::create(b, scan.getResults());
  }
  auto write = scf::IfOp::create(b, valid, /*withElseRegion=*/false);
  b.setInsertionPointToStart(write.thenBlock());
  Value rank =
      arith::IndexCastOp::create(b, b.getIndexType(), tiles.getResult(0));
  memref::StoreOp::create(b, arith::IndexCastOp::create(b, i64, p), order,
                          ValueRange{rank});
  memref::StoreOp::create(b, token, sorted, ValueRange{rank});
  b.setInsertionPointAfter(write);
  gpu::ReturnOp::create(b);
}

/// `embedding_grad_rows(d_result [N, d], order [N] i64, sorted [N] i64,
/// table [n_token, d])`: table rows += their segments' rows of d_result.
void buildRowsKernel(gpu::GPUFuncOp func) {
  Block &entry = func.getBody().front();
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToStart(&entry);
  Value dy = entry.getArgument(0), order = entry.getArgument(1),
        sorted = entry.getArgument(2), table = entry.getArgument(3);
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value lane = arith::RemUIOp::create(b, tid, idx(b, kSubgroupSize));
  Value s = arith::AddIOp::create(
      b,
      arith::MulIOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::x),
                            idx(b, kRowsPerWorkgroup)),
      arith::DivUIOp::create(b, tid, idx(b, kSubgroupSize)));
  Value c0 = idx(b, 0), c1 = idx(b, 1);
  Value n = memref::DimOp::create(b, sorted, 0);
  Value width = memref::DimOp::create(b, table, 1);
  Value nToken = arith::IndexCastOp::create(b, b.getI64Type(),
                                            memref::DimOp::create(b, table, 0));
  auto inRange = scf::IfOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, s, n),
      /*withElseRegion=*/false);
  b.setInsertionPointToStart(inRange.thenBlock());
  Value token = memref::LoadOp::create(b, sorted, ValueRange{s});
  // s starts a segment: s = 0 or its predecessor's token differs.
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, s, c0);
  auto previous = scf::IfOp::create(
      b, first,
      [&](OpBuilder &nb, Location loc) {
        scf::YieldOp::create(nb, loc, ValueRange{first});
      },
      [&](OpBuilder &nb, Location loc) {
        Value before = arith::SubIOp::create(nb, loc, s, c1);
        Value t = memref::LoadOp::create(nb, loc, sorted, ValueRange{before});
        Value differs =
            arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ne, t, token);
        scf::YieldOp::create(nb, loc, ValueRange{differs});
      });
  Value zero64 = arith::ConstantIntOp::create(b, b.getI64Type(), 0);
  Value inTable = arith::AndIOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::sge, token, zero64),
      arith::CmpIOp::create(b, arith::CmpIPredicate::slt, token, nToken));
  auto owner = scf::IfOp::create(
      b, arith::AndIOp::create(b, previous.getResult(0), inTable),
      /*withElseRegion=*/false);
  b.setInsertionPointToStart(owner.thenBlock());
  // The segment's end: the first sorted index past s with another token.
  auto end = scf::WhileOp::create(
      b, TypeRange{b.getIndexType()},
      ValueRange{arith::AddIOp::create(b, s, c1)},
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value t = args[0];
        Value more =
            arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ult, t, n);
        auto same = scf::IfOp::create(
            nb, loc, more,
            [&](OpBuilder &ib, Location l) {
              Value next = memref::LoadOp::create(ib, l, sorted, ValueRange{t});
              Value eq = arith::CmpIOp::create(ib, l, arith::CmpIPredicate::eq,
                                               next, token);
              scf::YieldOp::create(ib, l, ValueRange{eq});
            },
            [&](OpBuilder &ib, Location l) {
              scf::YieldOp::create(ib, l, ValueRange{more});
            });
        scf::ConditionOp::create(nb, loc, same.getResult(0), args);
      },
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value next = arith::AddIOp::create(nb, loc, args[0], c1);
        scf::YieldOp::create(nb, loc, ValueRange{next});
      });
  Value row = arith::IndexCastOp::create(b, b.getIndexType(), token);
  auto columns = scf::ForOp::create(b, lane, width, idx(b, kSubgroupSize));
  b.setInsertionPointToStart(columns.getBody());
  Value col = columns.getInductionVar();
  Value init = memref::LoadOp::create(b, table, ValueRange{row, col});
  auto sum = scf::ForOp::create(b, s, end.getResult(0), c1, ValueRange{init});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(sum.getBody());
    Value position = arith::IndexCastOp::create(
        b, b.getIndexType(),
        memref::LoadOp::create(b, order, ValueRange{sum.getInductionVar()}));
    Value term = memref::LoadOp::create(b, dy, ValueRange{position, col});
    scf::YieldOp::create(b, ValueRange{arith::AddFOp::create(
                                b, sum.getRegionIterArgs()[0], term)});
  }
  memref::StoreOp::create(b, sum.getResult(0), table, ValueRange{row, col});
  b.setInsertionPointAfter(inRange);
  gpu::ReturnOp::create(b);
}

/// Kernel `name` of type (`inputs`) -> () in `module`'s @txl_kernels,
/// built by `build` on first use.
gpu::GPUFuncOp getOrCreateKernel(ModuleOp module, StringRef name,
                                 ArrayRef<Type> inputs,
                                 ArrayRef<Type> workgroup,
                                 function_ref<void(gpu::GPUFuncOp)> build) {
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  if (auto existing = kernels.lookupSymbol<gpu::GPUFuncOp>(name))
    return existing;
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  auto func = gpu::GPUFuncOp::create(b, kernels.getLoc(), name,
                                     b.getFunctionType(inputs, {}), workgroup);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({int32_t(kThreads), 1, 1}));
  build(func);
  return func;
}

// txl.embedding_grad (f32) => the output buffer (a copy of init, or
// zeros), the sort launch on [N] token ids, the rows launch, to_tensor.
struct EmbeddingGradToLaunch : public OpRewritePattern<EmbeddingGradOp> {
  EmbeddingGradToLaunch(MLIRContext *ctx, ModuleOp module, bool reverseTies)
      : OpRewritePattern(ctx), module(module), reverseTies(reverseTies) {}

  LogicalResult matchAndRewrite(EmbeddingGradOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "only f32 has a GPU kernel");
    if (!op.getInit() && !type.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "a dynamic table without init");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    MLIRContext *ctx = op.getContext();
    Type i64 = b.getI64Type();
    MemRefType ids = vectorType(i64);
    gpu::GPUFuncOp sort = getOrCreateKernel(
        module, "embedding_grad_sort", {ids, ids, ids},
        {MemRefType::get({kThreads}, i64, MemRefLayoutAttrInterface{},
                         IntegerAttr::get(IntegerType::get(ctx, 64), 3))},
        [&](gpu::GPUFuncOp func) { buildSortKernel(func, reverseTies); });
    gpu::GPUFuncOp rows = getOrCreateKernel(
        module, "embedding_grad_rows", {rowsType(ctx), ids, ids, rowsType(ctx)},
        {}, buildRowsKernel);

    // Positions row-major: p = i · batch + b.
    Value tokens = tensor::CollapseShapeOp::create(
        b, op.getTokens(), SmallVector<ReassociationIndices>{{0, 1}});
    Value dy = tensor::CollapseShapeOp::create(
        b, op.getDResult(), SmallVector<ReassociationIndices>{{0, 1}, {2}});
    Value n = tensor::DimOp::create(b, tokens, 0);
    auto workType = MemRefType::get({ShapedType::kDynamic}, i64);
    Value order = memref::AllocOp::create(b, workType, ValueRange{n});
    Value sorted = memref::AllocOp::create(b, workType, ValueRange{n});

    // The table's sizes: init's, or static (the verifier's n_token and
    // d_embed).
    SmallVector<Value> tableSizes;
    if (Value init = op.getInit()) {
      for (int64_t dim = 0; dim < type.getRank(); ++dim)
        if (type.isDynamicDim(dim))
          tableSizes.push_back(tensor::DimOp::create(b, init, dim));
    }
    auto tableType = MemRefType::get(type.getShape(), type.getElementType());
    Value table = memref::AllocOp::create(b, tableType, tableSizes);
    if (Value init = op.getInit()) {
      memref::CopyOp::create(
          b,
          bufferization::ToBufferOp::create(b, tableType, init,
                                            /*read_only=*/b.getUnitAttr()),
          table);
    } else {
      Value zero =
          arith::ConstantFloatOp::create(b, b.getF32Type(), APFloat(0.0f));
      linalg::FillOp::create(b, ValueRange{zero}, ValueRange{table});
    }

    Value c1 = idx(b, 1);
    Value threads = idx(b, kThreads);
    Value orderView = memref::CastOp::create(b, ids, order);
    Value sortedView = memref::CastOp::create(b, ids, sorted);
    gpu::LaunchFuncOp::create(
        b, sort,
        gpu::KernelDim3{arith::CeilDivUIOp::create(b, n, threads), c1, c1},
        gpu::KernelDim3{threads, c1, c1},
        /*dynamicSharedMemorySize=*/Value(),
        ValueRange{toKernelBuffer(b, tokens, ids), orderView, sortedView});
    gpu::LaunchFuncOp::create(
        b, rows,
        gpu::KernelDim3{
            arith::CeilDivUIOp::create(b, n, idx(b, kRowsPerWorkgroup)), c1,
            c1},
        gpu::KernelDim3{threads, c1, c1},
        /*dynamicSharedMemorySize=*/Value(),
        ValueRange{toKernelBuffer(b, dy, rowsType(ctx)), orderView, sortedView,
                   memref::CastOp::create(b, rowsType(ctx), table)});
    rewriter.replaceOp(op, bufferization::ToTensorOp::create(
                               b, type, table, /*restrict=*/b.getUnitAttr(),
                               /*writable=*/b.getUnitAttr()));
    return success();
  }

  ModuleOp module;
  bool reverseTies;
};

// txl.adaptive_embedding_grad (f32, static tables) => per cluster i, over
// every position: the cluster's local ids (t - lo for lo <= t < hi, else
// -1), d_emb = d_result · proj_i (txl.linear_input_grad, one product),
// d_table_i = txl.embedding_grad(d_emb, ids) (the sort kernels above, which
// skip the -1s) and d_proj_i = txl.linear_weight_grad(d_result, the table
// rows of the ids, zero for -1). The products cover every position, where
// the CPU lowering first compacts each cluster's: on a GPU a product over
// all positions costs less than the compaction's serial scan.
struct AdaptiveEmbeddingGradToClusters
    : public OpRewritePattern<AdaptiveEmbeddingGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AdaptiveEmbeddingGradOp op,
                                PatternRewriter &rewriter) const override {
    auto dyType = cast<RankedTensorType>(op.getDResult().getType());
    if (!dyType.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "only f32 has GPU kernels");
    if (llvm::any_of(op.getTables().getTypes(), [](Type t) {
          return !cast<RankedTensorType>(t).hasStaticShape();
        }))
      return rewriter.notifyMatchFailure(op, "dynamic tables");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    MLIRContext *ctx = op.getContext();
    Value tokens = op.getTokens(), dy = op.getDResult();
    auto tokenType = cast<RankedTensorType>(tokens.getType());
    SmallVector<Value> positions;
    for (int64_t dim = 0; dim < 2; ++dim)
      if (tokenType.isDynamicDim(dim))
        positions.push_back(tensor::DimOp::create(b, tokens, dim));
    AffineMap id2 = AffineMap::getMultiDimIdentityMap(2, ctx);
    AffineMap id3 = AffineMap::getMultiDimIdentityMap(3, ctx);
    AffineMap leading2 = AffineMap::get(
        3, 0, {getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx)}, ctx);
    SmallVector<utils::IteratorType> parallel3(3,
                                               utils::IteratorType::parallel);
    ArrayRef<int64_t> ends = op.getCutoffEnds();
    SmallVector<Value> dTables, dProjs;
    for (auto [i, tableArg, proj] :
         llvm::enumerate(op.getTables(), op.getProjs())) {
      // A plain variable: the lambda below captures it (structured
      // bindings cannot be captured before C++20).
      Value table = tableArg;
      int64_t lo = ends[i], hi = ends[i + 1];
      // ids[p] = t - lo in the cluster, else -1.
      Value ids = linalg::GenericOp::create(
                      b, TypeRange{tokenType}, ValueRange{tokens},
                      ValueRange{tensor::EmptyOp::create(
                          b, tokenType.getShape(), b.getI64Type(), positions)},
                      ArrayRef<AffineMap>{id2, id2},
                      SmallVector<utils::IteratorType>(
                          2, utils::IteratorType::parallel),
                      [&](OpBuilder &nb, Location l, ValueRange a) {
                        ImplicitLocOpBuilder ib(l, nb);
                        Value loC = arith::ConstantIntOp::create(ib, lo, 64);
                        Value hiC = arith::ConstantIntOp::create(ib, hi, 64);
                        Value in = arith::AndIOp::create(
                            ib,
                            arith::CmpIOp::create(ib, arith::CmpIPredicate::sge,
                                                  a[0], loC),
                            arith::CmpIOp::create(ib, arith::CmpIPredicate::slt,
                                                  a[0], hiC));
                        Value local = arith::SelectOp::create(
                            ib, in, arith::SubIOp::create(ib, a[0], loC),
                            arith::ConstantIntOp::create(ib, -1, 64));
                        linalg::YieldOp::create(ib, local);
                      })
                      .getResult(0);
      auto tableType = cast<RankedTensorType>(table.getType());
      int64_t dEmbed = tableType.getDimSize(1);
      auto rowsType = RankedTensorType::get(
          {dyType.getDimSize(0), dyType.getDimSize(1), dEmbed}, b.getF32Type());
      Value dEmb = LinearInputGradOp::create(b, rowsType, dy, proj);
      dTables.push_back(EmbeddingGradOp::create(b, tableType, dEmb, ids,
                                                /*init=*/Value()));
      // The table rows of the ids: emb[p, c] = table[ids[p], c], 0 for -1.
      Value emb =
          linalg::GenericOp::create(
              b, TypeRange{rowsType}, ValueRange{ids},
              ValueRange{tensor::EmptyOp::create(b, rowsType.getShape(),
                                                 b.getF32Type(), positions)},
              ArrayRef<AffineMap>{leading2, id3}, parallel3,
              [&](OpBuilder &nb, Location l, ValueRange a) {
                ImplicitLocOpBuilder ib(l, nb);
                Value valid = arith::CmpIOp::create(
                    ib, arith::CmpIPredicate::sge, a[0],
                    arith::ConstantIntOp::create(ib, 0, 64));
                Value row = arith::IndexCastOp::create(
                    ib, ib.getIndexType(),
                    arith::SelectOp::create(
                        ib, valid, a[0],
                        arith::ConstantIntOp::create(ib, 0, 64)));
                Value x = tensor::ExtractOp::create(
                    ib, table, ValueRange{row, linalg::IndexOp::create(ib, 2)});
                linalg::YieldOp::create(
                    ib, ValueRange{arith::SelectOp::create(
                            ib, valid, x,
                            arith::ConstantFloatOp::create(ib, ib.getF32Type(),
                                                           APFloat(0.0f)))});
              })
              .getResult(0);
      dProjs.push_back(LinearWeightGradOp::create(b, proj.getType(), dy, emb));
    }
    SmallVector<Value> results(dTables);
    llvm::append_range(results, dProjs);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct ConvertEmbeddingGradToGpuPass
    : public txl::impl::ConvertEmbeddingGradToGpuPassBase<
          ConvertEmbeddingGradToGpuPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    RewritePatternSet patterns(&getContext());
    patterns.add<EmbeddingGradToLaunch>(&getContext(), module, testReverseTies);
    patterns.add<AdaptiveEmbeddingGradToClusters>(&getContext());
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
