//===- LinalgToBlas.cpp - Bufferized products => cblas_?gemm calls ------===//
//
// Matrix products are the one thing txlc does not generate code for: after
// bufferization each f32 linalg.matmul becomes a cblas_sgemm call (f64: a
// cblas_dgemm call, for gradient checks) and each linalg.batch_matmul a loop
// of them (bookworm's OpenBLAS has no batched gemm); a linalg.contract, a
// loop nest of them over its other dimensions, wherever those sit in the
// operands (lowerContractToBlas). Pointers come from the
// memref's aligned base plus its offset; the leading dimensions are the
// memref's row strides.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_CONVERTLINALGTOBLASPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

constexpr int32_t kCblasRowMajor = 101;
constexpr int32_t kCblasNoTrans = 111;
constexpr int32_t kCblasTrans = 112;
constexpr llvm::StringLiteral kSgemm = "cblas_sgemm";
constexpr llvm::StringLiteral kDgemm = "cblas_dgemm";
/// The runtime's bf16 product (txl/rt/device/Bf16Gemm.h): cblas_sgemm's
/// signature.
constexpr llvm::StringLiteral kSgemmBf16 = "txl_rt_sgemm_bf16";
/// The runtime's f32 product, which chooses oneMKL or OpenBLAS
/// (txl/rt/device/HostGemm.h): cblas_sgemm's signature.
constexpr llvm::StringLiteral kSgemmRuntime = "txl_rt_sgemm";

/// True for the element types BLAS has a gemm for: f32 and f64.
static bool hasGemm(Type elementType) {
  return elementType.isF32() || elementType.isF64();
}

/// Declares `cblas_sgemm` (f32; with `bf16`, the runtime's
/// `txl_rt_sgemm_bf16`; with `runtimeSgemm`, the runtime's `txl_rt_sgemm`)
/// or `cblas_dgemm` (f64) in `module` once (CBLAS row-major signature with
/// int32 enums and sizes; alpha and beta of the element type).
static func::FuncOp getOrDeclareGemm(OpBuilder &b, ModuleOp module,
                                     Type elementType, bool bf16,
                                     bool runtimeSgemm) {
  StringRef name = !elementType.isF32() ? kDgemm
                   : bf16               ? kSgemmBf16
                   : runtimeSgemm       ? kSgemmRuntime
                                        : kSgemm;
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  MLIRContext *ctx = b.getContext();
  Type i32 = b.getI32Type(), scalar = elementType;
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  auto type = b.getFunctionType({i32, i32, i32, i32, i32, i32, scalar, ptr, i32,
                                 ptr, i32, scalar, ptr, i32},
                                {});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), name, type);
  fn.setPrivate();
  return fn;
}

/// A memref viewed as base pointer + offset + strides.
struct Operand {
  Value ptr;                   ///< !llvm.ptr to element [0, ..., 0]
  SmallVector<Value> sizes;    ///< index
  SmallVector<Value> strides;  ///< index
};

/// Fails unless `memref` has `elementType` and a unit inner stride.
static FailureOr<Operand> decompose(OpBuilder &b, Location loc, Value memref,
                                    Type elementType) {
  auto type = dyn_cast<MemRefType>(memref.getType());
  if (!type || type.getElementType() != elementType)
    return failure();
  SmallVector<int64_t> staticStrides;
  int64_t staticOffset;
  if (failed(type.getStridesAndOffset(staticStrides, staticOffset)) ||
      staticStrides.back() != 1)
    return failure();
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value base64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), base);
  Type ptrType = LLVM::LLVMPointerType::get(b.getContext());
  Value ptr = LLVM::IntToPtrOp::create(b, loc, ptrType, base64);
  Value off64 =
      arith::IndexCastOp::create(b, loc, b.getI64Type(), meta.getOffset());
  ptr = LLVM::GEPOp::create(b, loc, ptrType, elementType, ptr,
                            ArrayRef<LLVM::GEPArg>{off64});
  Operand op;
  op.ptr = ptr;
  op.sizes.assign(meta.getSizes().begin(), meta.getSizes().end());
  op.strides.assign(meta.getStrides().begin(), meta.getStrides().end());
  return op;
}

static Value toI32(OpBuilder &b, Location loc, Value index) {
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
}

