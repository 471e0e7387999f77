//===- Text.cpp - User text to token ids and back, per dataset --===//

#include "txl/rt/data/Text.h"

#include "txl/rt/support/Status.h"

#include <cstdlib>

namespace txl::rt {

namespace {

/// The id of `symbol`, or the unknown symbol's (Text.h).
int64_t idOf(const Vocab &vocab, std::string_view symbol, int64_t line,
             const std::string &source) {
  if (std::optional<int64_t> id = vocab.find(symbol))
    return *id;
  if (std::optional<int64_t> unk = vocab.unkIndex())
    return *unk;
  if (std::optional<int64_t> unk = vocab.find("<unk>"))
    return *unk;
  fail(TXL_DATA_ERROR, "{}:{}: symbol '{}' is not in the vocabulary", source,
       line, symbol);
}

} // namespace

std::vector<int64_t> encodeUserText(std::string_view dataset,
                                    const Vocab &vocab, std::string_view text,
                                    const std::string &source) {
  const DatasetSpec spec = datasetSpec(dataset);
  if (spec.rawFile != "enwik8")
    checkUtf8(text, source);
  std::vector<int64_t> ids;
  int64_t lineNumber = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    bool terminated = end != std::string_view::npos;
    std::string_view line =
        text.substr(start, terminated ? end - start : std::string_view::npos);
    start = terminated ? end + 1 : text.size();
    ++lineNumber;
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    const std::string lineSource = source + ":" + std::to_string(lineNumber);
    if (spec.rawFile == "enwik8") {
      // prep_enwik8.py: every byte as its decimal number; newlines are line
      // breaks, never tokens.
      for (unsigned char byte : line)
        ids.push_back(
            idOf(vocab, std::to_string(int(byte)), lineNumber, source));
      continue;
    }
    if (spec.rawFile == "text8") {
      for (char c : line) {
        if (c == ' ')
          ids.push_back(idOf(vocab, "_", lineNumber, source));
        else if (c != '\t' && c != '\r')
          ids.push_back(
              idOf(vocab,
                   std::string(1, vocab.lowerCase() && c >= 'A' && c <= 'Z'
                                      ? char(c - 'A' + 'a')
                                      : c),
                   lineNumber, source));
      }
      continue;
    }
    std::string spelled;
    if (spec.spellWords) {
      spelled = ptbCharText(line, lineSource);
      line = spelled;
      if (!line.empty() && line.back() == '\n')
        line.remove_suffix(1);
    }
    std::vector<std::string> symbols = vocab.tokenize(
        line, /*addEos=*/terminated && spec.addEos && !spec.addDoubleEos,
        /*addDoubleEos=*/false);
    if (spec.addDoubleEos) { // lm1b: "<S>" before, and after a whole line
      ids.push_back(idOf(vocab, "<S>", lineNumber, source));
      if (terminated)
        symbols.push_back("<S>");
    }
    for (const std::string &symbol : symbols)
      ids.push_back(idOf(vocab, symbol, lineNumber, source));
  }
  return ids;
}

Detokenizer::Detokenizer(std::string_view dataset, const Vocab &vocab)
    : vocab_(vocab) {
  const DatasetSpec spec = datasetSpec(dataset);
  words_ = !spec.characterLevel;
  underscore_ = spec.spellWords || spec.rawFile == "text8";
  bytes_ = spec.rawFile == "enwik8";
  lineBreak_ = spec.addDoubleEos ? "<S>" : "<eos>";
}

std::string Detokenizer::next(int64_t id) {
  if (id < 0 || id >= vocab_.size())
    fail(TXL_INVALID_ARGUMENT, "token id {} is outside the vocabulary of {}",
         id, vocab_.size());
  const std::string &symbol = vocab_.symbol(id);
  if (symbol == lineBreak_) {
    atLineStart_ = true;
    return "\n";
  }
  std::string out;
  if (bytes_) {
    char *end = nullptr;
    long value = std::strtol(symbol.c_str(), &end, 10);
    out = (*end == '\0' && value >= 0 && value < 256)
              ? std::string(1, static_cast<char>(value))
              : symbol;
  } else if (underscore_ && symbol == "_") {
    out = " ";
  } else {
    out = symbol;
  }
  if (words_ && !atLineStart_)
    out.insert(out.begin(), ' ');
  atLineStart_ = false;
  return out;
}

} // namespace txl::rt
