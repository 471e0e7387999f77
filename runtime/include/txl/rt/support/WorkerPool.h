//===- WorkerPool.h - Persistent threads for batch-parallel segments -*- C++
//-*-===//
//
// A session runs the columns of a batch as independent slices, one per
// thread (see txl_session_set_threads). The threads are created once and
// wait on a condition variable between calls, so a segment of a few
// milliseconds pays no thread start-up; they sleep rather than spin, so they
// take no core from BLAS while idle.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_WORKERPOOL_H
#define TXL_RT_WORKERPOOL_H

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace txl::rt {

class WorkerPool {
public:
  WorkerPool() = default;
  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;
  ~WorkerPool();

  /// Runs task(0), ..., task(n - 1) concurrently, task(0) on the calling
  /// thread, and returns when all have finished. Starts n − 1 helper threads
  /// the first time it needs them. The first exception a task throws is
  /// rethrown here (the other tasks still run to the end).
  void run(int n, const std::function<void(int)> &task);

private:
  void helperLoop(int index);

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> helpers_;
  const std::function<void(int)> *task_ = nullptr;
  int active_ = 0;          ///< helpers taking part in the current call
  int pending_ = 0;         ///< helpers of the current call still running
  uint64_t generation_ = 0; ///< bumped per call, so each helper runs once
  bool stop_ = false;
  std::exception_ptr error_;
};

} // namespace txl::rt

#endif // TXL_RT_WORKERPOOL_H
