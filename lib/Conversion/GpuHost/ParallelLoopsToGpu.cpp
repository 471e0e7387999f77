//===- ParallelLoopsToGpu.cpp - scf.parallel nests as GPU kernels -*- C++
//-*-===//
//
// Everything the GPU targets do not have a dedicated kernel or a library
// call for reaches the device through this pass: after bufferization and
// convert-linalg-to-parallel-loops, each outermost scf.parallel of a host
// function becomes one kernel of @txl_kernels, one work-item per point of
// its iteration space, launched with gpu.launch_func. The iteration space is
// linearized with the innermost dimension fastest, so that consecutive
// work-items touch consecutive elements of row-major buffers (coalesced).
//
// A body that reduces (a linalg.generic's reduction dimensions: a nest of
// scf.for whose innermost body combines one term into an accumulator
// element by addf, maximumf, minimumf, maxnumf or minnumf) is spread over
// work-items when it may take 64 steps or more: one subgroup of 32 per
// point for up to 4,096 steps known at compile time, one workgroup per
// point for more or for a count known only at run time. Each work-item
// combines the steps lane, lane + width, ... (innermost reduction
// dimension fastest, so that a subgroup's loads are consecutive) from the
// combiner's identity; an xor-shuffle butterfly and, across the
// workgroup's subgroups, their partials in workgroup memory in subgroup
// order combine them; work-item 0 of the group combines that into the
// accumulator. The order is fixed (the same result run to run, no atomics).
// Other loops nested in the body run sequentially in each work-item.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/KernelModule.h"
#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::txl {
#define GEN_PASS_DEF_PARALLELLOOPSTOGPUPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;
using namespace mlir::txl;

