//===- AlRfou.h - The vanilla character transformer's objective -*- C++ -*-===//
//
// Objective "alrfou" of `train` (Al-Rfou et al. 2018, "Character-Level
// Language Modeling with Deeper Self-Attention", §2.1-2.3), defined exactly
// in docs/alrfou.md: windows of tgt_len characters at random positions, and
// the loss of every update as the weighted sum of every layer's heads.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_ALRFOU_H
#define TXL_RT_ALRFOU_H

#include "txl/rt/data/LMIterator.h"
#include "txl/runtime.h"

#include <cstdint>
#include <vector>

namespace txl::rt {

/// The last update (counting from 1) to which layer `layer` (1-based,
/// layer < n_layer) contributes its intermediate-layer losses:
/// ⌊layer · max_step / (2 · n_layer)⌋ (§2.2: the lower layers are dropped
/// first, each at its own point of the first half of training). 0 means
/// never.
int64_t alRfouLastUpdateOfLayer(int64_t layer, int64_t nLayer, int64_t maxStep);

/// The weights of update `update` (from 1) of a run of `maxStep` updates
/// over windows of `qlen` positions, as txl_run_options_t takes them.
struct AlRfouWeights {
  /// [2·n_layer]: k < n_layer, layer k + 1's next-character head: 1 for the
  /// last layer, and for an intermediate layer while it contributes (and
  /// intermediate_layers is on); n_layer + k, its two-ahead head: 0.5 while
  /// the layer contributes and multiple_targets is on, else 0.
  std::vector<float> loss;
  /// [qlen]: 1 everywhere with multiple_positions; else qlen at the last
  /// position and 0 elsewhere (the mean over positions is then the last
  /// position's NLL).
  std::vector<float> position;
  /// Layers whose losses count (the last always does).
  int64_t contributingLayers = 0;
};
AlRfouWeights alRfouWeights(const txl_model_info_t &info, int64_t update,
                            int64_t maxStep, int64_t qlen);

/// One batch of windows (§2: "batch 16 windows chosen at random
/// positions"): for column b in order, a start s_b drawn as numpy's
/// `rng.randint(0, len(stream) - qlen - 1)`; data rows x[s_b .. s_b + qlen)
/// and target rows x[s_b + 1 .. s_b + qlen + 2) (qlen + 1 rows: the next
/// characters and, last, the one after them). Writes `out.data` [qlen,
/// batch], `out.target` [qlen + 1, batch], `out.seqLen` = `out.dataRows`
/// = qlen. Errors: TXL_DATA_ERROR when the stream has fewer than qlen + 2
/// tokens.
void sampleAlRfouWindows(const std::vector<int64_t> &stream, int64_t qlen,
                         int64_t batch, NumpyRandomState &rng, LMSegment &out);

} // namespace txl::rt

#endif // TXL_RT_ALRFOU_H
