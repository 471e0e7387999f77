//===- CLBlastTest.cpp - CLBlast's table ----------------------------------===//
//
// CLBlast as a user meets it: loaded by dlopen, missing, or answering with
// a status. Built with the OpenCL backend (TXL_ENABLE_OPENCL).
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/CLBlast.h"
#include "txl/rt/support/Status.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace txl::rt {
namespace {

using ::testing::StartsWith;

// Debian's CLBlast resolves; its own codes and OpenCL's are named.
TEST(CLBlastTest, CLBlastCodes) {
  CLBlast clblast;
  EXPECT_NE(clblast.CLBlastSgemmStridedBatched, nullptr);
  clblast.check(CLBlastSuccess, "sgemm");
  EXPECT_EQ(test::expectError([&] { clblast.check(-1014, "sgemm"); },
                              TXL_UNAVAILABLE, {}),
            "sgemm: CLBlastInvalidLeadDimC (leading dimension of C too "
            "small)");
  EXPECT_EQ(test::expectError([&] { clblast.check(-4, "sgemm"); },
                              TXL_UNAVAILABLE, {}),
            "sgemm: CL_MEM_OBJECT_ALLOCATION_FAILURE (device memory "
            "exhausted)");
  EXPECT_EQ(test::expectError([&] { clblast.check(-3000, "sgemm"); },
                              TXL_UNAVAILABLE, {}),
            "sgemm: CLBlastStatusCode -3000");
  std::string missing = test::expectError(
      [] { CLBlast clblast("libtxl-no-clblast.so.1"); }, TXL_UNAVAILABLE, {});
  EXPECT_THAT(missing,
              StartsWith("no CLBlast: dlopen(libtxl-no-clblast.so.1) failed"));
}

} // namespace
} // namespace txl::rt
