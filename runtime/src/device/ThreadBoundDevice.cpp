//===- ThreadBoundDevice.cpp - A Device whose calls run on one thread -----===//
//
// bindToThread (Device.h): every call of the device, its modules and its
// kernels, and its construction and destruction, run on one thread that
// the device owns. The caller's thread hands each call over and waits for
// it, so the device still behaves as a synchronous object; exceptions come
// back to the caller unchanged.
//
// Why: Intel's OpenCL CPU runtime asks glibc for the calling thread's stack
// bounds (pthread_getattr_np) on every enqueue and wait. For the process's
// main thread glibc answers that by reading and parsing /proc/self/maps,
// which for a process holding JIT-compiled programs is hundreds of
// mappings: a 10-update ptb-tiny training run spent more system time than
// user time (17 s wall against 3.7 s when the calls came from another
// thread). For any other thread glibc reads the bounds from the thread's
// descriptor. Binding the device to its own thread makes the OpenCL
// backend's cost the same whichever thread calls it.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/Device.h"

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>

namespace txl::rt {

namespace {

/// One thread that runs closures handed to it, one at a time, while the
/// handing thread waits.
class CallThread {
public:
  CallThread() : thread_([this] { loop(); }) {}
  CallThread(const CallThread &) = delete;
  CallThread &operator=(const CallThread &) = delete;
  ~CallThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

  /// Runs `call` on the thread and returns its result or rethrows its
  /// exception. From the thread itself, runs it directly. Calls from
  /// several threads are served one after another.
  template <typename F> std::invoke_result_t<F &> run(F &&call) {
    using Result = std::invoke_result_t<F &>;
    if (std::this_thread::get_id() == thread_.get_id())
      return call();
    using Fn = std::remove_reference_t<F>;
    if constexpr (std::is_void_v<Result>) {
      runErased(const_cast<void *>(static_cast<const void *>(&call)),
                [](void *f) { (*static_cast<Fn *>(f))(); });
    } else {
      struct Frame {
        Fn *call;
        std::optional<Result> result;
      } frame{&call, std::nullopt};
      runErased(&frame, [](void *p) {
        auto *frame = static_cast<Frame *>(p);
        frame->result.emplace((*frame->call)());
      });
      return std::move(*frame.result);
    }
  }

private:
  /// A call as a function and its argument: no allocation per call (the
  /// launches of a training step pass through here).
  struct Task {
    void *argument;
    void (*function)(void *);
  };

  void runErased(void *argument, void (*function)(void *)) {
    std::lock_guard<std::mutex> caller(callerMutex_);
    std::exception_ptr error;
    Task task{argument, function};
    {
      std::unique_lock<std::mutex> lock(mutex_);
      task_ = &task;
      error_ = nullptr;
      wake_.notify_one();
      done_.wait(lock, [&] { return task_ == nullptr; });
      error = error_;
    }
    if (error)
      std::rethrow_exception(error);
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || task_ != nullptr; });
      if (task_ == nullptr)
        return;
      const Task *task = task_;
      lock.unlock();
      std::exception_ptr error;
      try {
        task->function(task->argument);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      error_ = error;
      task_ = nullptr;
      done_.notify_one();
    }
  }

  /// Held by a caller for the whole of its call.
  std::mutex callerMutex_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const Task *task_ = nullptr;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;
};

/// A module of a ThreadBoundDevice: its kernel lookups and its destruction
/// run on the device's thread. The kernels are the inner module's, so the
/// inner device's launch takes them as they are.
class ThreadBoundModule : public Module {
public:
  ThreadBoundModule(CallThread &thread, std::unique_ptr<Module> inner)
      : thread_(thread), inner_(std::move(inner)) {}
  ~ThreadBoundModule() override {
    thread_.run([&] { inner_.reset(); });
  }

  Kernel &kernel(const std::string &name) override {
    return *thread_.run([&] { return &inner_->kernel(name); });
  }
  std::string origin() const override {
    return thread_.run([&] { return inner_->origin(); });
  }

private:
  CallThread &thread_;
  std::unique_ptr<Module> inner_;
};

