//===- WorkerPoolTest.cpp - Persistent threads of batch slices --*- C++ -*-===//

#include "txl/rt/support/WorkerPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace txl::rt {
namespace {

// Every index runs exactly once, index 0 on the caller, the others on
// distinct helper threads, and run() returns after all of them.
TEST(WorkerPoolTest, RunsEachIndexOnceOnItsOwnThread) {
  WorkerPool pool;
  for (int n : {1, 3, 2, 4}) {
    std::vector<int> hits(n, 0);
    std::vector<std::thread::id> ids(n);
    pool.run(n, [&](int i) {
      ++hits[i];
      ids[i] = std::this_thread::get_id();
    });
    EXPECT_EQ(ids[0], std::this_thread::get_id());
    std::set<std::thread::id> distinct(ids.begin(), ids.end());
    EXPECT_EQ(distinct.size(), size_t(n));
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(hits[i], 1) << "n = " << n << ", index " << i;
  }
  pool.run(0, [](int) { FAIL() << "no task for n = 0"; });
}

// Many short calls in a row (one per segment) neither lose nor repeat work.
TEST(WorkerPoolTest, ManyCallsInARow) {
  WorkerPool pool;
  std::atomic<int64_t> sum{0};
  for (int call = 0; call < 2000; ++call)
    pool.run(3, [&](int i) { sum += i + 1; });
  EXPECT_EQ(sum.load(), 2000 * (1 + 2 + 3));
}

// A helper's exception reaches the caller after every task has finished;
// the pool stays usable.
TEST(WorkerPoolTest, RethrowsAfterAllTasksFinish) {
  WorkerPool pool;
  std::atomic<int> finished{0};
  EXPECT_THROW(pool.run(3,
                        [&](int i) {
                          if (i == 2)
                            throw std::runtime_error("slice 2 failed");
                          ++finished;
                        }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 2);
  EXPECT_THROW(pool.run(2, [](int i) {
                 if (i == 0)
                   throw std::invalid_argument("caller's slice");
               }),
               std::invalid_argument);
  int ran = 0;
  pool.run(2, [&](int i) {
    if (i == 0)
      ran = 1;
  });
  EXPECT_EQ(ran, 1);
}

} // namespace
} // namespace txl::rt
