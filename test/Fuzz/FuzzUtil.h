//===- FuzzUtil.h - Shared pieces of the libFuzzer targets ------*- C++ -*-===//
//
// The readers under test take paths (they map or read whole files), so a
// target writes its input into a scratch directory of its own and calls the
// reader on that path: the code fuzzed is exactly the code users run.
//
// A reader may refuse an input only with `txl::rt::Error`; any other
// exception escaping a target (std::bad_alloc, std::out_of_range from a
// JSON accessor, ...) aborts and libFuzzer reports it as a crash, as it does
// for sanitizer reports and for a violated invariant (`FUZZ_CHECK`).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_TEST_FUZZ_FUZZUTIL_H
#define TXL_TEST_FUZZ_FUZZUTIL_H

#include "txl/rt/support/File.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include <unistd.h>

namespace txl::fuzz {

/// Aborts with the failed condition: an invariant of a reader's result.
#define FUZZ_CHECK(cond)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__,          \
                   __LINE__, #cond);                                           \
      std::abort();                                                            \
    }                                                                          \
  } while (0)

/// A directory of this process's own for the files of one input: under
/// $TMPDIR (default /tmp), created on first use, reused by the next input
/// (libFuzzer runs inputs one at a time) and removed when the process exits
/// normally.
inline const std::string &scratchDir() {
  // Never destroyed: the exit handler below still needs it.
  static const std::string &dir = *new std::string([] {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/txl-fuzz.XXXXXX";
    if (!::mkdtemp(pattern.data())) {
      std::perror("txl-fuzz: mkdtemp");
      std::abort();
    }
    std::atexit([] { std::filesystem::remove_all(scratchDir()); });
    return pattern;
  }());
  return dir;
}

/// Writes `bytes` to `<scratchDir>/<name>` (replacing it) and returns the
/// path. Aborts when the file cannot be written: not an input's fault.
inline std::string writeScratch(const std::string &name,
                                std::string_view bytes) {
  std::string path = scratchDir() + "/" + name;
  std::FILE *file = std::fopen(path.c_str(), "wb");
  if (!file ||
      std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size() ||
      std::fclose(file) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
  return path;
}

/// Removes `<scratchDir>/<name>` if it exists.
inline void removeScratch(const std::string &name) {
  ::unlink((scratchDir() + "/" + name).c_str());
}

} // namespace txl::fuzz

#endif // TXL_TEST_FUZZ_FUZZUTIL_H
