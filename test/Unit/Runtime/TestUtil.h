//===- TestUtil.h - Shared helpers of the runtime unit tests ----*- C++ -*-===//

#ifndef TXL_TEST_UNIT_RUNTIME_TESTUTIL_H
#define TXL_TEST_UNIT_RUNTIME_TESTUTIL_H

#include "txl/rt/data/Corpus.h"
#include "txl/rt/support/Status.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace txl::rt::test {

/// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &path() const { return path_; }
  /// path() + "/" + name.
  std::string file(std::string_view name) const;
  /// Writes `bytes` to file(name) and returns that path.
  std::string write(std::string_view name, std::string_view bytes) const;
  /// The names of the entries of the directory, sorted.
  std::vector<std::string> list() const;

private:
  std::string path_;
};

/// Reads a whole file (test-side, independent of the runtime's readFile).
std::string slurp(const std::string &path);

/// TXL_SHARED_DIR + "/" + relative. Records a test failure (never a skip) if
/// the file is missing, so a build without /work/shared cannot pass.
std::string sharedPath(std::string_view relative);

/// Runs `fn`, expecting a txl::rt::Error with `code` whose message contains
/// every string of `fragments`; returns the message.
template <typename Fn>
std::string expectError(Fn &&fn, txl_status_code_t code,
                        std::vector<std::string> fragments) {
  try {
    fn();
  } catch (const Error &error) {
    EXPECT_EQ(error.code(), code) << error.what();
    for (const std::string &fragment : fragments)
      EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos)
          << "message: " << error.what() << "\nmissing: " << fragment;
    return error.what();
  }
  ADD_FAILURE() << "expected a txl::rt::Error";
  return "";
}

/// The symbols of `vocab` in id order.
std::vector<std::string> symbols(const Vocab &vocab);

/// Little-endian bytes of `value`.
std::string u64le(uint64_t value);

/// A safetensors file image from a header text and `dataBytes` zero bytes.
std::string safetensorsImage(std::string_view header, size_t dataBytes);

} // namespace txl::rt::test

#endif // TXL_TEST_UNIT_RUNTIME_TESTUTIL_H
