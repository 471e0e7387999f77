//===- Builders.cpp - Shared helpers for lowering txl to linalg --*- C++ -*-===//

#include "Builders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/TypeUtilities.h"

#include <limits>

using namespace mlir;
using namespace mlir::txl;

SmallVector<OpFoldResult> mlir::txl::getSizes(OpBuilder &b, Location loc,
                                              Value v) {
  return tensor::getMixedSizes(b, loc, v);
}

Value mlir::txl::createEmpty(OpBuilder &b, Location loc,
                             ArrayRef<OpFoldResult> sizes, Type elementType) {
  return tensor::EmptyOp::create(b, loc, sizes, elementType);
}

Value mlir::txl::createFilled(OpBuilder &b, Location loc,
                              ArrayRef<OpFoldResult> sizes, Type elementType,
                              double value) {
  return fillInto(b, loc, createEmpty(b, loc, sizes, elementType), value);
}

Value mlir::txl::fillInto(OpBuilder &b, Location loc, Value dest,
                          double value) {
  Type elementType = cast<RankedTensorType>(dest.getType()).getElementType();
  Value cst =
      arith::ConstantOp::create(b, loc, b.getFloatAttr(elementType, value));
  return linalg::FillOp::create(b, loc, ValueRange{cst}, ValueRange{dest})
      .getResult(0);
}

Value mlir::txl::createTranspose(OpBuilder &b, Location loc, Value input,
                                 ArrayRef<int64_t> perm) {
  SmallVector<OpFoldResult> in = getSizes(b, loc, input);
  SmallVector<OpFoldResult> out;
  for (int64_t p : perm)
    out.push_back(in[p]);
  Value init = createEmpty(
      b, loc, out, cast<RankedTensorType>(input.getType()).getElementType());
  return linalg::TransposeOp::create(b, loc, input, init, perm).getResult()[0];
}

Value mlir::txl::createCollapse(OpBuilder &b, Location loc, Value input,
                                ArrayRef<ReassociationIndices> reassociation) {
  return tensor::CollapseShapeOp::create(b, loc, input, reassociation);
}

Value mlir::txl::createExpand(OpBuilder &b, Location loc, Value input,
                              ArrayRef<ReassociationIndices> reassociation,
                              ArrayRef<OpFoldResult> sizes) {
  SmallVector<int64_t> staticShape;
  SmallVector<Value> dynamic;
  dispatchIndexOpFoldResults(sizes, dynamic, staticShape);
  auto type = RankedTensorType::get(
      staticShape, cast<RankedTensorType>(input.getType()).getElementType());
  return tensor::ExpandShapeOp::create(b, loc, type, input, reassociation,
                                       sizes);
}

FloatAttr mlir::txl::castFloatAttr(OpBuilder &b, FloatAttr attr,
                                   Type elementType) {
  return b.getFloatAttr(elementType, attr.getValueAsDouble());
}

Value mlir::txl::castTo(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  return tensor::CastOp::create(b, loc, type, v);
}

AffineMap mlir::txl::identityMap(MLIRContext *ctx, unsigned rank) {
  return AffineMap::getMultiDimIdentityMap(rank, ctx);
}

AffineMap mlir::txl::dropDimMap(MLIRContext *ctx, unsigned rank,
                                unsigned dim) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d = 0; d < rank; ++d)
    if (d != dim)
      exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

Value mlir::txl::createBatchMatmul(OpBuilder &b, Location loc, Value lhs,
                                   Value rhs, bool transposeRhs, Value acc) {
  Value init = acc;
  if (!init) {
    SmallVector<OpFoldResult> l = getSizes(b, loc, lhs);
    SmallVector<OpFoldResult> r = getSizes(b, loc, rhs);
    init = createFilled(b, loc, {l[0], l[1], transposeRhs ? r[1] : r[2]},
                        getElementTypeOrSelf(lhs), 0.0);
  }
  auto mm = linalg::BatchMatmulOp::create(b, loc, TypeRange{init.getType()},
                                          ValueRange{lhs, rhs},
                                          ValueRange{init});
  if (transposeRhs) {
    MLIRContext *ctx = b.getContext();
    AffineExpr bd, m, n, k;
    bindDims(ctx, bd, m, n, k);
    SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {bd, m, k}, ctx),
                                   AffineMap::get(4, 0, {bd, n, k}, ctx),
                                   AffineMap::get(4, 0, {bd, m, n}, ctx)};
    mm.setIndexingMapsAttr(b.getAffineMapArrayAttr(maps));
  }
  return mm.getResult(0);
}

