//===- NpyFuzzer.cpp - libFuzzer target of the .npy reader ------*- C++ -*-===//
//
// Input: the bytes of a .npy file. Checks that `parseNpy` either refuses it
// with txl::rt::Error or returns an array whose values match its shape, and
// that such an array survives writeNpy + readNpy unchanged.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "txl/rt/data/Npy.h"
#include "txl/rt/support/Status.h"

#include <cstdint>
#include <cstring>

using namespace txl::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  NpyArray array;
  try {
    array = parseNpy({reinterpret_cast<const char *>(data), size}, "fuzz.npy");
  } catch (const Error &) {
    return 0;
  }
  size_t n = static_cast<size_t>(array.numElements());
  FUZZ_CHECK(array.dtype == DType::F32 || array.dtype == DType::I64);
  FUZZ_CHECK(
      (array.dtype == DType::F32 ? array.f32.size() : array.i64.size()) == n);
  std::string path = txl::fuzz::scratchDir() + "/roundtrip.npy";
  writeNpy(path, array);
  NpyArray again = readNpy(path);
  FUZZ_CHECK(again.dtype == array.dtype && again.shape == array.shape);
  FUZZ_CHECK(again.f32.size() == array.f32.size() &&
             again.i64.size() == array.i64.size());
  // Bitwise: NaN payloads included.
  FUZZ_CHECK(
      array.f32.empty() ||
      std::memcmp(again.f32.data(), array.f32.data(), n * sizeof(float)) == 0);
  FUZZ_CHECK(array.i64.empty() ||
             std::memcmp(again.i64.data(), array.i64.data(),
                         n * sizeof(int64_t)) == 0);
  return 0;
}
