//===- LayerNormToGpu.cpp - txl.layer_norm => a row-per-subgroup kernel ---===//
//
// Rewrites each f32 txl.layer_norm (last dimension d, static) into one
// launch of `layer_norm_d<d>`: a subgroup of 32 work-items per row, the
// lanes striding over the row (coalesced), mean and biased variance by
// two passes each closed by a shuffle reduction, then the normalised,
// scaled and shifted row written once. The generic lowering instead gives
// every row to one work-item (txl-parallel-loops-to-gpu), whose loads of
// one row each do not coalesce. A layer norm of a txl.add (the residual
// connection before each of a layer's two norms) takes the add into the
// same launch (`layer_norm_add_d<d>`, which reads both addends; where the
// sum is also used elsewhere, `layer_norm_add_sum_d<d>` writes it out as
// well): one launch fewer per norm. When an addend is a txl.linear with a
// bias used by the add alone (the feed-forward's second product), the
// product loses its bias (its fill before the product: a launch) and the
// kernel adds it (`layer_norm_add_bias_d<d>`).
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

/// What a layer-norm kernel takes in besides the row x (and weight, bias,
/// y, eps): the kernel normalises x [+ lb] [+ r], and may write that sum.
struct Fused {
  bool add = false;        ///< r: the other addend of a txl.add
  bool linearBias = false; ///< lb [d]: the bias of the txl.linear giving x
  bool sum = false;        ///< also writes the sum to `sum` [rows, d]

  /// layer_norm[_add][_bias][_sum]_d<d>.
  std::string name(int64_t d) const {
    return std::string("layer_norm") + (add ? "_add" : "") +
           (linearBias ? "_bias" : "") + (sum ? "_sum" : "") + "_d" +
           std::to_string(d);
  }
};

/// Builds the body of `fused.name(d)`(x, [r], [lb], weight, bias, [sum], y,
/// eps).
void buildKernel(gpu::GPUFuncOp func, int64_t d, Fused fused) {
  Block &entry = func.getBody().front();
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToStart(&entry);
  unsigned n = 0;
  Value x = entry.getArgument(n++);
  Value r = fused.add ? entry.getArgument(n++) : Value();
  Value lb = fused.linearBias ? entry.getArgument(n++) : Value();
  Value weight = entry.getArgument(n++), bias = entry.getArgument(n++);
  Value sumOut = fused.sum ? entry.getArgument(n++) : Value();
  Value y = entry.getArgument(n++), eps = entry.getArgument(n++);
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
  // The row's element at `col`: (x + lb) + r, each addition rounded as
  // the ops it replaces round it (the product's bias, then txl.add).
  auto element = [&](Value col) -> Value {
    Value v = memref::LoadOp::create(b, x, ValueRange{row, col});
    if (lb)
      v = arith::AddFOp::create(b, v,
                                memref::LoadOp::create(b, lb, ValueRange{col}));
    if (r)
      v = arith::AddFOp::create(
          b, v, memref::LoadOp::create(b, r, ValueRange{row, col}));
    return v;
  };
  // Sum over the lane's columns lane, lane + 32, ... of f(column, element);
  // `store` writes each element to sumOut on the way.
  auto laneSum = [&](function_ref<Value(Value, Value)> term,
                     bool store = false) {
    auto loop = scf::ForOp::create(b, lane, end, step, ValueRange{fzero});
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    Value col = loop.getInductionVar();
    Value v = element(col);
    if (store)
      memref::StoreOp::create(b, v, sumOut, ValueRange{row, col});
    Value sum =
        arith::AddFOp::create(b, loop.getRegionIterArgs()[0], term(col, v));
    scf::YieldOp::create(b, sum);
    return loop.getResult(0);
  };
  Value count =
      arith::ConstantFloatOp::create(b, b.getF32Type(), APFloat(float(d)));
  Value mean = arith::DivFOp::create(
      b,
      subgroupReduce(b,
                     laneSum([](Value, Value v) { return v; },
                             /*store=*/fused.sum),
                     false),
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
    Value v = element(col);
    Value n = arith::MulFOp::create(b, arith::SubFOp::create(b, v, mean), rstd);
    Value w = memref::LoadOp::create(b, weight, ValueRange{col});
    Value c = memref::LoadOp::create(b, bias, ValueRange{col});
    Value out = math::FmaOp::create(b, n, w, c);
    memref::StoreOp::create(b, out, y, ValueRange{row, col});
  }
  b.setInsertionPointAfter(guard);
  gpu::ReturnOp::create(b);
}

/// The kernel `fused` names for d in `module`'s @txl_kernels, created on
/// first use.
gpu::GPUFuncOp getOrCreateKernel(ModuleOp module, int64_t d, Fused fused) {
  std::string name = fused.name(d);
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  if (auto existing = kernels.lookupSymbol<gpu::GPUFuncOp>(name))
    return existing;
  MLIRContext *ctx = kernels.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  SmallVector<Type> inputs = {rowsType(ctx, d)};
  if (fused.add)
    inputs.push_back(rowsType(ctx, d));
  if (fused.linearBias)
    inputs.push_back(vectorType(ctx, d));
  inputs.append({vectorType(ctx, d), vectorType(ctx, d)});
  if (fused.sum)
    inputs.push_back(rowsType(ctx, d));
  inputs.append({rowsType(ctx, d), b.getF32Type()});
  auto type = b.getFunctionType(inputs, {});
  auto func = gpu::GPUFuncOp::create(b, kernels.getLoc(), name, type);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {int32_t(kRowsPerWorkgroup * kSubgroupSize), 1, 1}));
  buildKernel(func, d, fused);
  return func;
}