namespace {

/// Fewest reduction steps per point that a generic kernel spreads over a
/// subgroup or a workgroup; a nest known to take fewer runs in one
/// work-item per point.
constexpr int64_t kMinSpreadSteps = 64;

/// Most reduction steps (known at compile time) per point spread over one
/// subgroup; more, or a count known only at run time, take a workgroup.
constexpr int64_t kMaxSubgroupSteps = 4096;

/// The reduction each point of a parallel loop runs: `nest`, perfectly
/// nested scf.for without results (outermost first, bounds from outside the
/// parallel loop), whose innermost body ends in
/// `store(combiner(load(acc[idx]), term), acc[idx])` with idx invariant in
/// the nest; every other op of the body (before the nest, and in the
/// innermost body) is pure or a load of another memref.
struct PointReduction {
  SmallVector<scf::ForOp> nest;
  memref::LoadOp accLoad;
  memref::StoreOp accStore;
  Operation *combiner = nullptr;
  /// The combiner's operand that is the accumulator (0 or 1).
  unsigned accOperand = 0;
  /// The combiner's identity (−0.0 for addf, ∓inf for max/min).
  float identity = 0;
  /// The nest's steps when every bound is a constant.
  std::optional<int64_t> staticSteps;
};

/// `loop`'s body as a PointReduction, if it is one.
std::optional<PointReduction> matchPointReduction(scf::ParallelOp loop) {
  Block *body = loop.getBody();
  if (body->getOperations().size() < 2)
    return std::nullopt;
  auto outer =
      dyn_cast<scf::ForOp>(*std::prev(body->without_terminator().end()));
  if (!outer)
    return std::nullopt;
  auto pureOrLoad = [](Operation &op) {
    return isa<memref::LoadOp>(op) || (op.getNumRegions() == 0 && isPure(&op));
  };
  for (Operation &op : body->without_terminator())
    if (&op != outer.getOperation() && !pureOrLoad(op))
      return std::nullopt;
  PointReduction r;
  r.staticSteps = 1;
  for (scf::ForOp f = outer; f;) {
    if (!f.getInitArgs().empty())
      return std::nullopt;
    for (Value v : {f.getLowerBound(), f.getUpperBound(), f.getStep()})
      if (!loop.isDefinedOutsideOfLoop(v))
        return std::nullopt;
    std::optional<int64_t> lb = getConstantIntValue(f.getLowerBound()),
                           ub = getConstantIntValue(f.getUpperBound()),
                           step = getConstantIntValue(f.getStep());
    if (r.staticSteps && lb && ub && step && *step > 0)
      r.staticSteps = *r.staticSteps *
                      std::max<int64_t>(0, llvm::divideCeil(*ub - *lb, *step));
    else
      r.staticSteps.reset();
    r.nest.push_back(f);
    Block *fb = f.getBody();
    f = fb->getOperations().size() == 2 ? dyn_cast<scf::ForOp>(fb->front())
                                        : scf::ForOp();
  }
  Block *inner = r.nest.back().getBody();
  for (Operation &op : inner->without_terminator()) {
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (r.accStore)
        return std::nullopt;
      r.accStore = store;
    } else if (!pureOrLoad(op)) {
      return std::nullopt;
    }
  }
  if (!r.accStore)
    return std::nullopt;
  Value acc = r.accStore.getMemRef();
  for (Value index : r.accStore.getIndices())
    if (!outer.isDefinedOutsideOfLoop(index))
      return std::nullopt;
  Operation *combiner = r.accStore.getValue().getDefiningOp();
  if (!combiner || combiner->getBlock() != inner || !combiner->hasOneUse() ||
      !combiner->getResult(0).getType().isF32())
    return std::nullopt;
  constexpr float inf = std::numeric_limits<float>::infinity();
  if (isa<arith::AddFOp>(combiner))
    r.identity = -0.0f;
  else if (isa<arith::MaximumFOp, arith::MaxNumFOp>(combiner))
    r.identity = -inf;
  else if (isa<arith::MinimumFOp, arith::MinNumFOp>(combiner))
    r.identity = inf;
  else
    return std::nullopt;
  for (unsigned i = 0; i < 2; ++i) {
    auto load = combiner->getOperand(i).getDefiningOp<memref::LoadOp>();
    if (load && load->getBlock() == inner && load.getMemRef() == acc &&
        load.getIndices() == r.accStore.getIndices() && load->hasOneUse()) {
      r.accLoad = load;
      r.accOperand = i;
    }
  }
  if (!r.accLoad)
    return std::nullopt;
  // The accumulator is read only as the combiner's operand.
  WalkResult other = loop.getBody()->walk([&](memref::LoadOp load) {
    return load != r.accLoad && load.getMemRef() == acc
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  if (other.wasInterrupted())
    return std::nullopt;
  r.combiner = combiner;
  return r;
}

/// How a value defined outside the loop reaches the kernel.
enum class Capture {
  /// Cloned into the kernel (a constant).
  Clone,
  /// Passed as is (memref, index, i32, i64, f32).
  Pass,
  /// Passed zero-extended to i32, truncated back in the kernel (i1, i8,
  /// i16: OpenCL kernels take no bool arguments).
  Widen,
};

FailureOr<Capture> classify(Value value) {
  if (Operation *def = value.getDefiningOp())
    if (def->hasTrait<OpTrait::ConstantLike>() && def->getNumOperands() == 0)
      return Capture::Clone;
  Type type = value.getType();
  if (isa<MemRefType>(type) || type.isIndex() || type.isInteger(32) ||
      type.isInteger(64) || type.isF32())
    return Capture::Pass;
  if (auto integer = dyn_cast<IntegerType>(type);
      integer && integer.getWidth() < 32)
    return Capture::Widen;
  return failure();
}

/// A kernel of @txl_kernels for the region of `op` (a loop of host code):
/// its arguments are the values the region uses from above (and `op`'s
/// operands when `withOperands`; by `classify`), then `extraTypes`; `mapping`
/// maps those values to the kernel's (clones of the constants included) and
/// `hostArgs` holds what the host passes for them (the caller appends the extra
/// arguments).
struct Kernel {
  gpu::GPUFuncOp func;
  IRMapping mapping;
  SmallVector<Value> hostArgs;
  /// Index of the first extra argument.
  unsigned extraStart = 0;
  /// At the start of the kernel's body, after the captured values.
  OpBuilder::InsertPoint bodyStart;
};

FailureOr<Kernel> makeKernel(ModuleOp module, Operation *op, StringRef name,
                             TypeRange extraTypes, int64_t blockSize,
                             ImplicitLocOpBuilder &hb, bool withOperands,
                             TypeRange workgroupTypes = {}) {
  SetVector<Value> captured;
  // The operands too when the kernel clones `op` itself.
  if (withOperands)
    captured.insert(op->operand_begin(), op->operand_end());
  for (Region &region : op->getRegions())
    getUsedValuesDefinedAbove(region, captured);
  SmallVector<Capture> how;
  for (Value value : captured) {
    FailureOr<Capture> capture = classify(value);
    if (failed(capture))
      return op->emitError("txl-parallel-loops-to-gpu: cannot pass a ")
             << value.getType() << " to a kernel";
    how.push_back(*capture);
  }
  MLIRContext *ctx = module.getContext();
  Type i32 = IntegerType::get(ctx, 32);
  Kernel k;
  SmallVector<Type> argTypes;
  for (auto [value, capture] : llvm::zip(captured, how)) {
    if (capture == Capture::Pass) {
      argTypes.push_back(value.getType());
      k.hostArgs.push_back(value);
    } else if (capture == Capture::Widen) {
      argTypes.push_back(i32);
      k.hostArgs.push_back(arith::ExtUIOp::create(hb, i32, value));
    }
  }
  k.extraStart = argTypes.size();
  llvm::append_range(argTypes, extraTypes);

  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  OpBuilder mb(ctx); // the kernel is inserted by the symbol table
  k.func = gpu::GPUFuncOp::create(mb, op->getLoc(), name,
                                  FunctionType::get(ctx, argTypes, {}),
                                  workgroupTypes);
  k.func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), mb.getUnitAttr());
  k.func.setKnownBlockSizeAttr(
      mb.getDenseI32ArrayAttr({int32_t(blockSize), 1, 1}));
  SymbolTable(kernels).insert(k.func); // renames on a clash

  Block &entry = k.func.getBody().front();
  OpBuilder kb = OpBuilder::atBlockBegin(&entry);
  unsigned arg = 0;
  for (auto [value, capture] : llvm::zip(captured, how)) {
    if (capture == Capture::Clone)
      k.mapping.map(value, kb.clone(*value.getDefiningOp())->getResult(0));
    else if (capture == Capture::Pass)
      k.mapping.map(value, entry.getArgument(arg++));
    else
      k.mapping.map(value,
                    arith::TruncIOp::create(kb, op->getLoc(), value.getType(),
                                            entry.getArgument(arg++)));
  }
  gpu::ReturnOp::create(kb, op->getLoc());
  kb.setInsertionPoint(entry.getTerminator());
  k.bodyStart = kb.saveInsertionPoint();
  return k;
}