static Value offsetPtr(OpBuilder &b, Location loc, Value ptr, Value elems,
                       Type elementType) {
  Value e64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), elems);
  return LLVM::GEPOp::create(b, loc, ptr.getType(), elementType, ptr,
                             ArrayRef<LLVM::GEPArg>{e64});
}

/// Transpose flags of A and B from the last three dims of the indexing maps
/// (m, n, k), or failure for any other contraction.
static FailureOr<std::pair<bool, bool>>
classify(ArrayRef<AffineMap> maps, unsigned batchDims) {
  if (maps.size() != 3)
    return failure();
  MLIRContext *ctx = maps[0].getContext();
  unsigned n = batchDims + 3;
  auto dims = [&](std::initializer_list<unsigned> ds) {
    SmallVector<AffineExpr> exprs;
    for (unsigned i = 0; i < batchDims; ++i)
      exprs.push_back(getAffineDimExpr(i, ctx));
    for (unsigned d : ds)
      exprs.push_back(getAffineDimExpr(batchDims + d, ctx));
    return AffineMap::get(n, 0, exprs, ctx);
  };
  const unsigned m = 0, nn = 1, k = 2;
  if (maps[2] != dims({m, nn}))
    return failure();
  bool transA, transB;
  if (maps[0] == dims({m, k}))
    transA = false;
  else if (maps[0] == dims({k, m}))
    transA = true;
  else
    return failure();
  if (maps[1] == dims({k, nn}))
    transB = false;
  else if (maps[1] == dims({nn, k}))
    transB = true;
  else
    return failure();
  return std::make_pair(transA, transB);
}

/// cblas_sgemm/dgemm take their sizes and leading dimensions as 32-bit
/// ints: a static one above INT32_MAX would wrap (K = 2^32 became 0).
/// Fails with an error at `op` naming the first static size or stride of
/// its memref operands that does not fit (a looped batch dimension would,
/// but no model has one that large). Dynamic sizes are checked at run time
/// (emitGemm).
static LogicalResult checkFitsBlasInt(Operation *op) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      continue;
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)))
      continue;
    for (auto [d, size] : llvm::enumerate(type.getShape()))
      if (!ShapedType::isDynamic(size) && size > kMax)
        return op->emitOpError("operand #")
               << operand.getOperandNumber() << " dimension " << d << ": size "
               << size << " does not fit the BLAS's 32-bit int (at most "
               << kMax << ")";
    for (auto [d, stride] : llvm::enumerate(strides))
      if (!ShapedType::isDynamic(stride) && stride > kMax)
        return op->emitOpError("operand #")
               << operand.getOperandNumber() << " dimension " << d
               << ": stride " << stride
               << " does not fit the BLAS's 32-bit int (at most " << kMax
               << ")";
  }
  return success();
}

/// Emits one gemm call for matrices starting at the given pointers; alpha
/// is 1 and beta `beta` (1: accumulate onto C, 0: overwrite it) in the
/// gemm's scalar type.
static void emitGemm(OpBuilder &b, Location loc, func::FuncOp gemm, bool transA,
                     bool transB, Value m, Value n, Value k, Value a, Value lda,
                     Value bm, Value ldb, Value c, Value ldc, double beta) {
  auto i32c = [&](int32_t v) {
    return arith::ConstantIntOp::create(b, loc, v, 32).getResult();
  };
  Type scalar = gemm.getFunctionType().getInput(6); // alpha
  Value one = arith::ConstantOp::create(b, loc, b.getFloatAttr(scalar, 1.0));
  Value betaValue =
      beta == 1.0
          ? one
          : arith::ConstantOp::create(b, loc, b.getFloatAttr(scalar, beta))
                .getResult();
  // Sizes and leading dimensions known only at run time are checked there
  // (the static ones by checkFitsBlasInt): one that does not fit the
  // BLAS's int stops the run (cf.assert, txl-lower-host-asserts) instead of
  // wrapping.
  Value fits;
  for (Value v : {m, n, k, lda, ldb, ldc}) {
    if (getConstantIntValue(v))
      continue;
    Value ok = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ule, v,
        arith::ConstantIndexOp::create(b, loc,
                                       std::numeric_limits<int32_t>::max()));
    fits = fits ? arith::AndIOp::create(b, loc, fits, ok).getResult() : ok;
  }
  if (fits)
    cf::AssertOp::create(
        b, loc, fits,
        (gemm.getName() +
         ": a size or leading dimension is above 2147483647, the most the "
         "BLAS's 32-bit int holds")
            .str());
  func::CallOp::create(
      b, loc, gemm,
      ValueRange{i32c(kCblasRowMajor),
                 i32c(transA ? kCblasTrans : kCblasNoTrans),
                 i32c(transB ? kCblasTrans : kCblasNoTrans), toI32(b, loc, m),
                 toI32(b, loc, n), toI32(b, loc, k), one, a, toI32(b, loc, lda),
                 bm, toI32(b, loc, ldb), betaValue, c, toI32(b, loc, ldc)});
}

