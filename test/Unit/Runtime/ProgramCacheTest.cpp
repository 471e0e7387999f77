//===- ProgramCacheTest.cpp - The on-disk program cache
//---------------------===//
//
// ProgramCache holds its whole key and compares it byte for byte: another
// device key or other SPIR-V with the same entry file is a miss, and so is
// a truncated, empty or foreign file. Writing into a directory that cannot
// be created fails quietly. The environment picks the directory.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/ProgramCache.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace txl::rt {
namespace {

using test::slurp;
using test::TempDir;

TEST(ProgramCacheTest, StoresAndFindsTheBinary) {
  TempDir dir;
  ProgramCache cache(dir.file("nested/cache"));
  EXPECT_FALSE(cache.lookup("device A", "spirv 1"));
  ASSERT_TRUE(cache.store("device A", "spirv 1", "binary 1"));
  std::optional<std::string> found = cache.lookup("device A", "spirv 1");
  ASSERT_TRUE(found);
  EXPECT_EQ(*found, "binary 1");
  // Another device or other SPIR-V: a miss.
  EXPECT_FALSE(cache.lookup("device B", "spirv 1"));
  EXPECT_FALSE(cache.lookup("device A", "spirv 2"));
  // A second store replaces the entry.
  ASSERT_TRUE(cache.store("device A", "spirv 1", "binary 2"));
  EXPECT_EQ(*cache.lookup("device A", "spirv 1"), "binary 2");
}

TEST(ProgramCacheTest, BinaryWithZeroBytesRoundTrips) {
  TempDir dir;
  ProgramCache cache(dir.path());
  std::string binary("\0\x7f"
                     "ELF\0\0\xff",
                     8);
  std::string spirv("\x03\x02\x23\x07\0\0", 6);
  ASSERT_TRUE(cache.store("key", spirv, binary));
  EXPECT_EQ(*cache.lookup("key", spirv), binary);
  // SPIR-V that differs only after an embedded NUL is other SPIR-V.
  EXPECT_FALSE(cache.lookup("key", std::string("\x03\x02\x23\x07\0\1", 6)));
}

TEST(ProgramCacheTest, AnEntryHoldingOtherSourceIsAMiss) {
  // An entry file at the right name whose stored key and source are not
  // the ones asked for (what a hash collision would look like).
  TempDir dir;
  ProgramCache cache(dir.path());
  ASSERT_TRUE(cache.store("key", "other spirv", "binary"));
  std::string entry = slurp(cache.path("key", "other spirv"));
  std::ofstream(cache.path("key", "spirv"), std::ios::binary) << entry;
  EXPECT_FALSE(cache.lookup("key", "spirv"));
  EXPECT_TRUE(cache.lookup("key", "other spirv"));
}

TEST(ProgramCacheTest, DamagedEntriesAreMisses) {
  TempDir dir;
  ProgramCache cache(dir.path());
  ASSERT_TRUE(cache.store("key", "spirv", "the built program"));
  std::string path = cache.path("key", "spirv");
  std::string entry = slurp(path);
  auto expectMiss = [&](std::string_view bytes, const char *what) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        << std::string(bytes);
    EXPECT_FALSE(cache.lookup("key", "spirv")) << what;
  };
  for (size_t cut :
       {size_t(0), size_t(4), size_t(8), size_t(12), entry.size() - 1})
    expectMiss(std::string_view(entry).substr(0, cut), "truncated");
  expectMiss(entry + "x", "trailing bytes");
  std::string foreign = entry;
  foreign[0] = 'X';
  expectMiss(foreign, "another magic");
  // An empty binary is never a program.
  ASSERT_TRUE(cache.store("key", "spirv", ""));
  EXPECT_FALSE(cache.lookup("key", "spirv"));
}

TEST(ProgramCacheTest, UnwritableDirectoryFailsQuietly) {
  TempDir dir;
  std::string file = dir.write("a-file", "not a directory");
  ProgramCache cache(file + "/cache");
  EXPECT_FALSE(cache.store("key", "spirv", "binary"));
  EXPECT_FALSE(cache.lookup("key", "spirv"));
}

/// Sets (or unsets, for nullptr) an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> old_;
};

TEST(ProgramCacheTest, TheEnvironmentPicksTheDirectory) {
  ScopedEnv off("TXL_OPENCL_CACHE", nullptr);
  ScopedEnv dir("TXL_OPENCL_CACHE_DIR", "/explicit");
  ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
  ScopedEnv home("HOME", "/home/user");
  EXPECT_EQ(ProgramCache::fromEnvironment()->directory(), "/explicit");
  {
    ScopedEnv unset("TXL_OPENCL_CACHE_DIR", nullptr);
    EXPECT_EQ(ProgramCache::fromEnvironment()->directory(), "/xdg/txlc/opencl");
    ScopedEnv noXdg("XDG_CACHE_HOME", nullptr);
    EXPECT_EQ(ProgramCache::fromEnvironment()->directory(),
              "/home/user/.cache/txlc/opencl");
    ScopedEnv noHome("HOME", nullptr);
    EXPECT_FALSE(ProgramCache::fromEnvironment());
  }
  ScopedEnv disabled("TXL_OPENCL_CACHE", "0");
  EXPECT_FALSE(ProgramCache::fromEnvironment());
}

} // namespace
} // namespace txl::rt
