//===- LinearNllToGpu.cpp - txl.linear_nll => a product + a row kernel ----===//
//
// Rewrites each f32 txl.linear_nll whose n_token is static and at most
// kMaxColumns into one product of all the logits (txl.linear without bias:
// one cuBLAS / CLBlast call) and one launch of `linear_nll_rows_w<W>`: a
// workgroup of W subgroups per row, the work-items striding over the row
// (coalesced), the row's max and then its sum of exp(x − max) each closed
// by a shuffle reduction in every subgroup and a W-entry reduction in
// workgroup memory, the bias added on the fly, and the NLL
// lse − (logit + bias) of the row's target written by work-item 0. The
// generic lowering instead sweeps blocks of 512 columns, each a product and
// several kernels whose work-items reduce a row serially (one work-item
// per row: 640 work-items for ptb_small's 64 × 10 segment).
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

#include <limits>

namespace mlir::txl {
#define GEN_PASS_DEF_CONVERTLINEARNLLTOGPUPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;
using namespace mlir::txl;

namespace {

/// The widest output layer given one product: its logits, [rows, n_token]
/// f32, are 2.5 MiB per 64 rows at this width (ptb_small's eval segment of
/// 640 rows and 10,000 columns keeps 25.6 MB). Wider ones (the adaptive
/// softmax's tail clusters) keep the generic column-block sweep.
constexpr int64_t kMaxColumns = 32768;

/// The most subgroups per workgroup (256 work-items, one row).
constexpr int64_t kMaxSubgroups = 8;

/// Subgroups per row for n_token columns: about 4 columns per work-item
/// per subgroup before another subgroup joins (204 columns, enwik8: 1
/// subgroup; 10,000: 8).
int64_t subgroupsFor(int64_t columns) {
  return std::clamp<int64_t>(llvm::divideCeil(columns, 4 * kSubgroupSize), 1,
                             kMaxSubgroups);
}

/// exp(d), for d <= 0 (the sums' and the softmax's arguments), with
/// fastmath `afn`: on CUDA libdevice's __nv_fast_expf, ex2.approx of
/// d · log2(e) (a multiplication, MUFU.EX2 and its subnormal fix-up:
/// sass-budgets.test), where plain expf wraps the same ex2 in a longer
/// range reduction; OpenCL's exp either way. `mathExp` (the machine-code
/// budgets' negative control) keeps plain math.exp.
Value expOf(ImplicitLocOpBuilder &b, Value d, bool mathExp) {
  if (mathExp)
    return math::ExpOp::create(b, d);
  return math::ExpOp::create(b, d, arith::FastMathFlags::afn);
}

MemRefType stridedType(MLIRContext *ctx, ArrayRef<int64_t> shape,
                       Type element) {
  SmallVector<int64_t> strides(shape.size(), ShapedType::kDynamic);
  if (shape.size() == 2)
    strides.back() = 1;
  return MemRefType::get(
      shape, element,
      StridedLayoutAttr::get(ctx, ShapedType::kDynamic, strides));
}

/// The row kernel's arguments: logits [rows, V] (unit inner stride), bias
/// [V] (when `withBias`), target [rows] i64, nll [rows] (written), and
/// with `withLse` lse [rows] (written).
SmallVector<Type> kernelInputs(MLIRContext *ctx, int64_t columns, bool withBias,
                               bool withLse) {
  Type f32 = Float32Type::get(ctx);
  SmallVector<Type> inputs = {
      stridedType(ctx, {ShapedType::kDynamic, columns}, f32)};
  if (withBias)
    inputs.push_back(stridedType(ctx, {columns}, f32));
  inputs.push_back(
      stridedType(ctx, {ShapedType::kDynamic}, IntegerType::get(ctx, 64)));
  inputs.push_back(MemRefType::get({ShapedType::kDynamic}, f32));
  if (withLse)
    inputs.push_back(MemRefType::get({ShapedType::kDynamic}, f32));
  return inputs;
}

/// Builds the body of `linear_nll_rows_w<subgroups>_v<V>[_nobias][_lse]`.
void buildKernel(gpu::GPUFuncOp func, int64_t columns, int64_t subgroups,
                 bool withBias, bool withLse, bool mathExp) {
  Block &entry = func.getBody().front();
  ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
  b.setInsertionPointToStart(&entry);
  unsigned n = 0;
  Value logits = entry.getArgument(n++);
  Value bias = withBias ? entry.getArgument(n++) : Value();
  Value target = entry.getArgument(n++);
  Value nll = entry.getArgument(n++);
  Value lseOut = withLse ? entry.getArgument(n++) : Value();
  ArrayRef<BlockArgument> shared = func.getWorkgroupAttributions();
  Value maxParts = shared[0], sumParts = shared[1];

  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, v);
  };
  auto f32 = [&](double v) -> Value {
    return arith::ConstantFloatOp::create(b, b.getF32Type(), APFloat(float(v)));
  };
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value subgroup = arith::DivUIOp::create(b, tid, idx(kSubgroupSize));
  Value lane = arith::RemUIOp::create(b, tid, idx(kSubgroupSize));
  Value row = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value end = idx(columns), step = idx(subgroups * kSubgroupSize);
  // The logit of column `col` of this row, bias included.
  auto logit = [&](Value col) -> Value {
    Value x = memref::LoadOp::create(b, logits, ValueRange{row, col});
    if (bias)
      x = arith::AddFOp::create(
          b, x, memref::LoadOp::create(b, bias, ValueRange{col}));
    return x;
  };
  // The workgroup's reduction of each work-item's `v` (max or sum): a
  // subgroup butterfly, lane 0 of each subgroup into `parts`, a barrier,
  // then every work-item combines the parts in the same order.
  auto workgroupReduce = [&](Value v, bool isMax, Value parts) -> Value {
    v = subgroupReduce(b, v, isMax);
    Value first =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, idx(0));
    auto write = scf::IfOp::create(b, first, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(write.thenBlock());
      memref::StoreOp::create(b, v, parts, ValueRange{subgroup});
    }
    gpu::BarrierOp::create(b);
    Value all = memref::LoadOp::create(b, parts, ValueRange{idx(0)});
    for (int64_t s = 1; s < subgroups; ++s) {
      Value part = memref::LoadOp::create(b, parts, ValueRange{idx(s)});
      all = isMax ? Value(arith::MaximumFOp::create(b, all, part))
                  : Value(arith::AddFOp::create(b, all, part));
    }
    return all;
  };
  // Over the work-item's columns tid, tid + step, ...: acc = f(acc, x).
  auto sweep = [&](Value init, function_ref<Value(Value, Value)> f) {
    auto loop = scf::ForOp::create(b, tid, end, step, ValueRange{init});
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    scf::YieldOp::create(
        b, f(loop.getRegionIterArgs()[0], logit(loop.getInductionVar())));
    return loop.getResult(0);
  };

  Value rowMax =
      workgroupReduce(sweep(f32(-std::numeric_limits<double>::infinity()),
                            [&](Value acc, Value x) -> Value {
                              return arith::MaximumFOp::create(b, acc, x);
                            }),
                      /*isMax=*/true, maxParts);
  Value rowSum = workgroupReduce(
      sweep(f32(0.0),
            [&](Value acc, Value x) -> Value {
              Value e = expOf(b, arith::SubFOp::create(b, x, rowMax), mathExp);
              return arith::AddFOp::create(b, acc, e);
            }),
      /*isMax=*/false, sumParts);

  // Work-item 0: nll = max + log(sum) − the target's logit (0 for a
  // target outside [0, n_token), as the CPU kernel).
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, idx(0));
  auto write = scf::IfOp::create(b, first, /*withElseRegion=*/false);
  b.setInsertionPointToStart(write.thenBlock());
  Value t = memref::LoadOp::create(b, target, ValueRange{row});
  Value inRange =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, t,
                            arith::ConstantIntOp::create(b, columns, 64));
  auto pick = scf::IfOp::create(b, TypeRange{b.getF32Type()}, inRange,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(pick.thenBlock());
    scf::YieldOp::create(
        b, logit(arith::IndexCastOp::create(b, b.getIndexType(), t)));
    b.setInsertionPointToStart(pick.elseBlock());
    scf::YieldOp::create(b, f32(0.0));
  }
  Value lse = arith::AddFOp::create(b, rowMax, math::LogOp::create(b, rowSum));
  memref::StoreOp::create(b, arith::SubFOp::create(b, lse, pick.getResult(0)),
                          nll, ValueRange{row});
  if (lseOut)
    memref::StoreOp::create(b, lse, lseOut, ValueRange{row});
  b.setInsertionPointAfter(write);
  gpu::ReturnOp::create(b);
}

