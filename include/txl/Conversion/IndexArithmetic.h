//===- IndexArithmetic.h - Folded index sizes for the lowerings --*- C++ -*-===//
//
// Sizes and strides that the lowerings compute from other sizes: constants
// when their operands are, arith ops on index values otherwise.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_CONVERSION_INDEXARITHMETIC_H
#define TXL_CONVERSION_INDEXARITHMETIC_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir {
namespace txl {

/// `x * y` on index sizes, an attribute when both are constants.
inline OpFoldResult mulFolded(OpBuilder &b, Location loc, OpFoldResult x,
                              OpFoldResult y) {
  std::optional<int64_t> cx = getConstantIntValue(x),
                         cy = getConstantIntValue(y);
  if (cx && cy)
    return b.getIndexAttr(*cx * *cy);
  return arith::MulIOp::create(b, loc,
                               getValueOrCreateConstantIndexOp(b, loc, x),
                               getValueOrCreateConstantIndexOp(b, loc, y))
      .getResult();
}

/// `x + c` on an index size, an attribute when `x` is a constant.
inline OpFoldResult addFolded(OpBuilder &b, Location loc, OpFoldResult x,
                              int64_t c) {
  if (std::optional<int64_t> cx = getConstantIntValue(x))
    return b.getIndexAttr(*cx + c);
  return arith::AddIOp::create(b, loc,
                               getValueOrCreateConstantIndexOp(b, loc, x),
                               arith::ConstantIndexOp::create(b, loc, c))
      .getResult();
}

} // namespace txl
} // namespace mlir

#endif // TXL_CONVERSION_INDEXARITHMETIC_H
