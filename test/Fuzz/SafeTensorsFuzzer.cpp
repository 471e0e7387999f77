//===- SafeTensorsFuzzer.cpp - libFuzzer target of the safetensors reader -===//
//
// Input: the bytes of a .safetensors file. Checks that SafeTensorsFile::open
// either refuses it with txl::rt::Error or validates it so that every tensor
// lies inside the data section and can be read, and that a file of F32/I64
// tensors survives writeSafeTensors + open with the same tensors and
// metadata.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "txl/rt/data/SafeTensors.h"
#include "txl/rt/support/Status.h"

#include <cstdint>
#include <cstring>
#include <optional>

using namespace txl::rt;

namespace {

/// The dtype `name` can be read as, if any.
std::optional<DType> readableDType(const std::string &name) {
  if (name == "F32")
    return DType::F32;
  if (name == "I64")
    return DType::I64;
  return std::nullopt;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = txl::fuzz::writeScratch(
      "in.safetensors", {reinterpret_cast<const char *>(data), size});
  std::optional<SafeTensorsFile> file;
  try {
    file.emplace(SafeTensorsFile::open(path));
  } catch (const Error &) {
    return 0;
  }
  TensorMap copy;
  bool allReadable = true;
  for (const SafeTensorInfo &tensor : file->tensors()) {
    FUZZ_CHECK(tensor.begin <= tensor.end && tensor.end <= size);
    FUZZ_CHECK(file->find(tensor.name) == &tensor);
    std::optional<DType> dtype = readableDType(tensor.dtype);
    if (!dtype) {
      allReadable = false;
      continue;
    }
    Shape shape;
    TensorBlob blob;
    if (*dtype == DType::F32) {
      std::vector<float> values = file->readF32(tensor.name, &shape);
      blob = TensorBlob::f32(shape, values.data());
    } else {
      std::vector<int64_t> values = file->readI64(tensor.name, &shape);
      blob = TensorBlob::i64(shape, values.data());
    }
    FUZZ_CHECK(shape == tensor.shape);
    FUZZ_CHECK(blob.bytes.size() == tensor.end - tensor.begin);
    FUZZ_CHECK(blob.bytes.empty() ||
               std::memcmp(blob.bytes.data(), file->bytes(tensor),
                           blob.bytes.size()) == 0);
    copy[tensor.name] = std::move(blob);
  }
  if (!allReadable)
    return 0;
  std::string again = txl::fuzz::scratchDir() + "/roundtrip.safetensors";
  writeSafeTensors(again, copy, file->metadata());
  SafeTensorsFile reread = SafeTensorsFile::open(again);
  FUZZ_CHECK(reread.metadata() == file->metadata());
  FUZZ_CHECK(reread.tensors().size() == file->tensors().size());
  for (const SafeTensorInfo &tensor : reread.tensors()) {
    const SafeTensorInfo *original = file->find(tensor.name);
    FUZZ_CHECK(original && original->dtype == tensor.dtype &&
               original->shape == tensor.shape);
    size_t bytes = tensor.end - tensor.begin;
    FUZZ_CHECK(bytes == original->end - original->begin);
    FUZZ_CHECK(bytes == 0 || std::memcmp(reread.bytes(tensor),
                                         file->bytes(*original), bytes) == 0);
  }
  return 0;
}