/// `linear_nll_rows_w<subgroups>_v<columns>[_nobias][_lse][_mathexp]` in
/// `module`'s
/// @txl_kernels, created on first use.
gpu::GPUFuncOp getOrCreateKernel(ModuleOp module, int64_t columns,
                                 bool withBias, bool withLse, bool mathExp) {
  int64_t subgroups = subgroupsFor(columns);
  std::string name = "linear_nll_rows_w" + std::to_string(subgroups) + "_v" +
                     std::to_string(columns) + (withBias ? "" : "_nobias") +
                     (withLse ? "_lse" : "") + (mathExp ? "_mathexp" : "");
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  if (auto existing = kernels.lookupSymbol<gpu::GPUFuncOp>(name))
    return existing;
  MLIRContext *ctx = kernels.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  auto part =
      MemRefType::get({subgroups}, b.getF32Type(), MemRefLayoutAttrInterface{},
                      IntegerAttr::get(b.getI64Type(), 3));
  auto func = gpu::GPUFuncOp::create(
      b, kernels.getLoc(), name,
      b.getFunctionType(kernelInputs(ctx, columns, withBias, withLse), {}),
      TypeRange{part, part});
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({int32_t(subgroups * kSubgroupSize), 1, 1}));
  buildKernel(func, columns, subgroups, withBias, withLse, mathExp);
  return func;
}

