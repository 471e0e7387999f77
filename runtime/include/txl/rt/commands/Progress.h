//===- Progress.h - Terminal progress bar with ETA --------------*- C++ -*-===//
//
// A one-line progress bar redrawn in place ("\r") on stderr while a long
// evaluation runs. It draws only when the stream is a terminal (isatty), so
// logs, pipes and lit tests see nothing of it.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_PROGRESS_H
#define TXL_RT_PROGRESS_H

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace txl::rt {

/// "m:ss" below an hour, "h:mm:ss" above, "--:--" for a negative or
/// non-finite duration (unknown ETA). Seconds are rounded down.
std::string formatDuration(double seconds);

/// One bar line of at most `width` columns (ASCII), e.g.
///   "valid [########............]  40.0% 400/1000 tok | 200 tok/s | ETA 0:03"
/// `done` tokens of `total` after `elapsedSeconds`; the rate is done/elapsed
/// (0 when nothing has elapsed) and the ETA (total - done) / rate. The bar
/// takes the columns the text leaves (it is dropped below 10 columns).
/// `total` <= 0 shows 100%; `done` is clamped to [0, total].
std::string formatProgress(std::string_view label, int64_t done, int64_t total,
                           double elapsedSeconds, int width);

/// The bar over `total` tokens, drawn on `stream`.
class ProgressBar {
public:
  /// Enabled iff `stream` is a terminal.
  ProgressBar(std::string label, int64_t total, std::FILE *stream = stderr);
  /// Enabled as told (tests).
  ProgressBar(std::string label, int64_t total, std::FILE *stream,
              bool enabled);
  ProgressBar(const ProgressBar &) = delete;
  ProgressBar &operator=(const ProgressBar &) = delete;
  ~ProgressBar();

  bool enabled() const { return enabled_; }

  /// Records `done` tokens; redraws at most ten times a second, and always
  /// when `done` reaches `total`.
  void update(int64_t done);

  /// Erases the bar (once); the destructor calls it.
  void finish();

private:
  void draw(int64_t done);

  std::string label_;
  int64_t total_;
  std::FILE *stream_;
  bool enabled_;
  bool drawn_ = false;
  int width_ = 80;
  std::chrono::steady_clock::time_point start_, lastDraw_;
};

} // namespace txl::rt

#endif // TXL_RT_PROGRESS_H
