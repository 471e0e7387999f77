//===- WorkerPool.cpp - Persistent threads for batch-parallel segments ----===//

#include "txl/rt/support/WorkerPool.h"

namespace txl::rt {

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread &t : helpers_)
    t.join();
}

void WorkerPool::run(int n, const std::function<void(int)> &task) {
  if (n <= 1) {
    if (n == 1)
      task(0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (static_cast<int>(helpers_.size()) < n - 1) {
      int index = static_cast<int>(helpers_.size()) + 1;
      helpers_.emplace_back([this, index] { helperLoop(index); });
    }
    task_ = &task;
    active_ = n - 1;
    pending_ = n - 1;
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  std::exception_ptr mine;
  try {
    task(0);
  } catch (...) {
    mine = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  task_ = nullptr;
  if (mine)
    std::rethrow_exception(mine);
  if (error_)
    std::rethrow_exception(error_);
}

void WorkerPool::helperLoop(int index) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_)
      return;
    seen = generation_;
    if (index > active_)
      continue;
    const std::function<void(int)> *task = task_;
    lock.unlock();
    std::exception_ptr error;
    try {
      (*task)(index);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error && !error_)
      error_ = error;
    if (--pending_ == 0)
      done_.notify_one();
  }
}

} // namespace txl::rt