/// Work-items per workgroup of the d_logits kernel.
constexpr int64_t kGradThreads = 256;

/// `linear_nll_dlogits_v<columns>[_nobias](logits, [bias,] lse, g, target,
/// dl)`: one work-item per element of the [rows, V] d_logits, workgroup
/// (x, y) taking columns [256y, 256y + 256) of row x (coalesced; rows on
/// x, whose grid limit is 2^31 - 1, CUDA's y and z stop at 65,535):
/// dl = exp(x + bias − lse) · g, − g at the row's target.
gpu::GPUFuncOp getOrCreateGradKernel(ModuleOp module, int64_t columns,
                                     bool withBias, bool mathExp) {
  std::string name = "linear_nll_dlogits_v" + std::to_string(columns) +
                     (withBias ? "" : "_nobias") + (mathExp ? "_mathexp" : "");
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  if (auto existing = kernels.lookupSymbol<gpu::GPUFuncOp>(name))
    return existing;
  MLIRContext *ctx = kernels.getContext();
  Type f32 = Float32Type::get(ctx);
  Type rowsF32 = stridedType(ctx, {ShapedType::kDynamic}, f32);
  SmallVector<Type> inputs = {
      stridedType(ctx, {ShapedType::kDynamic, columns}, f32)};
  if (withBias)
    inputs.push_back(stridedType(ctx, {columns}, f32));
  inputs.append(
      {rowsF32, rowsF32,
       stridedType(ctx, {ShapedType::kDynamic}, IntegerType::get(ctx, 64)),
       MemRefType::get({ShapedType::kDynamic, columns}, f32)});
  OpBuilder mb = OpBuilder::atBlockEnd(kernels.getBody());
  auto func = gpu::GPUFuncOp::create(mb, kernels.getLoc(), name,
                                     mb.getFunctionType(inputs, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), mb.getUnitAttr());
  func.setKnownBlockSizeAttr(
      mb.getDenseI32ArrayAttr({int32_t(kGradThreads), 1, 1}));

  Block &entry = func.getBody().front();
  ImplicitLocOpBuilder b(func.getLoc(), ctx);
  b.setInsertionPointToStart(&entry);
  unsigned n = 0;
  Value logits = entry.getArgument(n++);
  Value bias = withBias ? entry.getArgument(n++) : Value();
  Value lse = entry.getArgument(n++), g = entry.getArgument(n++),
        target = entry.getArgument(n++), dl = entry.getArgument(n++);
  Value col = arith::AddIOp::create(
      b,
      arith::MulIOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::y),
                            arith::ConstantIndexOp::create(b, kGradThreads)),
      gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  Value row = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value inRange =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, col,
                            arith::ConstantIndexOp::create(b, columns));
  auto guard = scf::IfOp::create(b, inRange, /*withElseRegion=*/false);
  b.setInsertionPointToStart(guard.thenBlock());
  Value x = memref::LoadOp::create(b, logits, ValueRange{row, col});
  if (bias)
    x = arith::AddFOp::create(b, x,
                              memref::LoadOp::create(b, bias, ValueRange{col}));
  Value gr = memref::LoadOp::create(b, g, ValueRange{row});
  Value p = expOf(b,
                  arith::SubFOp::create(
                      b, x, memref::LoadOp::create(b, lse, ValueRange{row})),
                  mathExp);
  Value d = arith::MulFOp::create(b, p, gr);
  Value t = arith::IndexCastOp::create(b, b.getI64Type(), col);
  Value isTarget =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, t,
                            memref::LoadOp::create(b, target, ValueRange{row}));
  d = arith::SelectOp::create(b, isTarget, arith::SubFOp::create(b, d, gr), d);
  memref::StoreOp::create(b, d, dl, ValueRange{row, col});
  b.setInsertionPointAfter(guard);
  gpu::ReturnOp::create(b);
  return func;
}

