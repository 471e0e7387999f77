//===- BackendsTest.cpp - One CMake option per device backend -------------===//
//
// The host backend is always built; CUDA and OpenCL each with their option
// (TXL_ENABLE_CUDA, TXL_ENABLE_OPENCL). A backend left out is refused by
// name, through openDevice and through the ABI the compiled code uses
// (txl_device_open); one built in never says so, whatever else is missing
// on this machine (no CUDA driver here). scripts/test.sh --all builds the
// runtime with both off and runs these tests there too.
//
//===----------------------------------------------------------------------===//

#include "txl/device.h"
#include "txl/rt/device/Device.h"
#include "txl/rt/support/Status.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace txl::rt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(BackendsTest, TheHostIsAlwaysBuilt) {
  std::unique_ptr<Device> host = openDevice(Backend::Host);
  EXPECT_TRUE(host->hostMemory());
  EXPECT_EQ(std::string(builtBackends()),
            std::string("host") + (TXL_ENABLE_CUDA ? " cuda" : "") +
                (TXL_ENABLE_OPENCL ? " opencl" : ""));
}

/// What opening `backend` says: "" when it opened.
std::string openingMessage(Backend backend) {
  try {
    openDevice(backend);
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

/// txl_device_open's error for `backend`: "" when it opened (and closed).
std::string abiOpeningMessage(int32_t backend) {
  char error[512] = {};
  int status = txl_device_open(backend, 0, error, sizeof(error));
  txl_device_close();
  return status == 0 ? "" : error;
}

TEST(BackendsTest, CudaAsBuilt) {
  const std::string message = openingMessage(Backend::Cuda);
  const std::string abi = abiOpeningMessage(TXL_BACKEND_CUDA);
  if (TXL_ENABLE_CUDA) {
    EXPECT_THAT(message, Not(HasSubstr("built without")));
    EXPECT_THAT(abi, Not(HasSubstr("built without")));
  } else {
    EXPECT_THAT(message, HasSubstr("built without the CUDA backend "
                                   "(TXL_ENABLE_CUDA=OFF)"));
    EXPECT_THAT(abi, HasSubstr("built without the CUDA backend"));
  }
}

TEST(BackendsTest, OpenCLAsBuilt) {
  const std::string message = openingMessage(Backend::OpenCL);
  if (TXL_ENABLE_OPENCL)
    EXPECT_THAT(message, Not(HasSubstr("built without")));
  else
    EXPECT_THAT(message, HasSubstr("built without the OpenCL backend "
                                   "(TXL_ENABLE_OPENCL=OFF)"));
}

} // namespace
} // namespace txl::rt
