//===- AlRfou.cpp - The vanilla character transformer's objective -===//

#include "txl/rt/commands/AlRfou.h"

#include "txl/rt/support/Status.h"

#include <algorithm>

namespace txl::rt {

int64_t alRfouLastUpdateOfLayer(int64_t layer, int64_t nLayer,
                                int64_t maxStep) {
  // Exact in integers: layer · max_step stays far below 2^63.
  return layer * maxStep / (2 * nLayer);
}

AlRfouWeights alRfouWeights(const txl_model_info_t &info, int64_t update,
                            int64_t maxStep, int64_t qlen) {
  const int64_t n = info.n_layer;
  AlRfouWeights w;
  w.loss.assign(static_cast<size_t>(2 * n), 0.0f);
  for (int64_t k = 0; k < n; ++k) {
    bool last = k == n - 1;
    bool contributes =
        last || (info.intermediate_layers &&
                 update <= alRfouLastUpdateOfLayer(k + 1, n, maxStep));
    if (!contributes)
      continue;
    ++w.contributingLayers;
    w.loss[static_cast<size_t>(k)] = 1.0f;
    if (info.multiple_targets)
      w.loss[static_cast<size_t>(n + k)] = 0.5f;
  }
  if (info.multiple_positions) {
    w.position.assign(static_cast<size_t>(qlen), 1.0f);
  } else {
    w.position.assign(static_cast<size_t>(qlen), 0.0f);
    w.position.back() = static_cast<float>(qlen);
  }
  return w;
}

void sampleAlRfouWindows(const std::vector<int64_t> &stream, int64_t qlen,
                         int64_t batch, NumpyRandomState &rng, LMSegment &out) {
  const int64_t size = static_cast<int64_t>(stream.size());
  if (size < qlen + 2)
    fail(TXL_DATA_ERROR,
         "the train split has {} tokens, fewer than the {} of one window "
         "(tgt_len + 2)",
         size, qlen + 2);
  out.start = 0;
  out.seqLen = out.dataRows = qlen;
  out.batch = batch;
  out.data.resize(static_cast<size_t>(qlen * batch));
  out.target.resize(static_cast<size_t>((qlen + 1) * batch));
  for (int64_t b = 0; b < batch; ++b) {
    // randint(0, size - qlen - 1): starts 0 .. size - qlen - 2.
    const int64_t s = static_cast<int64_t>(
        rng.interval(static_cast<uint64_t>(size - qlen - 2)));
    for (int64_t r = 0; r < qlen; ++r)
      out.data[static_cast<size_t>(r * batch + b)] = stream[size_t(s + r)];
    for (int64_t r = 0; r <= qlen; ++r)
      out.target[static_cast<size_t>(r * batch + b)] =
          stream[size_t(s + 1 + r)];
  }
}

} // namespace txl::rt