/// True when `memref` is host memory: a memref.alloca (the deallocation
/// lowering's bookkeeping, the read-back results of serial kernels), or an
/// argument of a private function that every caller passes such memory
/// (the deallocation lowering's helper).
bool isHostMemory(Value memref) {
  while (auto cast = memref.getDefiningOp<memref::CastOp>())
    memref = cast.getSource();
  if (memref.getDefiningOp<memref::AllocaOp>())
    return true;
  auto arg = dyn_cast<BlockArgument>(memref);
  if (!arg)
    return false;
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!func || !func.isPrivate() || arg.getOwner() != &func.front())
    return false;
  auto module = func->getParentOfType<ModuleOp>();
  std::optional<SymbolTable::UseRange> uses = func.getSymbolUses(module);
  if (!uses || uses->empty())
    return false;
  for (const SymbolTable::SymbolUse &use : *uses) {
    auto call = dyn_cast<func::CallOp>(use.getUser());
    if (!call || !isHostMemory(call.getOperand(arg.getArgNumber())))
      return false;
  }
  return true;
}

/// True when `op` reads or writes device memory (anything that is not
/// host memory, by isHostMemory), outside the bodies of nested
/// scf.parallel loops when `outsideParallel`.
bool touchesDeviceMemory(Operation *op, bool outsideParallel = false) {
  WalkResult walk = op->walk<WalkOrder::PreOrder>([&](Operation *inner) {
    if (outsideParallel && inner != op && isa<scf::ParallelOp>(inner))
      return WalkResult::skip();
    if (auto load = dyn_cast<memref::LoadOp>(inner))
      if (!isHostMemory(load.getMemRef()))
        return WalkResult::interrupt();
    if (auto store = dyn_cast<memref::StoreOp>(inner))
      if (!isHostMemory(store.getMemRef()))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return walk.wasInterrupted();
}

/// Declares `mgpuMemcpy` (txl/device.h) once.
func::FuncOp getOrDeclareMemcpy(ModuleOp module) {
  StringRef name = "mgpuMemcpy";
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  MLIRContext *ctx = module.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto fn = func::FuncOp::create(
      b, module.getLoc(), name,
      FunctionType::get(ctx, {ptr, ptr, IntegerType::get(ctx, 64), ptr}, {}));
  fn.setPrivate();
  return fn;
}

/// The device ABI's txl_device_count_bound(count, bound) -> min(count,
/// bound), which a dry run answers with `bound` (txl/device.h).
func::FuncOp getOrDeclareCountBound(ModuleOp module) {
  StringRef name = "txl_device_count_bound";
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  MLIRContext *ctx = module.getContext();
  Type i64 = IntegerType::get(ctx, 64);
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), name,
                                 FunctionType::get(ctx, {i64, i64}, {i64}));
  fn.setPrivate();
  return fn;
}

/// Host code for a loop's trip count, max(0, ceil((ub − lb) / step)).
Value tripCount(ImplicitLocOpBuilder &hb, Value lb, Value ub, Value step) {
  Value trip =
      arith::CeilDivSIOp::create(hb, arith::SubIOp::create(hb, ub, lb), step);
  return arith::MaxSIOp::create(hb, trip,
                                arith::ConstantIndexOp::create(hb, 0));
}

/// Host code for the trip counts of the loops (lbs, ubs, steps), appended
/// to `trips`; returns their product.
Value tripCounts(ImplicitLocOpBuilder &hb, ValueRange lbs, ValueRange ubs,
                 ValueRange steps, SmallVectorImpl<Value> &trips) {
  Value total = arith::ConstantIndexOp::create(hb, 1);
  for (auto [lb, ub, step] : llvm::zip(lbs, ubs, steps)) {
    trips.push_back(tripCount(hb, lb, ub, step));
    total = arith::MulIOp::create(hb, total, trips.back());
  }
  return total;
}

/// The device ABI's txl_device_serial_steps(steps), which host code calls
/// before a launch whose work-items run loops over device memory
/// (txl/device.h).
func::FuncOp getOrDeclareSerialSteps(ModuleOp module) {
  StringRef name = "txl_device_serial_steps";
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  MLIRContext *ctx = module.getContext();
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto fn = func::FuncOp::create(
      b, module.getLoc(), name,
      FunctionType::get(ctx, {IntegerType::get(ctx, 64)}, {}));
  fn.setPrivate();
  return fn;
}

/// Host code, at `hb` before `root` (the loop a kernel is made of), for
/// the most iterations of loops over device memory that one work-item of
/// that kernel runs: nested loops multiply, sibling loops and the branches
/// of an scf.if add; a loop's trip count is max(0, ceil((ub − lb) / step))
/// of its bounds as the host has them, a lower bound computed in the
/// kernel (a work-item's first element) taken as 0, and ceil(c / step) for
/// an upper bound min(lb + c, n) computed in the kernel (a block of c
/// positions). Null when the kernel
/// runs no such loop; the constant −1 when an upper bound or a step is
/// computed in the kernel.
class SerialSteps {
public:
  SerialSteps(ImplicitLocOpBuilder &hb, Operation *root) : hb(hb), root(root) {}

