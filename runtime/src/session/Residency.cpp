//===- Residency.cpp - The session's arrays on its device -----------------===//
//
// The parameters, the memory, the gradients and the optimizer state live
// in buffers of the session's device (DeviceArray: the host device's on the
// CPU, whose host views are the buffers themselves). A segment's inputs
// and outputs are the caller's arrays, as HostArguments (DeviceArray.h).
//
//===----------------------------------------------------------------------===//

#include "SessionState.h"

#include "txl/rt/session/ModelInfo.h"

#include <cstddef>
#include <utility>
#include <vector>

using namespace txl::rt;

void txl::rt::setParameters(txl_session &session,
                            const std::vector<std::vector<float>> &values) {
  std::vector<DeviceArray> params;
  for (const std::vector<float> &value : values)
    params.emplace_back(*session.device, value.data(), value.size());
  session.params = std::move(params);
}

std::vector<DeviceArray> txl::rt::allocateMemory(txl_session &session,
                                                 size_t count) {
  std::vector<DeviceArray> mems;
  for (int64_t l = 0; l <= session.info->n_layer; ++l)
    mems.emplace_back(*session.device, count);
  return mems;
}

std::vector<DeviceArray> txl::rt::allocateGrads(txl_session &session) {
  const txl_model_info_t &info = *session.info;
  std::vector<DeviceArray> grads(size_t(info.n_params));
  for (int32_t i = 0; i < info.n_params; ++i)
    if (info.params[i].trainable)
      grads[size_t(i)] = DeviceArray::zeros(
          *session.device, size_t(parameterElements(info.params[i])));
  return grads;
}
