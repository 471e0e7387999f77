//===- SumLeadingToGpu.cpp - txl.sum_leading => a split column sum --------===//
//
// Rewrites each f32 txl.sum_leading with a static result (a bias gradient:
// the rows of d_result [..., C] summed into [C]) into two launches over
// the input as [R, C]: `sum_rows_part_c<C>`, whose work-items each sum one
// column over a part of kRowsPerPart consecutive rows (a grid of parts ×
// column blocks of 256), and `sum_rows_parts_c<C>`, whose work-items each
// sum one column's parts in order. The generic lowering gives each column
// to one work-item that sums all R rows: 512 work-items, 2 workgroups, for
// ptb_small's feed-forward bias at R = 1024, on a GPU of 132
// multiprocessors. Both orders are fixed, so the result is the same run to
// run.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/KernelModule.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::txl {
#define GEN_PASS_DEF_CONVERTSUMLEADINGTOGPUPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;
using namespace mlir::txl;

namespace {

/// Rows one work-item of the first kernel sums: ptb_small's R = 1024
/// training rows make 64 parts, so that its 512-column feed-forward bias
/// takes 128 workgroups of 256.
constexpr int64_t kRowsPerPart = 16;

/// Work-items per workgroup of both kernels: 256 consecutive columns.
constexpr int64_t kThreads = 256;

/// memref<? x C x f32, strided<[?, 1], offset: ?>>: the input rows.
MemRefType rowsType(MLIRContext *ctx, int64_t columns) {
  return MemRefType::get({ShapedType::kDynamic, columns}, Float32Type::get(ctx),
                         StridedLayoutAttr::get(ctx, ShapedType::kDynamic,
                                                {ShapedType::kDynamic, 1}));
}

/// A kernel of `module`'s @txl_kernels named `name` taking `inputs`, 256
/// work-items a workgroup; `body(b, column)` fills in the work-item's
/// column when it is below `columns`.
gpu::GPUFuncOp getOrCreateKernel(
    ModuleOp module, StringRef name, TypeRange inputs, int64_t columns,
    function_ref<void(ImplicitLocOpBuilder &, Block &, Value)> body) {
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  if (auto existing = kernels.lookupSymbol<gpu::GPUFuncOp>(name))
    return existing;
  OpBuilder mb = OpBuilder::atBlockEnd(kernels.getBody());
  auto func = gpu::GPUFuncOp::create(mb, kernels.getLoc(), name,
                                     mb.getFunctionType(inputs, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), mb.getUnitAttr());
  func.setKnownBlockSizeAttr(
      mb.getDenseI32ArrayAttr({int32_t(kThreads), 1, 1}));
  Block &entry = func.getBody().front();
  ImplicitLocOpBuilder b(func.getLoc(), module.getContext());
  b.setInsertionPointToStart(&entry);
  // Column blocks on y (at most ceil(C / 256)), parts on x (up to R / 16,
  // past CUDA's 65,535 limit of y).
  Value column = arith::AddIOp::create(
      b,
      arith::MulIOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::y),
                            arith::ConstantIndexOp::create(b, kThreads)),
      gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  Value inRange =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, column,
                            arith::ConstantIndexOp::create(b, columns));
  auto guard = scf::IfOp::create(b, inRange, /*withElseRegion=*/false);
  b.setInsertionPointToStart(guard.thenBlock());
  body(b, entry, column);
  b.setInsertionPointAfter(guard);
  gpu::ReturnOp::create(b);
  return func;
}

/// Σ over i in [begin, end) of `load(i)`, in order from 0.
Value sumOver(ImplicitLocOpBuilder &b, Value begin, Value end,
              function_ref<Value(Value)> load) {
  Value zero = arith::ConstantFloatOp::create(b, b.getF32Type(), APFloat(0.0f));
  auto loop = scf::ForOp::create(
      b, begin, end, arith::ConstantIndexOp::create(b, 1), ValueRange{zero});
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(loop.getBody());
  scf::YieldOp::create(b, arith::AddFOp::create(b, loop.getRegionIterArgs()[0],
                                                load(loop.getInductionVar()))
                              .getResult());
  return loop.getResult(0);
}

// txl.sum_leading (f32, static result of C elements) => the input as [R, C],
// a [P, C] buffer of parts (P = ceil(R / kRowsPerPart)) written by
// sum_rows_part_c<C>, the [C] result written by sum_rows_parts_c<C>,
// expanded back to the result's shape.
struct SumLeadingToLaunches : public OpRewritePattern<SumLeadingOp> {
  SumLeadingToLaunches(MLIRContext *ctx, ModuleOp module)
      : OpRewritePattern(ctx), module(module) {}

