//===- ShapeChecks.h - Shared checks of the txl verifiers --------*- C++ -*-===//
//
// Private to dialects/txl/IR: the verifiers accept a dynamic dimension
// against anything (the runtime guarantees qlen, mlen, klen and batch) and
// compare the static ones; dropout sites (txl.dropout, the dropatt of the
// fused attention and its backward) share their attribute checks.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_DIALECTS_TXL_IR_SHAPECHECKS_H
#define TXL_DIALECTS_TXL_IR_SHAPECHECKS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <optional>

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

/// The most elements of one tensor whose dropout masks are distinct: the
/// Philox counter's element word (32 bits) counts blocks of 4 elements
/// (TxlOps.td, txl.dropout). The runtime's kMaxDropoutElements is the same.
inline constexpr int64_t kMaxDropoutElements = int64_t{1} << 34;

/// Checks a dropout site: `rate` in [0, 1) (1 would drop everything and
/// scale by infinity) and `stream` in [0, 2^32) (one Philox counter word).
/// `rateName`/`streamName` are the attribute names used in the messages.
/// The output layer's operands (txl.linear_nll and its forms): `input`
/// [qlen, batch, d], `weight` [n_token, d], optional `bias` [n_token] and
/// `target` [qlen, batch].
LogicalResult verifyOutputLayer(Operation *op, Value input, Value weight,
                                Value bias, Value target);

/// The logits the output layer keeps for its adjoint: `logits`
/// [ceil(n_token / block), rows, block] and `lse` [rows], `block` > 0.
LogicalResult verifySavedLogits(Operation *op, Value weight, Value lse,
                                Value logits, int64_t block);

LogicalResult verifyDropoutSite(Operation *op, StringRef rateName, double rate,
                                StringRef streamName, int64_t stream);

/// Checks the optional `dropatt(seed, offset, training, stream_base, column)`
/// group of txl.rel_attention and txl.rel_attention_grad: the five operands
/// and
/// the `dropatt` and `dropatt_stream` attributes come all together or not
/// at all, and form a valid dropout site.
LogicalResult verifyDropattGroup(Operation *op, ValueRange operands,
                                 std::optional<APFloat> rate,
                                 std::optional<uint64_t> stream);

/// The operands of the dropatt group of `op` that are present (all five or
/// none when the op verifies).
template <typename OpT> SmallVector<Value> dropattOperandsOf(OpT op) {
  SmallVector<Value> operands;
  for (Value v :
       {op.getDropattSeed(), op.getDropattOffset(), op.getDropattTraining(),
        op.getDropattStreamBase(), op.getDropattColumn()})
    if (v)
      operands.push_back(v);
  return operands;
}

/// Checks the shapes of an attention score product (txl.attn_score and its
/// backward): `query` [qlen, batch, n_head, d_head], `key` [klen, batch,
/// n_head, d_head] or positional [klen, n_head, d_head], `scores` [qlen,
/// klen, batch, n_head], named `scoresName` in the message.
LogicalResult verifyScoreShapes(Operation *op, Value query, Value key,
                                Value scores, StringRef scoresName);

/// Checks the shapes of an attention-weighted sum (txl.attn_apply and its
/// backward): `probs` [qlen, klen, batch, n_head], `value` [klen, batch,
/// n_head, d_head], `out` [qlen, batch, n_head, d_head], named `outName`.
LogicalResult verifyApplyShapes(Operation *op, Value probs, Value value,
                                Value out, StringRef outName);

/// Checks a fused attention's saved row statistic: `lse` [batch, n_head,
/// qlen] of `query`'s ([qlen, batch, n_head, d_head]) element type.
LogicalResult verifyRowLogSumExp(Operation *op, Value lse, Value query);

} // namespace txl
} // namespace mlir

#endif // TXL_DIALECTS_TXL_IR_SHAPECHECKS_H