Value mlir::txl::createMatmulOnto(OpBuilder &b, Location loc, Value lhs,
                                  Value rhs, Value acc, bool transposeLhs,
                                  bool transposeRhs) {
  auto mm = linalg::MatmulOp::create(b, loc, TypeRange{acc.getType()},
                                     ValueRange{lhs, rhs}, ValueRange{acc});
  if (transposeLhs || transposeRhs) {
    MLIRContext *ctx = b.getContext();
    AffineExpr m, n, k;
    bindDims(ctx, m, n, k);
    SmallVector<AffineExpr> a = transposeLhs ? SmallVector<AffineExpr>{k, m}
                                             : SmallVector<AffineExpr>{m, k};
    SmallVector<AffineExpr> r = transposeRhs ? SmallVector<AffineExpr>{n, k}
                                             : SmallVector<AffineExpr>{k, n};
    mm.setIndexingMapsAttr(b.getAffineMapArrayAttr(
        {AffineMap::get(3, 0, a, ctx), AffineMap::get(3, 0, r, ctx),
         AffineMap::get(3, 0, {m, n}, ctx)}));
  }
  return mm.getResult(0);
}

Value mlir::txl::createMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                              bool transposeRhs) {
  SmallVector<OpFoldResult> l = getSizes(b, loc, lhs);
  SmallVector<OpFoldResult> r = getSizes(b, loc, rhs);
  Value init = createFilled(b, loc, {l[0], transposeRhs ? r[0] : r[1]},
                            getElementTypeOrSelf(lhs), 0.0);
  return createMatmulOnto(b, loc, lhs, rhs, init, /*transposeLhs=*/false,
                          transposeRhs);
}

/// Marks the float op computing each value `reduction` yields as
/// reassociable, so that LLVM vectorizes the reduction loop into partial
/// results (8 to 16 running sums instead of one): a different, fixed
/// summation order per executable, never a run-to-run difference.
static Value allowReassociation(linalg::GenericOp reduction) {
  auto yield = cast<linalg::YieldOp>(reduction.getBody()->getTerminator());
  for (Value v : yield.getValues())
    if (auto fm = v.getDefiningOp<arith::ArithFastMathInterface>())
      fm->setAttr(
          fm.getFastMathAttrName(),
          arith::FastMathFlagsAttr::get(reduction.getContext(),
                                        fm.getFastMathFlagsAttr().getValue() |
                                            arith::FastMathFlags::reassoc));
  return reduction.getResult(0);
}

Value mlir::txl::reduceLastDim(
    OpBuilder &b, Location loc, ValueRange inputs, double init,
    function_ref<Value(OpBuilder &, Location, ValueRange)> combine) {
  auto type = cast<RankedTensorType>(inputs[0].getType());
  SmallVector<OpFoldResult> rowSizes = getSizes(b, loc, inputs[0]);
  rowSizes.pop_back();
  return reduceLastDimInto(
      b, loc, inputs, createFilled(b, loc, rowSizes, type.getElementType(), init),
      combine);
}

Value mlir::txl::reduceLastDimInto(
    OpBuilder &b, Location loc, ValueRange inputs, Value acc,
    function_ref<Value(OpBuilder &, Location, ValueRange)> combine) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(inputs[0].getType());
  unsigned rank = type.getRank();
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.back() = utils::IteratorType::reduction;
  AffineMap rowMap = dropDimMap(ctx, rank, rank - 1);
  SmallVector<AffineMap> maps = {identityMap(ctx, rank)};
  for (size_t i = 1; i < inputs.size(); ++i)
    maps.push_back(rowMap);
  maps.push_back(rowMap);
  return allowReassociation(linalg::GenericOp::create(
      b, loc, TypeRange{acc.getType()}, inputs, ValueRange{acc}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(nb, l, ValueRange{combine(nb, l, args)});
      }));
}