/// The `linalg.fill` of +0.0 that last wrote all of `op`'s output, when it
/// is the op just before `op`, or when the output is a fresh allocation
/// that nothing else touches between the fill and `op`; null otherwise. The
/// product then overwrites its output (beta = 0) and the fill, a full pass
/// over the output, goes away. BLAS with beta = 0 never reads C, so this is
/// exact, signed zeros included (+0 + x = x).
static linalg::FillOp findZeroFill(linalg::LinalgOp op) {
  Value out = op.getDpsInitOperand(0)->get();
  auto zeroFillOfOut = [&](linalg::FillOp fill) -> linalg::FillOp {
    auto value =
        fill.getDpsInputOperand(0)->get().getDefiningOp<arith::ConstantOp>();
    auto attr = value ? dyn_cast<FloatAttr>(value.getValue()) : FloatAttr();
    if (!attr || !attr.getValue().isPosZero())
      return nullptr;
    return fill;
  };
  // Any output (a view too) filled by the op just before: nothing can
  // write it in between.
  if (auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
      fill && fill.getDpsInitOperand(0)->get() == out)
    return zeroFillOfOut(fill);
  if (!out.getDefiningOp<memref::AllocOp>())
    return nullptr;
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    auto fill = dyn_cast<linalg::FillOp>(prev);
    if (fill && fill.getDpsInitOperand(0)->get() == out)
      return zeroFillOfOut(fill);
    // Anything else in between that reads or writes the output, or makes a
    // view of it that might, keeps the fill (nested regions included). A
    // fill outside the product's block (e.g. before a loop the product
    // accumulates in) is never reached.
    bool touches = false;
    prev->walk([&](Operation *nested) {
      touches |= llvm::is_contained(nested->getOperands(), out);
    });
    if (touches)
      return nullptr;
  }
  return nullptr;
}

/// max(x, 1): BLAS rejects a zero leading dimension even for empty matrices.
static Value atLeastOne(OpBuilder &b, Location loc, Value x) {
  return arith::MaxUIOp::create(b, loc, x,
                                arith::ConstantIndexOp::create(b, loc, 1));
}

/// Skips empty products: opens an scf.if on m·n·k != 0 (beta = 0: m·n !=
/// 0) and moves `b` into it; returns the index constant 0 it made. Linalg
/// accumulates, so an empty product changes nothing; with beta = 0 only an
/// empty C is skipped: for k = 0 the call zeroes C (C = βC), standing in
/// for the erased fill.
static Value guardNonEmpty(OpBuilder &b, Location loc, Value m, Value n,
                           Value k, double beta) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value mn = arith::MulIOp::create(b, loc, m, n);
  Value work = beta == 0.0 ? mn : arith::MulIOp::create(b, loc, mn, k);
  Value nonEmpty =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, work, zero);
  auto ifOp = scf::IfOp::create(b, loc, nonEmpty, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifOp.thenBlock());
  return zero;
}

/// What both lowerings need to know of a product before rewriting it.
struct ProductPlan {
  bool transA, transB;
  /// The zero fill the product absorbs as beta = 0 (findZeroFill), or null.
  linalg::FillOp zeroFill;
};

/// The plan of bufferized product `op`, or failure with an error on it
/// (operands on tensors, or maps that are no BLAS layout). Call it before
/// inserting anything next to `op` (findZeroFill walks its predecessors).
static FailureOr<ProductPlan> planProduct(linalg::LinalgOp op,
                                          unsigned batchDims) {
  if (!op.hasPureBufferSemantics())
    return op->emitOpError("txl-linalg-to-blas expects bufferized operands");
  FailureOr<std::pair<bool, bool>> trans =
      classify(op.getIndexingMapsArray(), batchDims);
  if (failed(trans))
    return op->emitOpError("unsupported indexing maps for a BLAS product");
  return ProductPlan{trans->first, trans->second, findZeroFill(op)};
}

