//===- Tensor.h - Element types and shapes of stored tensors ----*- C++ -*-===//
//
// The element types the runtime reads and writes (float32 weights, memory and
// NLL; int64 token ids) and the shape helpers every file format shares.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_TENSOR_H
#define TXL_RT_TENSOR_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace txl::rt {

/// Element types the runtime can load and store.
enum class DType : uint8_t {
  F32, ///< IEEE float32, little-endian (safetensors "F32", npy "<f4")
  I64, ///< int64, little-endian (safetensors "I64", npy "<i8")
};

/// The safetensors spelling: "F32" or "I64".
std::string_view dtypeName(DType dtype);

/// Bytes per element: 4 or 8.
size_t dtypeSize(DType dtype);

/// A row-major (C order) shape; every extent is >= 0.
using Shape = std::vector<int64_t>;

/// Python-list spelling used in every message: "[2, 16]", "[]" for a scalar.
std::string formatShape(const Shape &shape);

/// Product of the extents (1 for a scalar). Returns false, leaving `out`
/// unspecified, if an extent is negative or the product of the extents times
/// `elementSize` overflows int64.
bool checkedNumElements(const Shape &shape, size_t elementSize, int64_t &out);

} // namespace txl::rt

#endif // TXL_RT_TENSOR_H
