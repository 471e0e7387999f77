//===- NpyTest.cpp - NumPy .npy reader/writer -------------------*- C++ -*-===//

#include "txl/rt/data/Npy.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace txl::rt {
namespace {

using test::expectError;
using test::sharedPath;
using test::TempDir;
using ::testing::ElementsAre;

/// A .npy image: magic, version, little-endian header length, `dict` and
/// `data`; no padding (readers must not rely on numpy's alignment).
std::string npyImage(int major, const std::string &dict,
                     const std::string &data) {
  std::string bytes = "\x93NUMPY";
  bytes.push_back(static_cast<char>(major));
  bytes.push_back('\0');
  size_t lenBytes = major == 1 ? 2 : 4;
  for (size_t i = 0; i < lenBytes; ++i)
    bytes.push_back(static_cast<char>((dict.size() >> (8 * i)) & 0xff));
  return bytes + dict + data;
}

// float32 and int64 arrays of several ranks come back unchanged.
TEST(NpyTest, RoundTrip) {
  TempDir dir;
  std::vector<float> values = {0.5f, -1.25f, 3.0f, 1e-20f, 7.0f, -0.0f};
  writeNpy(dir.file("f.npy"), {2, 3}, values.data());
  NpyArray f = readNpy(dir.file("f.npy"));
  EXPECT_EQ(f.dtype, DType::F32);
  EXPECT_EQ(f.shape, (Shape{2, 3}));
  EXPECT_EQ(f.f32, values);
  EXPECT_TRUE(f.i64.empty());
  EXPECT_EQ(f.numElements(), 6);

  std::vector<int64_t> ids = {1, -2, int64_t(1) << 50};
  writeNpy(dir.file("i.npy"), {3}, ids.data());
  NpyArray i = readNpy(dir.file("i.npy"));
  EXPECT_EQ(i.dtype, DType::I64);
  EXPECT_EQ(i.shape, (Shape{3}));
  EXPECT_EQ(i.i64, ids);

  int64_t scalar = 9;
  writeNpy(dir.file("s.npy"), {}, &scalar);
  NpyArray s = readNpy(dir.file("s.npy"));
  EXPECT_TRUE(s.shape.empty());
  EXPECT_THAT(s.i64, ElementsAre(9));

  NpyArray empty;
  empty.shape = {0, 5};
  writeNpy(dir.file("e.npy"), empty);
  EXPECT_EQ(readNpy(dir.file("e.npy")).shape, (Shape{0, 5}));
  EXPECT_THAT(dir.list(), ElementsAre("e.npy", "f.npy", "i.npy", "s.npy"));
}

// The writer produces numpy.save's exact bytes: rewriting the reference
// data.npy (written by numpy) reproduces the file byte for byte.
TEST(NpyTest, WriterMatchesNumpyBytes) {
  std::string reference = sharedPath("reference/rel_basic/data.npy");
  NpyArray array = readNpy(reference);
  TempDir dir;
  writeNpy(dir.file("copy.npy"), array);
  EXPECT_EQ(test::slurp(dir.file("copy.npy")), test::slurp(reference));
}

// The reference streams: data/target int64 [3, 8, 3] are consecutive
// segments of one token stream (target is data shifted by one), nll float32.
TEST(NpyTest, ReadsReferenceCase) {
  NpyArray data = readNpy(sharedPath("reference/rel_basic/data.npy"));
  NpyArray target = readNpy(sharedPath("reference/rel_basic/target.npy"));
  NpyArray nll = readNpy(sharedPath("reference/rel_basic/nll.npy"));
  ASSERT_EQ(data.dtype, DType::I64);
  ASSERT_EQ(data.shape, (Shape{3, 8, 3}));
  ASSERT_EQ(target.shape, (Shape{3, 8, 3}));
  EXPECT_EQ(nll.dtype, DType::F32);
  EXPECT_EQ(nll.shape, (Shape{3, 8, 3}));
  // Column 0 of segment 0, as in the file.
  EXPECT_THAT(std::vector<int64_t>({data.i64[0], data.i64[3], data.i64[6]}),
              ElementsAre(13, 27, 19));
  auto at = [](const NpyArray &a, int64_t s, int64_t t, int64_t b) {
    return a.i64[static_cast<size_t>((s * 8 + t) * 3 + b)];
  };
  for (int64_t s = 0; s < 3; ++s)
    for (int64_t t = 0; t < 8; ++t)
      for (int64_t b = 0; b < 3; ++b) {
        if (t + 1 < 8) {
          EXPECT_EQ(at(target, s, t, b), at(data, s, t + 1, b));
        } else if (s + 1 < 3) {
          EXPECT_EQ(at(target, s, t, b), at(data, s + 1, 0, b));
        }
      }
  EXPECT_FLOAT_EQ(nll.f32[0], 3.5172336101531982f);
}

// Version 2.0 headers (u32 length) and Python 2's 'L' suffixes are read.
TEST(NpyTest, ReadsVersion2AndLongSuffix) {
  TempDir dir;
  std::string data(16, '\0');
  data[0] = 5;
  data[8] = 6;
  std::string path = dir.write(
      "v2.npy",
      npyImage(2,
               "{'descr': '<i8', 'fortran_order': False, 'shape': (2L,), }\n",
               data));
  NpyArray array = readNpy(path);
  EXPECT_EQ(array.shape, (Shape{2}));
  EXPECT_THAT(array.i64, ElementsAre(5, 6));
}

TEST(NpyTest, Errors) {
  TempDir dir;
  std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  struct Case {
    std::string name, bytes, fragment;
  } cases[] = {
      {"magic.npy", "PK\x03\x04 not numpy", "bad magic"},
      {"version.npy", npyImage(9, ok, std::string(8, '\0')),
       "unsupported .npy version 9.0"},
      {"beyond.npy", std::string("\x93NUMPY\x01\x00\xff\x00{}", 12),
       "goes beyond"},
      {"dict.npy", npyImage(1, "{'descr': '<f4', ", ""),
       "malformed npy header"},
      {"nokey.npy",
       npyImage(1, "{'descr': '<f4', 'shape': (2,)}", std::string(8, '\0')),
       "'fortran_order'"},
      {"dtype.npy",
       npyImage(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                std::string(16, '\0')),
       "unsupported dtype '<f8' (expected '<f4' or '<i8')"},
      {"bigendian.npy",
       npyImage(1, "{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }",
                std::string(16, '\0')),
       "unsupported dtype '>i8'"},
      {"fortran.npy",
       npyImage(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }",
                std::string(8, '\0')),
       "fortran_order"},
      {"shape.npy",
       npyImage(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }",
                ""),
       "non-negative"},
      {"truncated.npy", npyImage(1, ok, std::string(7, '\0')),
       "truncated: shape [2] needs 8 data bytes, the file has 7"},
      {"trailing.npy", npyImage(1, ok, std::string(9, '\0')),
       "1 unexpected trailing bytes"},
      // numpy's own reading limit on the header, and on nesting.
      {"longheader.npy", npyImage(2, ok + std::string(10000, ' '), ""),
       "npy header of 10057 bytes is longer than the 10000 bytes accepted"},
      {"nested.npy",
       npyImage(1,
                "{'descr': '<f4', 'fortran_order': False, 'shape': " +
                    std::string(100, '(') + std::string(100, ')') + "}",
                ""),
       "malformed npy header (tuples nested deeper than 8"},
  };
  for (const Case &c : cases) {
    std::string path = dir.write(c.name, c.bytes);
    expectError([&] { readNpy(path); }, TXL_DATA_ERROR, {path, c.fragment});
  }
  std::string missing = dir.file("missing.npy");
  expectError([&] { readNpy(missing); }, TXL_NOT_FOUND, {missing});
  // Devices and other non-regular files are refused before any read
  // (/dev/zero would otherwise be read until memory runs out).
  expectError([&] { readNpy("/dev/zero"); }, TXL_IO_ERROR,
              {"/dev/zero: not a regular file"});
  expectError([&] { readNpy(dir.path()); }, TXL_IO_ERROR,
              {dir.path() + ": is a directory"});
}

