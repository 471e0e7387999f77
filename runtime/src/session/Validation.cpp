//===- Validation.cpp - The session API's argument checks -----------------===//
//
// What a segment's call must satisfy before anything runs (runtime.h): every
// failure is TXL_INVALID_ARGUMENT with a message naming the value, and
// leaves the session as it was.
//
//===----------------------------------------------------------------------===//

#include "SessionState.h"

#include "txl/rt/session/ModelInfo.h"
#include "txl/rt/support/Status.h"

#include <algorithm>
#include <cstdint>
#include <limits>

using namespace txl::rt;

void txl::rt::requireSession(txl_session_t *session) {
  if (!session)
    fail(TXL_INVALID_ARGUMENT, "null session");
}

void txl::rt::validateSegment(const txl_session &session, const int64_t *data,
                              const int64_t *target, int64_t qlen,
                              int64_t batch, const txl_run_options_t *options,
                              const float *out, bool grads,
                              float *const *outGrads, bool logProbs) {
  const txl_model_info_t &info = *session.info;
  if (!session.loaded)
    fail(TXL_INVALID_ARGUMENT, "no checkpoint loaded");
  if (!data || (!target && !logProbs) || !options || !out)
    fail(TXL_INVALID_ARGUMENT, "txl_session_run_segment: null argument");
  if (logProbs && !session.segmentLogProbs)
    fail(TXL_INVALID_ARGUMENT,
         "this executable has no distribution entry (txl_segment_log_probs):"
         " compile the model again with this txlc");
  if (qlen <= 0)
    fail(TXL_INVALID_ARGUMENT, "segment length must be positive, got {}", qlen);
  // The products' row counts (qlen or klen positions times the batch) go
  // to BLAS as 32-bit ints; klen is at most the memory kept plus qlen.
  constexpr int64_t kBlasMax = std::numeric_limits<int32_t>::max();
  int64_t mostMemory = std::max<int64_t>(options->mem_len, session.mlen);
  if (qlen > kBlasMax / std::max<int64_t>(batch, 1) ||
      mostMemory > kBlasMax / std::max<int64_t>(batch, 1) - qlen)
    fail(TXL_INVALID_ARGUMENT,
         "segment of {} positions over {} of memory at batch {}: its "
         "products would have more than the {} rows BLAS takes",
         qlen, mostMemory, batch, kBlasMax);
  if (options->training) {
    if (options->dropout_column < 0)
      fail(TXL_INVALID_ARGUMENT, "dropout_column must not be negative, got {}",
           options->dropout_column);
    // The masks count elements by global column, up to the call's last.
    checkDropoutElements(info, qlen, qlen + mostMemory,
                         options->dropout_column + batch);
  }
  if (batch != session.batch)
    fail(TXL_INVALID_ARGUMENT,
         "batch size {} differs from the memory's batch size {} (reset the "
         "memory first)",
         batch, session.batch);
  if (options->mem_len < 0)
    fail(TXL_INVALID_ARGUMENT, "mem_len must be >= 0, got {}",
         options->mem_len);
  if (options->same_length && options->mem_len == 0)
    fail(TXL_INVALID_ARGUMENT, "same_length requires mem_len > 0");
  if (options->loss_scale_log2 < 0 || options->loss_scale_log2 > 120)
    fail(TXL_INVALID_ARGUMENT, "loss_scale_log2 must be in [0, 120], got {}",
         options->loss_scale_log2);
  // Objective "alrfou"'s backward: qlen + 1 target rows and the loss
  // weights (runtime.h).
  const bool alrfou = grads && isAlRfouObjective(info);
  if (grads && !session.missingTrainingOnly.empty())
    fail(TXL_INVALID_ARGUMENT,
         "the loaded checkpoint has no '{}' (a training-only tensor, "
         "dropped for inference): a backward run needs it",
         session.missingTrainingOnly);
  const int64_t targetRows = qlen + (alrfou ? 1 : 0);
  if (alrfou && (!options->loss_weights || !options->position_weights))
    fail(TXL_INVALID_ARGUMENT,
         "objective 'alrfou': a backward run needs loss_weights and "
         "position_weights");
  for (int64_t i = 0; i < (logProbs ? qlen : targetRows) * batch; ++i) {
    if ((i < qlen * batch && (data[i] < 0 || data[i] >= info.n_token)) ||
        (!logProbs && (target[i] < 0 || target[i] >= info.n_token)))
      fail(TXL_INVALID_ARGUMENT,
           "token id out of range [0, {}) at position {} of the segment",
           info.n_token, i);
  }
  if (grads) {
    if (!session.segmentGrad)
      fail(TXL_INVALID_ARGUMENT,
           "this executable has no backward segment (txl_segment_grad); "
           "compile the model with --backward (the default)");
    for (int32_t i = 0; outGrads && i < info.n_params; ++i)
      if (info.params[i].trainable && !outGrads[i])
        fail(TXL_INVALID_ARGUMENT, "no gradient buffer for parameter '{}'",
             info.params[i].name);
  }
}