  LogicalResult matchAndRewrite(SumLeadingOp op,
                                PatternRewriter &rewriter) const override {
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    if (!inputType.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "only f32 has a GPU kernel");
    if (!resultType.hasStaticShape() || resultType.getRank() == 0)
      return rewriter.notifyMatchFailure(op, "a dynamic or scalar result");
    int64_t leading = inputType.getRank() - resultType.getRank();
    if (leading < 1)
      return rewriter.notifyMatchFailure(op, "nothing to sum over");
    MLIRContext *ctx = op.getContext();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    int64_t columns = resultType.getNumElements();

    // [..., trailing] as [R, C].
    SmallVector<ReassociationIndices> groups(2);
    for (int64_t d = 0; d < inputType.getRank(); ++d)
      groups[d < leading ? 0 : 1].push_back(d);
    Value in2 = tensor::CollapseShapeOp::create(b, op.getInput(), groups);
    Value rows = tensor::DimOp::create(b, in2, 0);
    Value perPart = arith::ConstantIndexOp::create(b, kRowsPerPart);
    Value parts = arith::CeilDivUIOp::create(b, rows, perPart);

    Type f32 = b.getF32Type();
    auto partsType = MemRefType::get({ShapedType::kDynamic, columns}, f32);
    auto outType = MemRefType::get({columns}, f32);
    std::string suffix = "_c" + std::to_string(columns);
    gpu::GPUFuncOp first = getOrCreateKernel(
        module, "sum_rows_part" + suffix,
        TypeRange{rowsType(ctx, columns), partsType}, columns,
        [&](ImplicitLocOpBuilder &kb, Block &entry, Value column) {
          Value x = entry.getArgument(0), out = entry.getArgument(1);
          Value part = gpu::BlockIdOp::create(kb, gpu::Dimension::x);
          Value begin = arith::MulIOp::create(
              kb, part, arith::ConstantIndexOp::create(kb, kRowsPerPart));
          Value end = arith::MinUIOp::create(
              kb,
              arith::AddIOp::create(
                  kb, begin, arith::ConstantIndexOp::create(kb, kRowsPerPart)),
              memref::DimOp::create(kb, x, 0));
          Value sum = sumOver(kb, begin, end, [&](Value r) -> Value {
            return memref::LoadOp::create(kb, x, ValueRange{r, column});
          });
          memref::StoreOp::create(kb, sum, out, ValueRange{part, column});
        });
    gpu::GPUFuncOp second = getOrCreateKernel(
        module, "sum_rows_parts" + suffix, TypeRange{partsType, outType},
        columns, [&](ImplicitLocOpBuilder &kb, Block &entry, Value column) {
          Value in = entry.getArgument(0), out = entry.getArgument(1);
          Value zero = arith::ConstantIndexOp::create(kb, 0);
          Value sum = sumOver(
              kb, zero, memref::DimOp::create(kb, in, 0),
              [&](Value p) -> Value {
                return memref::LoadOp::create(kb, in, ValueRange{p, column});
              });
          memref::StoreOp::create(kb, sum, out, ValueRange{column});
        });

    Value partBuffer = memref::AllocOp::create(b, partsType, ValueRange{parts});
    Value out = memref::AllocOp::create(b, outType);
    Value c1 = arith::ConstantIndexOp::create(b, 1);
    Value threads = arith::ConstantIndexOp::create(b, kThreads);
    Value columnBlocks =
        arith::ConstantIndexOp::create(b, llvm::divideCeil(columns, kThreads));
    gpu::LaunchFuncOp::create(
        b, first, gpu::KernelDim3{parts, columnBlocks, c1},
        gpu::KernelDim3{threads, c1, c1}, /*dynamicSharedMemorySize=*/Value(),
        ValueRange{toKernelBuffer(b, in2, rowsType(ctx, columns)), partBuffer});
    gpu::LaunchFuncOp::create(b, second, gpu::KernelDim3{c1, columnBlocks, c1},
                              gpu::KernelDim3{threads, c1, c1},
                              /*dynamicSharedMemorySize=*/Value(),
                              ValueRange{partBuffer, out});
    Value result = bufferization::ToTensorOp::create(
        b, RankedTensorType::get({columns}, f32), out,
        /*restrict=*/b.getUnitAttr(), /*writable=*/b.getUnitAttr());
    if (resultType.getRank() != 1) {
      ReassociationIndices all;
      for (int64_t d = 0; d < resultType.getRank(); ++d)
        all.push_back(d);
      result = tensor::ExpandShapeOp::create(
          b, resultType, result, SmallVector<ReassociationIndices>{all});
    }
    rewriter.replaceOp(op, result);
    return success();
  }

  ModuleOp module;
};

struct ConvertSumLeadingToGpuPass
    : public txl::impl::ConvertSumLeadingToGpuPassBase<
          ConvertSumLeadingToGpuPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    RewritePatternSet patterns(&getContext());
    patterns.add<SumLeadingToLaunches>(&getContext(), module);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
