//===- CountingDevice.cpp - What a device is asked to do ------------------===//
//
// countOperations (CountingDevice.h): the device the mgpu* ABI opens, so
// that every operation on it (the compiled code's, the session's, the
// profiler's synchronisations) is counted once.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/CountingDevice.h"

#include "txl/rt/device/ForwardingDevice.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace txl::rt {

txl_device_counters_t DeviceCounters::snapshot() const {
  txl_device_counters_t out;
  out.launches = launches;
  out.library_calls = libraryCalls;
  out.uploads = uploads;
  out.upload_bytes = uploadBytes;
  out.downloads = downloads;
  out.download_bytes = downloadBytes;
  out.device_copies = deviceCopies;
  out.syncs = syncs;
  out.allocations = allocations;
  out.frees = frees;
  out.serial_launches = serialLaunches;
  out.work_items = workItems;
  out.product_flops = productFlops;
  out.product_bytes = productBytes;
  return out;
}

void DeviceCounters::reset() {
  for (std::atomic<uint64_t> *counter :
       {&launches, &libraryCalls, &uploads, &uploadBytes, &downloads,
        &downloadBytes, &deviceCopies, &syncs, &allocations, &frees,
        &serialLaunches, &workItems, &productFlops, &productBytes})
    *counter = 0;
}

namespace {

/// TXL_PROFILE's comma-separated values.
std::vector<std::string> profileValues() {
  std::vector<std::string> values;
  const char *env = std::getenv("TXL_PROFILE");
  std::string_view rest = env ? env : "";
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view value = rest.substr(0, comma);
    if (!value.empty() && value != "0")
      values.emplace_back(value);
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
  }
  return values;
}

class CountingDevice final : public ForwardingDevice {
public:
  CountingDevice(std::unique_ptr<Device> inner, DeviceCounters &counters)
      : ForwardingDevice(std::move(inner)), counters_(counters) {}

  void *allocate(size_t bytes) override {
    ++counters_.allocations;
    return inner().allocate(bytes);
  }
  void free(void *buffer) override {
    ++counters_.frees;
    inner().free(buffer);
  }
  void copyToDevice(void *buffer, size_t offsetBytes, const void *host,
                    size_t bytes) override {
    ++counters_.uploads;
    counters_.uploadBytes += bytes;
    inner().copyToDevice(buffer, offsetBytes, host, bytes);
  }
  void copyToHost(void *host, const void *buffer, size_t offsetBytes,
                  size_t bytes) override {
    ++counters_.downloads;
    counters_.downloadBytes += bytes;
    ++counters_.syncs;
    inner().copyToHost(host, buffer, offsetBytes, bytes);
  }
  void copyToHostAsync(void *host, const void *buffer, size_t offsetBytes,
                       size_t bytes) override {
    ++counters_.downloads;
    counters_.downloadBytes += bytes;
    inner().copyToHostAsync(host, buffer, offsetBytes, bytes);
  }
  void copyOnDevice(void *dst, size_t dstOffsetBytes, const void *src,
                    size_t srcOffsetBytes, size_t bytes) override {
    ++counters_.deviceCopies;
    inner().copyOnDevice(dst, dstOffsetBytes, src, srcOffsetBytes, bytes);
  }
  /// One operation: one device copy.
  void copyStridedOnDevice(void *buffer, size_t dstOffsetBytes,
                           size_t srcOffsetBytes, size_t bytes,
                           size_t pitchBytes, size_t count) override {
    ++counters_.deviceCopies;
    inner().copyStridedOnDevice(buffer, dstOffsetBytes, srcOffsetBytes, bytes,
                                pitchBytes, count);
  }
  void launch(Kernel &kernel, const size_t grid[3], const size_t block[3],
              size_t sharedBytes, void **params, size_t paramCount) override {
    ++counters_.launches;
    counters_.workItems += uint64_t(grid[0] * grid[1] * grid[2]) *
                           uint64_t(block[0] * block[1] * block[2]);
    inner().launch(kernel, grid, block, sharedBytes, params, paramCount);
  }
  void gemm(const GemmDesc &columnMajor) override {
    ++counters_.libraryCalls;
    // Counted before the device checks the sizes: a negative one counts 0.
    const GemmDesc &g = columnMajor;
    auto size = [](int64_t v) { return uint64_t(std::max<int64_t>(v, 0)); };
    const uint64_t batch = size(g.batch), m = size(g.m), n = size(g.n),
                   k = size(g.k);
    counters_.productFlops += 2 * m * n * k * batch;
    counters_.productBytes +=
        sizeof(float) * batch * (m * k + k * n + (g.beta != 0 ? 2 : 1) * m * n);
    inner().gemm(columnMajor);
  }
  void synchronize() override {
    ++counters_.syncs;
    inner().synchronize();
  }

private:
  DeviceCounters &counters_;
};

} // namespace

bool profileCounts() {
  static const bool enabled = [] {
    for (const std::string &value : profileValues())
      if (value == "counts")
        return true;
    return false;
  }();
  return enabled;
}

bool profileTimes() {
  static const bool enabled = [] {
    for (const std::string &value : profileValues())
      if (value != "counts")
        return true;
    return false;
  }();
  return enabled;
}

std::unique_ptr<Device> countOperations(std::unique_ptr<Device> device,
                                        DeviceCounters &counters) {
  return std::make_unique<CountingDevice>(std::move(device), counters);
}

} // namespace txl::rt
