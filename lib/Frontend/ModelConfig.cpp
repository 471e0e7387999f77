//===- ModelConfig.cpp - Parse Transformer-XL model files ---*- C++ -*-===//
//
// Reads a TOML model file into a ModelConfig. Every key is read into its field
// through a per-section table, so unknown keys and wrong types are caught in
// one place; the checks on values follow, each pointing at the value it
// rejects. The checks are those of the official train.py / MemTransformerLM
// (kimiyoung/transformer-xl), plus the features txlc does not support yet.
//
//===----------------------------------------------------------------------===//

#include "txl/Frontend/ModelConfig.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

// toml++ is compiled into this file header-only and without exceptions: the
// compiler is built with -fno-exceptions, and the shared libtomlplusplus that
// distributions ship exports only the throwing parser. With exceptions off,
// toml::parse returns a toml::parse_result that holds the error instead.
#undef TOML_HEADER_ONLY
#undef TOML_SHARED_LIB
#undef TOML_EXCEPTIONS
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
// With NDEBUG, toml++ 3.3 turns its internal assertions into
// __builtin_assume, and one does not hold: parse_key "assumes" a key starts
// at a table header's first character, which "[\x01]" breaks before the
// parser reports it (undefined behaviour, found by test/Fuzz's model-file
// target; corpus/model-file/regression-table-header-key). Without NDEBUG
// they are TOML_ASSERT, here checking nothing, so the parser's own error
// path stays in the code.
#pragma push_macro("NDEBUG")
#undef NDEBUG
#define TOML_ASSERT(expr) static_cast<void>(0)
#include <toml++/toml.h>
#pragma pop_macro("NDEBUG")

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <utility>
#include <variant>

using namespace mlir;
using namespace mlir::txl;

using llvm::ArrayRef;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;