/// Elementwise `f(a, b)` of two tensors of the same shape.
static Value zipWith(OpBuilder &b, Location loc, Value lhs, Value rhs,
                     function_ref<Value(OpBuilder &, Location, Value, Value)> f) {
  auto type = cast<RankedTensorType>(lhs.getType());
  AffineMap id = identityMap(b.getContext(), type.getRank());
  SmallVector<utils::IteratorType> iters(type.getRank(),
                                         utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{lhs, rhs},
             ValueRange{createEmpty(b, loc, getSizes(b, loc, lhs),
                                    type.getElementType())},
             {id, id, id}, iters,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(nb, l, ValueRange{f(nb, l, a[0], a[1])});
             })
      .getResult(0);
}

Value mlir::txl::createRunningMax(OpBuilder &b, Location loc, Value x,
                                  Value m) {
  return arith::MaximumFOp::create(
      b, loc, x, m, arith::FastMathFlags::nnan | arith::FastMathFlags::nsz);
}

Value mlir::txl::createLogSumExp(OpBuilder &b, Location loc, ValueRange parts) {
  double negInf = -std::numeric_limits<double>::infinity();
  Value rowMax;
  for (Value part : parts) {
    Value partMax =
        reduceLastDim(b, loc, ValueRange{part}, negInf,
                      [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                        return createRunningMax(nb, l, a[0], a[1]);
                      });
    rowMax = !rowMax ? partMax
                     : zipWith(b, loc, rowMax, partMax,
                               [](OpBuilder &nb, Location l, Value x, Value y) -> Value {
                                 return arith::MaximumFOp::create(nb, l, x, y);
                               });
  }
  Value sum;
  for (Value part : parts) {
    Value partSum = reduceLastDim(
        b, loc, ValueRange{part, rowMax}, 0.0,
        [](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value e = math::ExpOp::create(
              nb, l, arith::SubFOp::create(nb, l, a[0], a[1]));
          return arith::AddFOp::create(nb, l, e, a[2]);
        });
    sum = !sum ? partSum
               : zipWith(b, loc, sum, partSum,
                         [](OpBuilder &nb, Location l, Value x, Value y) -> Value {
                           return arith::AddFOp::create(nb, l, x, y);
                         });
  }
  return zipWith(b, loc, sum, rowMax,
                 [](OpBuilder &nb, Location l, Value s, Value m) -> Value {
                   return arith::AddFOp::create(
                       nb, l, math::LogOp::create(nb, l, s), m);
                 });
}

