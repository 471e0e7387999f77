//===- BufferPoolTest.cpp - Kept device buffers and staged host copies ----===//
//
// The pool the mgpu ABI puts in front of the opened device (BufferPool.h):
// its size classes; a repeated pattern of allocations reaches the device
// once (negative control: the same pattern without the pool reaches it
// every time); what it keeps is bounded by the most ever live, oldest
// released first; an allocation the device refuses is retried after the
// kept buffers are released; kept bytes count as free. HostStaging
// (HostStaging.h): an upload's bytes are copied at once and its block is
// reused only after its fence; downloads reach their destination at
// complete(), in the order they were staged.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/BufferPool.h"
#include "txl/rt/device/CountingDevice.h"
#include "txl/rt/device/Device.h"
#include "txl/rt/device/HostStaging.h"
#include "txl/rt/support/Status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

namespace txl::rt {
namespace {

using ::testing::HasSubstr;

constexpr size_t kMiB = size_t(1) << 20;

TEST(BufferPoolTest, SizeClasses) {
  EXPECT_EQ(poolSizeClass(0), 512u);
  EXPECT_EQ(poolSizeClass(1), 512u);
  EXPECT_EQ(poolSizeClass(512), 512u);
  EXPECT_EQ(poolSizeClass(513), 1024u);
  EXPECT_EQ(poolSizeClass(kMiB - 1), kMiB);
  EXPECT_EQ(poolSizeClass(kMiB), kMiB);
  EXPECT_EQ(poolSizeClass(kMiB + 1), kMiB + kMiB / 16);
  EXPECT_EQ(poolSizeClass(3 * kMiB), 3 * kMiB);
  EXPECT_EQ(poolSizeClass(2 * kMiB + 1), 2 * kMiB + kMiB / 8);
  for (size_t bytes = 1; bytes < (size_t(1) << 34); bytes = bytes * 3 + 7) {
    const size_t size = poolSizeClass(bytes);
    EXPECT_GE(size, bytes);
    if (bytes >= kMiB)
      EXPECT_LE(double(size), double(bytes) * 1.0625) << bytes;
  }
}

/// Allocates buffers of `sizes`, then frees them all.
std::vector<void *> allocateAndFree(Device &device,
                                    const std::vector<size_t> &sizes) {
  std::vector<void *> buffers;
  for (size_t bytes : sizes)
    buffers.push_back(device.allocate(bytes));
  for (void *buffer : buffers)
    device.free(buffer);
  return buffers;
}

// A segment's allocations, the same each time, reach the device once.
TEST(BufferPoolTest, ARepeatedPatternAllocatesOnce) {
  const std::vector<size_t> segment = {1000, 5000, 2 * kMiB, 1000};
  DeviceCounters counters;
  BufferPoolStats stats;
  {
    std::unique_ptr<Device> pool =
        poolBuffers(countOperations(openHostDevice(), counters), &stats);
    const std::vector<void *> first = allocateAndFree(*pool, segment);
    for (int repeat = 0; repeat < 9; ++repeat) {
      std::vector<void *> again = allocateAndFree(*pool, segment);
      EXPECT_THAT(again, ::testing::UnorderedElementsAreArray(first));
    }
    EXPECT_EQ(counters.snapshot().allocations, 4u);
    EXPECT_EQ(counters.snapshot().frees, 0u);
    EXPECT_EQ(stats.keptBuffers, 4u);
    EXPECT_EQ(stats.liveBuffers, 0u);
    EXPECT_EQ(stats.keptBytes, 2 * 1024 + 5120 + 2 * kMiB);
  }
  // Destroying the pool returns what it kept.
  EXPECT_EQ(counters.snapshot().frees, 4u);

  // Negative control: without the pool every allocation reaches the device.
  DeviceCounters plain;
  std::unique_ptr<Device> device = countOperations(openHostDevice(), plain);
  for (int repeat = 0; repeat < 10; ++repeat)
    allocateAndFree(*device, segment);
  EXPECT_EQ(plain.snapshot().allocations, 40u);
}

// The pool keeps no more than the most bytes ever live at once; the
// buffers kept longest go first.
TEST(BufferPoolTest, KeepsAtMostThePeakOldestReleasedFirst) {
  DeviceCounters counters;
  BufferPoolStats stats;
  std::unique_ptr<Device> pool =
      poolBuffers(countOperations(openHostDevice(), counters), &stats);
  pool->free(pool->allocate(4 * kMiB));
  EXPECT_EQ(stats.peakLiveBytes, 4 * kMiB);
  EXPECT_EQ(stats.keptBytes, 4 * kMiB);
  pool->free(pool->allocate(2 * kMiB)); // kept 6 MiB > 4: the 4 MiB goes
  EXPECT_EQ(stats.keptBytes, 2 * kMiB);
  EXPECT_EQ(counters.snapshot().frees, 1u);
  // The kept 2 MiB buffer serves the next 2 MiB request.
  void *again = pool->allocate(2 * kMiB);
  EXPECT_EQ(counters.snapshot().allocations, 2u);
  pool->free(again);
}

/// A device of `capacity` bytes that refuses what does not fit.
class SmallDevice final : public Device {
public:
  explicit SmallDevice(size_t capacity) : capacity_(capacity) {}
  std::string description() const override { return "small"; }
  size_t totalMemory() const override { return capacity_; }
  int64_t computeUnits() const override { return 1; }
  std::optional<size_t> freeMemory() const override {
    return capacity_ - used_;
  }
  void *allocate(size_t bytes) override {
    if (used_ + bytes > capacity_)
      fail(TXL_UNAVAILABLE, "out of memory: {} bytes", bytes);
    used_ += bytes;
    void *buffer = std::malloc(bytes);
    sizes_[buffer] = bytes;
    return buffer;
  }
  void free(void *buffer) override {
    used_ -= sizes_.at(buffer);
    sizes_.erase(buffer);
    std::free(buffer);
  }
  void copyToDevice(void *, size_t, const void *, size_t) override {}
  void copyToHost(void *, const void *, size_t, size_t) override {}
  void copyOnDevice(void *, size_t, const void *, size_t, size_t) override {}
  void fill32(void *, size_t, uint32_t, size_t) override {}
  std::unique_ptr<Module> loadModule(std::string_view) override {
    return nullptr;
  }
  void launch(Kernel &, const size_t[3], const size_t[3], size_t, void **,
              size_t) override {}
  void gemm(const GemmDesc &) override {}
  void synchronize() override {}

private:
  size_t capacity_, used_ = 0;
  std::map<void *, size_t> sizes_;
};

// What the pool keeps never makes an allocation fail that would fit
// without it, and counts as free memory.
TEST(BufferPoolTest, ReleasesWhatItKeepsWhenTheDeviceIsFull) {
  BufferPoolStats stats;
  std::unique_ptr<Device> pool =
      poolBuffers(std::make_unique<SmallDevice>(5 * kMiB), &stats);
  pool->free(pool->allocate(4 * kMiB));
  EXPECT_EQ(pool->freeMemory(), 5 * kMiB) << "the kept 4 MiB count as free";
  void *other = pool->allocate(3 * kMiB); // fits only without the kept 4 MiB
  EXPECT_EQ(stats.keptBytes, 0u);
  EXPECT_EQ(stats.liveBytes, 3 * kMiB);
  // Negative control: what does not fit even then still fails.
  EXPECT_THAT([&] { pool->allocate(3 * kMiB); },
              ::testing::ThrowsMessage<Error>(HasSubstr("out of memory")));
  pool->free(other);
}

TEST(BufferPoolTest, RefusesABufferItDidNotGive) {
  std::unique_ptr<Device> pool = poolBuffers(openHostDevice());
  int local = 0;
  EXPECT_THAT([&] { pool->free(&local); },
              ::testing::ThrowsMessage<Error>(
                  HasSubstr("which the pool did not give")));
}

/// A copy whose completion the test decides.
class TestFence final : public CopyFence {
public:
  explicit TestFence(const bool &done) : done_(done) {}
  bool done() override { return done_; }

private:
  const bool &done_;
};

HostStaging mallocStaging(int &allocations) {
  return HostStaging(
      [&allocations](size_t bytes) {
        ++allocations;
        return std::malloc(bytes);
      },
      [](void *block) { std::free(block); });
}

// An upload's bytes are taken at once; its block is reused only once its
// copy is done.
TEST(HostStagingTest, UploadBlocksWaitForTheirFence) {
  int allocations = 0;
  HostStaging staging = mallocStaging(allocations);
  int source[4] = {1, 2, 3, 4};
  void *first = staging.stageUpload(source, sizeof(source));
  bool firstDone = false;
  staging.inFlight(first, std::make_unique<TestFence>(firstDone));
  source[0] = 99; // the caller reuses its memory at once
  EXPECT_EQ(static_cast<int *>(first)[0], 1);
  // In flight: the next upload gets another block.
  bool secondDone = false;
  void *second = staging.stageUpload(source, sizeof(source));
  staging.inFlight(second, std::make_unique<TestFence>(secondDone));
  EXPECT_NE(second, first);
  EXPECT_EQ(staging.blocksInUse(), 2u);
  // Done: its block serves the next one.
  firstDone = true;
  void *third = staging.stageUpload(source, sizeof(source));
  EXPECT_EQ(third, first);
  EXPECT_EQ(static_cast<int *>(third)[0], 99);
  EXPECT_EQ(allocations, 2);
  staging.complete();
  EXPECT_EQ(staging.blocksInUse(), 0u);
}

// Downloads reach their destinations at complete(), the later of two into
// the same memory last.
TEST(HostStagingTest, DownloadsArriveAtCompleteInOrder) {
  int allocations = 0;
  HostStaging staging = mallocStaging(allocations);
  float out = 0;
  auto *a = static_cast<float *>(staging.stageDownload(&out, sizeof(float)));
  auto *b = static_cast<float *>(staging.stageDownload(&out, sizeof(float)));
  ASSERT_NE(a, b);
  *b = 2; // the device writes the blocks
  *a = 1;
  EXPECT_EQ(out, 0) << "nothing arrives before complete()";
  staging.complete();
  EXPECT_EQ(out, 2) << "the download staged last wins";
  EXPECT_EQ(staging.blocksInUse(), 0u);
  EXPECT_EQ(staging.blocks(), 2u);
}

// A large upload (a checkpoint's parameters) does not keep its block past
// the queue's end; the small blocks a segment reuses stay. Negative
// control: before complete() both are kept.
TEST(HostStagingTest, LargeBlocksGoAtComplete) {
  int allocations = 0;
  HostStaging staging = mallocStaging(allocations);
  std::vector<char> large(2 * HostStaging::kRetainedBytes), small(100);
  bool done = false; // both in flight: two blocks
  staging.inFlight(staging.stageUpload(large.data(), large.size()),
                   std::make_unique<TestFence>(done));
  staging.inFlight(staging.stageUpload(small.data(), small.size()),
                   std::make_unique<TestFence>(done));
  EXPECT_EQ(staging.blocks(), 2u);
  done = true;
  staging.complete();
  EXPECT_EQ(staging.blocks(), 1u);
  staging.stageUpload(small.data(), small.size());
  EXPECT_EQ(allocations, 2) << "the small block is reused";
}

} // namespace
} // namespace txl::rt
