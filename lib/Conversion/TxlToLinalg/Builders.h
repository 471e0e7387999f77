//===- Builders.h - Shared helpers for lowering txl to linalg ----*- C++ -*-===//
//
// Small builders used by every op family: empty/filled tensors with the
// dynamic sizes of another tensor, transposes, and the masked softmax shared
// by txl.masked_softmax and txl.rel_attention.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_LIB_CONVERSION_TXLTOLINALG_BUILDERS_H
#define TXL_LIB_CONVERSION_TXLTOLINALG_BUILDERS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include <array>

namespace mlir {
namespace txl {

/// The size of every dimension of `v` (constants for static ones).
SmallVector<OpFoldResult> getSizes(OpBuilder &b, Location loc, Value v);

/// `tensor.empty` of the given sizes and element type.
Value createEmpty(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                  Type elementType);

/// `linalg.fill` of `value` into a new tensor of the given sizes.
Value createFilled(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                   Type elementType, double value);

/// `linalg.fill` of `value` into `dest` (e.g. a slice of a loop-carried
/// tensor, so the producer that follows writes there in place).
Value fillInto(OpBuilder &b, Location loc, Value dest, double value);

/// `linalg.transpose` with result dimension d = input dimension perm[d].
Value createTranspose(OpBuilder &b, Location loc, Value input,
                      ArrayRef<int64_t> perm);

/// Collapses `input` with `reassociation`, the result type inferred.
Value createCollapse(OpBuilder &b, Location loc, Value input,
                     ArrayRef<ReassociationIndices> reassociation);

/// Expands `input` to `sizes` with `reassociation`.
Value createExpand(OpBuilder &b, Location loc, Value input,
                   ArrayRef<ReassociationIndices> reassociation,
                   ArrayRef<OpFoldResult> sizes);

/// Batched product `lhs [n, m, k] x rhs [n, k, p]` (or `rhs [n, p, k]` when
/// `transposeRhs`) as `linalg.batch_matmul`, in the element type of `lhs`,
/// accumulated onto `acc` [n, m, p] when given (BLAS beta = 1), else into a
/// zero-filled tensor.
Value createBatchMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                        bool transposeRhs, Value acc = {});

/// `acc + lhs · rhs` as one 2-D linalg.matmul accumulating onto `acc`
/// [m, n] (BLAS beta = 1), lhs read as [k, m] when `transposeLhs` and rhs as
/// [n, k] when `transposeRhs` (BLAS reads them transposed, no copy).
Value createMatmulOnto(OpBuilder &b, Location loc, Value lhs, Value rhs,
                       Value acc, bool transposeLhs, bool transposeRhs);

/// Product `lhs [m, k] x rhs [k, n]` (or `rhs [n, k]` when `transposeRhs`)
/// into a zero-filled [m, n] as `linalg.matmul`, in the element type of
/// `lhs`.
Value createMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                   bool transposeRhs);

/// `x [rows, in] · weightᵀ (+ bias)` for weight [out, in] (nn.Linear) as
/// one linalg.matmul accumulating onto the broadcast bias (or zeros), into
/// `dest` [rows, out] when given (e.g. a slice of a larger tensor, so that
/// bufferization writes the product in place), else a new tensor; defined
/// in Contraction.cpp.
Value createLinear2d(OpBuilder &b, Location loc, Value x, Value weight,
                     Value bias, Value dest = {});

/// `lhsᵀ rhs` for lhs [k, m] and rhs [k, n] (or, batched, [b, k, m] and
/// [b, k, n]) into a zero-filled [m, n] ([b, m, n]): a new tensor, or `dest`
/// when given (2-D only); BLAS reads lhs transposed, no copy is made.
Value createMatmulTransposedLhs(OpBuilder &b, Location loc, Value lhs,
                                Value rhs, Value dest = {});

/// Reduces the last dimension of `inputs[0]` with `combine(args)` starting
/// from `init`; `args` are the elements of `inputs` (those beyond the first
/// are row-shaped, i.e. without the last dimension) then the accumulator.
/// The combining op is marked `reassoc`, so the loop vectorizes into partial
/// results (a fixed order per executable).
Value reduceLastDim(OpBuilder &b, Location loc, ValueRange inputs, double init,
                    function_ref<Value(OpBuilder &, Location, ValueRange)> combine);