Value mlir::txl::createMaskedSoftmax(OpBuilder &b, Location loc, Value scores,
                                     ScoreLayout layout, Value memLen,
                                     Value sameLength, double scale,
                                     Value *logSumExp) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(scores.getType());
  Type elementType = type.getElementType();
  const unsigned rank = 4;
  SmallVector<OpFoldResult> sizes = getSizes(b, loc, scores);

  // s of the official same_length mask: qlen - (klen - mem_len) when
  // klen > mem_len, else qlen.
  Value qlen = tensor::DimOp::create(b, loc, scores, layout.queryDim);
  Value klen = tensor::DimOp::create(b, loc, scores, layout.keyDim);
  Value mlen = arith::SubIOp::create(b, loc, klen, qlen);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value maskLen = arith::SubIOp::create(b, loc, klen, memLen);
  Value positive =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, maskLen, zero);
  Value shiftLen = arith::SelectOp::create(
      b, loc, positive, arith::SubIOp::create(b, loc, qlen, maskLen), qlen);

  SmallVector<utils::IteratorType> parallel(rank, utils::IteratorType::parallel);
  SmallVector<utils::IteratorType> reduce = parallel;
  reduce[layout.keyDim] = utils::IteratorType::reduction;
  AffineMap id = identityMap(ctx, rank);
  AffineMap rowMap = dropDimMap(ctx, rank, layout.keyDim);
  SmallVector<OpFoldResult> rowSizes = sizes;
  rowSizes.erase(rowSizes.begin() + layout.keyDim);
  double negInf = -std::numeric_limits<double>::infinity();

  // x = visible(i, j) ? scale * score : -inf
  Value masked = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{scores},
      ValueRange{createEmpty(b, loc, sizes, elementType)}, {id, id}, parallel,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value i = linalg::IndexOp::create(nb, l, layout.queryDim);
        Value j = linalg::IndexOp::create(nb, l, layout.keyDim);
        Value lastVisible = arith::AddIOp::create(nb, l, i, mlen);
        Value causal = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sle,
                                             j, lastVisible);
        Value jPlusS = arith::AddIOp::create(nb, l, j, shiftLen);
        Value recent = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sgt,
                                             jPlusS, i);
        Value trueV = arith::ConstantIntOp::create(nb, l, 1, 1);
        Value keepOld = arith::SelectOp::create(nb, l, sameLength, recent, trueV);
        Value visible = arith::AndIOp::create(nb, l, causal, keepOld);
        Value scaled = arith::MulFOp::create(
            nb, l, args[0],
            arith::ConstantOp::create(nb, l,
                                      nb.getFloatAttr(elementType, scale)));
        Value ninf = arith::ConstantOp::create(
            nb, l, nb.getFloatAttr(elementType, negInf));
        linalg::YieldOp::create(
            nb, l, ValueRange{arith::SelectOp::create(nb, l, visible, scaled, ninf)});
      })
                     .getResult(0);

  Value maxInit = createFilled(b, loc, rowSizes, elementType, negInf);
  Value rowMax = allowReassociation(linalg::GenericOp::create(
      b, loc, TypeRange{maxInit.getType()}, ValueRange{masked},
      ValueRange{maxInit}, {id, rowMap}, reduce,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(
            nb, l,
            ValueRange{arith::MaximumFOp::create(nb, l, args[0], args[1])});
      }));

  Value exps = linalg::GenericOp::create(
                   b, loc, TypeRange{type}, ValueRange{masked, rowMax},
                   ValueRange{createEmpty(b, loc, sizes, elementType)},
                   {id, rowMap, id}, parallel,
                   [&](OpBuilder &nb, Location l, ValueRange args) {
                     Value d = arith::SubFOp::create(nb, l, args[0], args[1]);
                     linalg::YieldOp::create(
                         nb, l, ValueRange{math::ExpOp::create(nb, l, d)});
                   })
                   .getResult(0);

  Value rowSum = allowReassociation(linalg::GenericOp::create(
      b, loc, TypeRange{rowMax.getType()}, ValueRange{exps},
      ValueRange{createFilled(b, loc, rowSizes, elementType, 0.0)},
      {id, rowMap}, reduce, [&](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(
            nb, l, ValueRange{arith::AddFOp::create(nb, l, args[0], args[1])});
      }));

  if (logSumExp) {
    AffineMap rowId = identityMap(ctx, rank - 1);
    *logSumExp =
        linalg::GenericOp::create(
            b, loc, TypeRange{rowMax.getType()}, ValueRange{rowMax, rowSum},
            ValueRange{createEmpty(b, loc, rowSizes, elementType)},
            {rowId, rowId, rowId},
            SmallVector<utils::IteratorType>(rank - 1,
                                             utils::IteratorType::parallel),
            [&](OpBuilder &nb, Location l, ValueRange args) {
              Value log = math::LogOp::create(nb, l, args[1]);
              linalg::YieldOp::create(
                  nb, l,
                  ValueRange{arith::AddFOp::create(nb, l, args[0], log)});
            })
            .getResult(0);
  }

  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{exps, rowSum},
             ValueRange{createEmpty(b, loc, sizes, elementType)},
             {id, rowMap, id}, parallel,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(
                   nb, l, ValueRange{arith::DivFOp::create(nb, l, args[0], args[1])});
             })
      .getResult(0);
}

Value mlir::txl::createPointwise(
    OpBuilder &b, Location loc, Value like, ValueRange inputs,
    ArrayRef<AffineMap> inputMaps,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body, Value dest) {
  auto type = cast<RankedTensorType>(like.getType());
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(identityMap(ctx, type.getRank()));
  SmallVector<utils::IteratorType> iters(type.getRank(),
                                         utils::IteratorType::parallel);
  Value init =
      dest ? dest
           : createEmpty(b, loc, getSizes(b, loc, like), type.getElementType());
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
             iters,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, ValueRange{body(nb, l, args)});
             })
      .getResult(0);
}