// A malformed header is quoted by its first 200 characters, not whole
// (issue 48, item 17: a 10 KB header filled the terminal).
TEST(NpyTest, ErrorsQuoteTheHeaderShort) {
  TempDir dir;
  std::string header = "{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (2,), 'comment': '" +
                       std::string(9000, 'x') + "' ";
  std::string path = dir.write("long.npy", npyImage(2, header, ""));
  try {
    readNpy(path);
    ADD_FAILURE() << "a malformed header parsed";
  } catch (const Error &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("malformed npy header"), std::string::npos);
    EXPECT_NE(message.find("... (" + std::to_string(header.size() - 200) +
                           " more characters)"),
              std::string::npos)
        << message;
    EXPECT_LT(message.size(), 200 + path.size() + 120) << message;
  }
}

// The same bytes parse from memory as from the file.
TEST(NpyTest, ParsesBytesInMemory) {
  std::string bytes =
      npyImage(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }",
               std::string("\x07\0\0\0\0\0\0\0", 8));
  NpyArray array = parseNpy(bytes, "memory.npy");
  EXPECT_THAT(array.i64, ElementsAre(7));
  expectError([&] { parseNpy(bytes.substr(0, 20), "memory.npy"); },
              TXL_DATA_ERROR, {"memory.npy: "});
}

// The writer refuses an array whose values do not fill its shape.
TEST(NpyTest, WriterRejectsMismatchedArray) {
  TempDir dir;
  NpyArray array;
  array.dtype = DType::I64;
  array.shape = {2, 2};
  array.i64 = {1, 2, 3};
  std::string path = dir.file("bad.npy");
  expectError([&] { writeNpy(path, array); }, TXL_INVALID_ARGUMENT,
              {path, "3 values", "[2, 2]"});
  EXPECT_TRUE(dir.list().empty());
}

} // namespace
} // namespace txl::rt
