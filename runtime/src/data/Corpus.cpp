//===- Corpus.cpp - LM vocabulary and corpora (official) --------*- C++ -*-===//

#include "txl/rt/data/Corpus.h"

#include "txl/rt/support/File.h"
#include "txl/rt/support/Status.h"

#include <algorithm>

#include <dirent.h>
#include <fnmatch.h>
#include <unistd.h>

namespace txl::rt {

namespace {

constexpr std::string_view kEos = "<eos>";
constexpr std::string_view kDoubleEos = "<S>"; // official add_double_eos (lm1b)
constexpr std::string_view kUnk = "<UNK>";     // official _build_from_file
constexpr Split kSplits[] = {Split::Train, Split::Valid, Split::Test};

/// Byte length of the Python whitespace character (str.isspace()) starting
/// at `p` (`end` bounds it), or 0. `p` is on a UTF-8 character boundary.
size_t whitespaceLength(const unsigned char *p, const unsigned char *end) {
  unsigned char c = p[0];
  if ((c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20))
    return 1;
  if (c < 0xc2)
    return 0;
  size_t avail = static_cast<size_t>(end - p);
  if (c == 0xc2 && avail >= 2 && (p[1] == 0x85 || p[1] == 0xa0))
    return 2; // U+0085, U+00A0
  if (avail < 3)
    return 0;
  if (c == 0xe1 && p[1] == 0x9a && p[2] == 0x80)
    return 3; // U+1680
  if (c == 0xe2 && p[1] == 0x80 &&
      ((p[2] >= 0x80 && p[2] <= 0x8a) || p[2] == 0xa8 || p[2] == 0xa9 ||
       p[2] == 0xaf))
    return 3; // U+2000..U+200A, U+2028, U+2029, U+202F
  if (c == 0xe2 && p[1] == 0x81 && p[2] == 0x9f)
    return 3; // U+205F
  if (c == 0xe3 && p[1] == 0x80 && p[2] == 0x80)
    return 3; // U+3000
  return 0;
}

/// Byte length of the UTF-8 character at `p`, 1 for ASCII; 0 if invalid
/// (overlong forms, surrogates and code points above U+10FFFF included).
size_t utf8Length(const unsigned char *p, const unsigned char *end) {
  unsigned char c = p[0];
  if (c < 0x80)
    return 1;
  size_t avail = static_cast<size_t>(end - p);
  auto cont = [&](size_t i) { return i < avail && (p[i] & 0xc0) == 0x80; };
  if (c >= 0xc2 && c <= 0xdf)
    return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(1) || !cont(2))
      return 0;
    if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0))
      return 0;
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3))
      return 0;
    if ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90))
      return 0;
    return 4;
  }
  return 0;
}

/// Calls `fn(line, lineNo)` for every line as Python's text-mode iteration
/// yields them (universal newlines; no empty line after a final newline).
template <typename Fn> void forEachLine(std::string_view text, Fn &&fn) {
  size_t pos = 0;
  int64_t lineNo = 1;
  while (pos < text.size()) {
    size_t brk = text.find_first_of("\r\n", pos);
    if (brk == std::string_view::npos) {
      fn(text.substr(pos), lineNo);
      return;
    }
    fn(text.substr(pos, brk - pos), lineNo++);
    pos = brk + 1;
    if (text[brk] == '\r' && pos < text.size() && text[pos] == '\n')
      ++pos;
  }
}

/// How official `tokenize` frames a line.
enum class Framing { None, Eos, DoubleEos };

Framing framing(bool addEos, bool addDoubleEos) {
  if (addDoubleEos)
    return Framing::DoubleEos;
  return addEos ? Framing::Eos : Framing::None;
}