/// The [rows] nll (and, with `lse`, the lse) of `logits` [rows, V] (no
/// bias) through one launch of the row kernel: fresh [rows] buffers.
struct RowResults {
  Value nll, lse;
};
RowResults launchRowKernel(ImplicitLocOpBuilder &b, ModuleOp module,
                           Value logits, Value bias, Value target1, Value rows,
                           bool withLse, bool mathExp) {
  MLIRContext *ctx = b.getContext();
  auto logitsType = cast<RankedTensorType>(logits.getType());
  int64_t columns = logitsType.getDimSize(1);
  bool withBias = static_cast<bool>(bias);
  gpu::GPUFuncOp kernel =
      getOrCreateKernel(module, columns, withBias, withLse, mathExp);
  SmallVector<Value> dynamicRows;
  if (logitsType.isDynamicDim(0))
    dynamicRows.push_back(rows);
  auto rowType = MemRefType::get({logitsType.getDimSize(0)}, b.getF32Type());
  RowResults out;
  out.nll = memref::AllocOp::create(b, rowType, dynamicRows);
  if (withLse)
    out.lse = memref::AllocOp::create(b, rowType, dynamicRows);
  SmallVector<Type> inputs = kernelInputs(ctx, columns, withBias, withLse);
  SmallVector<Value> args = {
      toKernelBuffer(b, logits, cast<MemRefType>(inputs[0]))};
  if (withBias)
    args.push_back(toKernelBuffer(b, bias, cast<MemRefType>(inputs[1])));
  args.push_back(
      toKernelBuffer(b, target1, cast<MemRefType>(inputs[args.size()])));
  args.push_back(memref::CastOp::create(
      b, cast<MemRefType>(inputs[args.size()]), out.nll));
  if (withLse)
    args.push_back(memref::CastOp::create(
        b, cast<MemRefType>(inputs[args.size()]), out.lse));
  Value c1 = arith::ConstantIndexOp::create(b, 1);
  Value threads =
      arith::ConstantIndexOp::create(b, subgroupsFor(columns) * kSubgroupSize);
  gpu::LaunchFuncOp::create(b, kernel, gpu::KernelDim3{rows, c1, c1},
                            gpu::KernelDim3{threads, c1, c1},
                            /*dynamicSharedMemorySize=*/Value(), args);
  return out;
}

/// `buffer` (a fresh [rows] or [rows, V] memref the kernels wrote) as a
/// tensor of `type`.
Value asTensor(ImplicitLocOpBuilder &b, Value buffer, Type type) {
  auto memrefType = cast<MemRefType>(buffer.getType());
  Value t = bufferization::ToTensorOp::create(
      b,
      RankedTensorType::get(memrefType.getShape(), memrefType.getElementType()),
      buffer, /*restrict=*/b.getUnitAttr(), /*writable=*/b.getUnitAttr());
  if (t.getType() != type)
    t = tensor::CastOp::create(b, type, t);
  return t;
}

/// `v` [rows] expanded to the [qlen, batch] shape of `like`.
Value expandRows(ImplicitLocOpBuilder &b, Value v, Value like, Type type) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, b.getLoc(), like);
  return tensor::ExpandShapeOp::create(
      b, type, v, SmallVector<ReassociationIndices>{{0, 1}}, sizes);
}

