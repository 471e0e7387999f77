//===- DeviceArray.cpp - A float32 array in a device buffer ---------------===//

#include "txl/rt/session/DeviceArray.h"

#include <algorithm>
#include <cstdint>
#include <utility>

using namespace txl::rt;

DeviceArray::DeviceArray(Device &device, size_t count)
    : device_(&device), buffer_(device.allocate(count * sizeof(float))),
      count_(count),
      address_(static_cast<float *>(device.hostAddress(buffer_))) {}

DeviceArray::DeviceArray(Device &device, const float *host, size_t count)
    : DeviceArray(device, count) {
  write(host, 0, count);
}

DeviceArray DeviceArray::zeros(Device &device, size_t count) {
  DeviceArray array(device, count);
  device.fill32(array.buffer_, 0, 0, count);
  return array;
}

DeviceArray::DeviceArray(DeviceArray &&other) noexcept
    : device_(std::exchange(other.device_, nullptr)),
      buffer_(std::exchange(other.buffer_, nullptr)),
      count_(std::exchange(other.count_, 0)),
      address_(std::exchange(other.address_, nullptr)),
      shadow_(std::move(other.shadow_)),
      shadowCurrent_(std::exchange(other.shadowCurrent_, false)) {
  other.shadow_.clear();
}

DeviceArray &DeviceArray::operator=(DeviceArray &&other) noexcept {
  if (this != &other) {
    release();
    device_ = std::exchange(other.device_, nullptr);
    buffer_ = std::exchange(other.buffer_, nullptr);
    count_ = std::exchange(other.count_, 0);
    address_ = std::exchange(other.address_, nullptr);
    shadow_ = std::move(other.shadow_);
    other.shadow_.clear();
    shadowCurrent_ = std::exchange(other.shadowCurrent_, false);
  }
  return *this;
}

DeviceArray::~DeviceArray() { release(); }

void DeviceArray::release() {
  if (buffer_)
    device_->free(buffer_);
  buffer_ = nullptr;
}

float *DeviceArray::map() {
  if (address_ || !buffer_)
    return address_;
  if (!shadowCurrent_) {
    shadow_.resize(count_);
    device_->copyToHost(shadow_.data(), buffer_, 0, count_ * sizeof(float));
    shadowCurrent_ = true;
  }
  return shadow_.data();
}

void DeviceArray::flush() {
  if (address_ || !buffer_ || !shadowCurrent_)
    return;
  device_->copyToDevice(buffer_, 0, shadow_.data(), count_ * sizeof(float));
}

void DeviceArray::invalidate() { shadowCurrent_ = false; }

void DeviceArray::read(float *out, size_t offset, size_t count) const {
  if (count)
    device_->copyToHost(out, buffer_, offset * sizeof(float),
                        count * sizeof(float));
}

HostArgument::HostArgument(Device &device, const void *host, size_t bytes,
                           Kind kind)
    : device_(&device), host_(const_cast<void *>(host)), bytes_(bytes),
      kind_(kind) {
  if (!host || device.hostMemory()) {
    buffer_ = host_;
    return;
  }
  buffer_ = device.allocate(bytes);
  staged_ = true;
  if (kind == In)
    device.copyToDevice(buffer_, 0, host, bytes);
  else if (kind == OutZeroed)
    device.fill32(buffer_, 0, 0, bytes / sizeof(uint32_t));
}

HostArgument::HostArgument(HostArgument &&other) noexcept
    : device_(other.device_), host_(other.host_), bytes_(other.bytes_),
      kind_(other.kind_), buffer_(other.buffer_),
      staged_(std::exchange(other.staged_, false)) {}

HostArgument::~HostArgument() {
  if (staged_)
    device_->free(buffer_);
}

void HostArgument::finish() {
  if (staged_ && kind_ != In)
    device_->copyToHost(host_, buffer_, 0, bytes_);
}

void HostArgument::finishLater() {
  if (staged_ && kind_ != In)
    device_->copyToHostAsync(host_, buffer_, 0, bytes_);
}

void DeviceArray::write(const float *in, size_t offset, size_t count) {
  if (!count)
    return;
  device_->copyToDevice(buffer_, offset * sizeof(float), in,
                        count * sizeof(float));
  if (!address_ && shadowCurrent_)
    std::copy_n(in, count, shadow_.data() + offset);
}
