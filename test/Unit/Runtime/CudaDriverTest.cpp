//===- CudaDriverTest.cpp - The dlopen'ed CUDA driver table -----*- C++ -*-===//
//
// No GPU and no driver here or in CI: these tests pin what a user without
// one sees (a missing libcuda, the toolkit's stub, a library that is not a
// driver) and the CUresult -> message boundary.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/CudaDriver.h"
#include "txl/rt/support/Status.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

namespace txl::rt {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char *kStub = "/usr/local/cuda/lib64/stubs/libcuda.so";

// No libcuda: one line naming the library and dlopen's reason.
TEST(CudaDriverTest, MissingLibraryNamesIt) {
  std::string message =
      test::expectError([] { CudaDriver driver("libtxl-no-such-cuda.so.1"); },
                        TXL_UNAVAILABLE, {});
  EXPECT_THAT(message,
              StartsWith("no CUDA driver: dlopen(libtxl-no-such-cuda.so.1) "
                         "failed: "));
  EXPECT_THAT(message, HasSubstr("cannot open shared object file"));
}

// A library that is not a driver: the first symbol it lacks is named.
TEST(CudaDriverTest, LibraryWithoutTheSymbols) {
  std::string message = test::expectError(
      [] { CudaDriver driver("libm.so.6"); }, TXL_UNAVAILABLE, {});
  EXPECT_EQ(message, "no usable CUDA driver: libm.so.6 has no symbol "
                     "cuGetErrorName (the runtime needs the CUDA 11 driver "
                     "API or newer)");
}

// The toolkit's stub resolves every symbol, and every call answers
// CUDA_ERROR_STUB_LIBRARY (34), including cuGetErrorName: the runtime's own
// table names it.
TEST(CudaDriverTest, StubLibraryResolvesAndIsNamed) {
  if (!std::filesystem::exists(kStub))
    GTEST_SKIP() << kStub << " is not installed";
  CudaDriver driver(kStub);
#define TXL_CUDA_SYMBOL(name, ret, params)                                     \
  EXPECT_NE(driver.name, nullptr) << #name;
#include "txl/rt/device/CudaSymbols.def"
#undef TXL_CUDA_SYMBOL
  int init = driver.cuInit(0);
  EXPECT_EQ(init, CUDA_ERROR_STUB_LIBRARY);
  std::string message = test::expectError([&] { driver.check(init, "cuInit"); },
                                          TXL_UNAVAILABLE, {});
  EXPECT_EQ(message, "cuInit: CUDA_ERROR_STUB_LIBRARY (the CUDA toolkit's "
                     "stub libcuda was loaded, not a driver)");
  EXPECT_EQ(driver.library(), kStub);
}

// Success passes; codes the table knows are named (by value: the table
// takes them from cuda.h), others are numbered.
TEST(CudaDriverTest, ErrorNames) {
  if (!std::filesystem::exists(kStub))
    GTEST_SKIP() << kStub << " is not installed";
  CudaDriver driver(kStub);
  driver.check(CUDA_SUCCESS, "cuMemAlloc");
  EXPECT_EQ(driver.errorName(100), "CUDA_ERROR_NO_DEVICE");
  EXPECT_EQ(driver.errorName(2), "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(driver.errorName(12345), "CUresult 12345");
  std::string message = test::expectError(
      [&] { driver.check(12345, "cuLaunchKernel"); }, TXL_UNAVAILABLE, {});
  EXPECT_EQ(message, "cuLaunchKernel: CUresult 12345");
  std::string oom = test::expectError([&] { driver.check(2, "cuMemAlloc"); },
                                      TXL_UNAVAILABLE, {});
  EXPECT_EQ(oom, "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
}

} // namespace
} // namespace txl::rt
