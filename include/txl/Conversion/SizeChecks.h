//===- SizeChecks.h - Run-time checks of dynamic operand sizes --*- C++ -*-===//
//
// A verifier can only take a dynamic size as compatible with the size it
// must equal. The lowerings of the fused attention index one operand by
// another's sizes (the positional product reads pos_key row
// qlen - 1 - i + j for every key j; the kernels read key and value at the
// query's batch column and head), so a dynamic mismatch would read past an
// end. These helpers emit one `cf.assert` per such equality with a dynamic
// side; txl-lower-host-asserts turns a failed one into an error and exit
// status 1.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_CONVERSION_SIZECHECKS_H
#define TXL_CONVERSION_SIZECHECKS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::txl {

/// Dimension `lhsDim` of `lhs` must equal dimension `rhsDim` of `rhs` (both
/// ranked tensors); `what` ends the message.
struct SizeEquality {
  Value lhs;
  int64_t lhsDim;
  Value rhs;
  int64_t rhsDim;
  StringRef what;
};

/// Emits, before `op`, a `cf.assert` "<op name>: <what>" for each equality
/// of `equalities` with a dynamic side (static sides were verified), except
/// a dimension compared with itself.
inline void assertEqualSizes(OpBuilder &b, Location loc, Operation *op,
                             ArrayRef<SizeEquality> equalities) {
  for (const SizeEquality &e : equalities) {
    int64_t l = cast<RankedTensorType>(e.lhs.getType()).getDimSize(e.lhsDim);
    int64_t r = cast<RankedTensorType>(e.rhs.getType()).getDimSize(e.rhsDim);
    if ((!ShapedType::isDynamic(l) && !ShapedType::isDynamic(r)) ||
        (e.lhs == e.rhs && e.lhsDim == e.rhsDim))
      continue;
    Value same =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                              tensor::DimOp::create(b, loc, e.lhs, e.lhsDim),
                              tensor::DimOp::create(b, loc, e.rhs, e.rhsDim));
    cf::AssertOp::create(b, loc, same,
                         (op->getName().getStringRef() + ": " + e.what).str());
  }
}

/// The size equalities of the fused relative attention's operands: query
/// [qlen, batch, n_head, d_head], key and value [klen, batch, n_head,
/// d_head], pos_key [klen, n_head, d_head], r_w_bias and r_r_bias [n_head,
/// d_head] (txl.rel_attention, txl.rel_attention_grad).
inline SmallVector<SizeEquality>
relAttentionSizeEqualities(Value query, Value key, Value value, Value posKey,
                           Value rWBias, Value rRBias) {
  SmallVector<SizeEquality> eqs = {
      {key, 0, posKey, 0, "pos_key must have as many rows as key (klen)"},
      {key, 0, value, 0, "value must have as many rows as key (klen)"}};
  for (int64_t d = 1; d < 4; ++d) {
    eqs.push_back({query, d, key, d,
                   "query and key must agree on batch, n_head and d_head"});
    eqs.push_back({query, d, value, d,
                   "query and value must agree on batch, n_head and d_head"});
  }
  for (int64_t d = 0; d < 2; ++d) {
    eqs.push_back({query, d + 2, posKey, d + 1,
                   "pos_key rows must be [n_head, d_head] of the query"});
    eqs.push_back(
        {query, d + 2, rWBias, d, "r_w_bias must be [n_head, d_head]"});
    eqs.push_back(
        {query, d + 2, rRBias, d, "r_r_bias must be [n_head, d_head]"});
  }
  return eqs;
}

/// Those of txl.rel_attention_grad: the attention's, and d_result (and the
/// saved output) of the query's shape, the saved lse [batch, n_head, qlen].
inline SmallVector<SizeEquality>
relAttentionGradSizeEqualities(Value query, Value key, Value value,
                               Value posKey, Value rWBias, Value rRBias,
                               Value dResult, Value lse, Value output) {
  SmallVector<SizeEquality> eqs =
      relAttentionSizeEqualities(query, key, value, posKey, rWBias, rRBias);
  for (int64_t d = 0; d < 4; ++d) {
    eqs.push_back({query, d, dResult, d, "d_result must have the query shape"});
    if (output)
      eqs.push_back(
          {query, d, output, d, "the saved output must have the query shape"});
  }
  if (lse)
    for (auto [qd, ld] : {std::pair<int64_t, int64_t>{1, 0}, {2, 1}, {0, 2}})
      eqs.push_back({query, qd, lse, ld,
                     "lse must be [batch, n_head, qlen] of the query"});
  return eqs;
}

} // namespace mlir::txl

#endif // TXL_CONVERSION_SIZECHECKS_H
