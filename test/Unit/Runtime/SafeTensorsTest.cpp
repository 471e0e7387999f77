//===- SafeTensorsTest.cpp - safetensors reader/writer ----------*- C++ -*-===//

#include "txl/rt/data/SafeTensors.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <cstring>

#include <sys/resource.h>

namespace txl::rt {
namespace {

using test::expectError;
using test::safetensorsImage;
using test::sharedPath;
using test::TempDir;
using ::testing::ElementsAre;

// Tensors written come back with their dtype, shape and values, sorted by
// name, with the metadata; the header is space-padded to 8 bytes.
TEST(SafeTensorsTest, RoundTrip) {
  TempDir dir;
  std::string path = dir.file("rt.safetensors");
  std::vector<float> weights = {1.5f, -2.0f, 3.25f, 0.0f, -0.5f, 1e-30f};
  std::vector<int64_t> ids = {7, -1, int64_t(1) << 40};
  float scalar = 42.0f;
  TensorMap tensors;
  tensors["b.weight"] = TensorBlob::f32({2, 3}, weights.data());
  tensors["a.ids"] = TensorBlob::i64({3}, ids.data());
  tensors["c.scalar"] = TensorBlob::f32({}, &scalar);
  tensors["d.empty"] = TensorBlob::f32({0, 4}, nullptr);
  writeSafeTensors(path, tensors, {{"format", "pt"}});

  std::string bytes = test::slurp(path);
  uint64_t headerLen = 0;
  std::memcpy(&headerLen, bytes.data(), 8);
  EXPECT_EQ(headerLen % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + headerLen + 6 * 4 + 3 * 8 + 4);

  SafeTensorsFile file = SafeTensorsFile::open(path);
  EXPECT_EQ(file.path(), path);
  ASSERT_EQ(file.tensors().size(), 4u);
  EXPECT_EQ(file.tensors()[0].name, "a.ids");
  EXPECT_EQ(file.tensors()[3].name, "d.empty");
  EXPECT_EQ(file.metadata().at("format"), "pt");

  Shape shape;
  EXPECT_EQ(file.readF32("b.weight", &shape), weights);
  EXPECT_EQ(shape, (Shape{2, 3}));
  EXPECT_EQ(file.readI64("a.ids", &shape), ids);
  EXPECT_EQ(shape, (Shape{3}));
  EXPECT_THAT(file.readF32("c.scalar", &shape), ElementsAre(42.0f));
  EXPECT_TRUE(shape.empty());
  EXPECT_TRUE(file.readF32("d.empty").empty());
  EXPECT_EQ(file.get("d.empty").shape, (Shape{0, 4}));

  std::vector<float> out(6);
  file.readF32("b.weight", {2, 3}, out.data());
  EXPECT_EQ(out, weights);
  EXPECT_EQ(file.find("nope"), nullptr);
}

// Writing replaces an existing file atomically and leaves no temporary.
TEST(SafeTensorsTest, WriteIsAtomicAndLeavesNoTemporary) {
  TempDir dir;
  std::string path = dir.write("w.safetensors", "old contents");
  float value = 1.0f;
  writeSafeTensors(path, {{"x", TensorBlob::f32({1}, &value)}});
  EXPECT_THAT(dir.list(), ElementsAre("w.safetensors"));
  EXPECT_THAT(SafeTensorsFile::open(path).readF32("x"), ElementsAre(1.0f));
  writeSafeTensors(path, {});
  EXPECT_TRUE(SafeTensorsFile::open(path).tensors().empty());
  EXPECT_THAT(dir.list(), ElementsAre("w.safetensors"));
}

// A write that fails part way (here: beyond a 64 KiB file size limit, EFBIG;
// a full disk behaves the same) is an I/O error naming the destination and
// saying it is unchanged; the old file is intact and no temporary is left.
TEST(SafeTensorsTest, FailedWriteKeepsTheOldFile) {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  float one = 1.0f;
  writeSafeTensors(path, {{"x", TensorBlob::f32({1}, &one)}});
  std::vector<float> big(1 << 16, 2.0f); // 256 KiB of data

  struct rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  struct rlimit limited = saved;
  limited.rlim_cur = 64 * 1024;
  // Beyond the limit write() fails with EFBIG once SIGXFSZ is ignored.
  auto oldHandler = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  expectError(
      [&] {
        writeSafeTensors(path, {{"x", TensorBlob::f32({1 << 16}, big.data())}});
      },
      TXL_IO_ERROR, {path, "write failed", "left as it was"});
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  std::signal(SIGXFSZ, oldHandler);

  EXPECT_THAT(SafeTensorsFile::open(path).readF32("x"), ElementsAre(1.0f));
  EXPECT_THAT(dir.list(), ElementsAre("w.safetensors"));
}

// A missing directory is an I/O error naming the destination.
TEST(SafeTensorsTest, WriteIntoMissingDirectoryFails) {
  TempDir dir;
  std::string path = dir.file("missing/w.safetensors");
  expectError([&] { writeSafeTensors(path, {}); }, TXL_IO_ERROR, {path});
}

// The writer rejects blobs whose size does not match their shape and the
// reserved name.
TEST(SafeTensorsTest, WriterRejectsBadInput) {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  TensorBlob blob = TensorBlob::f32({2}, std::vector<float>{1, 2}.data());
  blob.shape = {3};
  expectError(
      [&] {
        writeSafeTensors(path, {{"t", blob}});
      },
      TXL_INVALID_ARGUMENT, {path, "tensor 't'", "[3]"});
  blob.shape = {2};
  expectError(
      [&] {
        writeSafeTensors(path, {{"__metadata__", blob}});
      },
      TXL_INVALID_ARGUMENT, {"reserved"});
  EXPECT_TRUE(dir.list().empty());
}

TEST(SafeTensorsTest, MissingFile) {
  TempDir dir;
  std::string path = dir.file("none.safetensors");
  expectError([&] { SafeTensorsFile::open(path); }, TXL_NOT_FOUND,
              {path, "no such file"});
}

TEST(SafeTensorsTest, FileTooShort) {
  TempDir dir;
  std::string path = dir.write("short.safetensors", "abc");
  expectError([&] { SafeTensorsFile::open(path); }, TXL_DATA_ERROR,
              {path, "too short", "3 bytes"});
  path = dir.write("empty.safetensors", "");
  expectError([&] { SafeTensorsFile::open(path); }, TXL_DATA_ERROR,
              {path, "too short"});
}

TEST(SafeTensorsTest, HeaderLengthBeyondFile) {
  TempDir dir;
  std::string path = dir.write("long.safetensors", test::u64le(100) + "{}");
  expectError([&] { SafeTensorsFile::open(path); }, TXL_DATA_ERROR,
              {path, "header length 100", "10 bytes"});
  path = dir.write("huge.safetensors", test::u64le(~uint64_t(0)) + "{}");
  expectError([&] { SafeTensorsFile::open(path); }, TXL_DATA_ERROR,
              {path, "header of 18446744073709551615 bytes is longer"});
}

TEST(SafeTensorsTest, BadJson) {
  TempDir dir;
  std::string path =
      dir.write("json.safetensors", safetensorsImage("{\"a\":", 0));
  expectError([&] { SafeTensorsFile::open(path); }, TXL_DATA_ERROR,
              {path, "invalid safetensors header JSON"});
  path = dir.write("array.safetensors", safetensorsImage("[1, 2]", 0));
  expectError([&] { SafeTensorsFile::open(path); }, TXL_DATA_ERROR,
              {path, "not a JSON object"});
}

// Malformed entries name the file and the tensor.
TEST(SafeTensorsTest, MalformedEntries) {
  TempDir dir;
  struct Case {
    const char *header;
    const char *fragment;
  } cases[] = {
      {R"({"t": 3})", "not a JSON object"},
      {R"({"t": {"shape": [1], "data_offsets": [0, 4]}})", "'dtype'"},
      {R"({"t": {"dtype": "Q7", "shape": [1], "data_offsets": [0, 4]}})",
       "unknown dtype 'Q7'"},
      {R"({"t": {"dtype": "F32", "data_offsets": [0, 4]}})", "'shape'"},
      {R"({"t": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})",
       "non-negative"},
      {R"({"t": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})",
       "non-negative"},
      {R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})",
       "'data_offsets'"},
      {R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})",
       "end before they begin"},
  };
  for (const Case &c : cases) {
    std::string path =
        dir.write("bad.safetensors", safetensorsImage(c.header, 4));
    expectError([&] { SafeTensorsFile::open(path); }, TXL_DATA_ERROR,
                {path, "tensor 't'", c.fragment});
  }
  std::string path = dir.write(
      "meta.safetensors", safetensorsImage(R"({"__metadata__": {"k": 1}})", 0));
  expectError([&] { SafeTensorsFile::open(path); }, TXL_DATA_ERROR,
              {path, "'__metadata__' entry 'k'"});
  path = dir.write("meta2.safetensors",
                   safetensorsImage(R"({"__metadata__": []})", 0));
  expectError([&] { SafeTensorsFile::open(path); }, TXL_DATA_ERROR,
              {path, "'__metadata__'"});
}

