//===- SafeTensors.cpp - safetensors reader and writer ----------*- C++ -*-===//
//
// Validation follows the reference implementation (huggingface/safetensors,
// `SafeTensors::deserialize`): header length in bounds, JSON object of
// entries, offsets inside the data section and matching shape x dtype size.
// Holes or overlaps between tensors are tolerated (only each tensor's own
// range is checked), which the writers in the wild never produce anyway.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/data/SafeTensors.h"

#include "txl/rt/support/Status.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <tuple>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; big-endian hosts would "
              "need byte swapping");

namespace txl::rt {

namespace {

using Json = nlohmann::json;

/// Element size of every dtype the format defines, or nullopt.
std::optional<size_t> safetensorsDtypeSize(const std::string &dtype) {
  static const std::map<std::string, size_t> kSizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};
  auto it = kSizes.find(dtype);
  if (it == kSizes.end())
    return std::nullopt;
  return it->second;
}

/// memcpy that accepts the null pointers of empty buffers when `size` is 0.
void copyBytes(void *dst, const void *src, size_t size) {
  if (size != 0)
    std::memcpy(dst, src, size);
}

/// Reads a non-negative JSON integer, or nullopt.
std::optional<uint64_t> asUnsigned(const Json &value) {
  if (value.is_number_unsigned())
    return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0)
    return static_cast<uint64_t>(value.get<int64_t>());
  return std::nullopt;
}

/// Parses one header entry into `info` (name already set).
void parseEntry(const std::string &path, const Json &entry,
                SafeTensorInfo &info) {
  const std::string &name = info.name;
  if (!entry.is_object())
    fail(TXL_DATA_ERROR, "{}: tensor '{}': header entry is not a JSON object",
         path, name);
  auto dtypeIt = entry.find("dtype");
  if (dtypeIt == entry.end() || !dtypeIt->is_string())
    fail(TXL_DATA_ERROR, "{}: tensor '{}': missing or non-string 'dtype'", path,
         name);
  info.dtype = dtypeIt->get<std::string>();
  std::optional<size_t> elementSize = safetensorsDtypeSize(info.dtype);
  if (!elementSize)
    fail(TXL_DATA_ERROR, "{}: tensor '{}': unknown dtype '{}'", path, name,
         info.dtype);

  auto shapeIt = entry.find("shape");
  if (shapeIt == entry.end() || !shapeIt->is_array())
    fail(TXL_DATA_ERROR, "{}: tensor '{}': missing or non-list 'shape'", path,
         name);
  for (const Json &extent : *shapeIt) {
    std::optional<uint64_t> value = asUnsigned(extent);
    if (!value || *value > static_cast<uint64_t>(INT64_MAX))
      fail(TXL_DATA_ERROR,
           "{}: tensor '{}': 'shape' must hold non-negative integers, got {}",
           path, name, shapeIt->dump());
    info.shape.push_back(static_cast<int64_t>(*value));
  }

  auto offsetsIt = entry.find("data_offsets");
  std::optional<uint64_t> begin, end;
  if (offsetsIt != entry.end() && offsetsIt->is_array() &&
      offsetsIt->size() == 2) {
    begin = asUnsigned((*offsetsIt)[0]);
    end = asUnsigned((*offsetsIt)[1]);
  }
  if (!begin || !end)
    fail(TXL_DATA_ERROR,
         "{}: tensor '{}': 'data_offsets' must be two non-negative integers",
         path, name);
  if (*begin > *end)
    fail(TXL_DATA_ERROR,
         "{}: tensor '{}': data_offsets [{}, {}] end before they begin", path,
         name, *begin, *end);
  if (!checkedNumElements(info.shape, *elementSize, info.numElements))
    fail(TXL_DATA_ERROR, "{}: tensor '{}': shape {} is too large", path, name,
         formatShape(info.shape));
  info.begin = static_cast<size_t>(*begin);
  info.end = static_cast<size_t>(*end);
}

} // namespace