/// Calls `fn(token)` for the tokens of official `tokenize(line, add_eos,
/// add_double_eos)`; `scratch` holds the lower-cased copy when `lowerCase`.
template <typename Fn>
void forEachToken(std::string_view line, bool lowerCase, Framing frame,
                  std::string &scratch, Fn &&fn) {
  if (lowerCase) {
    scratch.assign(line);
    for (char &c : scratch)
      if (c >= 'A' && c <= 'Z')
        c = static_cast<char>(c - 'A' + 'a');
    line = scratch;
  }
  if (frame == Framing::DoubleEos)
    fn(kDoubleEos);
  const auto *begin = reinterpret_cast<const unsigned char *>(line.data());
  const auto *end = begin + line.size();
  const unsigned char *p = begin;
  while (p < end) {
    while (p < end) {
      size_t ws = whitespaceLength(p, end);
      if (ws == 0)
        break;
      p += ws;
    }
    if (p == end)
      break;
    const unsigned char *start = p;
    while (p < end && whitespaceLength(p, end) == 0)
      p += std::max<size_t>(1, utf8Length(p, end));
    fn(line.substr(static_cast<size_t>(start - begin),
                   static_cast<size_t>(p - start)));
  }
  if (frame == Framing::DoubleEos)
    fn(kDoubleEos);
  else if (frame == Framing::Eos)
    fn(kEos);
}

/// Python's `sym.strip('<>')`.
std::string_view stripAngles(std::string_view sym) {
  while (!sym.empty() && (sym.front() == '<' || sym.front() == '>'))
    sym.remove_prefix(1);
  while (!sym.empty() && (sym.back() == '<' || sym.back() == '>'))
    sym.remove_suffix(1);
  return sym;
}

/// `dir` + "/" + `name` (no doubled slash).
std::string joinPath(const std::string &dir, std::string_view name) {
  std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  return base + std::string(name);
}

bool fileExists(const std::string &path) {
  return ::access(path.c_str(), F_OK) == 0;
}

/// The code point of the valid UTF-8 character of `len` bytes at `p`.
uint32_t decodeUtf8(const unsigned char *p, size_t len) {
  if (len == 1)
    return p[0];
  uint32_t cp = p[0] & (0xff >> (len + 1));
  for (size_t i = 1; i < len; ++i)
    cp = (cp << 6) | (p[i] & 0x3f);
  return cp;
}

/// The UTF-8 bytes of code point `cp`.
std::string encodeUtf8(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return out;
}

/// Python text mode's newline translation ("\r\n" and "\r" read as "\n").
void translateNewlines(std::string &text) {
  if (text.find('\r') == std::string::npos)
    return;
  size_t out = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\r') {
      text[out++] = text[i];
      continue;
    }
    text[out++] = '\n';
    if (i + 1 < text.size() && text[i + 1] == '\n')
      ++i;
  }
  text.resize(out);
}

/// Which prep script a raw character corpus goes through.
enum class RawKind { Enwik8, Text8 };

/// Calls `fn(key)` for each symbol the official prepared file of `part`
/// yields through data_utils (see loadCorpus): enwik8, every byte but 10
/// (key = the byte); text8, every character of part.strip() but whitespace,
/// with " " as "_" and ASCII lower-cased (key = the code point). text8 parts
/// are valid UTF-8 (checked before the split).
template <typename Fn>
void forEachRawSymbol(std::string_view part, RawKind kind, Fn &&fn) {
  const auto *begin = reinterpret_cast<const unsigned char *>(part.data());
  const auto *end = begin + part.size();
  if (kind == RawKind::Enwik8) {
    for (const unsigned char *p = begin; p < end; ++p)
      if (*p != '\n')
        fn(static_cast<uint32_t>(*p));
    return;
  }
  // part.strip(): the end of the last non-whitespace character bounds it;
  // leading whitespace is skipped below like interior whitespace.
  const unsigned char *stripEnd = begin;
  for (const unsigned char *p = begin; p < end;) {
    size_t ws = whitespaceLength(p, end);
    size_t len = ws ? ws : utf8Length(p, end);
    p += len;
    if (!ws)
      stripEnd = p;
  }
  bool started = false;
  for (const unsigned char *p = begin; p < stripEnd;) {
    size_t ws = whitespaceLength(p, stripEnd);
    if (ws) {
      // ' '.join + tokenize: a space (inside the stripped part) is "_";
      // other whitespace separates nothing and vanishes.
      if (started && *p == ' ')
        fn(static_cast<uint32_t>('_'));
      p += ws;
      continue;
    }
    started = true;
    size_t len = utf8Length(p, stripEnd);
    uint32_t cp = decodeUtf8(p, len);
    if (cp >= 'A' && cp <= 'Z')
      cp = cp - 'A' + 'a';
    fn(cp);
    p += len;
  }
}

