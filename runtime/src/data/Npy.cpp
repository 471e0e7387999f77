//===- Npy.cpp - NumPy .npy reader and writer -------------------*- C++ -*-===//
//
// The header dict is parsed by a small recursive-descent parser for the subset
// of Python literals numpy.lib.format writes: strings, True/False/None,
// integers (with Python 2's 'L' suffix tolerated) and tuples/lists of them.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/data/Npy.h"

#include "txl/rt/support/File.h"
#include "txl/rt/support/Status.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the .npy data handled here is little-endian");

namespace txl::rt {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

/// Deepest nesting of tuples/lists the header parser follows. numpy writes
/// depth 1 (the shape tuple); structured dtypes, which are rejected anyway,
/// reach 3.
constexpr int kMaxHeaderDepth = 8;

/// A Python literal value of the npy header.
struct PyValue {
  enum class Kind { Str, Bool, Int, None, Tuple } kind = Kind::None;
  std::string str;
  bool boolean = false;
  int64_t integer = 0;
  std::vector<PyValue> items;
};

/// A header as error messages quote it: its first 200 characters (a
/// header may be 64 KiB), then how many more there are.
std::string headerExcerpt(std::string_view header) {
  constexpr size_t kShown = 200;
  if (header.size() <= kShown)
    return std::string(header);
  return fmt::format("{}... ({} more characters)", header.substr(0, kShown),
                     header.size() - kShown);
}

/// Parses the header dict; `fail`s with "<path>: malformed header: ...".
class HeaderParser {
public:
  HeaderParser(const std::string &path, std::string_view text)
      : path_(path), text_(text) {}

  std::map<std::string, PyValue> parseDict() {
    std::map<std::string, PyValue> dict;
    expect('{');
    while (!consume('}')) {
      PyValue key = parseValue();
      if (key.kind != PyValue::Kind::Str)
        error("dict keys must be strings");
      expect(':');
      dict[key.str] = parseValue();
      if (!consume(',')) {
        expect('}');
        break;
      }
    }
    skipSpace();
    if (pos_ != text_.size())
      error("unexpected text after the dict");
    return dict;
  }

private:
  [[noreturn]] void error(std::string_view what) {
    fail(TXL_DATA_ERROR, "{}: malformed npy header ({} at offset {}): {}",
         path_, what, pos_, headerExcerpt(text_));
  }

  void skipSpace() {
    while (pos_ < text_.size() &&
           std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }

  bool consume(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!consume(c))
      error(fmt::format("expected '{}'", c));
  }

  PyValue parseValue(int depth = 0) {
    skipSpace();
    if (pos_ >= text_.size())
      error("unexpected end");
    char c = text_[pos_];
    PyValue value;
    if (c == '\'' || c == '"') {
      value.kind = PyValue::Kind::Str;
      ++pos_;
      while (pos_ < text_.size() && text_[pos_] != c) {
        if (text_[pos_] == '\\' && pos_ + 1 < text_.size())
          ++pos_;
        value.str.push_back(text_[pos_++]);
      }
      if (pos_ >= text_.size())
        error("unterminated string");
      ++pos_;
      return value;
    }
    if (c == '(' || c == '[') {
      char close = c == '(' ? ')' : ']';
      value.kind = PyValue::Kind::Tuple;
      if (depth >= kMaxHeaderDepth)
        error(fmt::format("tuples nested deeper than {}", kMaxHeaderDepth));
      ++pos_;
      while (!consume(close)) {
        value.items.push_back(parseValue(depth + 1));
        if (!consume(',')) {
          expect(close);
          break;
        }
      }
      return value;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-') {
      size_t start = pos_++;
      while (pos_ < text_.size() &&
             std::isdigit(static_cast<unsigned char>(text_[pos_])))
        ++pos_;
      std::string digits(text_.substr(start, pos_ - start));
      if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l'))
        ++pos_;
      errno = 0;
      char *end = nullptr;
      long long parsed = std::strtoll(digits.c_str(), &end, 10);
      if (errno != 0 || end != digits.c_str() + digits.size())
        error("bad integer");
      value.kind = PyValue::Kind::Int;
      value.integer = parsed;
      return value;
    }
    for (auto [word, kind, flag] :
         {std::tuple{"True", PyValue::Kind::Bool, true},
          std::tuple{"False", PyValue::Kind::Bool, false},
          std::tuple{"None", PyValue::Kind::None, false}}) {
      size_t len = std::strlen(word);
      if (text_.substr(pos_, len) == word) {
        pos_ += len;
        value.kind = kind;
        value.boolean = flag;
        return value;
      }
    }
    error("unexpected character");
  }