/// Rewrites `op` (matmul with batchDims = 0, batch_matmul with 1) into calls
/// of `gemm`, whose element type is the one of `op`'s output.
static LogicalResult lowerToBlas(linalg::LinalgOp op, unsigned batchDims,
                                 func::FuncOp gemm, Type elementType) {
  FailureOr<ProductPlan> plan = planProduct(op, batchDims);
  if (failed(plan))
    return failure();
  if (failed(checkFitsBlasInt(op)))
    return failure();
  bool transA = plan->transA, transB = plan->transB;
  linalg::FillOp zeroFill = plan->zeroFill;
  IRRewriter b(op->getContext());
  b.setInsertionPoint(op);
  Location loc = op.getLoc();
  Value aMem = op.getDpsInputOperand(0)->get();
  Value bMem = op.getDpsInputOperand(1)->get();
  Value cMem = op.getDpsInitOperand(0)->get();
  FailureOr<Operand> a = decompose(b, loc, aMem, elementType),
                     bb = decompose(b, loc, bMem, elementType),
                     c = decompose(b, loc, cMem, elementType);
  if (failed(a) || failed(bb) || failed(c))
    return op->emitOpError("BLAS operands must be ")
           << (elementType.isF32() ? "f32" : "f64")
           << " memrefs with a unit inner stride";
  unsigned r = batchDims;
  Value m = c->sizes[r], n = c->sizes[r + 1];
  Value k = transA ? a->sizes[r] : a->sizes[r + 1];
  Value lda = atLeastOne(b, loc, a->strides[r]);
  Value ldb = atLeastOne(b, loc, bb->strides[r]);
  Value ldc = atLeastOne(b, loc, c->strides[r]);

  double beta = 1.0;
  if (zeroFill) {
    b.eraseOp(zeroFill);
    beta = 0.0;
  }
  Value zero = guardNonEmpty(b, loc, m, n, k, beta);
  if (batchDims == 0) {
    emitGemm(b, loc, gemm, transA, transB, m, n, k, a->ptr, lda, bb->ptr, ldb,
             c->ptr, ldc, beta);
  } else {
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = scf::ForOp::create(b, loc, zero, c->sizes[0], one);
    b.setInsertionPointToStart(loop.getBody());
    Value iv = loop.getInductionVar();
    auto at = [&](const Operand &o) {
      return offsetPtr(b, loc, o.ptr,
                       arith::MulIOp::create(b, loc, iv, o.strides[0]),
                       elementType);
    };
    emitGemm(b, loc, gemm, transA, transB, m, n, k, at(*a), lda, at(*bb), ldb,
             at(*c), ldc, beta);
  }
  b.eraseOp(op);
  return success();
}

/// The position of loop dimension `dim` among `map`'s results, if any.
static std::optional<unsigned> resultOf(AffineMap map, unsigned dim) {
  for (auto [i, expr] : llvm::enumerate(map.getResults()))
    if (auto d = dyn_cast<AffineDimExpr>(expr); d && d.getPosition() == dim)
      return i;
  return std::nullopt;
}

/// True when `map`'s last result is loop dimension `dim`.
static bool endsWith(AffineMap map, unsigned dim) {
  auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
  return last && last.getPosition() == dim;
}