Value mlir::txl::createSumLeading(OpBuilder &b, Location loc, Value input,
                                  unsigned resultRank, Value dest) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(input.getType());
  unsigned rank = type.getRank();
  unsigned lead = rank - resultRank;
  SmallVector<OpFoldResult> sizes = getSizes(b, loc, input);
  SmallVector<OpFoldResult> outSizes(sizes.begin() + lead, sizes.end());
  Value init = dest ? fillInto(b, loc, dest, 0.0)
                    : createFilled(b, loc, outSizes, type.getElementType(), 0.0);
  SmallVector<AffineExpr> trailing;
  for (unsigned d = lead; d < rank; ++d)
    trailing.push_back(getAffineDimExpr(d, ctx));
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  for (unsigned d = 0; d < lead; ++d)
    iters[d] = utils::IteratorType::reduction;
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{input},
             ValueRange{init},
             {identityMap(ctx, rank), AffineMap::get(rank, 0, trailing, ctx)},
             iters,
             [](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(
                   nb, l, ValueRange{arith::AddFOp::create(nb, l, a[0], a[1])});
             })
      .getResult(0);
}

Value mlir::txl::createMatmulTransposedLhs(OpBuilder &b, Location loc,
                                           Value lhs, Value rhs, Value dest) {
  MLIRContext *ctx = b.getContext();
  SmallVector<OpFoldResult> l = getSizes(b, loc, lhs);
  SmallVector<OpFoldResult> r = getSizes(b, loc, rhs);
  Type elementType = cast<RankedTensorType>(lhs.getType()).getElementType();
  assert((!dest || l.size() == 2) && "a destination only for the 2-D form");
  if (l.size() == 2)
    return createMatmulOnto(
        b, loc, lhs, rhs,
        dest ? fillInto(b, loc, dest, 0.0)
             : createFilled(b, loc, {l[1], r[1]}, elementType, 0.0),
        /*transposeLhs=*/true, /*transposeRhs=*/false);
  Value init = createFilled(b, loc, {l[0], l[2], r[2]}, elementType, 0.0);
  AffineExpr bd, m, n, k;
  bindDims(ctx, bd, m, n, k);
  auto mm = linalg::BatchMatmulOp::create(b, loc, TypeRange{init.getType()},
                                          ValueRange{lhs, rhs},
                                          ValueRange{init});
  mm.setIndexingMapsAttr(b.getAffineMapArrayAttr(
      {AffineMap::get(4, 0, {bd, k, m}, ctx),
       AffineMap::get(4, 0, {bd, k, n}, ctx),
       AffineMap::get(4, 0, {bd, m, n}, ctx)}));
  return mm.getResult(0);
}

void mlir::txl::updateForallElement(
    OpBuilder &b, Location loc, scf::ForallOp forall, ArrayRef<OpFoldResult> at,
    function_ref<Value(OpBuilder &, Value)> update) {
  Value out = forall.getRegionIterArgs()[0];
  int64_t rank = cast<RankedTensorType>(out.getType()).getRank();
  SmallVector<OpFoldResult> ones(rank, b.getIndexAttr(1));
  Value slot = tensor::ExtractSliceOp::create(b, loc, out, at, ones, ones);
  SmallVector<Value> origin(rank, arith::ConstantIndexOp::create(b, loc, 0));
  Value old = tensor::ExtractOp::create(b, loc, slot, origin);
  Value updated =
      tensor::InsertOp::create(b, loc, update(b, old), slot, origin);
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, updated, out, at, ones, ones);
}

Value mlir::txl::createScatterAddRows(
    OpBuilder &b, Location loc, Value dest, Value rows,
    function_ref<Value(OpBuilder &, Location, Value)> rowOf) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value count = tensor::DimOp::create(b, loc, rows, 0);
  Value width = tensor::DimOp::create(b, loc, rows, 1);
  auto outer = scf::ForOp::create(
      b, loc, zero, count, one, ValueRange{dest},
      [&](OpBuilder &lb, Location l, Value m, ValueRange acc) {
        Value row = rowOf(lb, l, m);
        auto inner = scf::ForOp::create(
            lb, l, zero, width, one, acc,
            [&](OpBuilder &ib, Location il, Value k, ValueRange t) {
              Value old =
                  tensor::ExtractOp::create(ib, il, t[0], ValueRange{row, k});
              Value g = tensor::ExtractOp::create(ib, il, rows, ValueRange{m, k});
              Value next = tensor::InsertOp::create(
                  ib, il, arith::AddFOp::create(ib, il, old, g), t[0],
                  ValueRange{row, k});
              scf::YieldOp::create(ib, il, ValueRange{next});
            });
        scf::YieldOp::create(lb, l, inner.getResults());
      });
  return outer.getResult(0);
}

