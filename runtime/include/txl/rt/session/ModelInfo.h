//===- ModelInfo.h - What a compiled model's info implies -------*- C++ -*-===//
//
// Facts of a `txl_model_info_t` that the session and the commands both
// need: a parameter's size, the training objective and the limit dropout's
// masks put on a segment's tensors. Below the commands, so that the session
// depends on nothing above it.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_SESSION_MODELINFO_H
#define TXL_RT_SESSION_MODELINFO_H

#include "txl/runtime.h"

#include <cstdint>

namespace txl::rt {

/// The most elements of one tensor whose dropout masks are distinct: the
/// Philox counter's element word (32 bits) counts blocks of 4 elements
/// (txl.dropout in TxlOps.td; the dialect's verifier checks static shapes
/// against the same bound).
inline constexpr int64_t kMaxDropoutElements = int64_t{1} << 34;

/// The elements of parameter `p`: the product of its shape (1 at rank 0).
int64_t parameterElements(const txl_param_info_t &p);

/// Whether the model trains with Al-Rfou et al. (2018)'s objective
/// (txl_model_info.objective "alrfou"): its backward segment takes the loss
/// weights and a target of qlen + 1 rows (runtime.h).
bool isAlRfouObjective(const txl_model_info_t &info);

/// Checks a train-mode segment of `qlen` positions over at most `klen` keys
/// at batch `batch`: every tensor that dropout masks (the hidden states
/// [qlen, batch, max(d_model, d_inner, d_embed)] when info.dropout > 0) and
/// that dropatt masks (the probabilities [qlen, klen, batch, n_head] when
/// info.dropatt > 0) must have at most kMaxDropoutElements elements, or the
/// masks would repeat. `batch` counts the columns the masks number: a call
/// on global columns [c0, c0 + n) passes c0 + n. Errors
/// (TXL_INVALID_ARGUMENT) name the tensor, its elements and the limit.
/// Sizes are non-negative (products are exact).
void checkDropoutElements(const txl_model_info_t &info, int64_t qlen,
                          int64_t klen, int64_t batch);

} // namespace txl::rt

#endif // TXL_RT_SESSION_MODELINFO_H
