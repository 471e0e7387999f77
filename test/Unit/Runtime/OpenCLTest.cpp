//===- OpenCLTest.cpp - The dlopen'ed OpenCL table ----------------*- C++
//-*-===//
//
// What a user of an OpenCL executable sees without a loader, with a library
// that is not one, and with a loader that finds no platform; and the
// cl_int -> message boundary. The ICD loader comes from
// scripts/install-deps.sh (ocl-icd-libopencl1).
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/OpenCL.h"
#include "txl/rt/support/Status.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <pthread.h>
#include <thread>

namespace txl::rt {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(OpenCLTest, MissingLoaderNamesIt) {
  std::string message = test::expectError(
      [] { OpenCL cl("libtxl-no-such-opencl.so.1"); }, TXL_UNAVAILABLE, {});
  EXPECT_THAT(message,
              StartsWith("no OpenCL ICD loader: "
                         "dlopen(libtxl-no-such-opencl.so.1) failed: "));
  EXPECT_THAT(message, HasSubstr("cannot open shared object file"));
}

TEST(OpenCLTest, LibraryWithoutTheSymbols) {
  std::string message =
      test::expectError([] { OpenCL cl("libm.so.6"); }, TXL_UNAVAILABLE, {});
  EXPECT_EQ(message,
            "no usable OpenCL ICD loader: libm.so.6 has no symbol "
            "clGetPlatformIDs (the runtime needs OpenCL 2.1 or newer)");
}

// The loader with no ICD to load (OCL_ICD_VENDORS names an empty folder):
// one line saying so, before anything else is tried.
TEST(OpenCLTest, NoPlatform) {
  std::filesystem::path empty =
      std::filesystem::temp_directory_path() / "txl-opencl-no-vendors";
  std::filesystem::create_directories(empty);
  ::setenv("OCL_ICD_VENDORS", empty.c_str(), 1);
  OpenCL cl;
  EXPECT_EQ(cl.library(), "libOpenCL.so.1");
  std::string message =
      test::expectError([&] { cl.platforms(); }, TXL_UNAVAILABLE, {});
  EXPECT_EQ(message,
            "no OpenCL platform: clGetPlatformIDs: CL_PLATFORM_NOT_FOUND_KHR "
            "(the ICD loader found no OpenCL implementation in "
            "/etc/OpenCL/vendors or in the folder OCL_ICD_VENDORS names)");
}

/// Sets the process's default thread stack size to `bytes`.
void setDefaultStack(size_t bytes) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_getattr_default_np(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, bytes), 0);
  ASSERT_EQ(pthread_setattr_default_np(&attr), 0);
  pthread_attr_destroy(&attr);
}

/// The stack size of a thread created now with the default attributes.
size_t newThreadStack() {
  size_t bytes = 0;
  std::thread([&bytes] {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      pthread_attr_getstacksize(&attr, &bytes);
      pthread_attr_destroy(&attr);
    }
  }).join();
  return bytes;
}

// Intel's CPU runtime runs workgroups on threads made with the default
// attributes; rel_attention_grad_kv_bf16_dropatt_d80's 8.5 MiB frame
// overflowed glibc's 8 MiB default.
TEST(OpenCLTest, KernelThreadsGetLargeStacks) {
  constexpr size_t MiB = size_t(1) << 20;
  setDefaultStack(8 * MiB);
  ASSERT_LT(newThreadStack(), 9 * MiB);
  reserveKernelThreadStacks();
  EXPECT_GE(newThreadStack(), 64 * MiB);
  // A larger default is kept.
  setDefaultStack(128 * MiB);
  reserveKernelThreadStacks();
  EXPECT_GE(newThreadStack(), 128 * MiB);
  setDefaultStack(64 * MiB);
}

TEST(OpenCLTest, ErrorNames) {
  EXPECT_EQ(OpenCL::errorName(-30), "CL_INVALID_VALUE");
  EXPECT_EQ(OpenCL::errorName(-11), "CL_BUILD_PROGRAM_FAILURE");
  EXPECT_EQ(OpenCL::errorName(-9999), "cl_int -9999");
  OpenCL cl;
  cl.check(0, "clFinish");
  std::string message = test::expectError(
      [&] { cl.check(-54, "clEnqueueNDRangeKernel"); }, TXL_UNAVAILABLE, {});
  EXPECT_EQ(message, "clEnqueueNDRangeKernel: CL_INVALID_WORK_GROUP_SIZE "
                     "(work-group size not supported)");
  std::string unknown = test::expectError([&] { cl.check(-9999, "clFinish"); },
                                          TXL_UNAVAILABLE, {});
  EXPECT_EQ(unknown, "clFinish: cl_int -9999");
}

} // namespace
} // namespace txl::rt