SafeTensorsFile SafeTensorsFile::open(const std::string &path) {
  SafeTensorsFile result;
  result.path_ = path;
  result.file_ = MappedFile(path);
  const std::byte *bytes = result.file_.data();
  size_t fileSize = result.file_.size();
  if (fileSize < 8)
    fail(TXL_DATA_ERROR,
         "{}: file too short for a safetensors header ({} bytes, need at "
         "least 8)",
         path, fileSize);
  uint64_t headerLen = 0;
  std::memcpy(&headerLen, bytes, 8);
  if (headerLen > kMaxSafeTensorsHeaderBytes)
    fail(TXL_DATA_ERROR,
         "{}: safetensors header of {} bytes is longer than the {} bytes "
         "accepted",
         path, headerLen, kMaxSafeTensorsHeaderBytes);
  if (headerLen > fileSize - 8)
    fail(TXL_DATA_ERROR,
         "{}: header length {} goes beyond the end of the file ({} bytes)",
         path, headerLen, fileSize);
  result.dataStart_ = 8 + static_cast<size_t>(headerLen);
  size_t dataSize = fileSize - result.dataStart_;

  const char *headerBegin = reinterpret_cast<const char *>(bytes + 8);
  Json header;
  try {
    header = Json::parse(headerBegin, headerBegin + headerLen);
  } catch (const Json::exception &error) {
    fail(TXL_DATA_ERROR, "{}: invalid safetensors header JSON: {}", path,
         error.what());
  }
  if (!header.is_object())
    fail(TXL_DATA_ERROR, "{}: safetensors header is not a JSON object", path);

  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object())
        fail(TXL_DATA_ERROR, "{}: '__metadata__' is not a JSON object", path);
      for (auto meta = it->begin(); meta != it->end(); ++meta) {
        if (!meta->is_string())
          fail(TXL_DATA_ERROR, "{}: '__metadata__' entry '{}' is not a string",
               path, meta.key());
        result.metadata_[meta.key()] = meta->get<std::string>();
      }
      continue;
    }
    SafeTensorInfo info;
    info.name = it.key();
    parseEntry(path, *it, info);
    if (info.end > dataSize)
      fail(TXL_DATA_ERROR,
           "{}: tensor '{}': data_offsets [{}, {}] go beyond the {}-byte data "
           "section (file truncated)",
           path, info.name, info.begin, info.end, dataSize);
    size_t expected = static_cast<size_t>(info.numElements) *
                      *safetensorsDtypeSize(info.dtype);
    if (info.end - info.begin != expected)
      fail(TXL_DATA_ERROR,
           "{}: tensor '{}': data_offsets [{}, {}] hold {} bytes but {} {} "
           "needs {} (truncated or corrupt tensor)",
           path, info.name, info.begin, info.end, info.end - info.begin,
           info.dtype, formatShape(info.shape), expected);
    result.tensors_.push_back(std::move(info));
  }
  // As the format's reference reader (safetensors' `validate`): in offset
  // order the tensors tile the data section exactly, no overlap, no gap.
  std::vector<const SafeTensorInfo *> byOffset;
  for (const SafeTensorInfo &info : result.tensors_)
    byOffset.push_back(&info);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const SafeTensorInfo *a, const SafeTensorInfo *b) {
              return std::tie(a->begin, a->end) < std::tie(b->begin, b->end);
            });
  size_t covered = 0;
  const SafeTensorInfo *previous = nullptr;
  for (const SafeTensorInfo *info : byOffset) {
    if (info->begin < covered)
      fail(TXL_DATA_ERROR,
           "{}: tensor '{}': data_offsets [{}, {}] overlap tensor '{}' [{}, "
           "{}]",
           path, info->name, info->begin, info->end, previous->name,
           previous->begin, previous->end);
    if (info->begin > covered)
      fail(TXL_DATA_ERROR,
           "{}: tensor '{}': data_offsets [{}, {}] leave bytes [{}, {}) of the "
           "data section to no tensor",
           path, info->name, info->begin, info->end, covered, info->begin);
    covered = info->end;
    previous = info;
  }
  if (covered != dataSize)
    fail(TXL_DATA_ERROR,
         "{}: the tensors end at byte {} of the {}-byte data section (bytes "
         "left over)",
         path, covered, dataSize);
  // nlohmann::json objects iterate in key order already; keep it explicit.
  std::sort(result.tensors_.begin(), result.tensors_.end(),
            [](const SafeTensorInfo &a, const SafeTensorInfo &b) {
              return a.name < b.name;
            });
  return result;
}

const SafeTensorInfo *SafeTensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(
      tensors_.begin(), tensors_.end(), name,
      [](const SafeTensorInfo &a, std::string_view b) { return a.name < b; });
  if (it == tensors_.end() || it->name != name)
    return nullptr;
  return &*it;
}

const SafeTensorInfo &SafeTensorsFile::get(std::string_view name) const {
  if (const SafeTensorInfo *info = find(name))
    return *info;
  fail(TXL_NOT_FOUND, "{}: tensor '{}' not found", path_, name);
}

const std::byte *SafeTensorsFile::bytes(const SafeTensorInfo &tensor) const {
  return file_.data() + dataStart_ + tensor.begin;
}

