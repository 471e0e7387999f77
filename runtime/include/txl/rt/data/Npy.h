//===- Npy.h - NumPy .npy reader and writer ---------------------*- C++ -*-===//
//
// The NumPy array file format (numpy/lib/format.py): the magic "\x93NUMPY",
// a version byte pair, a little-endian header length (u16 for 1.0, u32 for
// 2.0/3.0), a Python dict literal
//   {'descr': '<i8', 'fortran_order': False, 'shape': (3, 8, 3), }
// padded with spaces and a newline, then the raw C-order data. The reference
// cases store token streams (`data.npy`, `target.npy`, int64) and per-token
// NLL (`nll.npy`, float32) this way.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_NPY_H
#define TXL_RT_NPY_H

#include "txl/rt/support/Tensor.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace txl::rt {

/// An array read from a .npy file: exactly one of `f32` / `i64` is filled,
/// according to `dtype`, with numElements(shape) values in C order.
struct NpyArray {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<float> f32;
  std::vector<int64_t> i64;

  /// Product of the extents (1 for a 0-d array).
  int64_t numElements() const;
};

/// Reads `path`. Accepts versions 1.0, 2.0 and 3.0, descr '<f4' (float32) or
/// '<i8' (int64) ('|'/'=' byte-order marks are not produced by numpy for these
/// types and are rejected), C order only. Errors (TXL_NOT_FOUND /
/// TXL_IO_ERROR for file access, TXL_DATA_ERROR otherwise; each message starts
/// with `path`): bad magic, unsupported version, header beyond the end of the
/// file or not a dict literal with 'descr', 'fortran_order' and 'shape';
/// other dtypes ("unsupported dtype '<f8' (expected '<f4' or '<i8')");
/// `fortran_order: True`; fewer or more data bytes than the shape needs.
NpyArray readNpy(const std::string &path);

/// The longest header `parseNpy` accepts, in bytes: numpy's own default
/// limit for reading (`max_header_size` of numpy.lib.format.read_array).
inline constexpr uint64_t kMaxNpyHeaderBytes = 10000;

/// Parses the bytes of a whole .npy file; `path` names it in messages.
/// Errors: as `readNpy` (the file-access ones aside), and a header longer
/// than kMaxNpyHeaderBytes or nesting tuples deeper than 8 ("malformed npy
/// header (tuples nested deeper than 8 ...)"); nothing is allocated for the
/// data before its size is checked against the bytes present.
NpyArray parseNpy(std::string_view bytes, const std::string &path);

/// Writes float32 `data` (numElements(shape) values, C order) to `path` as a
/// version 1.0 file (2.0 if the header needs it) with the header padded to a
/// multiple of 64 bytes, as numpy.save does. Atomic (temporary file + fsync +
/// rename). Errors: TXL_INVALID_ARGUMENT for a negative extent; TXL_IO_ERROR.
void writeNpy(const std::string &path, const Shape &shape, const float *data);

/// As above for int64 `data` ('<i8').
void writeNpy(const std::string &path, const Shape &shape, const int64_t *data);

/// Writes `array` (its `dtype` selects `f32` or `i64`, whose size must match
/// the shape: TXL_INVALID_ARGUMENT otherwise).
void writeNpy(const std::string &path, const NpyArray &array);

} // namespace txl::rt

#endif // TXL_RT_NPY_H
