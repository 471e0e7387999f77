//===- BufferPool.cpp - Freed device buffers kept for reuse ---------------===//
//
// poolBuffers (BufferPool.h): kept buffers in a list by the time they were
// freed (oldest first, released first when over the bound) and, per size
// class, a stack of positions in that list (the buffer freed last is
// reused first: its pages are the likeliest to be resident).
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/BufferPool.h"

#include "txl/rt/device/ForwardingDevice.h"

#include "txl/rt/support/Status.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace txl::rt {

size_t poolSizeClass(size_t bytes) {
  constexpr size_t kSmallGranule = 512, kLarge = size_t(1) << 20;
  if (bytes < kLarge)
    return std::max<size_t>(1, (bytes + kSmallGranule - 1) / kSmallGranule) *
           kSmallGranule;
  size_t power = kLarge;
  while (power <= bytes / 2)
    power *= 2;
  const size_t granule = power / 16;
  return (bytes + granule - 1) / granule * granule;
}

bool devicePoolEnabled() {
  const char *env = std::getenv("TXL_DEVICE_POOL");
  return !(env && std::strcmp(env, "0") == 0);
}

namespace {

class PooledDevice final : public ForwardingDevice {
public:
  PooledDevice(std::unique_ptr<Device> inner, BufferPoolStats *stats)
      : ForwardingDevice(std::move(inner)), stats_(stats) {}

  ~PooledDevice() override {
    std::lock_guard<std::mutex> lock(mutex_);
    releaseKeptLocked(0);
  }

  std::optional<size_t> freeMemory() const override {
    std::optional<size_t> free = inner().freeMemory();
    if (!free)
      return free;
    std::lock_guard<std::mutex> lock(mutex_);
    return *free + keptBytes_;
  }

  void *allocate(size_t bytes) override {
    const size_t size = poolSizeClass(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    void *buffer = takeKeptLocked(size);
    if (!buffer) {
      try {
        buffer = inner().allocate(size);
      } catch (const Error &) {
        // Out of device memory, perhaps because of what is kept.
        if (kept_.empty())
          throw;
        releaseKeptLocked(0);
        buffer = inner().allocate(size);
      }
    }
    live_.emplace(buffer, size);
    liveBytes_ += size;
    peakLiveBytes_ = std::max(peakLiveBytes_, liveBytes_);
    updateStatsLocked();
    return buffer;
  }

  void free(void *buffer) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = live_.find(buffer);
    if (found == live_.end())
      fail(TXL_INVALID_ARGUMENT, "freeing {} which the pool did not give",
           buffer);
    const size_t size = found->second;
    live_.erase(found);
    liveBytes_ -= size;
    kept_.push_back({buffer, size});
    byClass_[size].push_back(std::prev(kept_.end()));
    keptBytes_ += size;
    releaseKeptLocked(peakLiveBytes_);
    updateStatsLocked();
  }

private:
  struct Kept {
    void *buffer;
    size_t size;
  };
  using KeptList = std::list<Kept>;

  /// The buffer of class `size` freed last, or null.
  void *takeKeptLocked(size_t size) {
    auto found = byClass_.find(size);
    if (found == byClass_.end() || found->second.empty())
      return nullptr;
    KeptList::iterator at = found->second.back();
    found->second.pop_back();
    void *buffer = at->buffer;
    keptBytes_ -= at->size;
    kept_.erase(at);
    return buffer;
  }

  /// Releases the buffers kept longest until at most `bound` bytes are.
  void releaseKeptLocked(size_t bound) {
    while (keptBytes_ > bound && !kept_.empty()) {
      const Kept oldest = kept_.front();
      std::vector<KeptList::iterator> &stack = byClass_[oldest.size];
      // The oldest of its class is at the bottom of the class's stack.
      stack.erase(stack.begin());
      kept_.pop_front();
      keptBytes_ -= oldest.size;
      inner().free(oldest.buffer);
    }
  }

  void updateStatsLocked() {
    if (!stats_)
      return;
    stats_->liveBuffers = live_.size();
    stats_->liveBytes = liveBytes_;
    stats_->keptBuffers = kept_.size();
    stats_->keptBytes = keptBytes_;
    stats_->peakLiveBytes = peakLiveBytes_;
  }

  BufferPoolStats *stats_;
  mutable std::mutex mutex_;
  std::unordered_map<void *, size_t> live_;
  KeptList kept_;
  std::unordered_map<size_t, std::vector<KeptList::iterator>> byClass_;
  size_t liveBytes_ = 0, keptBytes_ = 0, peakLiveBytes_ = 0;
};

} // namespace

std::unique_ptr<Device> poolBuffers(std::unique_ptr<Device> device,
                                    BufferPoolStats *stats) {
  return std::make_unique<PooledDevice>(std::move(device), stats);
}

} // namespace txl::rt