/// The vocabulary symbol of raw key `key`.
std::string rawSymbol(RawKind kind, uint32_t key) {
  return kind == RawKind::Enwik8 ? std::to_string(key) : encodeUtf8(key);
}

/// int64 values keyed by a byte or code point, -1 until set: dense below
/// 256 (every enwik8 key, text8's ASCII), hashed above.
class KeyTable {
public:
  int64_t &operator[](uint32_t key) {
    if (key < dense_.size())
      return dense_[key];
    return sparse_.try_emplace(key, -1).first->second;
  }

private:
  std::vector<int64_t> dense_ = std::vector<int64_t>(256, -1);
  std::unordered_map<uint32_t, int64_t> sparse_;
};

/// The raw file of `kind` at `path` cut into train/valid/test as
/// prep_enwik8.py / prep_text8.py do: data[:-2n], data[-2n:-n], data[-n:]
/// over bytes (enwik8) or characters (text8, read as Python text mode).
struct RawSplits {
  std::string text;
  size_t cuts[2] = {0, 0}; ///< byte offsets where valid and test start

  std::string_view part(Split split) const {
    std::string_view all = text;
    switch (split) {
    case Split::Train:
      return all.substr(0, cuts[0]);
    case Split::Valid:
      return all.substr(cuts[0], cuts[1] - cuts[0]);
    case Split::Test:
      return all.substr(cuts[1]);
    }
    return all;
  }
};

RawSplits splitRawFile(const std::string &path, RawKind kind,
                       int64_t numTestChars) {
  if (numTestChars <= 0)
    fail(TXL_INVALID_ARGUMENT, "num_test_chars must be positive, got {}",
         numTestChars);
  RawSplits splits;
  splits.text = readFile(path);
  std::string &text = splits.text;
  std::vector<size_t> cuts;
  int64_t units = static_cast<int64_t>(text.size());
  if (kind == RawKind::Text8) {
    checkUtf8(text, path);
    translateNewlines(text);
    units = 0;
    for (char c : text)
      units += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  }
  const char *unitName = kind == RawKind::Enwik8 ? "bytes" : "characters";
  if (units < 2 * numTestChars)
    fail(TXL_DATA_ERROR,
         "{}: {} {}, fewer than the 2 * {} of the valid and test splits", path,
         units, unitName, numTestChars);
  int64_t cutUnits[2] = {units - 2 * numTestChars, units - numTestChars};
  if (kind == RawKind::Enwik8) {
    cuts = {static_cast<size_t>(cutUnits[0]), static_cast<size_t>(cutUnits[1])};
  } else {
    int64_t unit = 0;
    for (size_t i = 0; i <= text.size() && cuts.size() < 2; ++i) {
      bool boundary = i == text.size() ||
                      (static_cast<unsigned char>(text[i]) & 0xc0) != 0x80;
      if (!boundary)
        continue;
      while (cuts.size() < 2 && unit == cutUnits[cuts.size()])
        cuts.push_back(i);
      ++unit;
    }
  }
  splits.cuts[0] = cuts[0];
  splits.cuts[1] = cuts[1];
  return splits;
}

} // namespace

void checkUtf8(std::string_view text, const std::string &source) {
  const auto *begin = reinterpret_cast<const unsigned char *>(text.data());
  const auto *end = begin + text.size();
  for (const unsigned char *p = begin; p < end;) {
    size_t len = utf8Length(p, end);
    if (len == 0) {
      int64_t line = 1 + std::count(begin, p, '\n');
      fail(TXL_DATA_ERROR, "{}:{}: invalid UTF-8 (byte 0x{:02x} at offset {})",
           source, line, *p, p - begin);
    }
    p += len;
  }
}

void Sentences::push(const std::vector<int64_t> &sentence) {
  ids.insert(ids.end(), sentence.begin(), sentence.end());
  offsets.push_back(static_cast<int64_t>(ids.size()));
}

Vocab::Vocab(std::vector<std::string> special, bool lowerCase)
    : special_(std::move(special)), lowerCase_(lowerCase) {}

