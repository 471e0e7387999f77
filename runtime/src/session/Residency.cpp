//===- Residency.cpp - A GPU target's device buffers ----------------------===//
//
// On the GPU targets (txl_model_info.backend) the parameters, the
// memory, the gradients and the optimizer state live on the device for the
// whole run; the session's host arrays are copies, brought up to date when
// the C API hands them out. Buffers go through the ABI the compiled code
// uses (txl/device.h).
//
//===----------------------------------------------------------------------===//

#include "SessionState.h"

#include "txl/rt/session/ModelInfo.h"

#include <cstddef>
#include <vector>

using namespace txl::rt;

void *txl::rt::deviceCopy(const void *host, size_t bytes) {
  void *buffer = mgpuMemAlloc(bytes, nullptr, false);
  txl_device_write(buffer, 0, host, bytes);
  return buffer;
}

void txl::rt::freeDevice(std::vector<void *> &buffers) {
  for (void *b : buffers)
    if (b)
      mgpuMemFree(b, nullptr);
  buffers.clear();
}

/// Replaces `device` by copies of the host arrays `host`.
static void upload(const std::vector<std::vector<float>> &host,
                   std::vector<void *> &device) {
  freeDevice(device);
  for (const auto &array : host)
    device.push_back(deviceCopy(array.data(), array.size() * sizeof(float)));
}

void txl::rt::uploadParameters(txl_session &session) {
  if (session.onDevice)
    upload(session.params, session.deviceParams);
  session.paramsOnHostCurrent = true;
}

void txl::rt::readBackParameters(txl_session &session) {
  if (session.paramsOnHostCurrent)
    return;
  for (size_t i = 0; i < session.params.size(); ++i)
    txl_device_read(session.params[i].data(), session.deviceParams[i], 0,
                    session.params[i].size() * sizeof(float));
  session.paramsOnHostCurrent = true;
}

void txl::rt::uploadMemory(txl_session &session) {
  if (!session.onDevice)
    return;
  upload(session.mems, session.deviceMems);
  session.memsOnHostCurrent = true;
}

void txl::rt::readBackMemory(txl_session &session) {
  if (!session.onDevice || session.memsOnHostCurrent)
    return;
  const size_t count =
      size_t(session.mlen * session.batch * session.info->d_model);
  for (size_t l = 0; l < session.deviceMems.size(); ++l) {
    session.mems[l].resize(count);
    txl_device_read(session.mems[l].data(), session.deviceMems[l], 0,
                    count * sizeof(float));
  }
  session.memsOnHostCurrent = true;
}

std::vector<void *> txl::rt::allocateDeviceGrads(const txl_session &session) {
  const txl_model_info_t &info = *session.info;
  std::vector<void *> grads(info.n_params, nullptr);
  for (int32_t i = 0; i < info.n_params; ++i)
    if (info.params[i].trainable) {
      size_t count = size_t(parameterElements(info.params[i]));
      grads[i] = mgpuMemAlloc(count * sizeof(float), nullptr, false);
      mgpuMemset32(grads[i], 0, count, nullptr);
    }
  return grads;
}