  /// The steps of the loops in `regions`.
  Value of(MutableArrayRef<Region> regions) {
    Value total = sum(regions);
    if (unknown)
      return arith::ConstantIntOp::create(hb, -1, 64);
    return total ? Value(arith::IndexCastOp::create(hb, hb.getI64Type(), total))
                 : Value();
  }
  /// The steps of `loop` itself (the root of a kernel of one work-item)
  /// and the loops in it.
  Value ofLoop(scf::ForOp loop) {
    countRoot = true;
    Value total = term(loop);
    if (unknown)
      return arith::ConstantIntOp::create(hb, -1, 64);
    return total ? Value(arith::IndexCastOp::create(hb, hb.getI64Type(), total))
                 : Value();
  }

private:
  /// `v` as the host has it: a constant, or a value from outside `root`.
  Value host(Value v) {
    if (std::optional<int64_t> c = getConstantIntValue(v))
      return arith::ConstantIndexOp::create(hb, *c);
    if (!root->isAncestor(v.getParentRegion()->getParentOp()))
      return v;
    return Value();
  }
  Value trip(Value lb, Value ub, Value step) {
    Value l = host(lb), u = host(ub), s = host(step);
    // ub = min(lb + c, n) (a block of c positions, the last one shorter):
    // at most ceil(c / step).
    if (!u && s)
      if (Operation *min = ub.getDefiningOp();
          min && isa<arith::MinUIOp, arith::MinSIOp>(min))
        for (Value operand : min->getOperands())
          if (auto add = operand.getDefiningOp<arith::AddIOp>())
            for (unsigned i = 0; i < 2; ++i)
              if (add->getOperand(i) == lb)
                if (std::optional<int64_t> c =
                        getConstantIntValue(add->getOperand(1 - i)))
                  return arith::CeilDivSIOp::create(
                      hb, arith::ConstantIndexOp::create(hb, *c), s);
    if (!u || !s) {
      unknown = true;
      return Value();
    }
    if (!l)
      l = arith::ConstantIndexOp::create(hb, 0);
    return tripCount(hb, l, u, s);
  }
  Value add(Value a, Value b) {
    return !a ? b : !b ? a : Value(arith::AddIOp::create(hb, a, b));
  }
  Value sum(MutableArrayRef<Region> regions) {
    Value total;
    for (Region &region : regions)
      for (Block &block : region)
        for (Operation &op : block)
          total = add(total, term(&op));
    return total;
  }
  /// The steps of `op`: a loop's trip count times its body's (at least 1),
  /// or the sum of its regions'.
  Value term(Operation *op) {
    Value inner = sum(op->getRegions());
    if (!isa<scf::ForOp, scf::ParallelOp>(op) || (op == root && !countRoot) ||
        !touchesDeviceMemory(op))
      return inner;
    Value trips;
    if (auto f = dyn_cast<scf::ForOp>(op)) {
      trips = trip(f.getLowerBound(), f.getUpperBound(), f.getStep());
    } else {
      auto p = cast<scf::ParallelOp>(op);
      for (auto [lb, ub, step] :
           llvm::zip(p.getLowerBound(), p.getUpperBound(), p.getStep())) {
        Value t = trip(lb, ub, step);
        trips = trips && t ? Value(arith::MulIOp::create(hb, trips, t)) : t;
      }
    }
    if (unknown)
      return inner;
    return inner ? Value(arith::MulIOp::create(hb, trips, inner)) : trips;
  }

  ImplicitLocOpBuilder &hb;
  Operation *root;
  /// Whether `root` itself is a loop the work-item runs (a kernel of one
  /// work-item).
  bool countRoot = false;
  bool unknown = false;
};

/// Tells the runtime, before the launch `hb` is about to make, how many
/// loop steps over device memory a work-item of it runs (SerialSteps).
void noteSerialSteps(ModuleOp module, ImplicitLocOpBuilder &hb, Value steps) {
  if (steps)
    func::CallOp::create(hb, getOrDeclareSerialSteps(module),
                         ValueRange{steps});
}

/// An !llvm.ptr to the buffer of `memref` (its handle, for mgpuMemcpy).
Value bufferPointer(ImplicitLocOpBuilder &b, Value memref) {
  Value index = memref::ExtractAlignedPointerAsIndexOp::create(b, memref);
  Value i64 = arith::IndexCastOp::create(b, b.getI64Type(), index);
  return LLVM::IntToPtrOp::create(b, LLVM::LLVMPointerType::get(b.getContext()),
                                  i64);
}

