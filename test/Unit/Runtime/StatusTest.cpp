//===- StatusTest.cpp - Status objects, error boundary ----------*- C++ -*-===//

#include "txl/rt/support/Status.h"

#include <gtest/gtest.h>

#include <new>

namespace txl::rt {
namespace {

// NULL is success: code TXL_OK, empty message, free is a no-op.
TEST(StatusTest, NullIsSuccess) {
  EXPECT_EQ(txl_status_code(nullptr), TXL_OK);
  EXPECT_STREQ(txl_status_message(nullptr), "");
  txl_status_free(nullptr);
}

// makeStatus formats with fmt and keeps the code.
TEST(StatusTest, MakeStatusFormats) {
  txl_status_t status =
      makeStatus(TXL_NOT_FOUND, "{}: tensor '{}' not found", "w.st", "x");
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(txl_status_code(status), TXL_NOT_FOUND);
  EXPECT_STREQ(txl_status_message(status), "w.st: tensor 'x' not found");
  txl_status_free(status);
}

// guardStatus maps Error to its own code and other exceptions to data errors.
TEST(StatusTest, GuardMapsExceptions) {
  EXPECT_EQ(guardStatus([] {}), nullptr);

  txl_status_t status =
      guardStatus([] { fail(TXL_IO_ERROR, "disk {} failed", 3); });
  EXPECT_EQ(txl_status_code(status), TXL_IO_ERROR);
  EXPECT_STREQ(txl_status_message(status), "disk 3 failed");
  txl_status_free(status);

  status = guardStatus([] { throw std::runtime_error("plain"); });
  EXPECT_EQ(txl_status_code(status), TXL_DATA_ERROR);
  EXPECT_STREQ(txl_status_message(status), "plain");
  txl_status_free(status);

  status = guardStatus([] { throw std::bad_alloc(); });
  EXPECT_EQ(txl_status_code(status), TXL_INVALID_ARGUMENT);
  EXPECT_STREQ(txl_status_message(status), "out of memory");
  txl_status_free(status);

  status = guardStatus([] { throw 42; });
  EXPECT_EQ(txl_status_code(status), TXL_DATA_ERROR);
  txl_status_free(status);
}

// checkStatus consumes a failed status and rethrows it as an Error.
TEST(StatusTest, CheckStatusThrows) {
  EXPECT_NO_THROW(checkStatus(nullptr));
  try {
    checkStatus(makeStatus(TXL_INVALID_ARGUMENT, std::string("bad option")));
    FAIL() << "expected an Error";
  } catch (const Error &error) {
    EXPECT_EQ(error.code(), TXL_INVALID_ARGUMENT);
    EXPECT_STREQ(error.what(), "bad option");
  }
}

} // namespace
} // namespace txl::rt