std::vector<std::string> Vocab::tokenize(std::string_view line, bool addEos,
                                         bool addDoubleEos) const {
  std::vector<std::string> tokens;
  std::string scratch;
  forEachToken(line, lowerCase_, framing(addEos, addDoubleEos), scratch,
               [&](std::string_view token) { tokens.emplace_back(token); });
  return tokens;
}

void Vocab::countText(std::string_view text, bool addEos,
                      const std::string &source) {
  checkUtf8(text, source);
  std::string scratch;
  forEachLine(text, [&](std::string_view line, int64_t) {
    forEachToken(line, lowerCase_, framing(addEos, false), scratch,
                 [&](std::string_view token) { countSymbol(token); });
  });
}

void Vocab::countFile(const std::string &path, bool addEos) {
  countText(readFile(path), addEos, path);
}

void Vocab::countSymbol(std::string_view symbol, int64_t times) {
  auto [it, inserted] = counter_.try_emplace(std::string(symbol));
  if (inserted)
    it->second.firstSeen = static_cast<int64_t>(counter_.size()) - 1;
  it->second.count += times;
}

void Vocab::addSymbol(const std::string &symbol) {
  if (sym2idx_.count(symbol))
    return;
  sym2idx_.emplace(symbol, static_cast<int64_t>(idx2sym_.size()));
  idx2sym_.push_back(symbol);
}

void Vocab::build() {
  idx2sym_.clear();
  sym2idx_.clear();
  unkIdx_.reset();
  for (const std::string &symbol : special_) {
    bool added = !sym2idx_.count(symbol);
    addSymbol(symbol);
    // add_special: setattr(self, sym.strip('<>') + '_idx', ...).
    if (added && stripAngles(symbol) == "unk")
      unkIdx_ = size() - 1;
  }

  std::vector<const std::pair<const std::string, Counted> *> order;
  order.reserve(counter_.size());
  for (const auto &entry : counter_)
    order.push_back(&entry);
  std::sort(order.begin(), order.end(), [](const auto *a, const auto *b) {
    if (a->second.count != b->second.count)
      return a->second.count > b->second.count;
    return a->second.firstSeen < b->second.firstSeen;
  });
  for (const auto *entry : order)
    addSymbol(entry->first);
}

void Vocab::buildFromFile(const std::string &path) {
  idx2sym_.clear();
  sym2idx_.clear();
  unkIdx_.reset();
  std::string text = readFile(path);
  checkUtf8(text, path);
  std::string scratch;
  forEachLine(text, [&](std::string_view line, int64_t lineNo) {
    std::optional<std::string_view> first;
    forEachToken(line, /*lowerCase=*/false, Framing::None, scratch,
                 [&](std::string_view token) {
                   if (!first)
                     first = token;
                 });
    if (!first)
      fail(TXL_DATA_ERROR,
           "{}:{}: empty line (every line of a vocabulary file must start "
           "with its symbol)",
           path, lineNo);
    addSymbol(std::string(*first));
  });
  std::optional<int64_t> unk = find(kUnk);
  if (!unk)
    fail(TXL_DATA_ERROR,
         "{}: no '{}' symbol (the official vocabulary-file reader requires "
         "one)",
         path, kUnk);
  unkIdx_ = unk;
}

std::optional<int64_t> Vocab::find(std::string_view symbol) const {
  auto it = sym2idx_.find(std::string(symbol));
  if (it == sym2idx_.end())
    return std::nullopt;
  return it->second;
}

int64_t Vocab::count(std::string_view symbol) const {
  auto it = counter_.find(std::string(symbol));
  return it == counter_.end() ? 0 : it->second.count;
}

int64_t Vocab::lookup(std::string_view token, std::string &key,
                      const std::string &source, int64_t lineNo) const {
  key.assign(token);
  auto it = sym2idx_.find(key);
  if (it != sym2idx_.end())
    return it->second;
  // get_idx: assert '<eos>' not in sym; assert hasattr(self, 'unk_idx').
  bool hasEos = token.find(kEos) != std::string_view::npos;
  if (unkIdx_ && !hasEos)
    return *unkIdx_;
  fail(TXL_DATA_ERROR,
       "{}:{}: symbol '{}' is not in the vocabulary ({} "
       "symbols{})",
       source, lineNo, token, idx2sym_.size(),
       unkIdx_ ? "; it contains '<eos>', so it cannot be unknown" : "");
}