namespace {

/// A 1-based line and column in the model file.
struct Loc {
  uint32_t line = 1;
  uint32_t column = 1;
};

/// The start of a toml++ source region; 1:1 where toml++ recorded none
/// (tables that only exist implicitly, e.g. through `[model.x]`).
Loc startOf(const toml::source_region &region) {
  if (region.begin.line == 0)
    return Loc();
  return Loc{region.begin.line, std::max<uint32_t>(region.begin.column, 1)};
}

/// The first non-ASCII character that toml++ 3.3 would classify with
/// `is_non_ascii_horizontal_whitespace`, whose table has holes that reach
/// __builtin_unreachable (undefined behaviour for U+00A1..U+049F, 'é'
/// included; found by test/Fuzz's model-file target): one outside strings
/// and comments, where TOML allows no non-ASCII character anyway, or the
/// first character after a multi-line basic string's line-ending backslash,
/// which toml++ tests for whitespace. Its position and what it is, or
/// nullopt. A small lexer of TOML's strings and comments; everything else
/// is left to toml++.
std::optional<std::pair<Loc, const char *>> findUnsafeNonAscii(StringRef text) {
  enum class State {
    Normal,
    Comment,
    Basic,
    Literal,
    MultiBasic,
    MultiLiteral
  };
  constexpr StringRef kMultiBasic = "\"\"\"", kMultiLiteral = "'''";
  State state = State::Normal;
  Loc loc;
  // Advances over text[i] (and `extra` more ASCII characters), keeping
  // `loc` at the next character; columns count code points, as toml++'s.
  size_t i = 0;
  auto advance = [&](size_t extra = 0) {
    for (size_t end = i + 1 + extra; i < end && i < text.size(); ++i) {
      unsigned char c = text[i];
      if (c == '\n') {
        ++loc.line;
        loc.column = 1;
      } else if ((c & 0xC0) != 0x80) {
        ++loc.column;
      }
    }
  };
  while (i < text.size()) {
    unsigned char c = text[i];
    StringRef rest = text.substr(i);
    switch (state) {
    case State::Normal:
      if (c >= 0x80)
        return std::make_pair(loc, "a non-ASCII character outside a string "
                                   "or comment (TOML allows them only there)");
      if (c == '#') {
        state = State::Comment;
      } else if (rest.starts_with(kMultiBasic)) {
        state = State::MultiBasic;
        advance(2);
        continue;
      } else if (rest.starts_with(kMultiLiteral)) {
        state = State::MultiLiteral;
        advance(2);
        continue;
      } else if (c == '"') {
        state = State::Basic;
      } else if (c == '\'') {
        state = State::Literal;
      }
      break;
    case State::Comment:
      if (c == '\n')
        state = State::Normal;
      break;
    case State::Basic:
      if (c == '\\' && rest.size() > 1 && rest[1] != '\n') {
        advance(1); // the escaped character
        continue;
      }
      if (c == '"' || c == '\n')
        state = State::Normal;
      break;
    case State::Literal:
      if (c == '\'' || c == '\n')
        state = State::Normal;
      break;
    case State::MultiBasic: {
      if (rest.starts_with(kMultiBasic)) {
        state = State::Normal;
        advance(2);
        continue;
      }
      if (c != '\\')
        break;
      // A line-ending backslash: toml++ skips the whitespace and line
      // breaks after it and tests the first other character.
      StringRef after = rest.drop_front().ltrim(" \t");
      if (!after.starts_with("\n") && !after.starts_with("\r\n")) {
        advance(1); // an escape sequence's first character
        continue;
      }
      StringRef next = after.ltrim(" \t\r\n");
      if (!next.empty() && static_cast<unsigned char>(next.front()) >= 0x80) {
        advance(rest.size() - next.size() - 1);
        return std::make_pair(loc, "a non-ASCII character right after a "
                                   "line-ending backslash (toml++ 3.3 "
                                   "misreads it; escape it or move it up)");
      }
      break;
    }
    case State::MultiLiteral:
      if (rest.starts_with(kMultiLiteral)) {
        state = State::Normal;
        advance(2);
        continue;
      }
      break;
    }
    advance();
  }
  return std::nullopt;
}

/// Where a key's value is stored; the reader is picked by the pointee type.
using FieldRef = std::variant<int64_t *, double *, bool *, std::string *,
                              llvm::SmallVectorImpl<int64_t> *,
                              llvm::SmallVectorImpl<bool> *,
                              std::optional<int64_t> *, std::optional<bool> *>;

/// One key of a section, under its official name.
struct Field {
  StringRef key;
  FieldRef dest;
};

/// The TOML type of `node` as the TOML specification names it.
StringRef typeName(const toml::node &node) {
  switch (node.type()) {
  case toml::node_type::none:
    return "nothing";
  case toml::node_type::table:
    return "table";
  case toml::node_type::array:
    return "array";
  case toml::node_type::string:
    return "string";
  case toml::node_type::integer:
    return "integer";
  case toml::node_type::floating_point:
    return "float";
  case toml::node_type::boolean:
    return "boolean";
  case toml::node_type::date:
    return "date";
  case toml::node_type::time:
    return "time";
  case toml::node_type::date_time:
    return "date-time";
  }
  llvm::report_fatal_error("unknown toml++ node type");
}

/// `value` printed the way it would be written in the file.
std::string formatDouble(double value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%g", value);
  return text;
}

/// A key-value pair of a table, kept in file order: toml::table iterates in
/// key order, but the first error reported should be the first in the file.
using Entry = std::pair<const toml::key *, const toml::node *>;

llvm::SmallVector<Entry> entriesInFileOrder(const toml::table &table) {
  llvm::SmallVector<Entry> entries;
  for (auto &&[key, node] : table)
    entries.emplace_back(&key, &node);
  llvm::sort(entries, [](const Entry &a, const Entry &b) {
    const toml::source_position &pa = a.first->source().begin;
    const toml::source_position &pb = b.first->source().begin;
    return std::make_pair(pa.line, pa.column) <
           std::make_pair(pb.line, pb.column);
  });
  return entries;
}

/// Parses one model file. Errors carry `<file>:<line>:<col>: error: ...`.
class ModelFileParser {
public:
  explicit ModelFileParser(StringRef fileName) : fileName(fileName) {}