class ThreadBoundDevice : public Device {
public:
  explicit ThreadBoundDevice(
      const std::function<std::unique_ptr<Device>()> &open)
      : inner_(thread_.run(open)) {}
  ~ThreadBoundDevice() override {
    thread_.run([&] { inner_.reset(); });
  }

  std::string description() const override {
    return thread_.run([&] { return inner_->description(); });
  }
  size_t totalMemory() const override {
    return thread_.run([&] { return inner_->totalMemory(); });
  }
  int64_t computeUnits() const override {
    return thread_.run([&] { return inner_->computeUnits(); });
  }
  void *nativeStream() const override {
    return thread_.run([&] { return inner_->nativeStream(); });
  }
  std::optional<size_t> freeMemory() const override {
    return thread_.run([&] { return inner_->freeMemory(); });
  }
  bool hostMemory() const override {
    return thread_.run([&] { return inner_->hostMemory(); });
  }
  void *view(void *buffer, size_t offsetBytes, size_t bytes) override {
    return thread_.run(
        [&] { return inner_->view(buffer, offsetBytes, bytes); });
  }
  void releaseView(void *view) override {
    thread_.run([&] { inner_->releaseView(view); });
  }
  size_t viewAlignment() const override {
    return thread_.run([&] { return inner_->viewAlignment(); });
  }
  void *allocate(size_t bytes) override {
    return thread_.run([&] { return inner_->allocate(bytes); });
  }
  void free(void *buffer) override {
    thread_.run([&] { inner_->free(buffer); });
  }
  void copyToDevice(void *buffer, size_t offsetBytes, const void *host,
                    size_t bytes) override {
    thread_.run(
        [&] { inner_->copyToDevice(buffer, offsetBytes, host, bytes); });
  }
  void copyToHost(void *host, const void *buffer, size_t offsetBytes,
                  size_t bytes) override {
    thread_.run([&] { inner_->copyToHost(host, buffer, offsetBytes, bytes); });
  }
  void copyToHostAsync(void *host, const void *buffer, size_t offsetBytes,
                       size_t bytes) override {
    thread_.run(
        [&] { inner_->copyToHostAsync(host, buffer, offsetBytes, bytes); });
  }
  void copyOnDevice(void *dst, size_t dstOffsetBytes, const void *src,
                    size_t srcOffsetBytes, size_t bytes) override {
    thread_.run([&] {
      inner_->copyOnDevice(dst, dstOffsetBytes, src, srcOffsetBytes, bytes);
    });
  }
  void copyStridedOnDevice(void *buffer, size_t dstOffsetBytes,
                           size_t srcOffsetBytes, size_t bytes,
                           size_t pitchBytes, size_t count) override {
    thread_.run([&] {
      inner_->copyStridedOnDevice(buffer, dstOffsetBytes, srcOffsetBytes, bytes,
                                  pitchBytes, count);
    });
  }
  void fill32(void *buffer, size_t offsetBytes, uint32_t value,
              size_t count) override {
    thread_.run([&] { inner_->fill32(buffer, offsetBytes, value, count); });
  }
  std::unique_ptr<Module> loadModule(std::string_view image) override {
    std::unique_ptr<Module> inner =
        thread_.run([&] { return inner_->loadModule(image); });
    return std::make_unique<ThreadBoundModule>(thread_, std::move(inner));
  }
  void launch(Kernel &kernel, const size_t grid[3], const size_t block[3],
              size_t sharedBytes, void **params, size_t paramCount) override {
    thread_.run([&] {
      inner_->launch(kernel, grid, block, sharedBytes, params, paramCount);
    });
  }
  void gemm(const GemmDesc &columnMajor) override {
    thread_.run([&] { inner_->gemm(columnMajor); });
  }
  void synchronize() override {
    thread_.run([&] { inner_->synchronize(); });
  }

private:
  /// Declared first: it outlives the device it runs.
  mutable CallThread thread_;
  std::unique_ptr<Device> inner_;
};

} // namespace

std::unique_ptr<Device>
bindToThread(const std::function<std::unique_ptr<Device>()> &open) {
  return std::make_unique<ThreadBoundDevice>(open);
}

} // namespace txl::rt
