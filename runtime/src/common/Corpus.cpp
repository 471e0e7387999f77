//===- Corpus.cpp - LM vocabulary and corpora (official) --------*- C++ -*-===//

#include "txl/rt/Corpus.h"

#include "txl/rt/File.h"
#include "txl/rt/Status.h"

#include <algorithm>
#include <unistd.h>

namespace txl::rt {

namespace {

constexpr std::string_view kEos = "<eos>";

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

/// Fails with "<source>:<line>: invalid UTF-8" unless `text` is valid UTF-8.
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

/// Calls `fn(token)` for the tokens of official `tokenize(line, add_eos)`;
/// `scratch` holds the lower-cased copy when `lowerCase`.
template <typename Fn>
void forEachToken(std::string_view line, bool lowerCase, bool addEos,
                  std::string &scratch, Fn &&fn) {
  if (lowerCase) {
    scratch.assign(line);
    for (char &c : scratch)
      if (c >= 'A' && c <= 'Z')
        c = static_cast<char>(c - 'A' + 'a');
    line = scratch;
  }
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
  if (addEos)
    fn(kEos);
}

} // namespace

Vocab::Vocab(std::vector<std::string> special, bool lowerCase)
    : special_(std::move(special)), lowerCase_(lowerCase) {}

std::vector<std::string> Vocab::tokenize(std::string_view line,
                                         bool addEos) const {
  std::vector<std::string> tokens;
  std::string scratch;
  forEachToken(line, lowerCase_, addEos, scratch,
               [&](std::string_view token) { tokens.emplace_back(token); });
  return tokens;
}

void Vocab::countText(std::string_view text, bool addEos,
                      const std::string &source) {
  checkUtf8(text, source);
  std::string scratch, key;
  forEachLine(text, [&](std::string_view line, int64_t) {
    forEachToken(
        line, lowerCase_, addEos, scratch, [&](std::string_view token) {
          key.assign(token);
          auto [it, inserted] = counter_.try_emplace(key);
          if (inserted)
            it->second.firstSeen = static_cast<int64_t>(counter_.size()) - 1;
          ++it->second.count;
        });
  });
}

void Vocab::countFile(const std::string &path, bool addEos) {
  countText(readFile(path), addEos, path);
}

void Vocab::build() {
  idx2sym_.clear();
  sym2idx_.clear();
  auto add = [&](const std::string &symbol) {
    if (sym2idx_.count(symbol))
      return;
    sym2idx_.emplace(symbol, static_cast<int64_t>(idx2sym_.size()));
    idx2sym_.push_back(symbol);
  };
  for (const std::string &symbol : special_)
    add(symbol);

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
    add(entry->first);
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

std::vector<int64_t> Vocab::encodeText(std::string_view text, bool addEos,
                                       const std::string &source) const {
  checkUtf8(text, source);
  std::vector<int64_t> ids;
  ids.reserve(text.size() / 5);
  std::string scratch, key;
  forEachLine(text, [&](std::string_view line, int64_t lineNo) {
    forEachToken(line, lowerCase_, addEos, scratch,
                 [&](std::string_view token) {
                   key.assign(token);
                   auto it = sym2idx_.find(key);
                   if (it == sym2idx_.end())
                     fail(TXL_DATA_ERROR,
                          "{}:{}: symbol '{}' is not in the vocabulary "
                          "({} symbols)",
                          source, lineNo, token, idx2sym_.size());
                   ids.push_back(it->second);
                 });
  });
  return ids;
}

std::vector<int64_t> Vocab::encodeFile(const std::string &path,
                                       bool addEos) const {
  return encodeText(readFile(path), addEos, path);
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
    // get_lm_corpus passes no kwargs: Vocab defaults (lower_case=True).
    spec.addEos = false;
    spec.characterLevel = true;
    return spec;
  }
  fail(TXL_INVALID_ARGUMENT,
       "unsupported dataset '{}' (supported: ptb, wt2, wt103, enwik8, text8)",
       dataset);
}

bool isCharacterDataset(std::string_view dataset) {
  return dataset == "enwik8" || dataset == "text8" || dataset == "ptb-char";
}

std::string splitPath(std::string_view dataset, const std::string &dir,
                      Split split) {
  std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  std::string official = base + std::string(splitName(split)) + ".txt";
  if (dataset == "wt2" || dataset == "wt103") {
    std::string wiki =
        base + "wiki." + std::string(splitName(split)) + ".tokens";
    if (::access(official.c_str(), F_OK) != 0 &&
        ::access(wiki.c_str(), F_OK) == 0)
      return wiki;
  }
  return official;
}

const std::vector<int64_t> &Corpus::stream(Split split) const {
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

Corpus loadCorpus(const std::string &dataset, const std::string &dir,
                  const std::vector<Split> &encode) {
  DatasetSpec spec = datasetSpec(dataset);
  Corpus corpus{dataset, Vocab(spec.special, spec.lowerCase), {}, {}, {}};

  const Split splits[] = {Split::Train, Split::Valid, Split::Test};
  auto wanted = [&](Split split) {
    return std::find(encode.begin(), encode.end(), split) != encode.end();
  };
  auto counted = [&](Split split) {
    return split == Split::Train || spec.countValidTest;
  };
  // Read each needed file once: official count_file never adds "<eos>"
  // (Corpus calls it with the default add_eos=False; "<eos>" is a special).
  std::string texts[3];
  for (Split split : splits) {
    if (!counted(split) && !wanted(split))
      continue;
    std::string path = splitPath(dataset, dir, split);
    texts[static_cast<int>(split)] = readFile(path);
    if (!counted(split))
      continue;
    corpus.vocab.countText(texts[static_cast<int>(split)], false, path);
    if (!wanted(split))
      std::string().swap(texts[static_cast<int>(split)]);
  }
  corpus.vocab.build();
  for (Split split : splits) {
    if (!wanted(split))
      continue;
    std::string &text = texts[static_cast<int>(split)];
    std::vector<int64_t> ids = corpus.vocab.encodeText(
        text, spec.addEos, splitPath(dataset, dir, split));
    std::string().swap(text);
    switch (split) {
    case Split::Train:
      corpus.train = std::move(ids);
      break;
    case Split::Valid:
      corpus.valid = std::move(ids);
      break;
    case Split::Test:
      corpus.test = std::move(ids);
      break;
    }
  }
  return corpus;
}

} // namespace txl::rt