/// Rewrites a bufferized linalg.contract with one k dimension into calls of
/// `gemm`: a loop nest over C's other dimensions (in loop order) around one
/// gemm per step. The gemm's n is C's last dimension; its m is A's last
/// dimension when that is an m dimension (A transposed, [k, m]), else the
/// m dimension latest in C; A's last dimension is otherwise k ([m, k]),
/// B's is n ([k, n]) or k (transposed). The looped dimensions may sit
/// anywhere in an operand (a [len, batch, n_head, d_head] tensor read
/// heads-major needs no transposed copy), and an input that lacks one (an
/// m or n dimension of the other input, or a broadcast batch dimension) is
/// the same matrix at every step of it (stride 0). The leading dimensions
/// are the strides of the other matrix dimension, wherever it sits.
/// Errors: several k dimensions, maps that fit no gemm, and a last memref
/// dimension whose stride is not statically 1.
static LogicalResult lowerContractToBlas(linalg::ContractOp op,
                                         func::FuncOp gemm, Type elementType) {
  if (!op.hasPureBufferSemantics())
    return op->emitOpError("txl-linalg-to-blas expects bufferized operands");
  if (failed(checkFitsBlasInt(op)))
    return failure();
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(cast<linalg::LinalgOp>(op.getOperation()));
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.size() != 1)
    return op->emitOpError(
        "a BLAS contraction needs m and n dimensions and one k dimension");
  unsigned k = dims->k[0];
  // The gemm's n: C's last dimension. Its m: A's last dimension when that
  // is an m dimension (A transposed), else the m dimension latest in C.
  auto lastOf = [](AffineMap map) -> std::optional<unsigned> {
    if (auto d = dyn_cast<AffineDimExpr>(map.getResults().back()))
      return d.getPosition();
    return std::nullopt;
  };
  std::optional<unsigned> n = lastOf(maps[2]);
  if (!n || !llvm::is_contained(dims->n, *n))
    return op->emitOpError("unsupported indexing maps for a BLAS product");
  std::optional<unsigned> m = lastOf(maps[0]);
  if (!m || !llvm::is_contained(dims->m, *m)) {
    m = std::nullopt;
    for (unsigned candidate : dims->m)
      if (!m || *resultOf(maps[2], candidate) > *resultOf(maps[2], *m))
        m = candidate;
  }
  if (!(endsWith(maps[0], k) || endsWith(maps[0], *m)) ||
      !(endsWith(maps[1], *n) || endsWith(maps[1], k)))
    return op->emitOpError("unsupported indexing maps for a BLAS product");
  bool transA = endsWith(maps[0], *m), transB = endsWith(maps[1], k);
  // Every other dimension of C is looped over: the batch dimensions and
  // the m (n) dimensions B (A) lacks beside the gemm's, in loop order.
  SmallVector<unsigned> loops;
  for (unsigned d = 0, e = maps[2].getNumDims(); d < e; ++d)
    if (d != *m && d != *n && d != k)
      loops.push_back(d);
  linalg::FillOp zeroFill = findZeroFill(op);

  IRRewriter b(op->getContext());
  b.setInsertionPoint(op);
  Location loc = op.getLoc();
  std::array<Value, 3> memrefs = {op.getDpsInputOperand(0)->get(),
                                  op.getDpsInputOperand(1)->get(),
                                  op.getDpsInitOperand(0)->get()};
  SmallVector<Operand, 3> operands;
  for (Value memref : memrefs) {
    FailureOr<Operand> o = decompose(b, loc, memref, elementType);
    if (failed(o))
      return op->emitOpError("BLAS operands must be ")
             << (elementType.isF32() ? "f32" : "f64")
             << " memrefs with a unit inner stride";
    operands.push_back(*o);
  }
  // Operand i's size and stride along loop dimension `dim` (null: absent).
  auto sizeOf = [&](unsigned i, unsigned dim) -> Value {
    std::optional<unsigned> r = resultOf(maps[i], dim);
    return r ? operands[i].sizes[*r] : Value();
  };
  auto strideOf = [&](unsigned i, unsigned dim) -> Value {
    std::optional<unsigned> r = resultOf(maps[i], dim);
    return r ? operands[i].strides[*r] : Value();
  };
  Value mSize = sizeOf(2, *m), nSize = sizeOf(2, *n), kSize = sizeOf(0, k);
  Value lda = atLeastOne(b, loc, strideOf(0, transA ? k : *m));
  Value ldb = atLeastOne(b, loc, strideOf(1, transB ? *n : k));
  Value ldc = atLeastOne(b, loc, strideOf(2, *m));

  double beta = 1.0;
  if (zeroFill) {
    b.eraseOp(zeroFill);
    beta = 0.0;
  }
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value zero = guardNonEmpty(b, loc, mSize, nSize, kSize, beta);
  std::array<Value, 3> ptrs = {operands[0].ptr, operands[1].ptr,
                               operands[2].ptr};
  for (unsigned batch : loops) {
    auto loop = scf::ForOp::create(b, loc, zero, sizeOf(2, batch), one);
    b.setInsertionPointToStart(loop.getBody());
    for (unsigned i = 0; i < 3; ++i)
      if (Value stride = strideOf(i, batch))
        ptrs[i] = offsetPtr(
            b, loc, ptrs[i],
            arith::MulIOp::create(b, loc, loop.getInductionVar(), stride),
            elementType);
  }
  emitGemm(b, loc, gemm, transA, transB, mSize, nSize, kSize, ptrs[0], lda,
           ptrs[1], ldb, ptrs[2], ldc, beta);
  b.eraseOp(op);
  return success();
}

