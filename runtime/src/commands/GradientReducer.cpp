//===- GradientReducer.cpp - A session's gradients over the ranks ---------===//

#include "txl/rt/commands/GradientReducer.h"

#include "txl/rt/session/ModelInfo.h"
#include "txl/rt/support/Status.h"

#include <algorithm>

namespace txl::rt {

GradientReducer::GradientReducer(Communicator &comm,
                                 const txl_model_info_t &info,
                                 int64_t bucketFloats)
    : comm_(comm), bucketFloats_(bucketFloats) {
  for (int32_t i = 0; i < info.n_params; ++i) {
    if (!info.params[i].trainable)
      continue;
    trainable_.push_back(i);
    sizes_.push_back(parameterElements(info.params[i]));
  }
}

void GradientReducer::reduce(txl_session_t *session) {
  const int64_t total = txl_session_gradient_floats(session);
  const float weight = 1.0f / float(comm_.size());
  if (comm_.reducesOnDevice()) {
    for (const IndexRange &bucket : gradientBuckets(total, bucketFloats_)) {
      std::vector<Communicator::DeviceSpan> spans;
      for (const TensorPart &part : tensorParts(sizes_, bucket)) {
        void *buffer =
            txl_session_device_gradient(session, trainable_[part.tensor]);
        if (!buffer)
          fail(TXL_UNAVAILABLE,
               "no device gradient for parameter {} to reduce with {}",
               trainable_[part.tensor], comm_.description());
        spans.push_back({buffer, part.range.first, part.range.count});
      }
      comm_.allreduceAverageOnDevice(spans);
    }
    return;
  }
  staging_.resize(size_t(std::min(total, bucketFloats_)));
  for (const IndexRange &bucket : gradientBuckets(total, bucketFloats_)) {
    checkStatus(txl_session_read_gradients(session, bucket.first, bucket.count,
                                           staging_.data()));
    for (int64_t k = 0; k < bucket.count; ++k)
      staging_[size_t(k)] *= weight;
    comm_.allreduceSum(staging_.data(), bucket.count);
    checkStatus(txl_session_write_gradients(session, bucket.first, bucket.count,
                                            staging_.data()));
  }
}

} // namespace txl::rt