// Offsets past the data section, or not matching shape x dtype, are reported
// as truncation.
TEST(SafeTensorsTest, TruncatedData) {
  TempDir dir;
  std::string header =
      R"({"r_w_bias": {"dtype": "F32", "shape": [2, 16], "data_offsets": [0, 128]}})";
  std::string path =
      dir.write("trunc.safetensors", safetensorsImage(header, 100));
  expectError([&] { SafeTensorsFile::open(path); }, TXL_DATA_ERROR,
              {path, "tensor 'r_w_bias'", "[0, 128]", "100-byte", "truncated"});

  header =
      R"({"r_w_bias": {"dtype": "F32", "shape": [2, 16], "data_offsets": [0, 64]}})";
  path = dir.write("short.safetensors", safetensorsImage(header, 128));
  expectError([&] { SafeTensorsFile::open(path); }, TXL_DATA_ERROR,
              {path, "tensor 'r_w_bias'", "64 bytes", "F32 [2, 16]", "128",
               "truncated"});
}

// As the format's reference reader: in offset order the tensors tile the
// data section exactly.
TEST(SafeTensorsTest, OffsetsMustTileTheDataSection) {
  TempDir dir;
  struct Case {
    const char *header;
    size_t dataBytes;
    std::vector<std::string> fragments;
  } cases[] = {
      {R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
       R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
       12,
       {"tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8]"}},
      {R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
       R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
       4,
       {"overlap tensor"}},
      {R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
       8,
       {"tensor 'a': data_offsets [4, 8] leave bytes [0, 4)"}},
      {R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
       6,
       {"the tensors end at byte 4 of the 6-byte data section"}},
  };
  for (const Case &c : cases) {
    std::string path =
        dir.write("tiles.safetensors", safetensorsImage(c.header, c.dataBytes));
    std::vector<std::string> fragments = c.fragments;
    fragments.push_back(path);
    expectError([&] { SafeTensorsFile::open(path); }, TXL_DATA_ERROR,
                fragments);
  }
}