/// reduceLastDim onto an existing row-shaped accumulator `acc` (e.g. a
/// running sum carried across column blocks) instead of a constant.
Value reduceLastDimInto(
    OpBuilder &b, Location loc, ValueRange inputs, Value acc,
    function_ref<Value(OpBuilder &, Location, ValueRange)> combine);

/// Row-wise `log(sum(exp(x)))` over the last dimension of the concatenation
/// of `parts` (same leading sizes), max-shifted so nothing overflows; the
/// parts are never concatenated.
Value createLogSumExp(OpBuilder &b, Location loc, ValueRange parts);

/// The running maximum of a log-sum-exp: `arith.maximumf` with `nnan` and
/// `nsz`, one `maxps` per vector on x86 where the NaN-propagating form
/// takes five instructions (a fifth of a ptb_small eval). Only the shift
/// assumes no NaN: every element, a NaN too, still reaches the sum of
/// exp(x - max).
Value createRunningMax(OpBuilder &b, Location loc, Value x, Value m);

/// Row-wise log-sum-exp [R] of the logits h2 · wᵀ + bias (h2 [R, in], w
/// [V, in], bias [V] or null) swept over blocks of output columns with an
/// online log-sum-exp, so that the [R, V] logits never exist whole
/// (Normalization.cpp; the output layer's txl.linear_nll lowering).
Value createBlockedLogSumExp(OpBuilder &b, Location loc, Value h2, Value w,
                             Value bias);

/// The gradients {dh [R, in], dW [V, in], db [V]} of Σ_rows g · (lse −
/// x[target]) for the logits x = h2 · wᵀ + bias (bias [V] or null), swept
/// over blocks of output columns that are recomputed, so that neither the
/// [R, V] logits nor their gradient exist whole (Normalization.cpp). lse
/// [R] is the log-sum-exp of each row's full softmax (it may include
/// columns outside w, as the adaptive head's cluster columns); a row whose
/// target1 [R] (i64) is outside [0, V) gets no one-hot.
std::array<Value, 3> createBlockedSoftmaxGrad(OpBuilder &b, Location loc,
                                              Value h2, Value w, Value bias,
                                              Value lse, Value g,
                                              Value target1);

/// Row-wise logit [R] of one column per row: h2[n] · w[cols[n]] +
/// bias[cols[n]] (h2 [R, in], w [V, in], bias [V] or null, cols an index
/// tensor [R] of valid columns): a gathered dot product, no logit matrix.
Value createGatheredLogit(OpBuilder &b, Location loc, Value h2, Value w,
                          Value bias, Value cols);

/// Which dimensions of a 4-D score tensor hold the query position i and the
/// key position j (the other two are batch and head).
struct ScoreLayout {
  int64_t queryDim;
  int64_t keyDim;
};

/// `softmax_j(scale * scores)` with the Transformer-XL decoder mask (key j
/// visible to query i iff j <= i + mlen, and with same_length also iff
/// j > i - s) over a 4-D tensor whose layout is given by `layout`.
/// `mlen = klen - qlen`; `s` follows the official `dec_attn_mask`. `scale`
/// becomes a constant of the scores' element type. With `logSumExp`, also
/// sets it to each row's `max + log(sum exp(x - max))` of the scaled, masked
/// scores (the scores' shape without the key dimension).
Value createMaskedSoftmax(OpBuilder &b, Location loc, Value scores,
                          ScoreLayout layout, Value memLen, Value sameLength,
                          double scale, Value *logSumExp = nullptr);

/// `attr` (an f32 hyper-parameter such as a scale or an epsilon) as an
/// attribute of the float type `elementType`, widened exactly for f64.
FloatAttr castFloatAttr(OpBuilder &b, FloatAttr attr, Type elementType);

/// A parallel linalg.generic shaped like `like` over `inputs` (each read
/// through its map in `inputMaps`) whose body yields `body(args)`, written
/// into `dest` when given (a tensor shaped like `like`, e.g. a view of a
/// larger buffer), else into a new tensor.
Value createPointwise(
    OpBuilder &b, Location loc, Value like, ValueRange inputs,
    ArrayRef<AffineMap> inputMaps,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body,
    Value dest = {});

/// Sums `input` over its leading dimensions down to `resultRank` trailing
/// ones (a bias gradient), into a zero-filled tensor: a new one, or `dest`
/// when given.
Value createSumLeading(OpBuilder &b, Location loc, Value input,
                       unsigned resultRank, Value dest = {});

