//===- CApiTest.cpp - The C API's size and value arguments ----------------===//
//
// Issue 48, item 12: the C API took sizes and values it cannot honour and
// answered with wrapped numbers or NaN parameters. Each case returns
// TXL_INVALID_ARGUMENT with a message now; each failed before.
//
//===----------------------------------------------------------------------===//

#include "txl/runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace {

/// A model table as compiled code would write it, without parameters.
txl_model_info_t smallModel() {
  txl_model_info_t info{};
  info.abi_version = TXL_ABI_VERSION;
  info.n_layer = 2;
  info.d_model = 8;
  info.n_head = 2;
  info.d_head = 4;
  info.n_params = 0;
  return info;
}

/// The status's code and message, freed; TXL_OK for success.
std::pair<txl_status_code_t, std::string> take(txl_status_t status) {
  if (!status)
    return {TXL_OK, ""};
  std::pair<txl_status_code_t, std::string> result = {
      txl_status_code(status), txl_status_message(status)};
  txl_status_free(status);
  return result;
}

TEST(CApiTest, KvCacheFloats) {
  txl_model_info_t info = smallModel();
  int64_t floats = -1;
  EXPECT_EQ(take(txl_kv_cache_floats(&info, 8, 3, &floats)).first, TXL_OK);
  EXPECT_EQ(floats, 2 * 2 * (2 * 8) * 3 * 2 * 4);
  auto [code, message] = take(txl_kv_cache_floats(&info, -5, 3, &floats));
  EXPECT_EQ(code, TXL_INVALID_ARGUMENT);
  EXPECT_NE(message.find("must not be negative"), std::string::npos);
  int64_t big = int64_t(1) << 40;
  std::tie(code, message) = take(txl_kv_cache_floats(&info, big, big, &floats));
  EXPECT_EQ(code, TXL_INVALID_ARGUMENT);
  EXPECT_NE(message.find("more than 9223372036854775807 floats"),
            std::string::npos)
      << message;
  EXPECT_EQ(take(txl_kv_cache_floats(nullptr, 8, 3, &floats)).first,
            TXL_INVALID_ARGUMENT);
  EXPECT_EQ(take(txl_kv_cache_floats(&info, 8, 3, nullptr)).first,
            TXL_INVALID_ARGUMENT);
}

TEST(CApiTest, SessionCreateChecksTheTable) {
  txl_model_info_t info = smallModel();
  info.n_params = -1;
  txl_session_t *session = nullptr;
  auto [code, message] = take(txl_session_create(&info, nullptr, &session));
  EXPECT_EQ(code, TXL_INVALID_ARGUMENT);
  EXPECT_NE(message.find("n_params -1"), std::string::npos) << message;
  EXPECT_EQ(session, nullptr);
  info = smallModel();
  info.n_layer = 0;
  EXPECT_EQ(take(txl_session_create(&info, nullptr, &session)).first,
            TXL_INVALID_ARGUMENT);
}

TEST(CApiTest, OptimizerStepChecksItsArguments) {
  txl_model_info_t info = smallModel();
  txl_session_t *session = nullptr;
  ASSERT_EQ(take(txl_session_create(&info, nullptr, &session)).first, TXL_OK);
  float norm = 0;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    double lr;
    int64_t step;
    int32_t parts;
    const char *fragment;
  } cases[] = {
      {nan, 1, 1, "lr must be finite and non-negative, got nan"},
      {std::numeric_limits<double>::infinity(), 1, 1, "lr must be finite"},
      {-1e-3, 1, 1, "lr must be finite and non-negative"},
      {1e-3, 0, 1, "step counts from 1, got 0"},
      {1e-3, 1, 0, "parts must be at least 1, got 0"},
      {1e-3, 1, -5, "parts must be at least 1, got -5"},
  };
  for (const Case &c : cases) {
    auto [code, message] = take(
        txl_session_optimizer_step(session, c.lr, c.step, 0, c.parts, &norm));
    EXPECT_EQ(code, TXL_INVALID_ARGUMENT) << c.fragment;
    EXPECT_NE(message.find(c.fragment), std::string::npos) << message;
  }
  txl_session_release(session);
}

} // namespace