std::vector<int64_t> Vocab::encodeText(std::string_view text, bool addEos,
                                       const std::string &source) const {
  checkUtf8(text, source);
  std::vector<int64_t> ids;
  ids.reserve(text.size() / 5);
  std::string scratch, key;
  forEachLine(text, [&](std::string_view line, int64_t lineNo) {
    forEachToken(line, lowerCase_, framing(addEos, false), scratch,
                 [&](std::string_view token) {
                   ids.push_back(lookup(token, key, source, lineNo));
                 });
  });
  return ids;
}

std::vector<int64_t> Vocab::encodeFile(const std::string &path,
                                       bool addEos) const {
  return encodeText(readFile(path), addEos, path);
}

Sentences Vocab::encodeSentencesText(std::string_view text, bool addEos,
                                     bool addDoubleEos,
                                     const std::string &source) const {
  checkUtf8(text, source);
  Sentences sentences;
  sentences.ids.reserve(text.size() / 5);
  std::string scratch, key;
  Framing frame = framing(addEos, addDoubleEos);
  forEachLine(text, [&](std::string_view line, int64_t lineNo) {
    forEachToken(line, lowerCase_, frame, scratch, [&](std::string_view token) {
      sentences.ids.push_back(lookup(token, key, source, lineNo));
    });
    sentences.offsets.push_back(static_cast<int64_t>(sentences.ids.size()));
  });
  return sentences;
}

Sentences Vocab::encodeSentencesFile(const std::string &path, bool addEos,
                                     bool addDoubleEos) const {
  return encodeSentencesText(readFile(path), addEos, addDoubleEos, path);
}

std::string_view splitName(Split split) {
  switch (split) {
  case Split::Train:
    return "train";
  case Split::Valid:
    return "valid";
  case Split::Test:
    return "test";
  }
  return "?";
}

std::optional<Split> parseSplit(std::string_view name) {
  for (Split split : {Split::Train, Split::Valid, Split::Test})
    if (splitName(split) == name)
      return split;
  return std::nullopt;
}

DatasetSpec datasetSpec(std::string_view dataset) {
  DatasetSpec spec;
  if (dataset == "ptb") {
    spec.special = {std::string(kEos)};
    spec.lowerCase = true;
    return spec;
  }
  if (dataset == "wt2" || dataset == "wt103") {
    spec.special = {std::string(kEos)};
    spec.lowerCase = false;
    spec.countValidTest = dataset == "wt2";
    return spec;
  }
  if (dataset == "enwik8" || dataset == "text8") {
    // get_lm_corpus passes no kwargs: Vocab defaults (lower_case=True);
    // Corpus encodes with add_eos=False.
    spec.addEos = false;
    spec.characterLevel = true;
    spec.rawFile = std::string(dataset);
    return spec;
  }
  if (dataset == "ptb-char") {
    spec.special = {std::string(kEos)};
    spec.lowerCase = false;
    spec.characterLevel = true;
    spec.spellWords = true;
    return spec;
  }
  if (dataset == "lm1b") {
    spec.lowerCase = false;
    spec.addDoubleEos = true;
    spec.countValidTest = false;
    spec.vocabFile = "1b_word_vocab.txt";
    spec.sentenceLevel = true;
    return spec;
  }
  fail(TXL_INVALID_ARGUMENT,
       "unsupported dataset '{}' (supported: ptb, ptb-char, wt2, wt103, "
       "enwik8, text8, lm1b)",
       dataset);
}

bool isCharacterDataset(std::string_view dataset) {
  return dataset == "enwik8" || dataset == "text8" || dataset == "ptb-char";
}

namespace {

/// The folder of the lm1b training shards and their glob pattern.
constexpr std::string_view kLm1bTrainDir =
    "training-monolingual.tokenized.shuffled";
constexpr const char *kLm1bTrainPattern = "news.en-*";
/// The held-out shard getdata.sh copies into both valid.txt and test.txt.
constexpr std::string_view kLm1bHeldout =
    "heldout-monolingual.tokenized.shuffled/news.en.heldout-00000-of-00050";

std::string lm1bTrainDir(const std::string &dir) {
  return joinPath(dir, std::string(kLm1bArchiveDir) + "/" +
                           std::string(kLm1bTrainDir));
}

} // namespace