  Expected<ModelConfig> parse(StringRef text);

private:
  Error errorAt(Loc loc, const Twine &message) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   fileName + ":" + Twine(loc.line) + ":" +
                                       Twine(loc.column) +
                                       ": error: " + message);
  }

  /// Whether `[section] key` was given in the file.
  bool has(StringRef section, StringRef key) const {
    return valueLocs.count((section + "." + key).str());
  }
  /// The value of `[section] key`, else the section header, else 1:1.
  Loc locOf(StringRef section, StringRef key) const {
    auto it = valueLocs.find((section + "." + key).str());
    if (it != valueLocs.end())
      return it->second;
    return sectionLoc(section);
  }
  Loc sectionLoc(StringRef section) const {
    auto it = sectionLocs.find(section);
    return it == sectionLocs.end() ? Loc() : it->second;
  }

  Error readSection(StringRef section, const toml::table &table,
                    ArrayRef<Field> fields);

  // One reader per field type; `what` is `[section] key` for messages.
  Error read(const Twine &what, const toml::node &node, int64_t &out);
  Error read(const Twine &what, const toml::node &node, double &out);
  Error read(const Twine &what, const toml::node &node, bool &out);
  Error read(const Twine &what, const toml::node &node, std::string &out);
  Error read(const Twine &what, const toml::node &node,
             llvm::SmallVectorImpl<int64_t> &out);
  Error read(const Twine &what, const toml::node &node,
             llvm::SmallVectorImpl<bool> &out);
  template <typename T>
  Error read(const Twine &what, const toml::node &node, std::optional<T> &out) {
    T value{};
    if (Error err = read(what, node, value))
      return err;
    out = value;
    return Error::success();
  }

  Error checkRequired();
  Error checkPositive(StringRef section, StringRef key, int64_t value);
  Error checkNonNegative(StringRef section, StringRef key, int64_t value);
  Error checkOneOf(StringRef section, StringRef key, StringRef value,
                   ArrayRef<StringRef> allowed);

  Error validateModel(ModelConfig &config);
  Error validateSegment(const ModelConfig &config);
  Error validateEval(const ModelConfig &config);
  Error validateTrain(const ModelConfig &config);
  Error validateData(const ModelConfig &config);

  StringRef fileName;
  /// Header of each section present, by section name.
  llvm::StringMap<Loc> sectionLocs;
  /// Each value read, by `section.key`; array elements as `section.key[i]`.
  llvm::StringMap<Loc> valueLocs;
};

} // namespace

//===----------------------------------------------------------------------===//
// Readers
//===----------------------------------------------------------------------===//

Error ModelFileParser::read(const Twine &what, const toml::node &node,
                            int64_t &out) {
  if (const auto *value = node.as_integer()) {
    out = value->get();
    return Error::success();
  }
  return errorAt(startOf(node.source()),
                 what + ": expected an integer, got " + typeName(node));
}

Error ModelFileParser::read(const Twine &what, const toml::node &node,
                            double &out) {
  // As in Python, an integer is a fine value for a float option.
  if (const auto *value = node.as_floating_point()) {
    out = value->get();
    // TOML allows inf and nan; no option of the official code takes them.
    if (!std::isfinite(out))
      return errorAt(startOf(node.source()),
                     what + ": expected a finite number, got " +
                         formatDouble(out));
    return Error::success();
  }
  if (const auto *value = node.as_integer()) {
    out = static_cast<double>(value->get());
    return Error::success();
  }
  return errorAt(startOf(node.source()),
                 what + ": expected a number, got " + typeName(node));
}

Error ModelFileParser::read(const Twine &what, const toml::node &node,
                            bool &out) {
  if (const auto *value = node.as_boolean()) {
    out = value->get();
    return Error::success();
  }
  return errorAt(startOf(node.source()),
                 what + ": expected a boolean, got " + typeName(node));
}

