//===- ProgressTest.cpp - Progress bar and TTY gating -----------*- C++ -*-===//

#include "txl/rt/commands/Progress.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

namespace txl::rt {
namespace {

TEST(ProgressTest, FormatDuration) {
  EXPECT_EQ(formatDuration(0), "0:00");
  EXPECT_EQ(formatDuration(59.9), "0:59");
  EXPECT_EQ(formatDuration(61), "1:01");
  EXPECT_EQ(formatDuration(3599), "59:59");
  EXPECT_EQ(formatDuration(3661), "1:01:01");
  EXPECT_EQ(formatDuration(-1), "--:--");
  EXPECT_EQ(formatDuration(std::numeric_limits<double>::infinity()), "--:--");
  EXPECT_EQ(formatDuration(std::nan("")), "--:--");
}

// 400 of 1000 tokens in 2 s: 200 tok/s, 3 s left; the bar fills the width.
TEST(ProgressTest, FormatProgressLine) {
  std::string line = formatProgress("valid", 400, 1000, 2.0, 80);
  EXPECT_EQ(line, "valid [" + std::string(11, '#') + std::string(18, '.') +
                      "]  40.0% 400/1000 tok | 200 tok/s | ETA 0:03");
  EXPECT_EQ(line.size(), 80u);
}

// Start (unknown rate/ETA), the end, clamping and narrow terminals.
TEST(ProgressTest, FormatProgressEdges) {
  EXPECT_EQ(formatProgress("test", 0, 50, 0.0, 45),
            "test   0.0% 0/50 tok | 0 tok/s | ETA --:--");
  std::string done = formatProgress("test", 50, 50, 5.0, 60);
  EXPECT_NE(done.find("100.0% 50/50 tok | 10 tok/s | ETA 0:00"),
            std::string::npos);
  EXPECT_EQ(done.find('.'), done.find(".0%")); // no unfilled bar cells
  EXPECT_NE(formatProgress("x", 70, 50, 1.0, 80).find("50/50"),
            std::string::npos);
  for (int width : {0, 5, 20, 47, 48, 100, 200}) {
    std::string line = formatProgress("valid", 123, 1000, 1.5, width);
    EXPECT_LE(line.size(), static_cast<size_t>(width)) << width;
  }
}

// Nothing is drawn on a non-terminal; an enabled bar draws with "\r" and
// erases itself on finish.
TEST(ProgressTest, DrawsOnlyWhenEnabled) {
  std::FILE *file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressBar bar("valid", 100, file); // a regular file is not a TTY
    EXPECT_FALSE(bar.enabled());
    bar.update(50);
    bar.update(100);
  }
  EXPECT_EQ(std::ftell(file), 0L);
  {
    ProgressBar bar("valid", 100, file, /*enabled=*/true);
    bar.update(100);
  }
  std::rewind(file);
  char buffer[512] = {};
  size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, file);
  std::string text(buffer, n);
  EXPECT_EQ(text.rfind("\r", 0), 0u);
  EXPECT_NE(text.find("valid ["), std::string::npos);
  EXPECT_NE(text.find("100/100 tok"), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 4), "\r\x1b[K"); // erased at the end
  std::fclose(file);
}

} // namespace
} // namespace txl::rt
