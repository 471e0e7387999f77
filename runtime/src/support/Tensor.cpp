//===- Tensor.cpp - Element types and shapes of stored tensors --*- C++ -*-===//

#include "txl/rt/support/Tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>

namespace txl::rt {

std::string_view dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::I64:
    return "I64";
  }
  return "?";
}

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return 4;
  case DType::I64:
    return 8;
  }
  return 0;
}

std::string formatShape(const Shape &shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

bool checkedNumElements(const Shape &shape, size_t elementSize, int64_t &out) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t n = 1;
  for (int64_t extent : shape) {
    if (extent < 0)
      return false;
    if (extent != 0 && n > kMax / extent)
      return false;
    n *= extent;
  }
  if (elementSize != 0 && n > kMax / static_cast<int64_t>(elementSize))
    return false;
  out = n;
  return true;
}

} // namespace txl::rt