  const std::string &path_;
  std::string_view text_;
  size_t pos_ = 0;
};

/// Little-endian unsigned integer of `n` bytes at `p`.
uint64_t readLittleEndian(const char *p, size_t n) {
  uint64_t value = 0;
  for (size_t i = 0; i < n; ++i)
    value |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return value;
}

/// The Python tuple spelling of `shape`: "()", "(5,)", "(3, 8, 3)".
std::string pythonTuple(const Shape &shape) {
  if (shape.size() == 1)
    return fmt::format("({},)", shape[0]);
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return text + ")";
}

void writeNpyBytes(const std::string &path, const Shape &shape, DType dtype,
                   const void *data) {
  int64_t n = 0;
  if (!checkedNumElements(shape, dtypeSize(dtype), n))
    fail(TXL_INVALID_ARGUMENT, "{}: invalid array shape {}", path,
         formatShape(shape));
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                  dtype == DType::F32 ? "<f4" : "<i8", pythonTuple(shape));
  // numpy pads magic + version + length + dict + '\n' to a multiple of 64.
  size_t prefix = kMagicLen + 2 + 2;
  bool v2 = false;
  size_t total = prefix + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  if (padded - prefix > 0xffff) {
    v2 = true;
    prefix = kMagicLen + 2 + 4;
    total = prefix + dict.size() + 1;
    padded = (total + 63) / 64 * 64;
  }
  dict.append(padded - total, ' ');
  dict.push_back('\n');

  std::string head(kMagic, kMagicLen);
  head.push_back(static_cast<char>(v2 ? 2 : 1));
  head.push_back('\0');
  uint64_t headerLen = dict.size();
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i)
    head.push_back(static_cast<char>((headerLen >> (8 * i)) & 0xff));

  AtomicFileWriter writer(path);
  writer.write(head);
  writer.write(dict);
  writer.write(data, static_cast<size_t>(n) * dtypeSize(dtype));
  writer.commit();
}

} // namespace

int64_t NpyArray::numElements() const {
  int64_t n = 1;
  for (int64_t extent : shape)
    n *= extent;
  return n;
}

NpyArray readNpy(const std::string &path) {
  return parseNpy(readFile(path), path);
}