Error ModelFileParser::read(const Twine &what, const toml::node &node,
                            std::string &out) {
  if (const auto *value = node.as_string()) {
    out = value->get();
    return Error::success();
  }
  return errorAt(startOf(node.source()),
                 what + ": expected a string, got " + typeName(node));
}

Error ModelFileParser::read(const Twine &what, const toml::node &node,
                            llvm::SmallVectorImpl<int64_t> &out) {
  const toml::array *array = node.as_array();
  if (!array)
    return errorAt(startOf(node.source()),
                   what + ": expected an array of integers, got " +
                       typeName(node));
  out.clear();
  for (auto [index, element] : llvm::enumerate(*array)) {
    int64_t value = 0;
    if (Error err = read(what + "[" + Twine(index) + "]", element, value))
      return err;
    out.push_back(value);
  }
  return Error::success();
}

Error ModelFileParser::read(const Twine &what, const toml::node &node,
                            llvm::SmallVectorImpl<bool> &out) {
  const toml::array *array = node.as_array();
  if (!array)
    return errorAt(startOf(node.source()),
                   what + ": expected an array of booleans, got " +
                       typeName(node));
  out.clear();
  for (auto [index, element] : llvm::enumerate(*array)) {
    bool value = false;
    if (Error err = read(what + "[" + Twine(index) + "]", element, value))
      return err;
    out.push_back(value);
  }
  return Error::success();
}