struct ParallelLoopsToGpuPass
    : public txl::impl::ParallelLoopsToGpuPassBase<ParallelLoopsToGpuPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<int> counters;
    auto nameFor = [&](Operation *op, StringRef kind) {
      auto func = op->getParentOfType<FunctionOpInterface>();
      StringRef base = func ? func.getName() : StringRef("host");
      return (base + "_" + kind + std::to_string(counters[base]++)).str();
    };
    // A host store of a host-computed scalar into device memory (the
    // training functions' scalar results: the gradient norm, the lr) becomes
    // a loop of one iteration, which runs below as a kernel of one
    // work-item with the scalar as its argument; an f64 crosses as its
    // bits (kernels take no f64 arguments).
    SmallVector<memref::StoreOp> scalarStores;
    module.walk([&](memref::StoreOp store) {
      if (!store->getParentOfType<gpu::GPUModuleOp>() &&
          !store->getParentOfType<scf::ForOp>() &&
          !store->getParentOfType<scf::ParallelOp>() &&
          touchesDeviceMemory(store))
        scalarStores.push_back(store);
    });
    for (memref::StoreOp store : scalarStores) {
      ImplicitLocOpBuilder b(store.getLoc(), store);
      Value value = store.getValue();
      Type type = value.getType();
      if (type.isF64())
        value = arith::BitcastOp::create(b, b.getI64Type(), value);
      Value zero = arith::ConstantIndexOp::create(b, 0);
      Value one = arith::ConstantIndexOp::create(b, 1);
      auto loop = scf::ForOp::create(b, zero, one, one);
      b.setInsertionPoint(loop.getBody()->getTerminator());
      if (type.isF64())
        value = arith::BitcastOp::create(b, type, value);
      memref::StoreOp::create(b, value, store.getMemRef(), store.getIndices());
      store.erase();
    }

    // Host loops that themselves read or write device memory are
    // sequential (the scan over the block counts of the adaptive
    // softmax's compaction of each cluster's tokens): each outermost such
    // scf.for runs, with the parallel loops it holds, as a kernel of one
    // work-item. A loop that calls a function (a library product: the
    // output layer's column blocks) stays on the host, and its nested
    // loops are candidates instead.
    SmallVector<scf::ForOp> serial;
    llvm::SmallPtrSet<Operation *, 8> selected;
    module.walk<WalkOrder::PreOrder>([&](scf::ForOp loop) {
      if (loop->getParentOfType<gpu::GPUModuleOp>() ||
          loop->getParentOfType<scf::ParallelOp>())
        return;
      for (Operation *p = loop->getParentOp(); p; p = p->getParentOp())
        if (selected.contains(p))
          return;
      bool calls =
          loop.getBody()
              ->walk([](func::CallOp) { return WalkResult::interrupt(); })
              .wasInterrupted();
      if (calls || !touchesDeviceMemory(loop, /*outsideParallel=*/true))
        return;
      selected.insert(loop);
      serial.push_back(loop);
    });
    for (scf::ForOp loop : serial)
      if (failed(convertSerial(module, loop, nameFor(loop, "serial"))))
        return signalPassFailure();

    SmallVector<scf::ParallelOp> loops;
    module.walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<gpu::GPUModuleOp>() &&
          !loop->getParentOfType<scf::ParallelOp>())
        loops.push_back(loop);
    });
    for (scf::ParallelOp loop : loops)
      if (failed(convertParallel(module, loop, nameFor(loop, "loop"))))
        return signalPassFailure();

    // Nothing else of host code may read or write device memory.
    WalkResult check = module.walk([&](Operation *op) {
      if (op->getParentOfType<gpu::GPUModuleOp>() ||
          !isa<memref::LoadOp, memref::StoreOp>(op) || !touchesDeviceMemory(op))
        return WalkResult::advance();
      op->emitError("txl-parallel-loops-to-gpu: host code accesses device "
                    "memory outside a loop");
      return WalkResult::interrupt();
    });
    if (check.wasInterrupted())
      signalPassFailure();
  }

  LogicalResult convertParallel(ModuleOp module, scf::ParallelOp loop,
                                const std::string &name) {
    if (!loop.getInitVals().empty())
      return loop.emitError("txl-parallel-loops-to-gpu: a parallel loop with "
                            "reductions has no GPU kernel");
    if (loop->getParentOfType<gpu::LaunchOp>())
      return success();
    if (spreadReductions && blockSize % kSubgroupSize == 0)
      if (std::optional<PointReduction> reduction = matchPointReduction(loop);
          reduction && (!reduction->staticSteps ||
                        *reduction->staticSteps >= kMinSpreadSteps))
        return convertReduction(module, loop, name, *reduction);
    MLIRContext *ctx = module.getContext();
    Type index = IndexType::get(ctx);
    size_t rank = loop.getNumLoops();
    ImplicitLocOpBuilder hb(loop.getLoc(), loop);
    // Extra arguments: lower bounds, steps, trip counts, point count.
    SmallVector<Type> extra(3 * rank + 1, index);
    FailureOr<Kernel> k = makeKernel(module, loop, name, extra, blockSize, hb,
                                     /*withOperands=*/false);
    if (failed(k))
      return failure();

    SmallVector<Value> trips;
    Value total = tripCounts(hb, loop.getLowerBound(), loop.getUpperBound(),
                             loop.getStep(), trips);
    SmallVector<Value> hostArgs = k->hostArgs;
    llvm::append_range(hostArgs, loop.getLowerBound());
    llvm::append_range(hostArgs, loop.getStep());
    llvm::append_range(hostArgs, trips);
    hostArgs.push_back(total);
    Value threads = arith::ConstantIndexOp::create(hb, blockSize);
    Value blocks = arith::CeilDivUIOp::create(hb, total, threads);
    Value one = arith::ConstantIndexOp::create(hb, 1);
    noteSerialSteps(module, hb, SerialSteps(hb, loop).of(loop->getRegions()));
    gpu::LaunchFuncOp::create(hb, k->func, gpu::KernelDim3{blocks, one, one},
                              gpu::KernelDim3{threads, one, one},
                              /*dynamicSharedMemorySize=*/Value(), hostArgs);

    // Kernel body: linear index, guard, multi-index (innermost fastest),
    // the loop's body.
    Block &entry = k->func.getBody().front();
    auto arg = [&](size_t group, size_t d) {
      return entry.getArgument(k->extraStart + group * rank + d);
    };
    ImplicitLocOpBuilder kb(loop.getLoc(), ctx);
    kb.restoreInsertionPoint(k->bodyStart);
    Value linear = arith::AddIOp::create(
        kb,
        arith::MulIOp::create(kb, gpu::BlockIdOp::create(kb, gpu::Dimension::x),
                              arith::ConstantIndexOp::create(kb, blockSize)),
        gpu::ThreadIdOp::create(kb, gpu::Dimension::x));
    Value inRange =
        arith::CmpIOp::create(kb, arith::CmpIPredicate::ult, linear,
                              entry.getArgument(k->extraStart + 3 * rank));
    auto guard = scf::IfOp::create(kb, inRange, /*withElseRegion=*/false);
    kb.setInsertionPointToStart(guard.thenBlock());
    Value rest = linear;
    SmallVector<Value> ivs(rank);
    for (size_t d = rank; d-- > 0;) {
      Value i = arith::RemUIOp::create(kb, rest, arg(2, d));
      rest = arith::DivUIOp::create(kb, rest, arg(2, d));
      ivs[d] = arith::AddIOp::create(kb, arg(0, d),
                                     arith::MulIOp::create(kb, i, arg(1, d)));
    }
    for (size_t d = 0; d < rank; ++d)
      k->mapping.map(loop.getInductionVars()[d], ivs[d]);
    for (Operation &op : loop.getBody()->without_terminator())
      kb.clone(op, k->mapping);
    loop.erase();
    return success();
  }

  /// `loop`, whose points each run `reduction`, as a kernel that gives each
  /// point a subgroup (`reduction` known to take at most kMaxSubgroupSteps)
  /// or a workgroup of blockSize work-items (file comment).
  LogicalResult convertReduction(ModuleOp module, scf::ParallelOp loop,
                                 const std::string &name,
                                 PointReduction &reduction) {
    MLIRContext *ctx = module.getContext();
    const bool perWorkgroup =
        !reduction.staticSteps || *reduction.staticSteps > kMaxSubgroupSteps;
    const int64_t subgroups = blockSize / kSubgroupSize;
    const size_t rank = loop.getNumLoops(), depth = reduction.nest.size();
    Type index = IndexType::get(ctx);
    Type f32 = Float32Type::get(ctx);
    ImplicitLocOpBuilder hb(loop.getLoc(), loop);
    // Extra arguments: the parallel loop's lower bounds, steps, trip counts
    // and point count, then the nest's, then its step count.
    SmallVector<Type> extra(3 * rank + 1 + 3 * depth + 1, index);
    SmallVector<Type> workgroup;
    if (perWorkgroup)
      workgroup.push_back(
          MemRefType::get({subgroups}, f32, MemRefLayoutAttrInterface{},
                          IntegerAttr::get(hb.getI64Type(), 3)));
    FailureOr<Kernel> k = makeKernel(module, loop, name, extra, blockSize, hb,
                                     /*withOperands=*/false, workgroup);
    if (failed(k))
      return failure();

    SmallVector<Value> trips, nestTrips, nestLbs, nestUbs, nestSteps;
    Value points = tripCounts(hb, loop.getLowerBound(), loop.getUpperBound(),
                              loop.getStep(), trips);
    for (scf::ForOp f : reduction.nest) {
      nestLbs.push_back(f.getLowerBound());
      nestUbs.push_back(f.getUpperBound());
      nestSteps.push_back(f.getStep());
    }
    Value steps = tripCounts(hb, nestLbs, nestUbs, nestSteps, nestTrips);
    SmallVector<Value> hostArgs = k->hostArgs;
    llvm::append_range(hostArgs, loop.getLowerBound());
    llvm::append_range(hostArgs, loop.getStep());
    llvm::append_range(hostArgs, trips);
    hostArgs.push_back(points);
    llvm::append_range(hostArgs, nestLbs);
    llvm::append_range(hostArgs, nestSteps);
    llvm::append_range(hostArgs, nestTrips);
    hostArgs.push_back(steps);
    Value threads = arith::ConstantIndexOp::create(hb, blockSize);
    Value blocks =
        perWorkgroup
            ? points
            : Value(arith::CeilDivUIOp::create(
                  hb, points, arith::ConstantIndexOp::create(hb, subgroups)));
    Value one = arith::ConstantIndexOp::create(hb, 1);
    // A work-item's steps: its share of the nest (the body has no other
    // loop).
    noteSerialSteps(
        module, hb,
        arith::IndexCastOp::create(
            hb, hb.getI64Type(),
            arith::CeilDivUIOp::create(
                hb, steps,
                arith::ConstantIndexOp::create(
                    hb, perWorkgroup ? blockSize : kSubgroupSize))));
    gpu::LaunchFuncOp::create(hb, k->func, gpu::KernelDim3{blocks, one, one},
                              gpu::KernelDim3{threads, one, one},
                              /*dynamicSharedMemorySize=*/Value(), hostArgs);

    Block &entry = k->func.getBody().front();
    auto arg = [&](size_t at) { return entry.getArgument(k->extraStart + at); };
    ImplicitLocOpBuilder kb(loop.getLoc(), ctx);
    kb.restoreInsertionPoint(k->bodyStart);
    auto idx = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(kb, v);
    };
    // The combiner applied to (acc, term) in its operand order.
    auto combine = [&](Value acc, Value term) {
      IRMapping m;
      m.map(reduction.combiner->getOperand(reduction.accOperand), acc);
      m.map(reduction.combiner->getOperand(1 - reduction.accOperand), term);
      return kb.clone(*reduction.combiner, m)->getResult(0);
    };
    // ivs[d] = lb[d] + (linear's digit d, innermost fastest) * step[d];
    // `linear` is below the product of the trip counts, so the outermost
    // digit is what the inner ones leave (no division for a 1-D nest).
    // A lower bound or step that is a constant on the host is one in the
    // kernel too, so that the backend strength-reduces the loop's
    // addresses (a unit step: consecutive elements, no multiplication).
    auto delinearize = [&](Value linear, size_t n, size_t lbAt,
                           IRMapping &mapping, ValueRange ivs,
                           ValueRange hostLbs, ValueRange hostSteps) {
      auto known = [&](Value host, size_t at) -> Value {
        if (std::optional<int64_t> c = getConstantIntValue(host))
          return idx(*c);
        return arg(at);
      };
      Value rest = linear;
      for (size_t d = n; d-- > 0;) {
        Value trip = arg(lbAt + 2 * n + d);
        Value i = rest;
        if (d > 0) {
          i = arith::RemUIOp::create(kb, rest, trip);
          rest = arith::DivUIOp::create(kb, rest, trip);
        }
        mapping.map(ivs[d], arith::AddIOp::create(
                                kb, known(hostLbs[d], lbAt + d),
                                arith::MulIOp::create(
                                    kb, i, known(hostSteps[d], lbAt + n + d))));
      }
    };

    Value tid = gpu::ThreadIdOp::create(kb, gpu::Dimension::x);
    Value block = gpu::BlockIdOp::create(kb, gpu::Dimension::x);
    Value subgroup = arith::DivUIOp::create(kb, tid, idx(kSubgroupSize));
    Value laneInSubgroup = arith::RemUIOp::create(kb, tid, idx(kSubgroupSize));
    Value point, lane, width;
    if (perWorkgroup) {
      // The grid is the points: no guard, the whole workgroup reaches the
      // barrier.
      point = block;
      lane = tid;
      width = idx(blockSize);
    } else {
      point = arith::AddIOp::create(
          kb, arith::MulIOp::create(kb, block, idx(subgroups)), subgroup);
      lane = laneInSubgroup;
      width = idx(kSubgroupSize);
      // A whole subgroup leaves together (the shuffles need all 32 lanes).
      Value inRange = arith::CmpIOp::create(kb, arith::CmpIPredicate::ult,
                                            point, arg(3 * rank));
      auto guard = scf::IfOp::create(kb, inRange, /*withElseRegion=*/false);
      kb.setInsertionPointToStart(guard.thenBlock());
    }
    delinearize(point, rank, 0, k->mapping, loop.getInductionVars(),
                loop.getLowerBound(), loop.getStep());
    for (Operation &op : loop.getBody()->without_terminator())
      if (&op != reduction.nest.front().getOperation())
        kb.clone(op, k->mapping);

    // The work-item's steps lane, lane + width, ... from the identity.
    Value identity = arith::ConstantFloatOp::create(
        kb, cast<FloatType>(f32), APFloat(reduction.identity));
    const size_t nestAt = 3 * rank + 1;
    auto lanes = scf::ForOp::create(kb, lane, arg(nestAt + 3 * depth), width,
                                    ValueRange{identity});
    {
      OpBuilder::InsertionGuard guard(kb);
      kb.setInsertionPointToStart(lanes.getBody());
      SmallVector<Value> nestIvs;
      for (scf::ForOp f : reduction.nest)
        nestIvs.push_back(f.getInductionVar());
      delinearize(lanes.getInductionVar(), depth, nestAt, k->mapping, nestIvs,
                  nestLbs, nestSteps);
      k->mapping.map(reduction.accLoad.getResult(),
                     lanes.getRegionIterArgs()[0]);
      for (Operation &op :
           reduction.nest.back().getBody()->without_terminator())
        if (&op != reduction.accLoad.getOperation() &&
            &op != reduction.accStore.getOperation())
          kb.clone(op, k->mapping);
      scf::YieldOp::create(kb,
                           k->mapping.lookup(reduction.combiner->getResult(0)));
    }
    Value v = lanes.getResult(0);
    for (int64_t offset = kSubgroupSize / 2; offset > 0; offset /= 2)
      v = combine(v, gpu::ShuffleOp::create(kb, v, offset, kSubgroupSize,
                                            gpu::ShuffleMode::XOR)
                         .getShuffleResult());
    if (perWorkgroup) {
      Value parts = k->func.getWorkgroupAttributions()[0];
      Value first = arith::CmpIOp::create(kb, arith::CmpIPredicate::eq,
                                          laneInSubgroup, idx(0));
      auto write = scf::IfOp::create(kb, first, /*withElseRegion=*/false);
      {
        OpBuilder::InsertionGuard guard(kb);
        kb.setInsertionPointToStart(write.thenBlock());
        memref::StoreOp::create(kb, v, parts, ValueRange{subgroup});
      }
      gpu::BarrierOp::create(kb);
      v = memref::LoadOp::create(kb, parts, ValueRange{idx(0)});
      for (int64_t s = 1; s < subgroups; ++s)
        v = combine(v, memref::LoadOp::create(kb, parts, ValueRange{idx(s)}));
    }
    // Work-item 0 of the point's group: the accumulator combined with it.
    Value leader =
        arith::CmpIOp::create(kb, arith::CmpIPredicate::eq, lane, idx(0));
    auto write = scf::IfOp::create(kb, leader, /*withElseRegion=*/false);
    kb.setInsertionPointToStart(write.thenBlock());
    Value acc = reduction.accStore.getMemRef();
    SmallVector<Value> indices;
    for (Value i : reduction.accStore.getIndices())
      indices.push_back(k->mapping.lookupOrDefault(i));
    Value old =
        memref::LoadOp::create(kb, k->mapping.lookupOrDefault(acc), indices);
    memref::StoreOp::create(kb, combine(old, v),
                            k->mapping.lookupOrDefault(acc), indices);
    loop.erase();
    return success();
  }

  /// `loop` (sequential, touching device memory) as a kernel of one
  /// work-item. Its integer and float results (as bits) come back through a
  /// small device buffer the host reads (mgpuMemcpy waits for the queue).
  LogicalResult convertSerial(ModuleOp module, scf::ForOp loop,
                              const std::string &name) {
    MLIRContext *ctx = module.getContext();
    for (Type type : loop.getResultTypes())
      if (!type.isIndex() && !type.isInteger(64) && !type.isInteger(32) &&
          !type.isF32() && !type.isF64())
        return loop.emitError("txl-parallel-loops-to-gpu: a sequential loop "
                              "over device memory with a ")
               << type << " result has no GPU kernel";
    int64_t results = loop.getNumResults();
    ImplicitLocOpBuilder hb(loop.getLoc(), loop);
    auto resultType = MemRefType::get({std::max<int64_t>(results, 1)},
                                      IntegerType::get(ctx, 64));
    Value deviceResults;
    SmallVector<Type> extra;
    if (results) {
      deviceResults = memref::AllocOp::create(hb, resultType);
      extra.push_back(resultType);
    }
    FailureOr<Kernel> k = makeKernel(module, loop, name, extra, 1, hb,
                                     /*withOperands=*/true);
    if (failed(k))
      return failure();
    SmallVector<Value> hostArgs = k->hostArgs;
    if (results)
      hostArgs.push_back(deviceResults);
    Value one = arith::ConstantIndexOp::create(hb, 1);
    noteSerialSteps(module, hb, SerialSteps(hb, loop).ofLoop(loop));
    gpu::LaunchFuncOp::create(hb, k->func, gpu::KernelDim3{one, one, one},
                              gpu::KernelDim3{one, one, one},
                              /*dynamicSharedMemorySize=*/Value(), hostArgs);

    ImplicitLocOpBuilder kb(loop.getLoc(), ctx);
    kb.restoreInsertionPoint(k->bodyStart);
    Operation *clone = kb.clone(*loop, k->mapping);
    if (!results) {
      loop.erase();
      return success();
    }
    Block &entry = k->func.getBody().front();
    Value out = entry.getArgument(k->extraStart);
    for (int64_t r = 0; r < results; ++r) {
      Value v = clone->getResult(r);
      // A float travels as its bits (zero-extended from f32).
      if (auto f = dyn_cast<FloatType>(v.getType()))
        v = arith::BitcastOp::create(kb, kb.getIntegerType(f.getWidth()), v);
      if (!v.getType().isInteger(64))
        v = v.getType().isIndex()
                ? Value(arith::IndexCastOp::create(kb, kb.getI64Type(), v))
                : Value(arith::ExtUIOp::create(kb, kb.getI64Type(), v));
      memref::StoreOp::create(
          kb, v, out, ValueRange{arith::ConstantIndexOp::create(kb, r)});
    }

    // Host: read the results back, then use them.
    Value hostResults = memref::AllocaOp::create(hb, resultType);
    func::CallOp::create(
        hb, getOrDeclareMemcpy(module),
        ValueRange{bufferPointer(hb, hostResults),
                   bufferPointer(hb, deviceResults),
                   arith::ConstantIntOp::create(hb, 8 * results, 64),
                   LLVM::ZeroOp::create(hb, LLVM::LLVMPointerType::get(ctx))});
    SmallVector<Value> values;
    for (int64_t r = 0; r < results; ++r) {
      Value v = memref::LoadOp::create(
          hb, hostResults, ValueRange{arith::ConstantIndexOp::create(hb, r)});
      Type type = loop.getResult(r).getType();
      if (type.isIndex())
        v = arith::IndexCastOp::create(hb, type, v);
      else if (auto f = dyn_cast<FloatType>(type))
        v = arith::BitcastOp::create(
            hb, type,
            f.getWidth() == 64 ? v
                               : Value(arith::TruncIOp::create(
                                     hb, hb.getIntegerType(f.getWidth()), v)));
      else if (!type.isInteger(64))
        v = arith::TruncIOp::create(hb, type, v);
      values.push_back(v);
    }
    memref::DeallocOp::create(hb, deviceResults);
    loop.replaceAllUsesWith(values);
    loop.erase();
    // An index result that the host bounds with arith.minui (the adaptive
    // softmax's compaction: a cluster's count, at most the segment's
    // tokens) is bounded through txl_device_count_bound instead: the same
    // minimum in a run, the bound in the device-memory check's dry run,
    // where no kernel computes the count, so that the dry run sizes what
    // follows for the most the count can be.
    for (Value v : values) {
      if (!v.getType().isIndex())
        continue;
      for (Operation *user : llvm::make_early_inc_range(v.getUsers())) {
        auto min = dyn_cast<arith::MinUIOp>(user);
        if (!min)
          continue;
        Value bound = min.getLhs() == v ? min.getRhs() : min.getLhs();
        ImplicitLocOpBuilder mb(min.getLoc(), min);
        Type i64 = mb.getI64Type();
        Value call = func::CallOp::create(
                         mb, getOrDeclareCountBound(module),
                         ValueRange{arith::IndexCastOp::create(mb, i64, v),
                                    arith::IndexCastOp::create(mb, i64, bound)})
                         .getResult(0);
        min.replaceAllUsesWith(
            arith::IndexCastOp::create(mb, mb.getIndexType(), call)
                .getResult());
        min.erase();
      }
    }
    return success();
  }
};

} // namespace
