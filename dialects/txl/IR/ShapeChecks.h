//===- ShapeChecks.h - Shape helpers of the txl verifiers --------*- C++ -*-===//
//
// Private to dialects/txl/IR: the verifiers accept a dynamic dimension
// against anything (the runtime guarantees qlen, mlen, klen and batch) and
// compare the static ones.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_DIALECTS_TXL_IR_SHAPECHECKS_H
#define TXL_DIALECTS_TXL_IR_SHAPECHECKS_H

#include "mlir/IR/BuiltinTypes.h"

namespace mlir {
namespace txl {

/// True when two dimensions may be equal at run time.
inline bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// The shape of a ranked tensor value.
inline ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

} // namespace txl
} // namespace mlir

#endif // TXL_DIALECTS_TXL_IR_SHAPECHECKS_H