Error ModelFileParser::readSection(StringRef section, const toml::table &table,
                                   ArrayRef<Field> fields) {
  for (const auto &[key, nodePtr] : entriesInFileOrder(table)) {
    const toml::node &node = *nodePtr;
    StringRef name(key->str().data(), key->str().size());
    const Field *field = llvm::find_if(
        fields, [&](const Field &candidate) { return candidate.key == name; });
    if (field == fields.end())
      return errorAt(startOf(key->source()),
                     "unknown key '" + name + "' in [" + section + "]");

    std::string what = ("[" + section + "] " + name).str();
    if (Error err = std::visit(
            [&](auto *dest) { return read(what, node, *dest); }, field->dest))
      return err;

    std::string path = (section + "." + name).str();
    valueLocs[path] = startOf(node.source());
    // Array elements get their own locations for the checks on cutoffs.
    if (const toml::array *array = node.as_array())
      for (auto [index, element] : llvm::enumerate(*array))
        valueLocs[path + "[" + std::to_string(index) + "]"] =
            startOf(element.source());
  }
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

Error ModelFileParser::checkRequired() {
  static const std::pair<StringRef, StringRef> required[] = {
      {"model", "n_token"},  {"model", "n_layer"}, {"model", "d_model"},
      {"model", "n_head"},   {"model", "d_head"},  {"model", "d_inner"},
      {"segment", "tgt_len"}};
  for (auto [section, key] : required)
    if (!has(section, key))
      return errorAt(sectionLoc(section),
                     "[" + section + "] " + key + " is required");
  return Error::success();
}

Error ModelFileParser::checkPositive(StringRef section, StringRef key,
                                     int64_t value) {
  if (value > 0)
    return Error::success();
  return errorAt(locOf(section, key), "[" + section + "] " + key +
                                          " must be a positive integer, got " +
                                          Twine(value));
}

Error ModelFileParser::checkNonNegative(StringRef section, StringRef key,
                                        int64_t value) {
  if (value >= 0)
    return Error::success();
  return errorAt(locOf(section, key),
                 "[" + section + "] " + key +
                     " must be a non-negative integer, got " + Twine(value));
}

Error ModelFileParser::checkOneOf(StringRef section, StringRef key,
                                  StringRef value,
                                  ArrayRef<StringRef> allowed) {
  if (llvm::is_contained(allowed, value))
    return Error::success();
  return errorAt(locOf(section, key),
                 "[" + section + "] " + key + " must be one of " +
                     llvm::join(allowed, ", ") + ", got '" + value + "'");
}

Error ModelFileParser::validateModel(ModelConfig &config) {
  ModelSection &m = config.model;
  const std::pair<StringRef, int64_t> sizes[] = {
      {"n_token", m.nToken}, {"n_layer", m.nLayer}, {"d_model", m.dModel},
      {"n_head", m.nHead},   {"d_head", m.dHead},   {"d_inner", m.dInner}};
  for (auto [key, value] : sizes)
    if (Error err = checkPositive("model", key, value))
      return err;
  // Every width is a dimension of some product, which BLAS takes as a
  // 32-bit int; the widest is the attention's q, k, v projection.
  constexpr int64_t kBlasMax = std::numeric_limits<int32_t>::max();
  const std::pair<StringRef, int64_t> widths[] = {
      {"n_token", m.nToken},
      {"d_model", m.dModel},
      {"d_inner", m.dInner},
      {"d_embed", m.dEmbed},
      {"d_head", m.nHead > kBlasMax / 3 / m.dHead ? kBlasMax + int64_t(1)
                                                  : 3 * m.nHead * m.dHead}};
  for (auto [key, value] : widths)
    if (value > kBlasMax)
      return errorAt(
          locOf("model", key),
          "[model] " + key + ": " +
              (key == "d_head" ? Twine("3 * n_head * d_head") : Twine(value)) +
              " is more than the " + Twine(kBlasMax) +
              " rows or columns a BLAS product takes");

  // The official PositionalEmbedding interleaves sin and cos halves.
  if (m.dModel % 2 != 0)
    return errorAt(locOf("model", "d_model"),
                   "[model] d_model must be even for the sinusoid position "
                   "embedding, got " +
                       Twine(m.dModel));

  if (m.dEmbed != -1 && m.dEmbed <= 0)
    return errorAt(locOf("model", "d_embed"),
                   "[model] d_embed must be -1 (meaning d_model) or a "
                   "positive integer, got " +
                       Twine(m.dEmbed));

  // The official attn_type: 0 relative (Transformer-XL), 1 Shaw et al.,
  // 2 Vaswani et al. absolute, 3 Al-Rfou et al. absolute.
  if (m.attnType < 0 || m.attnType > 3)
    return errorAt(locOf("model", "attn_type"),
                   "[model] attn_type must be 0, 1, 2 or 3, got " +
                       Twine(m.attnType));
  if (m.attnType != 0)
    return errorAt(locOf("model", "attn_type"),
                   "[model] attn_type " + Twine(m.attnType) +
                       " is not supported yet (only 0, the relative "
                       "attention of Transformer-XL)");

  const std::pair<StringRef, double> rates[] = {{"dropout", m.dropout},
                                                {"dropatt", m.dropatt}};
  for (auto [key, value] : rates)
    if (!(value >= 0.0 && value < 1.0))
      return errorAt(locOf("model", key), "[model] " + key +
                                              " must be in [0, 1), got " +
                                              formatDouble(value));

  if (m.divVal < 1)
    return errorAt(locOf("model", "div_val"),
                   "[model] div_val must be at least 1, got " +
                       Twine(m.divVal));

  for (auto [index, cutoff] : llvm::enumerate(m.cutoffs)) {
    Loc loc = locOf("model", "cutoffs[" + std::to_string(index) + "]");
    if (cutoff <= 0 || cutoff >= m.nToken)
      return errorAt(loc, "[model] cutoffs must lie in (0, n_token = " +
                              Twine(m.nToken) + "), got " + Twine(cutoff));
    if (index > 0 && cutoff <= m.cutoffs[index - 1])
      return errorAt(loc, "[model] cutoffs must be strictly increasing, got " +
                              Twine(cutoff) + " after " +
                              Twine(m.cutoffs[index - 1]));
  }

  // AdaptiveEmbedding gives cluster i d_embed // div_val**i dimensions.
  if (m.divVal > 1) {
    int64_t dim = config.dEmbed();
    for (size_t cluster = 1; cluster <= m.cutoffs.size(); ++cluster) {
      dim /= m.divVal;
      if (dim == 0)
        return errorAt(locOf("model", "div_val"),
                       "[model] div_val " + Twine(m.divVal) +
                           " leaves cluster " + Twine(cluster) +
                           " with no embedding dimensions (d_embed // "
                           "div_val**" +
                           Twine(cluster) + " = 0)");
    }
  }

  // train.py builds tie_projs as [False] + one flag per tail cluster.
  size_t numClusters = m.cutoffs.size() + 1;
  if (!has("model", "tie_projs"))
    m.tieProjs.assign(numClusters, false);
  else if (m.tieProjs.size() != numClusters)
    return errorAt(
        locOf("model", "tie_projs"),
        "[model] tie_projs must have len(cutoffs) + 1 = " + Twine(numClusters) +
            " entries, got " + Twine(m.tieProjs.size()));

  return Error::success();
}

Error ModelFileParser::validateSegment(const ModelConfig &config) {
  const SegmentSection &s = config.segment;
  if (Error err = checkPositive("segment", "tgt_len", s.tgtLen))
    return err;
  if (Error err = checkNonNegative("segment", "mem_len", s.memLen))
    return err;
  if (s.extLen != 0)
    return errorAt(locOf("segment", "ext_len"),
                   "[segment] ext_len is not supported yet, got " +
                       Twine(s.extLen) + " (only 0)");
  // With same_length and no memory, every query would be masked out.
  if (config.model.sameLength && s.memLen == 0)
    return errorAt(locOf("model", "same_length"),
                   "[model] same_length = true requires [segment] mem_len > "
                   "0, got 0");
  return Error::success();
}

Error ModelFileParser::validateEval(const ModelConfig &config) {
  const EvalSection &e = config.eval;
  if (e.tgtLen)
    if (Error err = checkPositive("eval", "tgt_len", *e.tgtLen))
      return err;
  if (e.memLen)
    if (Error err = checkNonNegative("eval", "mem_len", *e.memLen))
      return err;
  if (e.batchSize)
    if (Error err = checkPositive("eval", "batch_size", *e.batchSize))
      return err;
  // Only [eval] can make the merged values conflict: [model]/[segment] alone
  // were checked above.
  if ((e.sameLength || e.memLen) && config.evalSameLength() &&
      config.evalMemLen() == 0)
    return errorAt(locOf("eval", e.sameLength ? "same_length" : "mem_len"),
                   "[eval] same_length = true requires an evaluation mem_len "
                   "> 0, got 0");
  return Error::success();
}

Error ModelFileParser::validateTrain(const ModelConfig &config) {
  const TrainSection &t = config.train;
  const std::pair<StringRef, int64_t> counts[] = {
      {"batch_size", t.batchSize},
      {"batch_chunk", t.batchChunk},
      {"max_step", t.maxStep},
      {"log_interval", t.logInterval},
      {"eval_interval", t.evalInterval}};
  for (auto [key, value] : counts)
    if (Error err = checkPositive("train", key, value))
      return err;
  const std::pair<StringRef, int64_t> steps[] = {{"warmup_step", t.warmupStep},
                                                 {"patience", t.patience}};
  for (auto [key, value] : steps)
    if (Error err = checkNonNegative("train", key, value))
      return err;
  // train.py: assert args.batch_size % args.batch_chunk == 0.
  if (t.batchSize % t.batchChunk != 0)
    return errorAt(locOf("train", "batch_chunk"),
                   "[train] batch_chunk " + Twine(t.batchChunk) +
                       " must divide batch_size " + Twine(t.batchSize));

  if (!(t.lr > 0.0))
    return errorAt(locOf("train", "lr"),
                   "[train] lr must be positive, got " + formatDouble(t.lr));
  if (!(t.decayRate > 0.0))
    return errorAt(locOf("train", "decay_rate"),
                   "[train] decay_rate must be positive, got " +
                       formatDouble(t.decayRate));
  const std::pair<StringRef, double> magnitudes[] = {
      {"mom", t.mom},
      {"eta_min", t.etaMin},
      {"lr_min", t.lrMin},
      {"clip", t.clip},
      {"init_range", t.initRange},
      {"emb_init_range", t.embInitRange},
      {"init_std", t.initStd},
      {"proj_init_std", t.projInitStd}};
  for (auto [key, value] : magnitudes)
    if (!(value >= 0.0))
      return errorAt(locOf("train", key), "[train] " + key +
                                              " must be non-negative, got " +
                                              formatDouble(value));

  // The choices of the official train.py arguments.
  if (Error err =
          checkOneOf("train", "optim", t.optim, {"adam", "sgd", "adagrad"}))
    return err;
  if (Error err = checkOneOf("train", "scheduler", t.scheduler,
                             {"cosine", "inv_sqrt", "dev_perf", "constant"}))
    return err;
  // torch.optim.SGD accepts any momentum >= 0; the compiled update
  // (txl.sgd_update) takes the range where the buffer stays bounded.
  if (t.optim == "sgd" && !(t.mom < 1.0))
    return errorAt(locOf("train", "mom"),
                   "[train] mom must be below 1 with optim 'sgd', got " +
                       formatDouble(t.mom));
  if (Error err = checkOneOf("train", "init", t.init, {"normal", "uniform"}))
    return err;
  return checkOneOf("train", "emb_init", t.embInit, {"normal", "uniform"});
}

Error ModelFileParser::validateData(const ModelConfig &config) {
  if (!has("data", "dataset"))
    return Error::success();
  return checkOneOf(
      "data", "dataset", config.data.dataset,
      {"ptb", "wt2", "wt103", "enwik8", "text8", "lm1b", "ptb-char"});
}

//===----------------------------------------------------------------------===//
// Model file
//===----------------------------------------------------------------------===//

Expected<ModelConfig> ModelFileParser::parse(StringRef text) {
  if (auto unsafe = findUnsafeNonAscii(text))
    return errorAt(unsafe->first, Twine("invalid TOML: ") + unsafe->second);
  toml::parse_result result =
      toml::parse(std::string_view(text.data(), text.size()),
                  std::string_view(fileName.data(), fileName.size()));
  if (!result) {
    const toml::parse_error &error = result.error();
    std::string description(error.description());
    // One line, starting lower-case like every other diagnostic.
    std::replace(description.begin(), description.end(), '\n', ' ');
    if (description.size() > 1 && llvm::isLower(description[1]))
      description[0] = llvm::toLower(description[0]);
    return errorAt(startOf(error.source()),
                   "invalid TOML: " + StringRef(description));
  }
  const toml::table &root = result.table();

  ModelConfig config;
  config.fileName = fileName.str();
  config.modelName = modelNameFromPath(fileName);

  ModelSection &m = config.model;
  SegmentSection &s = config.segment;
  EvalSection &e = config.eval;
  TrainSection &t = config.train;
  DataSection &d = config.data;
  const Field modelFields[] = {
      {"n_token", &m.nToken},     {"n_layer", &m.nLayer},
      {"d_model", &m.dModel},     {"n_head", &m.nHead},
      {"d_head", &m.dHead},       {"d_inner", &m.dInner},
      {"d_embed", &m.dEmbed},     {"attn_type", &m.attnType},
      {"pre_lnorm", &m.preLnorm}, {"dropout", &m.dropout},
      {"dropatt", &m.dropatt},    {"tie_weight", &m.tieWeight},
      {"div_val", &m.divVal},     {"cutoffs", &m.cutoffs},
      {"tie_projs", &m.tieProjs}, {"same_length", &m.sameLength},
      {"clamp_len", &m.clampLen}, {"untie_r", &m.untieR}};
  const Field segmentFields[] = {
      {"tgt_len", &s.tgtLen}, {"mem_len", &s.memLen}, {"ext_len", &s.extLen}};
  const Field evalFields[] = {{"tgt_len", &e.tgtLen},
                              {"mem_len", &e.memLen},
                              {"clamp_len", &e.clampLen},
                              {"same_length", &e.sameLength},
                              {"batch_size", &e.batchSize}};
  const Field trainFields[] = {{"batch_size", &t.batchSize},
                               {"batch_chunk", &t.batchChunk},
                               {"optim", &t.optim},
                               {"lr", &t.lr},
                               {"mom", &t.mom},
                               {"scheduler", &t.scheduler},
                               {"warmup_step", &t.warmupStep},
                               {"max_step", &t.maxStep},
                               {"eta_min", &t.etaMin},
                               {"decay_rate", &t.decayRate},
                               {"lr_min", &t.lrMin},
                               {"patience", &t.patience},
                               {"clip", &t.clip},
                               {"clip_nonemb", &t.clipNonemb},
                               {"init", &t.init},
                               {"emb_init", &t.embInit},
                               {"init_range", &t.initRange},
                               {"emb_init_range", &t.embInitRange},
                               {"init_std", &t.initStd},
                               {"proj_init_std", &t.projInitStd},
                               {"seed", &t.seed},
                               {"log_interval", &t.logInterval},
                               {"eval_interval", &t.evalInterval},
                               {"max_eval_steps", &t.maxEvalSteps},
                               {"varlen", &t.varlen}};
  const Field dataFields[] = {{"dataset", &d.dataset}, {"path", &d.path}};
  const std::pair<StringRef, ArrayRef<Field>> sections[] = {
      {"model", modelFields},
      {"segment", segmentFields},
      {"eval", evalFields},
      {"train", trainFields},
      {"data", dataFields}};

  for (auto [key, node] : entriesInFileOrder(root)) {
    StringRef name(key->str().data(), key->str().size());
    const auto *section = llvm::find_if(
        sections, [&](const auto &section) { return section.first == name; });
    // A table's source is its header, from the '['.
    if (section == std::end(sections)) {
      if (node->is_table())
        return errorAt(startOf(node->source()),
                       "unknown section [" + name + "]");
      return errorAt(startOf(key->source()),
                     "unknown top-level key '" + name +
                         "' (keys belong in a section such as [model])");
    }
    const toml::table *table = node->as_table();
    if (!table)
      return errorAt(startOf(node->source()),
                     "[" + name + "] must be a table, got " + typeName(*node));
    sectionLocs[name] = startOf(node->source());
    if (Error err = readSection(name, *table, section->second))
      return err;
  }

  if (Error err = checkRequired())
    return err;
  if (Error err = validateModel(config))
    return err;
  if (Error err = validateSegment(config))
    return err;
  if (Error err = validateEval(config))
    return err;
  if (Error err = validateTrain(config))
    return err;
  if (Error err = validateData(config))
    return err;
  return config;
}

std::string mlir::txl::modelNameFromPath(StringRef path) {
  std::string name = llvm::sys::path::stem(path).str();
  for (char &c : name)
    if (!llvm::isAlnum(c) && c != '_')
      c = '_';
  // Generated symbols are built from the name, so it must not start with a
  // digit.
  if (name.empty() || llvm::isDigit(name.front()))
    name = "model_" + name;
  return name;
}

Expected<ModelConfig> mlir::txl::parseModelConfig(StringRef text,
                                                  StringRef fileName) {
  return ModelFileParser(fileName).parse(text);
}

Expected<ModelConfig> mlir::txl::loadModelConfig(StringRef path) {
  // A model file is a small regular file: a device (/dev/zero), a pipe or a
  // directory would be read without end or fail obscurely.
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return llvm::createStringError(
        ec, path + ": error: cannot read model file: " + ec.message());
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return llvm::createStringError(
        std::make_error_code(std::errc::invalid_argument),
        path + ": error: cannot read model file: not a regular file");
  if (status.getSize() > kMaxModelFileBytes)
    return llvm::createStringError(
        std::make_error_code(std::errc::file_too_large),
        path + ": error: cannot read model file: " + Twine(status.getSize()) +
            " bytes, more than the " + Twine(kMaxModelFileBytes) +
            " a model file may have");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (std::error_code ec = buffer.getError())
    return llvm::createStringError(
        ec, path + ": error: cannot read model file: " + ec.message());
  return parseModelConfig((*buffer)->getBuffer(), path);
}