/// Declares the runtime's `txl_device_sgemm` (txl/device.h; with
/// `operands` bf16 or fp16, `txl_device_sgemm_bf16` or
/// `txl_device_sgemm_f16`, same arguments) in `module` once: transpose
/// flags (i32), m, n, k (i64), alpha (f32), then per operand A, B (and C
/// after beta) the buffer handle and its element offset, row stride and
/// batch stride (i64), then the batch count.
static func::FuncOp getOrDeclareDeviceGemm(OpBuilder &b, ModuleOp module,
                                           Precision operands) {
  std::string name = "txl_device_sgemm";
  if (operands == Precision::Bf16)
    name += "_bf16";
  else if (operands == Precision::Fp16)
    name += "_f16";
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  Type i32 = b.getI32Type(), i64 = b.getI64Type(), f32 = b.getF32Type();
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  SmallVector<Type> inputs = {i32, i32, i64, i64, i64, f32};
  auto matrix = [&] { inputs.append({ptr, i64, i64, i64}); };
  matrix();
  matrix();
  inputs.push_back(f32);
  matrix();
  inputs.push_back(i64);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), name,
                                 b.getFunctionType(inputs, {}));
  fn.setPrivate();
  return fn;
}

/// Rewrites `op` (matmul: batchDims 0, batch_matmul: 1) on device buffers
/// into one `txl_device_sgemm` call. Empty products and k = 0 are the
/// runtime's to skip (txl/rt/device/Gemm.h), so the call is unconditional.
static LogicalResult lowerToDeviceGemm(linalg::LinalgOp op, unsigned batchDims,
                                       func::FuncOp gemm) {
  FailureOr<ProductPlan> plan = planProduct(op, batchDims);
  if (failed(plan))
    return failure();
  IRRewriter b(op->getContext());
  b.setInsertionPoint(op);
  Location loc = op.getLoc();
  auto i64c = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, v, 64);
  };
  auto toI64 = [&](Value index) -> Value {
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  };
  auto f32c = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  };
  Value transA = arith::ConstantIntOp::create(b, loc, plan->transA, 32);
  Value transB = arith::ConstantIntOp::create(b, loc, plan->transB, 32);

  /// A matrix operand: its four call arguments and its sizes.
  struct Matrix {
    SmallVector<Value> args; ///< handle, offset, row stride, batch stride
    SmallVector<Value> sizes;
  };
  auto matrix = [&](Value memref) -> FailureOr<Matrix> {
    auto type = dyn_cast<MemRefType>(memref.getType());
    SmallVector<int64_t> staticStrides;
    int64_t staticOffset;
    if (!type || !type.getElementType().isF32() ||
        failed(type.getStridesAndOffset(staticStrides, staticOffset)) ||
        staticStrides.back() != 1)
      return op->emitOpError(
          "device products need f32 memrefs with a unit inner stride");
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    Value handle = LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), toI64(base));
    auto strides = meta.getStrides();
    Matrix m;
    m.args = {handle, toI64(meta.getOffset()),
              toI64(atLeastOne(b, loc, strides[batchDims])),
              batchDims ? toI64(strides[0]) : i64c(0)};
    m.sizes.assign(meta.getSizes().begin(), meta.getSizes().end());
    return m;
  };
  FailureOr<Matrix> a = matrix(op.getDpsInputOperand(0)->get());
  if (failed(a))
    return failure();
  FailureOr<Matrix> bm = matrix(op.getDpsInputOperand(1)->get());
  if (failed(bm))
    return failure();
  FailureOr<Matrix> c = matrix(op.getDpsInitOperand(0)->get());
  if (failed(c))
    return failure();
  unsigned r = batchDims;
  SmallVector<Value> args = {
      transA, transB, toI64(c->sizes[r]), toI64(c->sizes[r + 1]),
      toI64(plan->transA ? a->sizes[r] : a->sizes[r + 1]), f32c(1.0)};
  args.append(a->args);
  args.append(bm->args);
  args.push_back(f32c(plan->zeroFill ? 0.0 : 1.0));
  args.append(c->args);
  args.push_back(batchDims ? toI64(c->sizes[0]) : i64c(1));
  if (plan->zeroFill)
    b.eraseOp(plan->zeroFill);
  func::CallOp::create(b, loc, gemm, args);
  b.eraseOp(op);
  return success();
}