// A header over the reference implementation's 100 MB limit is refused
// before it is parsed (or the file is read further).
TEST(SafeTensorsTest, HeaderOverTheLimit) {
  TempDir dir;
  std::string image = test::u64le(kMaxSafeTensorsHeaderBytes + 1) + "{}";
  std::string path = dir.write("big.safetensors", image);
  expectError([&] { SafeTensorsFile::open(path); }, TXL_DATA_ERROR,
              {path, "header of 100000001 bytes", "100000000"});
}

// Lookups and typed reads name the file, the tensor and the dtype/shape.
TEST(SafeTensorsTest, LookupAndTypeErrors) {
  TempDir dir;
  std::string header =
      R"({"half": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},)"
      R"( "r_w_bias": {"dtype": "F32", "shape": [2, 8], "data_offsets": [4, 68]}})";
  std::string path =
      dir.write("weights.safetensors", safetensorsImage(header, 68));
  SafeTensorsFile file = SafeTensorsFile::open(path);
  EXPECT_EQ(file.get("half").dtype, "BF16");

  expectError([&] { file.get("missing"); }, TXL_NOT_FOUND,
              {path + ": tensor 'missing' not found"});
  expectError([&] { file.readF32("half"); }, TXL_DATA_ERROR,
              {path + ": tensor 'half': expected dtype F32, got BF16"});
  expectError([&] { file.readI64("r_w_bias"); }, TXL_DATA_ERROR,
              {path + ": tensor 'r_w_bias': expected dtype I64, got F32"});
  std::vector<float> out(32);
  std::string message = expectError(
      [&] {
        file.readF32("r_w_bias", {2, 16}, out.data());
      },
      TXL_DATA_ERROR, {});
  EXPECT_EQ(message,
            path + ": tensor 'r_w_bias': expected shape [2, 16], got [2, 8]");
}

// The official rel_basic checkpoint: 28 tensors of the official state_dict,
// its metadata, and values (pos_emb.inv_freq = 1 / 10000^(2k / d_model)).
TEST(SafeTensorsTest, ReadsReferenceCheckpoint) {
  SafeTensorsFile file = SafeTensorsFile::open(
      sharedPath("reference/rel_basic/weights.safetensors"));
  EXPECT_EQ(file.tensors().size(), 28u);
  EXPECT_EQ(file.metadata().at("format"), "official-pytorch-state-dict");
  EXPECT_EQ(file.get("r_w_bias").shape, (Shape{2, 16}));
  EXPECT_EQ(file.get("layers.0.dec_attn.qkv_net.weight").shape,
            (Shape{96, 32}));
  EXPECT_EQ(file.get("word_emb.emb_layers.0.weight").shape, (Shape{50, 32}));

  Shape shape;
  std::vector<float> invFreq = file.readF32("pos_emb.inv_freq", &shape);
  ASSERT_EQ(shape, (Shape{16}));
  for (int k = 0; k < 16; ++k)
    EXPECT_NEAR(invFreq[k], 1.0 / std::pow(10000.0, 2.0 * k / 32), 1e-6) << k;
  std::vector<float> bias(32);
  file.readF32("r_w_bias", {2, 16}, bias.data());
  EXPECT_FLOAT_EQ(bias[0], -0.0499081090092659f);
}

// The reference memories: seg{s}.layer{l}, [mlen, batch, d_model].
TEST(SafeTensorsTest, ReadsReferenceMems) {
  SafeTensorsFile file =
      SafeTensorsFile::open(sharedPath("reference/rel_basic/mems.safetensors"));
  EXPECT_EQ(file.tensors().size(), 9u); // 3 segments x (n_layer + 1)
  EXPECT_EQ(file.get("seg0.layer0").shape, (Shape{8, 3, 32}));
  EXPECT_EQ(file.get("seg2.layer2").shape, (Shape{8, 3, 32}));
}

} // namespace
} // namespace txl::rt