/// Inside `forall`'s body at `b`: element `at` of its one shared output
/// becomes `update(old element)`, through a one-element slice that
/// bufferizes to a load and a store in the output's buffer (no copy, no
/// allocation in a GPU kernel). Iterations must update distinct elements.
/// Leaves `b` in the forall's terminator.
void updateForallElement(OpBuilder &b, Location loc, scf::ForallOp forall,
                         ArrayRef<OpFoldResult> at,
                         function_ref<Value(OpBuilder &, Value)> update);

/// dest[rowOf(m), k] += rows[m, k] for every row m of `rows` [M, d], in
/// order (repeated rows accumulate deterministically): scf.for loops over
/// tensors, updated in place after bufferization.
Value createScatterAddRows(
    OpBuilder &b, Location loc, Value dest, Value rows,
    function_ref<Value(OpBuilder &, Location, Value)> rowOf);

/// The operands and attributes of one dropout site (txl.dropout, or the
/// dropatt of the fused attention): i64 `seed` and `offset`, i1 `training`,
/// i64 `streamBase` (null for 0), the static rate and stream id, and, when
/// the elements are counted by batch column, the i64 `column` of the first
/// one and the dimension `batchDim` of `x` that holds the columns (null and
/// -1 otherwise).
struct DropoutSite {
  Value seed, offset, training, streamBase;
  double rate;
  int64_t stream;
  Value column = nullptr;
  int64_t batchDim = -1;
};

/// `x` through the inverted dropout of `site` (txl.dropout's definition,
/// defined in Dropout.cpp): `scf.if training` around one parallel
/// linalg.generic that computes each element's Philox4x32-10 word from its
/// counter, else `x` unchanged. The counters number the elements row-major
/// in the layout whose dimensions, outermost first, are the dimensions
/// `logicalDims` of `x`, the batch dimension's index counted from
/// `site.column` when the site has one. With a column, `logicalDims` must
/// start with `site.batchDim`: txl.dropout passes it followed by the others
/// in order; the fused attention's heads-major [n_head, batch, qlen, klen]
/// probabilities pass {1, 2, 3, 0}, the order of the decomposed form's
/// [qlen, klen, batch, n_head] scores with batch_dim 2.
Value createDropout(OpBuilder &b, Location loc, Value x,
                    const DropoutSite &site, ArrayRef<int64_t> logicalDims);

/// `v` itself when it already has `type`, else a `tensor.cast` to it (the
/// lowerings compute shapes that may be more or less static than the op's).
Value castTo(OpBuilder &b, Location loc, Value v, Type type);

/// [len, b, n, d] (+ bias[n, d] when given) -> [b·n, len, d], contiguous:
/// the per-(batch, head) operand layout of the batched products. With
/// `headsOutermost`, [n·b, len, d] instead (the fused attention's layout, in
/// which one head's rows over all batch columns are contiguous).
Value headsFirst(OpBuilder &b, Location loc, Value x, Value bias = {},
                 bool headsOutermost = false);

/// The inverse of headsFirst: [b·n, len, d] -> [len, b, n, d] for the given
/// batch and n_head.
Value rowsFirst(OpBuilder &b, Location loc, Value x3, OpFoldResult batch,
                OpFoldResult nHead);

/// Scores [qlen, klen, b, n] -> [b·n, qlen, klen], contiguous: the layout of
/// the batched products over heads-first operands.
Value scoresHeadsFirst(OpBuilder &b, Location loc, Value scores);

/// The inverse of scoresHeadsFirst for the given sizes: [b·n, qlen, klen] ->
/// [qlen, klen, b, n].
Value scoresRowsFirst(OpBuilder &b, Location loc, Value s3, OpFoldResult batch,
                      OpFoldResult nHead, OpFoldResult qlen,
                      OpFoldResult klen);

/// The softmax backward over the last dimension of `probs` (the forward
/// result) and `dProbs`: `scale * probs ⊙ (dProbs - rowsum(probs ⊙
/// dProbs))`. Masked entries (probability 0) get 0.
Value createSoftmaxGrad(OpBuilder &b, Location loc, Value probs, Value dProbs,
                        double scale);

/// Identity affine map of `rank` dims, and the map dropping dimension `dim`.
AffineMap identityMap(MLIRContext *ctx, unsigned rank);
AffineMap dropDimMap(MLIRContext *ctx, unsigned rank, unsigned dim);

} // namespace txl
} // namespace mlir

#endif // TXL_LIB_CONVERSION_TXLTOLINALG_BUILDERS_H
