//===- Progress.cpp - Terminal progress bar with ETA ------------*- C++ -*-===//

#include "txl/rt/commands/Progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include <sys/ioctl.h>
#include <unistd.h>

namespace txl::rt {

std::string formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 1e9)
    return "--:--";
  auto total = static_cast<int64_t>(seconds);
  int64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  if (h > 0)
    return fmt::format("{}:{:02}:{:02}", h, m, s);
  return fmt::format("{}:{:02}", m, s);
}

std::string formatProgress(std::string_view label, int64_t done, int64_t total,
                           double elapsedSeconds, int width) {
  done = std::clamp<int64_t>(done, 0, std::max<int64_t>(total, 0));
  double fraction = total > 0 ? static_cast<double>(done) / total : 1.0;
  double rate = elapsedSeconds > 0 ? done / elapsedSeconds : 0.0;
  double eta = rate > 0 ? (total - done) / rate : -1.0;
  if (done == total)
    eta = 0;
  std::string tail =
      fmt::format("{:5.1f}% {}/{} tok | {:.0f} tok/s | ETA {}",
                  100.0 * fraction, done, total, rate, formatDuration(eta));
  // "<label> [<bar>] <tail>": the bar gets what is left.
  int barWidth = width - static_cast<int>(label.size() + tail.size()) - 4;
  if (barWidth < 10)
    return fmt::format("{} {}", label, tail)
        .substr(0, static_cast<size_t>(std::max(width, 0)));
  auto filled = static_cast<int>(fraction * barWidth);
  return fmt::format("{} [{}{}] {}", label, std::string(filled, '#'),
                     std::string(barWidth - filled, '.'), tail);
}

ProgressBar::ProgressBar(std::string label, int64_t total, std::FILE *stream)
    : ProgressBar(std::move(label), total, stream,
                  ::isatty(::fileno(stream)) == 1) {}

ProgressBar::ProgressBar(std::string label, int64_t total, std::FILE *stream,
                         bool enabled)
    : label_(std::move(label)), total_(total), stream_(stream),
      enabled_(enabled), start_(std::chrono::steady_clock::now()),
      lastDraw_(start_) {
  struct winsize size;
  if (enabled_ && ::ioctl(::fileno(stream_), TIOCGWINSZ, &size) == 0 &&
      size.ws_col > 0)
    width_ = size.ws_col;
}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(int64_t done) {
  if (!enabled_)
    return;
  auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total_ &&
      now - lastDraw_ < std::chrono::milliseconds(100))
    return;
  lastDraw_ = now;
  draw(done);
}

void ProgressBar::draw(int64_t done) {
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
          .count();
  // One column short of the width so the cursor never wraps.
  std::string line = formatProgress(label_, done, total_, elapsed, width_ - 1);
  std::fprintf(stream_, "\r%s\x1b[K", line.c_str());
  std::fflush(stream_);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (!enabled_ || !drawn_)
    return;
  std::fputs("\r\x1b[K", stream_);
  std::fflush(stream_);
  drawn_ = false;
}

} // namespace txl::rt