/// The matmuls (batch dims 0) and batch_matmuls (1) of `module` that
/// `keep` accepts, in walk order.
static SmallVector<std::pair<linalg::LinalgOp, unsigned>>
collectProducts(ModuleOp module, function_ref<bool(linalg::LinalgOp)> keep) {
  SmallVector<std::pair<linalg::LinalgOp, unsigned>> work;
  module.walk([&](linalg::LinalgOp op) {
    // Only products reach `keep` (other linalg ops may have no init).
    if (isa<linalg::MatmulOp>(op) && keep(op))
      work.push_back({op, 0});
    else if (isa<linalg::BatchMatmulOp>(op) && keep(op))
      work.push_back({op, 1});
  });
  return work;
}

/// The linalg.contract ops of `module` outside kernels, in walk order.
static SmallVector<linalg::ContractOp> collectContracts(ModuleOp module) {
  SmallVector<linalg::ContractOp> work;
  module.walk([&](linalg::ContractOp op) {
    if (!op->getParentOfType<gpu::GPUModuleOp>())
      work.push_back(op);
  });
  return work;
}

struct ConvertLinalgToBlasPass
    : public txl::impl::ConvertLinalgToBlasPassBase<ConvertLinalgToBlasPass> {
  using ConvertLinalgToBlasPassBase::ConvertLinalgToBlasPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (device)
      return runOnDevice(module);
    auto hasGemmOutput = [](linalg::LinalgOp op) {
      return hasGemm(
          getElementTypeOrSelf(op.getDpsInitOperand(0)->get().getType()));
    };
    // The CPU has a bf16 product (the runtime's, through oneMKL or
    // emulated), not an fp16 one.
    if (precision == Precision::Fp16) {
      module.emitError("txl-linalg-to-blas: fp16 products need device=true "
                       "(the CPU's products are f32 or bf16)");
      return signalPassFailure();
    }
    const bool bf16 = precision == Precision::Bf16;
    auto work = collectProducts(module, hasGemmOutput);
    SmallVector<linalg::ContractOp> contracts = collectContracts(module);
    llvm::erase_if(contracts,
                   [&](linalg::ContractOp op) { return !hasGemmOutput(op); });
    OpBuilder b(&getContext());
    // Declared on first use: an f32 module gets no cblas_dgemm.
    auto gemmFor = [&](linalg::LinalgOp op) {
      Type elem =
          getElementTypeOrSelf(op.getDpsInitOperand(0)->get().getType());
      return std::make_pair(
          getOrDeclareGemm(b, module, elem, bf16, runtimeSgemm), elem);
    };
    for (auto [op, batchDims] : work) {
      auto [gemm, elem] = gemmFor(op);
      if (failed(lowerToBlas(op, batchDims, gemm, elem)))
        return signalPassFailure();
    }
    for (linalg::ContractOp op : contracts) {
      auto [gemm, elem] = gemmFor(op);
      if (failed(lowerContractToBlas(op, gemm, elem)))
        return signalPassFailure();
    }
  }

  /// device=true: every matmul and batch_matmul (host code only: kernels
  /// have no library to call) becomes a txl_device_sgemm call.
  void runOnDevice(ModuleOp module) {
    auto work = collectProducts(module, [](linalg::LinalgOp op) {
      return !op->getParentOfType<gpu::GPUModuleOp>();
    });
    SmallVector<linalg::ContractOp> contracts = collectContracts(module);
    if (work.empty() && contracts.empty())
      return;
    if (!contracts.empty()) {
      contracts.front()->emitOpError(
          "has no device gemm lowering yet (CPU targets only)");
      return signalPassFailure();
    }
    OpBuilder b(&getContext());
    func::FuncOp gemm = getOrDeclareDeviceGemm(b, module, precision);
    for (auto [op, batchDims] : work)
      if (failed(lowerToDeviceGemm(op, batchDims, gemm)))
        return signalPassFailure();
  }
};

} // namespace
