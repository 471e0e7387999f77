//===- DataParallelTest.cpp - Ranks, columns, gradient buckets --*- C++ -*-===//

#include "txl/rt/collectives/DataParallel.h"

#include "txl/rt/support/Status.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

namespace txl::rt {
namespace {

using ::testing::HasSubstr;

// Rank r of N owns the r-th N-th of the columns; a batch the ranks cannot
// share equally is refused, naming the setting, the batch and the ranks.
TEST(DataParallelTest, RankColumns) {
  IndexRange r0 = rankColumns(16, 0, 2, "[train] batch_size");
  IndexRange r1 = rankColumns(16, 1, 2, "[train] batch_size");
  EXPECT_EQ(r0.first, 0);
  EXPECT_EQ(r0.count, 8);
  EXPECT_EQ(r1.first, 8);
  EXPECT_EQ(r1.count, 8);
  EXPECT_EQ(rankColumns(16, 0, 1, "x").count, 16);
  try {
    rankColumns(16, 2, 3, "[train] batch_size");
    FAIL() << "16 columns over 3 ranks accepted";
  } catch (const Error &error) {
    EXPECT_EQ(error.code(), TXL_INVALID_ARGUMENT);
    EXPECT_THAT(error.what(),
                HasSubstr("[train] batch_size 16 is not a multiple of the 3 "
                          "ranks"));
  }
}

// Evaluation columns need not divide: contiguous, counts within one of
// each other, some ranks without any when the batch is smaller.
TEST(DataParallelTest, UnevenColumns) {
  int64_t next = 0;
  std::vector<int64_t> counts;
  for (int r = 0; r < 4; ++r) {
    IndexRange range = unevenColumns(10, r, 4);
    EXPECT_EQ(range.first, next);
    next += range.count;
    counts.push_back(range.count);
  }
  EXPECT_EQ(next, 10);
  EXPECT_EQ(counts, (std::vector<int64_t>{2, 3, 2, 3}));
  EXPECT_EQ(unevenColumns(2, 0, 4).count, 0);
  EXPECT_EQ(unevenColumns(2, 3, 4).count, 1);
  EXPECT_EQ(unevenColumns(16, 1, 2).first, 8);
}

// Buckets cover the flat gradient exactly once, from its end, none larger
// than asked.
TEST(DataParallelTest, BucketsFromTheEnd) {
  auto buckets = gradientBuckets(10, 4);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].first, 6);
  EXPECT_EQ(buckets[0].count, 4);
  EXPECT_EQ(buckets[1].first, 2);
  EXPECT_EQ(buckets[1].count, 4);
  EXPECT_EQ(buckets[2].first, 0);
  EXPECT_EQ(buckets[2].count, 2);
  EXPECT_EQ(gradientBuckets(8, 4).size(), 2u);
  EXPECT_TRUE(gradientBuckets(0, 4).empty());
  auto one = gradientBuckets(5, 100);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].first, 0);
  EXPECT_EQ(one[0].count, 5);
}

// A bucket's parts of tensors laid end to end: each tensor's elements in
// flat order, empty tensors and tensors outside the bucket skipped.
TEST(DataParallelTest, TensorParts) {
  // Tensors of 3, 0, 5 and 2 elements: flat [0,3) [3,3) [3,8) [8,10).
  std::vector<int64_t> sizes = {3, 0, 5, 2};
  auto parts = tensorParts(sizes, {2, 7});
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].tensor, 0u);
  EXPECT_EQ(parts[0].range.first, 2);
  EXPECT_EQ(parts[0].range.count, 1);
  EXPECT_EQ(parts[1].tensor, 2u);
  EXPECT_EQ(parts[1].range.first, 0);
  EXPECT_EQ(parts[1].range.count, 5);
  EXPECT_EQ(parts[2].tensor, 3u);
  EXPECT_EQ(parts[2].range.first, 0);
  EXPECT_EQ(parts[2].range.count, 1);
  auto inner = tensorParts(sizes, {4, 2});
  ASSERT_EQ(inner.size(), 1u);
  EXPECT_EQ(inner[0].tensor, 2u);
  EXPECT_EQ(inner[0].range.first, 1);
  EXPECT_EQ(inner[0].range.count, 2);
  // Every bucket of a gradient, its parts together, covers each tensor
  // exactly once.
  std::vector<int64_t> covered(sizes.size(), 0);
  for (IndexRange bucket : gradientBuckets(10, 3))
    for (auto part : tensorParts(sizes, bucket))
      covered[part.tensor] += part.range.count;
  EXPECT_EQ(covered, sizes);
}

// The launcher's variables decide: none is one process.
TEST(DataParallelTest, LauncherEnvironment) {
  for (const char *name :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "PMIX_RANK",
        "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    ::unsetenv(name);
  EXPECT_EQ(launcherWorldSize(), 0);
  EXPECT_EQ(launcherLocalRank(), 0);
  auto comm = Communicator::forThisProcess();
  EXPECT_EQ(comm->size(), 1);
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->description(), "single process");
  EXPECT_FALSE(comm->reducesOnDevice());
  float values[2] = {1.5f, -2.0f};
  comm->allreduceSum(values, 2);
  EXPECT_EQ(values[0], 1.5f);
  float gathered[2] = {0, 0};
  comm->gatherToRoot(values, 2, gathered);
  EXPECT_EQ(gathered[1], -2.0f);
  EXPECT_THROW(comm->allreduceAverageOnDevice({}), Error);

  ::setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
  EXPECT_EQ(launcherWorldSize(), 4);
  EXPECT_EQ(launcherLocalRank(), 3);
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
}

#if TXL_ENABLE_CUDA
// NCCL loads from the CUDA installation (no GPU needed to load it) with
// the ncclAvg reduction the device path uses (NCCL 2.10).
TEST(DataParallelTest, NcclLoads) {
  ::unsetenv("TXL_NCCL_LIBRARY");
  EXPECT_GE(ncclLibraryVersion(), 21000);
}
#else
// Without the CUDA backend there is no NCCL, and it is said why.
TEST(DataParallelTest, NoNcclWithoutTheCudaBackend) {
  test::expectError([] { ncclLibraryVersion(); }, TXL_UNAVAILABLE,
                    {"no NCCL", "built without the CUDA backend"});
}
#endif

} // namespace
} // namespace txl::rt