/// f32 with a static n_token of at most kMaxColumns: what the kernels take.
LogicalResult checkCovered(Operation *op, Value input, Value weight,
                           PatternRewriter &rewriter) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto weightType = cast<RankedTensorType>(weight.getType());
  if (!inputType.getElementType().isF32())
    return rewriter.notifyMatchFailure(op, "only f32 has a GPU kernel");
  int64_t columns = weightType.getDimSize(0);
  if (ShapedType::isDynamic(columns) || columns > kMaxColumns)
    return rewriter.notifyMatchFailure(op,
                                       "n_token dynamic or above kMaxColumns");
  return success();
}

/// h [qlen, batch, d] and target [qlen, batch] as rows, and the [rows, V]
/// logits h2 · wᵀ without the bias (one txl.linear: the library product).
struct OutputRows {
  Value h2, target1, logits, rows;
};
OutputRows buildLogits(ImplicitLocOpBuilder &b, Value h, Value w,
                       Value target) {
  OutputRows r;
  r.h2 = tensor::CollapseShapeOp::create(
      b, h, SmallVector<ReassociationIndices>{{0, 1}, {2}});
  r.target1 = tensor::CollapseShapeOp::create(
      b, target, SmallVector<ReassociationIndices>{{0, 1}});
  auto h2Type = cast<RankedTensorType>(r.h2.getType());
  int64_t columns = cast<RankedTensorType>(w.getType()).getDimSize(0);
  r.logits = LinearOp::create(
      b, RankedTensorType::get({h2Type.getDimSize(0), columns}, b.getF32Type()),
      r.h2, w, /*bias=*/Value());
  r.rows = tensor::DimOp::create(b, r.h2, 0);
  return r;
}

// txl.linear_nll (f32, static n_token <= kMaxColumns) => h and target
// collapsed to rows, txl.linear(h2, w) without bias (the logits), one
// gpu.launch_func of the row kernel, the NLL expanded back to [qlen, batch].
struct LinearNllToLaunch : public OpRewritePattern<LinearNllOp> {
  LinearNllToLaunch(MLIRContext *ctx, ModuleOp module, bool mathExp)
      : OpRewritePattern(ctx), module(module), mathExp(mathExp) {}

  LogicalResult matchAndRewrite(LinearNllOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(checkCovered(op, op.getInput(), op.getWeight(), rewriter)))
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    OutputRows r =
        buildLogits(b, op.getInput(), op.getWeight(), op.getTarget());
    RowResults out =
        launchRowKernel(b, module, r.logits, op.getBias(), r.target1, r.rows,
                        /*withLse=*/false, mathExp);
    Type flat = RankedTensorType::get(
        cast<MemRefType>(out.nll.getType()).getShape(), b.getF32Type());
    rewriter.replaceOp(op, expandRows(b, asTensor(b, out.nll, flat),
                                      op.getTarget(), op.getType()));
    return success();
  }

  ModuleOp module;
  bool mathExp;
};

// txl.linear_nll_fwd whose block-major logits only its txl.linear_nll_grad
// reads => the forward as txl.linear_nll's (the row kernel also writing
// each row's lse), and the adjoint from the same [rows, V] logits: one
// launch of the d_logits kernel into a [rows, V] buffer, then d_input =
// txl.linear_input_grad, d_weight = txl.linear_weight_grad (library
// products) and d_bias = txl.sum_leading of it. Both ops are replaced
// together: the logits' layout changes.
struct LinearNllPairToLaunches : public OpRewritePattern<LinearNllFwdOp> {
  LinearNllPairToLaunches(MLIRContext *ctx, ModuleOp module, bool mathExp)
      : OpRewritePattern(ctx), module(module), mathExp(mathExp) {}

