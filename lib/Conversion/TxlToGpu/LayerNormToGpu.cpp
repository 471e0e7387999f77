//===- LayerNormToGpu.cpp - txl.layer_norm => a row-per-subgroup kernel ---===//
//
// Rewrites each f32 txl.layer_norm (last dimension d, static) into one
// launch of `layer_norm_d<d>`: a subgroup of 32 work-items per row, the
// lanes striding over the row (coalesced), mean and biased variance by
// two passes each closed by a shuffle reduction, then the normalised,
// scaled and shifted row written once. The generic lowering instead gives
// every row to one work-item (txl-parallel-loops-to-gpu), whose loads of
// one row each do not coalesce.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/KernelModule.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::txl {
#define GEN_PASS_DEF_CONVERTLAYERNORMTOGPUPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;
using namespace mlir::txl;

namespace {

/// Rows per workgroup: one per subgroup, 8 subgroups of 32.
constexpr int64_t kRowsPerWorkgroup = 8;

/// memref<?x d x f32, strided<[?, 1], offset: ?>>: the kernel's view of
/// the input and output rows.
MemRefType rowsType(MLIRContext *ctx, int64_t d) {
  return MemRefType::get({ShapedType::kDynamic, d}, Float32Type::get(ctx),
                         StridedLayoutAttr::get(ctx, ShapedType::kDynamic,
                                                {ShapedType::kDynamic, 1}));
}

/// memref<d x f32, strided<[?], offset: ?>>: weight and bias.
MemRefType vectorType(MLIRContext *ctx, int64_t d) {
  return MemRefType::get({d}, Float32Type::get(ctx),
                         StridedLayoutAttr::get(ctx, ShapedType::kDynamic,
                                                {ShapedType::kDynamic}));
}

/// Builds the body of `layer_norm_d<d>(x, weight, bias, y, eps)`.
void buildKernel(gpu::GPUFuncOp func, int64_t d) {
  Block &entry = func.getBody().front();
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToStart(&entry);
  Value x = entry.getArgument(0), weight = entry.getArgument(1),
        bias = entry.getArgument(2), y = entry.getArgument(3),
        eps = entry.getArgument(4);
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, v);
  };
  Value lane = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value subgroup = arith::DivUIOp::create(b, lane, idx(kSubgroupSize));
  lane = arith::RemUIOp::create(b, lane, idx(kSubgroupSize));
  Value row = arith::AddIOp::create(
      b,
      arith::MulIOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::x),
                            idx(kRowsPerWorkgroup)),
      subgroup);
  Value rows = memref::DimOp::create(b, x, 0);
  // A whole subgroup leaves together (the shuffles need all 32 lanes).
  Value inRange =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, rows);
  auto guard = scf::IfOp::create(b, inRange, /*withElseRegion=*/false);
  b.setInsertionPointToStart(guard.thenBlock());

  Value fzero =
      arith::ConstantFloatOp::create(b, b.getF32Type(), APFloat(0.0f));
  Value step = idx(kSubgroupSize), end = idx(d);
  // Sum over the lane's columns lane, lane + 32, ... of f(column, x).
  auto laneSum = [&](function_ref<Value(Value, Value)> term) {
    auto loop = scf::ForOp::create(b, lane, end, step, ValueRange{fzero});
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    Value col = loop.getInductionVar();
    Value v = memref::LoadOp::create(b, x, ValueRange{row, col});
    Value sum =
        arith::AddFOp::create(b, loop.getRegionIterArgs()[0], term(col, v));
    scf::YieldOp::create(b, sum);
    return loop.getResult(0);
  };
  Value count =
      arith::ConstantFloatOp::create(b, b.getF32Type(), APFloat(float(d)));
  Value mean = arith::DivFOp::create(
      b, subgroupReduce(b, laneSum([](Value, Value v) { return v; }), false),
      count);
  Value var = arith::DivFOp::create(
      b,
      subgroupReduce(b, laneSum([&](Value, Value v) {
                       Value c = arith::SubFOp::create(b, v, mean);
                       return arith::MulFOp::create(b, c, c).getResult();
                     }),
                     false),
      count);
  Value rstd = math::RsqrtOp::create(b, arith::AddFOp::create(b, var, eps));
  auto write = scf::ForOp::create(b, lane, end, step);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(write.getBody());
    Value col = write.getInductionVar();
    Value v = memref::LoadOp::create(b, x, ValueRange{row, col});
    Value n = arith::MulFOp::create(b, arith::SubFOp::create(b, v, mean), rstd);
    Value w = memref::LoadOp::create(b, weight, ValueRange{col});
    Value c = memref::LoadOp::create(b, bias, ValueRange{col});
    Value out = math::FmaOp::create(b, n, w, c);
    memref::StoreOp::create(b, out, y, ValueRange{row, col});
  }
  b.setInsertionPointAfter(guard);
  gpu::ReturnOp::create(b);
}

