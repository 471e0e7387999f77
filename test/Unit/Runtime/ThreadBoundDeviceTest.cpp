//===- ThreadBoundDeviceTest.cpp - bindToThread ---------------------------===//
//
// A device made by bindToThread is opened, called, and destroyed on one
// thread that is not the caller's, its modules' kernel lookups and
// destruction too; results and exceptions reach the caller; callers on
// several threads are served one at a time. The fake device records the
// thread of every call.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/Device.h"
#include "txl/rt/support/Status.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace txl::rt {
namespace {

/// The threads the fake objects were called on, by what was called.
struct Calls {
  std::mutex mutex;
  std::vector<std::pair<std::string, std::thread::id>> seen;
  std::atomic<int> inside{0};
  std::atomic<int> overlapped{0};

  void record(std::string what) {
    std::lock_guard<std::mutex> lock(mutex);
    seen.emplace_back(std::move(what), std::this_thread::get_id());
  }
  std::set<std::thread::id> threads() {
    std::lock_guard<std::mutex> lock(mutex);
    std::set<std::thread::id> ids;
    for (auto &[what, id] : seen)
      ids.insert(id);
    return ids;
  }
  std::vector<std::string> names() {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<std::string> out;
    for (auto &[what, id] : seen)
      out.push_back(what);
    return out;
  }
};

class FakeKernel : public Kernel {};

class FakeModule : public Module {
public:
  explicit FakeModule(Calls &calls) : calls_(calls) {}
  ~FakeModule() override { calls_.record("~module"); }
  Kernel &kernel(const std::string &name) override {
    calls_.record("kernel " + name);
    if (name != "k")
      fail(TXL_UNAVAILABLE, "no kernel '{}'", name);
    return kernel_;
  }
  std::string origin() const override {
    calls_.record("origin");
    return "fake";
  }

  FakeKernel kernel_;

private:
  Calls &calls_;
};

class FakeDevice : public Device {
public:
  explicit FakeDevice(Calls &calls) : calls_(calls) { calls_.record("open"); }
  ~FakeDevice() override { calls_.record("~device"); }

  std::string description() const override {
    calls_.record("description");
    return "fake device";
  }
  size_t totalMemory() const override {
    calls_.record("totalMemory");
    return 1234;
  }
  int64_t computeUnits() const override {
    calls_.record("computeUnits");
    return 7;
  }
  std::optional<size_t> freeMemory() const override {
    calls_.record("freeMemory");
    return std::nullopt;
  }
  void *allocate(size_t bytes) override {
    calls_.record("allocate");
    if (bytes > 100)
      fail(TXL_UNAVAILABLE, "out of fake memory ({} bytes)", bytes);
    return &storage_;
  }
  void free(void *) override { calls_.record("free"); }
  void copyToDevice(void *, size_t, const void *, size_t) override {
    calls_.record("copyToDevice");
  }
  void copyToHost(void *, const void *, size_t, size_t) override {
    calls_.record("copyToHost");
  }
  void copyOnDevice(void *, size_t, const void *, size_t, size_t) override {
    calls_.record("copyOnDevice");
  }
  void fill32(void *, size_t, uint32_t, size_t) override {
    calls_.record("fill32");
  }
  std::unique_ptr<Module> loadModule(std::string_view) override {
    calls_.record("loadModule");
    return std::make_unique<FakeModule>(calls_);
  }
  void launch(Kernel &kernel, const size_t *, const size_t *, size_t, void **,
              size_t) override {
    // The inner device gets its own module's kernel back.
    EXPECT_NE(dynamic_cast<FakeKernel *>(&kernel), nullptr);
    calls_.record("launch");
  }
  void gemm(const GemmDesc &) override { calls_.record("gemm"); }
  void synchronize() override {
    // Two callers inside at once would be an overlap. (The one device
    // thread already rules that out; what fails when callers are not
    // served one at a time is the count of calls below, or a hang.)
    if (calls_.inside.fetch_add(1) != 0)
      calls_.overlapped.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    calls_.inside.fetch_sub(1);
    calls_.record("synchronize");
  }

private:
  Calls &calls_;
  int storage_ = 0;
};

TEST(ThreadBoundDeviceTest, EveryCallRunsOnTheDeviceThread) {
  Calls calls;
  {
    std::unique_ptr<Device> device =
        bindToThread([&] { return std::make_unique<FakeDevice>(calls); });
    EXPECT_EQ(device->description(), "fake device");
    EXPECT_EQ(device->totalMemory(), 1234u);
    EXPECT_EQ(device->computeUnits(), 7);
    EXPECT_EQ(device->freeMemory(), std::nullopt);
    void *buffer = device->allocate(16);
    ASSERT_NE(buffer, nullptr);
    int host = 0;
    device->copyToDevice(buffer, 0, &host, sizeof host);
    device->copyOnDevice(buffer, 0, buffer, 0, sizeof host);
    device->fill32(buffer, 0, 0, 1);
    device->copyToHost(&host, buffer, 0, sizeof host);
    device->gemm(GemmDesc{});
    std::unique_ptr<Module> module = device->loadModule("image");
    EXPECT_EQ(module->origin(), "fake");
    Kernel &kernel = module->kernel("k");
    size_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    device->launch(kernel, grid, block, 0, nullptr, 0);
    device->synchronize();
    device->free(buffer);
    module.reset();
  }
  EXPECT_THAT(calls.names(),
              ::testing::ElementsAre(
                  "open", "description", "totalMemory", "computeUnits",
                  "freeMemory", "allocate", "copyToDevice", "copyOnDevice",
                  "fill32", "copyToHost", "gemm", "loadModule", "origin",
                  "kernel k", "launch", "synchronize", "free", "~module",
                  "~device"));
  std::set<std::thread::id> threads = calls.threads();
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_NE(*threads.begin(), std::this_thread::get_id());
}

TEST(ThreadBoundDeviceTest, ErrorsReachTheCaller) {
  Calls calls;
  std::unique_ptr<Device> device =
      bindToThread([&] { return std::make_unique<FakeDevice>(calls); });
  test::expectError([&] { device->allocate(1000); }, TXL_UNAVAILABLE,
                    {"out of fake memory (1000 bytes)"});
  std::unique_ptr<Module> module = device->loadModule("image");
  test::expectError([&] { module->kernel("missing"); }, TXL_UNAVAILABLE,
                    {"no kernel 'missing'"});
  // The thread still serves calls after an error.
  EXPECT_NE(device->allocate(8), nullptr);
}

TEST(ThreadBoundDeviceTest, OpenErrorsReachTheCaller) {
  test::expectError(
      [] {
        bindToThread([]() -> std::unique_ptr<Device> {
          fail(TXL_UNAVAILABLE, {"no fake platform"});
        });
      },
      TXL_UNAVAILABLE, {"no fake platform"});
}

TEST(ThreadBoundDeviceTest, CallersOnSeveralThreadsTakeTurns) {
  Calls calls;
  std::unique_ptr<Device> device =
      bindToThread([&] { return std::make_unique<FakeDevice>(calls); });
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int i = 0; i < 25; ++i)
        device->synchronize();
    });
  for (std::thread &caller : callers)
    caller.join();
  EXPECT_EQ(calls.overlapped.load(), 0);
  EXPECT_EQ(calls.names().size(), 1u + 100u);
  EXPECT_EQ(calls.threads().size(), 1u);
}

} // namespace
} // namespace txl::rt