NpyArray parseNpy(std::string_view bytes, const std::string &path) {
  if (bytes.size() < kMagicLen + 4 ||
      bytes.compare(0, kMagicLen, kMagic, kMagicLen) != 0)
    fail(TXL_DATA_ERROR, "{}: not a .npy file (bad magic)", path);
  int major = static_cast<unsigned char>(bytes[kMagicLen]);
  int minor = static_cast<unsigned char>(bytes[kMagicLen + 1]);
  if (minor != 0 || major < 1 || major > 3)
    fail(TXL_DATA_ERROR, "{}: unsupported .npy version {}.{}", path, major,
         minor);
  size_t lenBytes = major == 1 ? 2 : 4;
  size_t prefix = kMagicLen + 2 + lenBytes;
  if (bytes.size() < prefix)
    fail(TXL_DATA_ERROR, "{}: file truncated inside the .npy header", path);
  uint64_t headerLen = readLittleEndian(bytes.data() + kMagicLen + 2, lenBytes);
  if (headerLen > kMaxNpyHeaderBytes)
    fail(TXL_DATA_ERROR,
         "{}: npy header of {} bytes is longer than the {} bytes accepted",
         path, headerLen, kMaxNpyHeaderBytes);
  if (headerLen > bytes.size() - prefix)
    fail(TXL_DATA_ERROR,
         "{}: header length {} goes beyond the end of the file ({} bytes)",
         path, headerLen, bytes.size());
  std::string_view headerText(bytes.data() + prefix, headerLen);

  std::map<std::string, PyValue> dict =
      HeaderParser(path, headerText).parseDict();
  auto field = [&](const char *key, PyValue::Kind kind) -> const PyValue & {
    auto it = dict.find(key);
    if (it == dict.end() || it->second.kind != kind)
      fail(TXL_DATA_ERROR, "{}: npy header lacks a valid '{}': {}", path, key,
           headerExcerpt(headerText));
    return it->second;
  };
  const std::string &descr = field("descr", PyValue::Kind::Str).str;
  bool fortranOrder = field("fortran_order", PyValue::Kind::Bool).boolean;
  const PyValue &shapeValue = field("shape", PyValue::Kind::Tuple);

  NpyArray array;
  if (descr == "<f4") {
    array.dtype = DType::F32;
  } else if (descr == "<i8") {
    array.dtype = DType::I64;
  } else {
    fail(TXL_DATA_ERROR, "{}: unsupported dtype '{}' (expected '<f4' or '<i8')",
         path, descr);
  }
  if (fortranOrder)
    fail(TXL_DATA_ERROR,
         "{}: fortran_order arrays are not supported (save a C-order array)",
         path);
  for (const PyValue &extent : shapeValue.items) {
    if (extent.kind != PyValue::Kind::Int || extent.integer < 0)
      fail(TXL_DATA_ERROR, "{}: npy shape must hold non-negative integers: {}",
           path, headerText);
    array.shape.push_back(extent.integer);
  }

  size_t elementSize = dtypeSize(array.dtype);
  int64_t n = 0;
  if (!checkedNumElements(array.shape, elementSize, n))
    fail(TXL_DATA_ERROR, "{}: shape {} is too large", path,
         formatShape(array.shape));
  size_t dataStart = prefix + static_cast<size_t>(headerLen);
  size_t have = bytes.size() - dataStart;
  size_t need = static_cast<size_t>(n) * elementSize;
  if (have < need)
    fail(TXL_DATA_ERROR,
         "{}: truncated: shape {} needs {} data bytes, the file has {}", path,
         formatShape(array.shape), need, have);
  if (have > need)
    fail(TXL_DATA_ERROR,
         "{}: {} unexpected trailing bytes after the {} data bytes of shape {}",
         path, have - need, need, formatShape(array.shape));
  const char *data = bytes.data() + dataStart;
  if (need == 0) {
    // Nothing to copy (memcpy must not see the empty vectors' null data).
  } else if (array.dtype == DType::F32) {
    array.f32.resize(static_cast<size_t>(n));
    std::memcpy(array.f32.data(), data, need);
  } else {
    array.i64.resize(static_cast<size_t>(n));
    std::memcpy(array.i64.data(), data, need);
  }
  return array;
}

void writeNpy(const std::string &path, const Shape &shape, const float *data) {
  writeNpyBytes(path, shape, DType::F32, data);
}

void writeNpy(const std::string &path, const Shape &shape,
              const int64_t *data) {
  writeNpyBytes(path, shape, DType::I64, data);
}

void writeNpy(const std::string &path, const NpyArray &array) {
  int64_t n = 0;
  size_t have = array.dtype == DType::F32 ? array.f32.size() : array.i64.size();
  if (!checkedNumElements(array.shape, dtypeSize(array.dtype), n) ||
      static_cast<size_t>(n) != have)
    fail(TXL_INVALID_ARGUMENT, "{}: {} values do not match shape {}", path,
         have, formatShape(array.shape));
  if (array.dtype == DType::F32)
    writeNpy(path, array.shape, array.f32.data());
  else
    writeNpy(path, array.shape, array.i64.data());
}

} // namespace txl::rt