std::string splitPath(std::string_view dataset, const std::string &dir,
                      Split split) {
  std::string official = joinPath(dir, std::string(splitName(split)) + ".txt");
  if (dataset == "wt2" || dataset == "wt103") {
    std::string wiki =
        joinPath(dir, "wiki." + std::string(splitName(split)) + ".tokens");
    if (!fileExists(official) && fileExists(wiki))
      return wiki;
  }
  if (dataset == "lm1b") {
    if (split == Split::Train)
      return joinPath(lm1bTrainDir(dir), kLm1bTrainPattern);
    std::string heldout = joinPath(dir, std::string(kLm1bArchiveDir) + "/" +
                                            std::string(kLm1bHeldout));
    if (!fileExists(official) && fileExists(heldout))
      return heldout;
  }
  return official;
}

std::vector<std::string> lm1bTrainShards(const std::string &dir) {
  std::string folder = lm1bTrainDir(dir);
  std::vector<std::string> paths;
  if (DIR *handle = ::opendir(folder.c_str())) {
    while (const dirent *entry = ::readdir(handle))
      if (::fnmatch(kLm1bTrainPattern, entry->d_name, FNM_PERIOD) == 0)
        paths.push_back(joinPath(folder, entry->d_name));
    ::closedir(handle);
  }
  if (paths.empty())
    fail(TXL_NOT_FOUND, "{}: no lm1b training shards match",
         joinPath(folder, kLm1bTrainPattern));
  std::sort(paths.begin(), paths.end());
  return paths;
}

std::string ptbCharText(std::string_view wordText, const std::string &source) {
  checkUtf8(wordText, source);
  std::string out;
  out.reserve(wordText.size() * 2);
  std::string scratch;
  forEachLine(wordText, [&](std::string_view line, int64_t) {
    bool firstWord = true;
    forEachToken(line, /*lowerCase=*/false, Framing::None, scratch,
                 [&](std::string_view word) {
                   if (!firstWord)
                     out += " _ ";
                   firstWord = false;
                   const auto *p =
                       reinterpret_cast<const unsigned char *>(word.data());
                   const auto *end = p + word.size();
                   for (bool firstChar = true; p < end; firstChar = false) {
                     size_t len = utf8Length(p, end);
                     if (!firstChar)
                       out += ' ';
                     out.append(reinterpret_cast<const char *>(p), len);
                     p += len;
                   }
                 });
    out += '\n';
  });
  return out;
}

const std::vector<int64_t> &Corpus::stream(Split split) const {
  if (datasetSpec(dataset).sentenceLevel)
    fail(TXL_INVALID_ARGUMENT,
         "'{}' is read sentence by sentence: it has no ordered {} stream "
         "(use its sentences with LMShuffledIterator, or LMMultiFileIterator "
         "for train)",
         dataset, splitName(split));
  switch (split) {
  case Split::Train:
    return train;
  case Split::Valid:
    return valid;
  case Split::Test:
    return test;
  }
  return train;
}

const Sentences &Corpus::sentences(Split split) const {
  if (!datasetSpec(dataset).sentenceLevel)
    fail(TXL_INVALID_ARGUMENT,
         "'{}' is an ordered stream, not sentences: use its {} stream", dataset,
         splitName(split));
  if (split == Split::Train)
    fail(TXL_INVALID_ARGUMENT,
         "the '{}' train split is a list of shard files (trainPaths), read "
         "by LMMultiFileIterator",
         dataset);
  return split == Split::Valid ? validSentences : testSentences;
}