  LogicalResult matchAndRewrite(LinearNllFwdOp fwd,
                                PatternRewriter &rewriter) const override {
    if (failed(checkCovered(fwd, fwd.getInput(), fwd.getWeight(), rewriter)))
      return failure();
    Value stored = fwd.getLogits();
    if (!stored.hasOneUse())
      return rewriter.notifyMatchFailure(fwd, "the logits have other readers");
    auto grad = dyn_cast<LinearNllGradOp>(*stored.getUsers().begin());
    if (!grad || grad.getLogits() != stored)
      return rewriter.notifyMatchFailure(fwd, "no txl.linear_nll_grad reads "
                                              "the logits");
    int64_t columns =
        cast<RankedTensorType>(fwd.getWeight().getType()).getDimSize(0);
    Value bias = fwd.getBias();
    bool withBias = static_cast<bool>(bias);

    ImplicitLocOpBuilder b(fwd.getLoc(), rewriter);
    OutputRows r =
        buildLogits(b, fwd.getInput(), fwd.getWeight(), fwd.getTarget());
    RowResults out = launchRowKernel(b, module, r.logits, bias, r.target1,
                                     r.rows, /*withLse=*/true, mathExp);
    Type flat = RankedTensorType::get(
        cast<MemRefType>(out.nll.getType()).getShape(), b.getF32Type());
    Value nll = expandRows(b, asTensor(b, out.nll, flat), fwd.getTarget(),
                           fwd.getResult().getType());
    Value lse = asTensor(b, out.lse, fwd.getLse().getType());

    // The adjoint, where the grad op was (its operands are defined there).
    b.setInsertionPoint(grad);
    gpu::GPUFuncOp kernel =
        getOrCreateGradKernel(module, columns, withBias, mathExp);
    Value g1 = tensor::CollapseShapeOp::create(
        b, grad.getDResult(), SmallVector<ReassociationIndices>{{0, 1}});
    Value gradTarget = tensor::CollapseShapeOp::create(
        b, grad.getTarget(), SmallVector<ReassociationIndices>{{0, 1}});
    auto logitsType = cast<RankedTensorType>(r.logits.getType());
    SmallVector<Value> dynamicRows;
    if (logitsType.isDynamicDim(0))
      dynamicRows.push_back(r.rows);
    Value dl = memref::AllocOp::create(
        b, MemRefType::get(logitsType.getShape(), b.getF32Type()), dynamicRows);
    auto inputs = kernel.getFunctionType().getInputs();
    SmallVector<Value> args = {
        toKernelBuffer(b, r.logits, cast<MemRefType>(inputs[0]))};
    if (withBias)
      args.push_back(toKernelBuffer(b, bias, cast<MemRefType>(inputs[1])));
    for (Value v : {Value(grad.getLse()), g1, gradTarget})
      args.push_back(
          toKernelBuffer(b, v, cast<MemRefType>(inputs[args.size()])));
    args.push_back(dl);
    Value c1 = arith::ConstantIndexOp::create(b, 1);
    Value blocks = arith::ConstantIndexOp::create(
        b, llvm::divideCeil(columns, kGradThreads));
    Value threads = arith::ConstantIndexOp::create(b, kGradThreads);
    gpu::LaunchFuncOp::create(b, kernel, gpu::KernelDim3{r.rows, blocks, c1},
                              gpu::KernelDim3{threads, c1, c1},
                              /*dynamicSharedMemorySize=*/Value(), args);
    Value dlT = asTensor(b, dl, logitsType);
    Value h2 = tensor::CollapseShapeOp::create(
        b, grad.getInput(), SmallVector<ReassociationIndices>{{0, 1}, {2}});
    auto h2Type = cast<RankedTensorType>(h2.getType());
    Value dh2 = LinearInputGradOp::create(b, h2Type, dlT, grad.getWeight());
    SmallVector<OpFoldResult> hSizes =
        tensor::getMixedSizes(b, b.getLoc(), grad.getInput());
    Value dh = tensor::ExpandShapeOp::create(
        b, grad.getDInput().getType(), dh2,
        SmallVector<ReassociationIndices>{{0, 1}, {2}}, hSizes);
    Value dw =
        LinearWeightGradOp::create(b, grad.getDWeight().getType(), dlT, h2);
    Value db = SumLeadingOp::create(b, grad.getDBias().getType(), dlT);
    rewriter.replaceOp(grad, ValueRange{dh, dw, db});
    // The stored logits' only reader is gone.
    rewriter.replaceAllUsesWith(fwd.getResult(), nll);
    rewriter.replaceAllUsesWith(fwd.getLse(), lse);
    rewriter.eraseOp(fwd);
    return success();
  }

  ModuleOp module;
  bool mathExp;
};

struct ConvertLinearNllToGpuPass
    : public txl::impl::ConvertLinearNllToGpuPassBase<
          ConvertLinearNllToGpuPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    RewritePatternSet patterns(&getContext());
    patterns.add<LinearNllToLaunch, LinearNllPairToLaunches>(&getContext(),
                                                             module, mathExp);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
