//===- SafeTensors.h - safetensors reader and writer ------------*- C++ -*-===//
//
// The safetensors format (huggingface/safetensors): an 8-byte little-endian
// u64 header length N, N bytes of JSON
//   {"<name>": {"dtype": "F32", "shape": [2, 16], "data_offsets": [b, e]},
//    ..., "__metadata__": {"<key>": "<string>", ...}}
// and then the data section; `data_offsets` are byte offsets into the data
// section, row-major little-endian. Checkpoints (official state_dict names)
// and the reference `mems.safetensors` use it.
//
// Every error throws `txl::rt::Error` whose message starts with the file path
// and names the tensor where there is one, e.g.
//   weights.safetensors: tensor 'r_w_bias': expected shape [2, 16], got [2, 8]
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_SAFETENSORS_H
#define TXL_RT_SAFETENSORS_H

#include "txl/rt/support/File.h"
#include "txl/rt/support/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace txl::rt {

/// One entry of a safetensors header.
struct SafeTensorInfo {
  std::string name;
  /// The dtype as spelled in the file ("F32", "I64", "BF16", ...). Every
  /// dtype of the format is accepted in the header; only F32 and I64 can be
  /// read (`SafeTensorsFile::read*`).
  std::string dtype;
  Shape shape;
  /// Byte range [begin, end) in the data section; end - begin equals
  /// numElements * element size (checked on open).
  size_t begin = 0, end = 0;
  int64_t numElements = 0;
};

/// The longest JSON header `SafeTensorsFile::open` accepts, in bytes: the
/// limit of the format's reference implementation (MAX_HEADER_SIZE).
inline constexpr uint64_t kMaxSafeTensorsHeaderBytes = 100000000;

/// A validated, memory-mapped safetensors file.
class SafeTensorsFile {
public:
  /// Maps and validates `path`. Errors (TXL_NOT_FOUND for a missing file,
  /// TXL_IO_ERROR for an unreadable one, TXL_DATA_ERROR otherwise): file
  /// shorter than 8 bytes; header length beyond the end of the file; header
  /// not valid JSON, not an object, or an entry without a string `dtype`, a
  /// `shape` of non-negative integers or two-integer `data_offsets`; unknown
  /// dtype; `__metadata__` not an object of strings; offsets beyond the data
  /// section or not matching shape x dtype size ("... truncated"); a header
  /// over kMaxSafeTensorsHeaderBytes; tensors that overlap, leave a gap or
  /// leave bytes over at the end of the data section (the reference reader's
  /// rule: in offset order they tile it exactly).
  static SafeTensorsFile open(const std::string &path);

  /// The path given to `open`, used as the prefix of every message.
  const std::string &path() const { return path_; }

  /// `__metadata__` (empty when absent).
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }

  /// All tensors, sorted by name.
  const std::vector<SafeTensorInfo> &tensors() const { return tensors_; }

  /// The tensor called `name`, or nullptr.
  const SafeTensorInfo *find(std::string_view name) const;

  /// The tensor called `name`. Errors: TXL_NOT_FOUND
  /// "<path>: tensor '<name>' not found".
  const SafeTensorInfo &get(std::string_view name) const;

  /// The raw little-endian bytes of `tensor` (not necessarily aligned).
  const std::byte *bytes(const SafeTensorInfo &tensor) const;

  /// Checks that `tensor` has `dtype` and exactly `expectedShape`. Errors
  /// (TXL_DATA_ERROR): "<path>: tensor '<name>': expected dtype F32, got BF16"
  /// and "<path>: tensor '<name>': expected shape [2, 16], got [2, 8]".
  void check(const SafeTensorInfo &tensor, DType dtype,
             const Shape &expectedShape) const;

  /// Copies float32 tensor `name`, checked against `expectedShape`, into
  /// `out` (numElements floats). Errors: as `get` and `check`.
  void readF32(std::string_view name, const Shape &expectedShape,
               float *out) const;

  /// The float32 tensor `name` (any shape; `outShape` receives it if given).
  /// Errors: as `get`; a dtype other than F32.
  std::vector<float> readF32(std::string_view name,
                             Shape *outShape = nullptr) const;

  /// The int64 tensor `name` (any shape; `outShape` receives it if given).
  /// Errors: as `get`; a dtype other than I64.
  std::vector<int64_t> readI64(std::string_view name,
                               Shape *outShape = nullptr) const;

private:
  SafeTensorsFile() = default;
  const SafeTensorInfo &getTyped(std::string_view name, DType dtype) const;

  std::string path_;
  MappedFile file_;
  size_t dataStart_ = 0;
  std::vector<SafeTensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// A tensor to write: dtype, shape and numElements * dtypeSize bytes.
struct TensorBlob {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<std::byte> bytes;

  /// Copies numElements(shape) floats from `data`.
  static TensorBlob f32(Shape shape, const float *data);
  /// Copies numElements(shape) int64s from `data`.
  static TensorBlob i64(Shape shape, const int64_t *data);
};

/// Tensors to write, by name.
using TensorMap = std::map<std::string, TensorBlob>;

/// Writes `tensors` to `path` atomically (temporary file in the same
/// directory, fsync, rename). Tensors are stored in sorted name order (the
/// map's order), back to back from data offset 0; the JSON header is padded
/// with spaces to a multiple of 8 bytes, as the reference implementation
/// does, so the data section starts 8-byte aligned. `metadata` becomes
/// `__metadata__` when non-empty. Errors: TXL_INVALID_ARGUMENT for a name
/// "__metadata__" or a blob whose size does not match its shape;
/// TXL_IO_ERROR naming `path`.
void writeSafeTensors(const std::string &path, const TensorMap &tensors,
                      const std::map<std::string, std::string> &metadata = {});

} // namespace txl::rt

#endif // TXL_RT_SAFETENSORS_H