/// The txl.add whose sum `op` normalises, when the launch can read its two
/// addends instead: in the same block, every other use of the sum after
/// `op` (they then read the sum the kernel writes).
AddOp fusibleAdd(LayerNormOp op) {
  auto add = op.getInput().getDefiningOp<AddOp>();
  if (!add || add->getBlock() != op->getBlock())
    return {};
  for (Operation *user : add->getUsers())
    if (user != op.getOperation() &&
        (user->getBlock() != op->getBlock() || !op->isBeforeInBlock(user)))
      return {};
  return add;
}

/// An addend of `add` that is a txl.linear with a bias, used by `add`
/// alone (the feed-forward's second product before its residual add): its
/// bias can move into the layer-norm kernel, which saves the product's
/// bias fill (a launch).
LinearOp linearWithBias(Value addend, AddOp add) {
  auto linear = addend.getDefiningOp<LinearOp>();
  if (!linear || !linear.getBias() || !linear->hasOneUse() ||
      linear->getBlock() != add->getBlock() ||
      !cast<RankedTensorType>(linear.getBias().getType()).hasStaticShape())
    return {};
  return linear;
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
    AddOp add = fusibleAdd(op);
    Fused fused;
    Value xValue = op.getInput(), rValue;
    LinearOp linear;
    if (add) {
      fused.add = true;
      fused.sum = !add->hasOneUse();
      xValue = add.getLhs();
      rValue = add.getRhs();
      linear = linearWithBias(xValue, add);
      if (!linear && (linear = linearWithBias(rValue, add)))
        std::swap(xValue, rValue); // a + b = b + a exactly
      if (linear) {
        // The same product without its bias, where the old one was.
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPoint(linear);
        xValue =
            LinearOp::create(rewriter, linear.getLoc(), linear.getType(),
                             linear.getInput(), linear.getWeight(), Value());
        fused.linearBias = true;
      }
    }
    gpu::GPUFuncOp kernel = getOrCreateKernel(module, d, fused);

    // [..., d] as [rows, d].
    SmallVector<ReassociationIndices> groups(2);
    for (int64_t i = 0; i + 1 < type.getRank(); ++i)
      groups[0].push_back(i);
    groups[1].push_back(type.getRank() - 1);
    Value x2 = tensor::CollapseShapeOp::create(b, xValue, groups);
    auto x2Type = cast<RankedTensorType>(x2.getType());
    SmallVector<Value> dynamicRows;
    if (x2Type.isDynamicDim(0))
      dynamicRows.push_back(tensor::DimOp::create(b, x2, 0));
    auto outType = MemRefType::get(x2Type.getShape(), b.getF32Type());
    Value out = memref::AllocOp::create(b, outType, dynamicRows);
    Value sum;
    if (fused.sum)
      sum = memref::AllocOp::create(b, outType, dynamicRows);

    Value rows = tensor::DimOp::create(b, x2, 0);
    Value c1 = arith::ConstantIndexOp::create(b, 1);
    Value grid = arith::CeilDivUIOp::create(
        b, rows, arith::ConstantIndexOp::create(b, kRowsPerWorkgroup));
    Value threads =
        arith::ConstantIndexOp::create(b, kRowsPerWorkgroup * kSubgroupSize);
    Value eps = arith::ConstantOp::create(b, op.getEpsilonAttr());
    SmallVector<Value> args = {toKernelBuffer(b, x2, rowsType(ctx, d))};
    if (add)
      args.push_back(
          toKernelBuffer(b, tensor::CollapseShapeOp::create(b, rValue, groups),
                         rowsType(ctx, d)));
    if (linear)
      args.push_back(toKernelBuffer(b, linear.getBias(), vectorType(ctx, d)));
    args.push_back(toKernelBuffer(b, op.getWeight(), vectorType(ctx, d)));
    args.push_back(toKernelBuffer(b, op.getBias(), vectorType(ctx, d)));
    if (sum)
      args.push_back(memref::CastOp::create(b, rowsType(ctx, d), sum));
    args.append({memref::CastOp::create(b, rowsType(ctx, d), out), eps});
    gpu::LaunchFuncOp::create(b, kernel, gpu::KernelDim3{grid, c1, c1},
                              gpu::KernelDim3{threads, c1, c1},
                              /*dynamicSharedMemorySize=*/Value(), args);
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(b, op.getLoc(), xValue);
    auto expanded = [&](Value buffer) -> Value {
      Value rows2 = bufferization::ToTensorOp::create(
          b, x2Type, buffer, /*restrict=*/b.getUnitAttr(),
          /*writable=*/b.getUnitAttr());
      return tensor::ExpandShapeOp::create(b, type, rows2, groups, sizes);
    };
    Value result = expanded(out);
    Value sumResult = sum ? expanded(sum) : Value();
    rewriter.replaceOp(op, result);
    if (sumResult)
      rewriter.replaceOp(add, sumResult);
    else if (add)
      rewriter.eraseOp(add);
    if (linear)
      rewriter.eraseOp(linear);
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
