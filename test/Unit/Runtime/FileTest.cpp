//===- FileTest.cpp - AtomicFileWriter on what stands at its path ---------===//
//
// Issue 48's first defect: outputs replaced what stood at their path (a
// device node, a FIFO, a symlink became a regular file; a 0600 file became
// 0644). Each case below failed before the writer looked at the path.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "txl/rt/support/File.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <string>

namespace txl::rt {
namespace {

using test::slurp;
using test::TempDir;

struct stat lstatOf(const std::string &path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

TEST(AtomicFileWriterTest, NewFileGetsUmaskMode) {
  TempDir dir;
  mode_t mask = ::umask(022);
  writeFileAtomic(dir.file("new"), "abc");
  ::umask(mask);
  EXPECT_EQ(slurp(dir.file("new")), "abc");
  EXPECT_EQ(lstatOf(dir.file("new")).st_mode & 07777, 0644u);
  EXPECT_EQ(dir.list(), std::vector<std::string>{"new"}); // no temporary left
}

TEST(AtomicFileWriterTest, ExistingFileKeepsItsMode) {
  TempDir dir;
  std::string path = dir.write("secret", "old");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  writeFileAtomic(path, "new");
  EXPECT_EQ(slurp(path), "new");
  EXPECT_EQ(lstatOf(path).st_mode & 07777, 0600u);
}

TEST(AtomicFileWriterTest, SymlinkIsFollowed) {
  TempDir dir;
  std::string target = dir.write("target", "old");
  std::string link = dir.file("link");
  ASSERT_EQ(::symlink("target", link.c_str()), 0);
  writeFileAtomic(link, "new");
  EXPECT_TRUE(S_ISLNK(lstatOf(link).st_mode));
  EXPECT_EQ(slurp(target), "new");
}

TEST(AtomicFileWriterTest, DanglingSymlinkCreatesItsTarget) {
  TempDir dir;
  std::string link = dir.file("link");
  ASSERT_EQ(::symlink("made", link.c_str()), 0);
  writeFileAtomic(link, "bytes");
  EXPECT_TRUE(S_ISLNK(lstatOf(link).st_mode));
  EXPECT_EQ(slurp(dir.file("made")), "bytes");
}

TEST(AtomicFileWriterTest, FifoIsWrittenThrough) {
  TempDir dir;
  std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The reader's end first (non-blocking), so that the writer's open does
  // not wait, and a writer that replaced the FIFO leaves it empty.
  int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  writeFileAtomic(fifo, "through the pipe");
  char buffer[64] = {};
  ssize_t n = ::read(reader, buffer, sizeof buffer);
  ::close(reader);
  EXPECT_EQ(std::string(buffer, n > 0 ? size_t(n) : 0), "through the pipe");
  EXPECT_TRUE(S_ISFIFO(lstatOf(fifo).st_mode));
}

/// A character device node in `dir` with the numbers of `device` (a copy
/// of /dev/null or /dev/full that a broken writer can replace harmlessly),
/// or `device` itself where nodes cannot be made (not root: there a broken
/// writer's rename into /dev fails as well).
std::string deviceNode(const TempDir &dir, const char *device) {
  struct stat st {};
  EXPECT_EQ(::stat(device, &st), 0);
  std::string node = dir.file(std::string(device).substr(5));
  if (::mknod(node.c_str(), S_IFCHR | 0666, st.st_rdev) == 0)
    return node;
  return device;
}

TEST(AtomicFileWriterTest, DeviceIsWrittenThroughNotReplaced) {
  TempDir dir;
  std::string null = deviceNode(dir, "/dev/null");
  writeFileAtomic(null, "discarded");
  EXPECT_TRUE(S_ISCHR(lstatOf(null).st_mode));
  std::string full = deviceNode(dir, "/dev/full");
  try {
    writeFileAtomic(full, "no room");
    ADD_FAILURE() << "writing " << full << " succeeded";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(
                  full + ": write failed: No space left on device"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(S_ISCHR(lstatOf(full).st_mode));
}

TEST(AtomicFileWriterTest, DirectoryIsRefused) {
  TempDir dir;
  try {
    writeFileAtomic(dir.path(), "x");
    FAIL() << "writing a directory succeeded";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos)
        << e.what();
  }
}

} // namespace
} // namespace txl::rt