Value mlir::txl::headsFirst(OpBuilder &b, Location loc, Value x, Value bias,
                            bool headsOutermost) {
  // Result dimension i is x's dimension perm[i].
  SmallVector<int64_t> perm = headsOutermost ? SmallVector<int64_t>{2, 1, 0, 3}
                                             : SmallVector<int64_t>{1, 2, 0, 3};
  if (!bias)
    return createCollapse(b, loc, createTranspose(b, loc, x, perm),
                          {{0, 1}, {2}, {3}});
  MLIRContext *ctx = b.getContext();
  SmallVector<OpFoldResult> s = getSizes(b, loc, x);
  Value init =
      createEmpty(b, loc, {s[perm[0]], s[perm[1]], s[perm[2]], s[perm[3]]},
                  cast<RankedTensorType>(x.getType()).getElementType());
  // x's dimension perm[i] is read at loop (= result) dimension i.
  SmallVector<AffineExpr> xIndex(4);
  for (unsigned i = 0; i < 4; ++i)
    xIndex[perm[i]] = getAffineDimExpr(i, ctx);
  Value sum =
      linalg::GenericOp::create(
          b, loc, TypeRange{init.getType()}, ValueRange{x, bias},
          ValueRange{init},
          {AffineMap::get(4, 0, xIndex, ctx),
           AffineMap::get(4, 0, {xIndex[2], xIndex[3]}, ctx),
           identityMap(ctx, 4)},
          SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
          [](OpBuilder &nb, Location l, ValueRange a) {
            linalg::YieldOp::create(
                nb, l, ValueRange{arith::AddFOp::create(nb, l, a[0], a[1])});
          })
          .getResult(0);
  return createCollapse(b, loc, sum, {{0, 1}, {2}, {3}});
}

Value mlir::txl::rowsFirst(OpBuilder &b, Location loc, Value x3,
                           OpFoldResult batch, OpFoldResult nHead) {
  SmallVector<OpFoldResult> s = getSizes(b, loc, x3);
  Value x4 = createExpand(b, loc, x3, {{0, 1}, {2}, {3}},
                          {batch, nHead, s[1], s[2]});
  return createTranspose(b, loc, x4, {2, 0, 1, 3});
}

Value mlir::txl::scoresHeadsFirst(OpBuilder &b, Location loc, Value scores) {
  return createCollapse(b, loc, createTranspose(b, loc, scores, {2, 3, 0, 1}),
                        {{0, 1}, {2}, {3}});
}

Value mlir::txl::scoresRowsFirst(OpBuilder &b, Location loc, Value s3,
                                 OpFoldResult batch, OpFoldResult nHead,
                                 OpFoldResult qlen, OpFoldResult klen) {
  Value s4 = createExpand(b, loc, s3, {{0, 1}, {2}, {3}},
                          {batch, nHead, qlen, klen});
  return createTranspose(b, loc, s4, {2, 3, 0, 1});
}

Value mlir::txl::createSoftmaxGrad(OpBuilder &b, Location loc, Value probs,
                                   Value dProbs, double scale) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(probs.getType());
  Type et = type.getElementType();
  unsigned rank = type.getRank();
  AffineMap id = identityMap(ctx, rank);
  Value pdP = createPointwise(
      b, loc, probs, ValueRange{probs, dProbs}, {id, id},
      [](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return arith::MulFOp::create(nb, l, a[0], a[1]);
      });
  Value rowDot = reduceLastDim(
      b, loc, ValueRange{pdP}, 0.0,
      [](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return arith::AddFOp::create(nb, l, a[0], a[1]);
      });
  return createPointwise(
      b, loc, probs, ValueRange{probs, dProbs, rowDot},
      {id, id, dropDimMap(ctx, rank, rank - 1)},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value centered = arith::SubFOp::create(nb, l, a[1], a[2]);
        Value s = arith::ConstantOp::create(nb, l, nb.getFloatAttr(et, scale));
        return arith::MulFOp::create(
            nb, l, arith::MulFOp::create(nb, l, a[0], centered), s);
      });
}