namespace {

/// The stream of `split` in `corpus`, to fill.
std::vector<int64_t> &streamOf(Corpus &corpus, Split split) {
  switch (split) {
  case Split::Train:
    return corpus.train;
  case Split::Valid:
    return corpus.valid;
  case Split::Test:
    return corpus.test;
  }
  return corpus.train;
}

/// loadCorpus for lm1b: the vocabulary file, the shard list, the held-out
/// sentences framed by "<S>".
void loadSentenceCorpus(Corpus &corpus, const DatasetSpec &spec,
                        const std::string &dir,
                        const std::vector<Split> &encode) {
  corpus.vocab.buildFromFile(joinPath(dir, spec.vocabFile));
  for (Split split : encode) {
    if (split == Split::Train) {
      corpus.trainPaths = lm1bTrainShards(dir);
      continue;
    }
    Sentences sentences = corpus.vocab.encodeSentencesFile(
        splitPath(corpus.dataset, dir, split), spec.addEos, spec.addDoubleEos);
    (split == Split::Valid ? corpus.validSentences : corpus.testSentences) =
        std::move(sentences);
  }
}

/// loadCorpus for enwik8/text8 from the raw file at `rawPath`: counts the
/// three parts' symbols (first-occurrence order, as count_file over
/// train/valid/test.txt), builds the vocabulary, encodes the wanted parts.
void loadRawCorpus(Corpus &corpus, const std::string &rawPath,
                   const std::vector<Split> &encode,
                   const CorpusOptions &options) {
  RawKind kind = corpus.dataset == "enwik8" ? RawKind::Enwik8 : RawKind::Text8;
  RawSplits splits = splitRawFile(rawPath, kind, options.numTestChars);

  KeyTable slotOf;
  std::vector<std::pair<uint32_t, int64_t>> slots; // key, count
  for (Split split : kSplits)
    forEachRawSymbol(splits.part(split), kind, [&](uint32_t key) {
      int64_t &slot = slotOf[key];
      if (slot < 0) {
        slot = static_cast<int64_t>(slots.size());
        slots.push_back({key, 0});
      }
      ++slots[static_cast<size_t>(slot)].second;
    });
  for (const auto &[key, count] : slots)
    corpus.vocab.countSymbol(rawSymbol(kind, key), count);
  corpus.vocab.build();

  KeyTable idOf;
  for (const auto &slot : slots)
    idOf[slot.first] = *corpus.vocab.find(rawSymbol(kind, slot.first));
  for (Split split : encode) {
    std::string_view part = splits.part(split);
    std::vector<int64_t> &ids = streamOf(corpus, split);
    ids.clear();
    ids.reserve(part.size());
    forEachRawSymbol(part, kind,
                     [&](uint32_t key) { ids.push_back(idOf[key]); });
  }
}

} // namespace

Corpus loadCorpus(const std::string &dataset, const std::string &dir,
                  const std::vector<Split> &encode,
                  const CorpusOptions &options) {
  DatasetSpec spec = datasetSpec(dataset);
  Corpus corpus{
      dataset, Vocab(spec.special, spec.lowerCase), {}, {}, {}, {}, {}, {}};
  if (spec.sentenceLevel) {
    loadSentenceCorpus(corpus, spec, dir, encode);
    return corpus;
  }
  if (!spec.rawFile.empty()) {
    std::string prepared = splitPath(dataset, dir, Split::Train);
    std::string raw = joinPath(dir, spec.rawFile);
    if (!fileExists(prepared)) {
      if (!fileExists(raw))
        fail(TXL_NOT_FOUND,
             "{}: no such file, and no raw {} file {} to split either",
             prepared, dataset, raw);
      loadRawCorpus(corpus, raw, encode, options);
      return corpus;
    }
  }

  auto wanted = [&](Split split) {
    return std::find(encode.begin(), encode.end(), split) != encode.end();
  };
  auto counted = [&](Split split) {
    return split == Split::Train || spec.countValidTest;
  };
  // Read each needed file once: official count_file never adds "<eos>"
  // (Corpus calls it with the default add_eos=False; "<eos>" is a special).
  std::string texts[3];
  for (Split split : kSplits) {
    if (!counted(split) && !wanted(split))
      continue;
    std::string path = splitPath(dataset, dir, split);
    std::string &text = texts[static_cast<int>(split)];
    text = readFile(path);
    if (spec.spellWords)
      text = ptbCharText(text, path);
    if (!counted(split))
      continue;
    corpus.vocab.countText(text, false, path);
    if (!wanted(split))
      std::string().swap(text);
  }
  corpus.vocab.build();
  for (Split split : kSplits) {
    if (!wanted(split))
      continue;
    std::string &text = texts[static_cast<int>(split)];
    streamOf(corpus, split) = corpus.vocab.encodeText(
        text, spec.addEos, splitPath(dataset, dir, split));
    std::string().swap(text);
  }
  return corpus;
}

} // namespace txl::rt