void SafeTensorsFile::check(const SafeTensorInfo &tensor, DType dtype,
                            const Shape &expectedShape) const {
  if (tensor.dtype != dtypeName(dtype))
    fail(TXL_DATA_ERROR, "{}: tensor '{}': expected dtype {}, got {}", path_,
         tensor.name, dtypeName(dtype), tensor.dtype);
  if (tensor.shape != expectedShape)
    fail(TXL_DATA_ERROR, "{}: tensor '{}': expected shape {}, got {}", path_,
         tensor.name, formatShape(expectedShape), formatShape(tensor.shape));
}

const SafeTensorInfo &SafeTensorsFile::getTyped(std::string_view name,
                                                DType dtype) const {
  const SafeTensorInfo &tensor = get(name);
  if (tensor.dtype != dtypeName(dtype))
    fail(TXL_DATA_ERROR, "{}: tensor '{}': expected dtype {}, got {}", path_,
         tensor.name, dtypeName(dtype), tensor.dtype);
  return tensor;
}

void SafeTensorsFile::readF32(std::string_view name, const Shape &expectedShape,
                              float *out) const {
  const SafeTensorInfo &tensor = get(name);
  check(tensor, DType::F32, expectedShape);
  copyBytes(out, bytes(tensor), tensor.end - tensor.begin);
}

std::vector<float> SafeTensorsFile::readF32(std::string_view name,
                                            Shape *outShape) const {
  const SafeTensorInfo &tensor = getTyped(name, DType::F32);
  std::vector<float> values(static_cast<size_t>(tensor.numElements));
  copyBytes(values.data(), bytes(tensor), tensor.end - tensor.begin);
  if (outShape)
    *outShape = tensor.shape;
  return values;
}

std::vector<int64_t> SafeTensorsFile::readI64(std::string_view name,
                                              Shape *outShape) const {
  const SafeTensorInfo &tensor = getTyped(name, DType::I64);
  std::vector<int64_t> values(static_cast<size_t>(tensor.numElements));
  copyBytes(values.data(), bytes(tensor), tensor.end - tensor.begin);
  if (outShape)
    *outShape = tensor.shape;
  return values;
}

namespace {

/// A blob of `shape` copied from `data`; `data` may be null when empty.
TensorBlob makeBlob(DType dtype, Shape shape, const void *data) {
  int64_t n = 0;
  if (!checkedNumElements(shape, dtypeSize(dtype), n))
    fail(TXL_INVALID_ARGUMENT, "invalid tensor shape {}", formatShape(shape));
  TensorBlob blob;
  blob.dtype = dtype;
  blob.shape = std::move(shape);
  blob.bytes.resize(static_cast<size_t>(n) * dtypeSize(dtype));
  copyBytes(blob.bytes.data(), data, blob.bytes.size());
  return blob;
}

} // namespace

TensorBlob TensorBlob::f32(Shape shape, const float *data) {
  return makeBlob(DType::F32, std::move(shape), data);
}

TensorBlob TensorBlob::i64(Shape shape, const int64_t *data) {
  return makeBlob(DType::I64, std::move(shape), data);
}

void writeSafeTensors(const std::string &path, const TensorMap &tensors,
                      const std::map<std::string, std::string> &metadata) {
  Json header = Json::object();
  size_t offset = 0;
  for (const auto &[name, blob] : tensors) {
    if (name == "__metadata__")
      fail(TXL_INVALID_ARGUMENT,
           "{}: '__metadata__' is reserved and cannot name a tensor", path);
    int64_t n = 0;
    if (!checkedNumElements(blob.shape, dtypeSize(blob.dtype), n) ||
        static_cast<size_t>(n) * dtypeSize(blob.dtype) != blob.bytes.size())
      fail(TXL_INVALID_ARGUMENT, "{}: tensor '{}': {} bytes do not match {} {}",
           path, name, blob.bytes.size(), dtypeName(blob.dtype),
           formatShape(blob.shape));
    header[name] = {{"dtype", std::string(dtypeName(blob.dtype))},
                    {"shape", blob.shape},
                    {"data_offsets", {offset, offset + blob.bytes.size()}}};
    offset += blob.bytes.size();
  }
  if (!metadata.empty())
    header["__metadata__"] = metadata;

  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t headerLen = text.size();

  AtomicFileWriter writer(path);
  writer.write(&headerLen, sizeof(headerLen));
  writer.write(text);
  for (const auto &entry : tensors)
    writer.write(entry.second.bytes.data(), entry.second.bytes.size());
  writer.commit();
}

} // namespace txl::rt
