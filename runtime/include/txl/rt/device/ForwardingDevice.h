//===- ForwardingDevice.h - A device that forwards to another ---*- C++ -*-===//
//
// The base of the wrappers the mgpu ABI puts in front of the opened device
// (CountingDevice, the buffer pool): every operation goes to the inner
// device unless the wrapper overrides it.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_DEVICE_FORWARDINGDEVICE_H
#define TXL_RT_DEVICE_FORWARDINGDEVICE_H

#include "txl/rt/device/Device.h"

#include <memory>
#include <utility>

namespace txl::rt {

/// A Device whose every operation is `inner`'s; it owns `inner`.
class ForwardingDevice : public Device {
public:
  explicit ForwardingDevice(std::unique_ptr<Device> inner)
      : inner_(std::move(inner)) {}

  std::string description() const override { return inner_->description(); }
  size_t totalMemory() const override { return inner_->totalMemory(); }
  int64_t computeUnits() const override { return inner_->computeUnits(); }
  void *nativeStream() const override { return inner_->nativeStream(); }
  std::optional<size_t> freeMemory() const override {
    return inner_->freeMemory();
  }
  bool hostMemory() const override { return inner_->hostMemory(); }
  void *view(void *buffer, size_t offsetBytes, size_t bytes) override {
    return inner_->view(buffer, offsetBytes, bytes);
  }
  void releaseView(void *view) override { inner_->releaseView(view); }
  size_t viewAlignment() const override { return inner_->viewAlignment(); }
  void *allocate(size_t bytes) override { return inner_->allocate(bytes); }
  void free(void *buffer) override { inner_->free(buffer); }
  void copyToDevice(void *buffer, size_t offsetBytes, const void *host,
                    size_t bytes) override {
    inner_->copyToDevice(buffer, offsetBytes, host, bytes);
  }
  void copyToHost(void *host, const void *buffer, size_t offsetBytes,
                  size_t bytes) override {
    inner_->copyToHost(host, buffer, offsetBytes, bytes);
  }
  void copyToHostAsync(void *host, const void *buffer, size_t offsetBytes,
                       size_t bytes) override {
    inner_->copyToHostAsync(host, buffer, offsetBytes, bytes);
  }
  void copyOnDevice(void *dst, size_t dstOffsetBytes, const void *src,
                    size_t srcOffsetBytes, size_t bytes) override {
    inner_->copyOnDevice(dst, dstOffsetBytes, src, srcOffsetBytes, bytes);
  }
  void copyStridedOnDevice(void *buffer, size_t dstOffsetBytes,
                           size_t srcOffsetBytes, size_t bytes,
                           size_t pitchBytes, size_t count) override {
    inner_->copyStridedOnDevice(buffer, dstOffsetBytes, srcOffsetBytes, bytes,
                                pitchBytes, count);
  }
  void fill32(void *buffer, size_t offsetBytes, uint32_t value,
              size_t count) override {
    inner_->fill32(buffer, offsetBytes, value, count);
  }
  std::unique_ptr<Module> loadModule(std::string_view image) override {
    return inner_->loadModule(image);
  }
  void launch(Kernel &kernel, const size_t grid[3], const size_t block[3],
              size_t sharedBytes, void **params, size_t paramCount) override {
    inner_->launch(kernel, grid, block, sharedBytes, params, paramCount);
  }
  void gemm(const GemmDesc &columnMajor) override { inner_->gemm(columnMajor); }
  void synchronize() override { inner_->synchronize(); }

protected:
  Device &inner() const { return *inner_; }

private:
  std::unique_ptr<Device> inner_;
};

} // namespace txl::rt

#endif // TXL_RT_DEVICE_FORWARDINGDEVICE_H