/// `layer_norm_d<d>` in `module`'s @txl_kernels, created on first use.
gpu::GPUFuncOp getOrCreateKernel(ModuleOp module, int64_t d) {
  std::string name = "layer_norm_d" + std::to_string(d);
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  if (auto existing = kernels.lookupSymbol<gpu::GPUFuncOp>(name))
    return existing;
  MLIRContext *ctx = kernels.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  auto type =
      b.getFunctionType({rowsType(ctx, d), vectorType(ctx, d),
                         vectorType(ctx, d), rowsType(ctx, d), b.getF32Type()},
                        {});
  auto func = gpu::GPUFuncOp::create(b, kernels.getLoc(), name, type);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {int32_t(kRowsPerWorkgroup * kSubgroupSize), 1, 1}));
  buildKernel(func, d);
  return func;
}

// txl.layer_norm (f32, static d) => the input collapsed to [rows, d] and
// read through bufferization.to_buffer, memref.alloc of the [rows, d]
// output, one gpu.launch_func, to_tensor, expanded back.
struct LayerNormToLaunch : public OpRewritePattern<LayerNormOp> {
  LayerNormToLaunch(MLIRContext *ctx, ModuleOp module)
      : OpRewritePattern(ctx), module(module) {}

  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    int64_t d = type.getShape().back();
    // The verifier guarantees a static d.
    if (!type.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "only f32 has a GPU kernel");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    MLIRContext *ctx = op.getContext();
    gpu::GPUFuncOp kernel = getOrCreateKernel(module, d);

    // [..., d] as [rows, d].
    SmallVector<ReassociationIndices> groups(2);
    for (int64_t i = 0; i + 1 < type.getRank(); ++i)
      groups[0].push_back(i);
    groups[1].push_back(type.getRank() - 1);
    Value x2 = tensor::CollapseShapeOp::create(b, op.getInput(), groups);
    auto x2Type = cast<RankedTensorType>(x2.getType());
    SmallVector<Value> dynamicRows;
    if (x2Type.isDynamicDim(0))
      dynamicRows.push_back(tensor::DimOp::create(b, x2, 0));
    auto outType = MemRefType::get(x2Type.getShape(), b.getF32Type());
    Value out = memref::AllocOp::create(b, outType, dynamicRows);

    Value rows = tensor::DimOp::create(b, x2, 0);
    Value c1 = arith::ConstantIndexOp::create(b, 1);
    Value grid = arith::CeilDivUIOp::create(
        b, rows, arith::ConstantIndexOp::create(b, kRowsPerWorkgroup));
    Value threads =
        arith::ConstantIndexOp::create(b, kRowsPerWorkgroup * kSubgroupSize);
    Value eps = arith::ConstantOp::create(b, op.getEpsilonAttr());
    SmallVector<Value> args = {
        toKernelBuffer(b, x2, rowsType(ctx, d)),
        toKernelBuffer(b, op.getWeight(), vectorType(ctx, d)),
        toKernelBuffer(b, op.getBias(), vectorType(ctx, d)),
        memref::CastOp::create(b, rowsType(ctx, d), out), eps};
    gpu::LaunchFuncOp::create(b, kernel, gpu::KernelDim3{grid, c1, c1},
                              gpu::KernelDim3{threads, c1, c1},
                              /*dynamicSharedMemorySize=*/Value(), args);
    Value result = bufferization::ToTensorOp::create(
        b, x2Type, out, /*restrict=*/b.getUnitAttr(),
        /*writable=*/b.getUnitAttr());
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(b, op.getLoc(), op.getInput());
    result = tensor::ExpandShapeOp::create(b, type, result, groups, sizes);
    rewriter.replaceOp(op, result);
    return success();
  }

  ModuleOp module;
};

struct ConvertLayerNormToGpuPass
    : public txl::impl::ConvertLayerNormToGpuPassBase<
          ConvertLayerNormToGpuPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    RewritePatternSet patterns(&getContext());
    patterns.add<LayerNormToLaunch>(&getContext(), module);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
