//===- Corpus.h - Word/character LM corpora, official semantics -*- C++ -*-===//
//
// The vocabulary and corpus of the official Transformer-XL code
// (kimiyoung/transformer-xl, pytorch/utils/vocabulary.py `Vocab` and
// pytorch/data_utils.py `Corpus` / `get_lm_corpus`), so that token ids match
// a checkpoint trained by the official train.py:
//  * a file is read as Python text mode does: lines end at "\n", "\r\n" or
//    "\r"; it must be valid UTF-8;
//  * `tokenize`: line.strip(), lower-cased if `lower_case`, split on runs of
//    whitespace (Python's str.split(): ASCII and Unicode whitespace), plus
//    "<eos>" when `add_eos`; every line, empty ones too, gets its "<eos>";
//  * `build_vocab` (min_freq = 0, max_size = None): the specials first, then
//    the counted symbols by count, descending, ties in first-occurrence order
//    (Counter.most_common is a stable sort of an insertion-ordered dict);
//  * no "<unk>" special is added: PTB's "<unk>" is an ordinary symbol, and a
//    symbol missing from the vocabulary is an error (the official get_idx
//    asserts there).
// Lower-casing covers ASCII letters only (Python's str.lower() is
// Unicode-wide); the only lower-cased word corpus, PTB, is pure ASCII.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_CORPUS_H
#define TXL_RT_CORPUS_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace txl::rt {

/// The official `Vocab` with min_freq = 0, max_size = None, delimiter = None.
class Vocab {
public:
  /// `special`: symbols placed first, in order (official ['<eos>'] for
  /// ptb/wt2/wt103, none for enwik8/text8); `lowerCase` as the official flag.
  explicit Vocab(std::vector<std::string> special = {}, bool lowerCase = true);

  bool lowerCase() const { return lowerCase_; }

  /// Official `tokenize(line, add_eos)` of one line (no line breaks inside).
  std::vector<std::string> tokenize(std::string_view line,
                                    bool addEos = false) const;

  /// Official `count_file` over in-memory `text`; `source` names it in errors
  /// (invalid UTF-8: TXL_DATA_ERROR "<source>:<line>: invalid UTF-8").
  /// Must precede `build`.
  void countText(std::string_view text, bool addEos = false,
                 const std::string &source = "<text>");

  /// Official `count_file(path, add_eos)`. Errors: as `readFile`, and as
  /// `countText`.
  void countFile(const std::string &path, bool addEos = false);

  /// Official `build_vocab()`: fixes the symbol order (see the file comment).
  /// Calling it again rebuilds from all counts so far.
  void build();

  /// Number of symbols (specials included); 0 before `build`.
  int64_t size() const { return static_cast<int64_t>(idx2sym_.size()); }

  /// Symbol of id `index` in [0, size()).
  const std::string &symbol(int64_t index) const {
    return idx2sym_.at(static_cast<size_t>(index));
  }

  /// Id of `symbol`, or nullopt.
  std::optional<int64_t> find(std::string_view symbol) const;

  /// How often `symbol` was counted (0 if never).
  int64_t count(std::string_view symbol) const;

  /// Official `encode_file(..., ordered=True, add_eos)` over in-memory
  /// `text`: the ids of every line's tokens, concatenated. Errors:
  /// TXL_DATA_ERROR "<source>:<line>: symbol '<s>' is not in the vocabulary"
  /// and invalid UTF-8.
  std::vector<int64_t> encodeText(std::string_view text, bool addEos = true,
                                  const std::string &source = "<text>") const;

  /// `encodeText` of the file at `path`. Errors: as `readFile`, `encodeText`.
  std::vector<int64_t> encodeFile(const std::string &path,
                                  bool addEos = true) const;

private:
  struct Counted {
    int64_t count = 0;
    int64_t firstSeen = 0;
  };

  std::vector<std::string> special_;
  bool lowerCase_;
  std::unordered_map<std::string, Counted> counter_;
  std::vector<std::string> idx2sym_;
  std::unordered_map<std::string, int64_t> sym2idx_;
};

/// The three official splits.
enum class Split { Train, Valid, Test };

/// "train", "valid" or "test".
std::string_view splitName(Split split);

/// Parses "train" / "valid" / "test"; nullopt otherwise.
std::optional<Split> parseSplit(std::string_view name);

/// How the official `get_lm_corpus` / `Corpus` treat one dataset.
struct DatasetSpec {
  std::vector<std::string> special; ///< ['<eos>'] or none
  bool lowerCase = true;            ///< Vocab lower_case
  bool addEos = true;               ///< encode_file add_eos
  bool countValidTest = true;       ///< counted over valid/test too (not wt103)
  bool characterLevel = false;      ///< reported in bpc by eval.py
};

/// The spec of `dataset`: "ptb" (lower-cased), "wt2" and "wt103" (cased; wt103
/// counts train only), "enwik8" and "text8" (no specials, no "<eos>").
/// Errors: TXL_INVALID_ARGUMENT naming the dataset and the supported ones.
DatasetSpec datasetSpec(std::string_view dataset);

/// Whether eval.py reports `dataset` in bits per character (enwik8, text8,
/// and ptb-char) rather than perplexity.
bool isCharacterDataset(std::string_view dataset);

/// The file of `split` in `dir`: "<dir>/<split>.txt" as the official scripts
/// lay data out; for wt2/wt103, "<dir>/wiki.<split>.tokens" when only that
/// (the name inside the WikiText archives) exists.
std::string splitPath(std::string_view dataset, const std::string &dir,
                      Split split);

/// A loaded corpus: the vocabulary and the encoded splits asked for (the
/// others stay empty).
struct Corpus {
  std::string dataset;
  Vocab vocab;
  std::vector<int64_t> train, valid, test;

  const std::vector<int64_t> &stream(Split split) const;
};

/// Official `Corpus(dir, dataset)`: counts the files the dataset counts
/// (train, valid, test; train only for wt103), builds the vocabulary and
/// encodes the splits in `encode` (ordered, one stream per split). Each file
/// is read once. Errors: unsupported dataset; a missing/unreadable file
/// (naming its path); invalid UTF-8; a symbol not in the vocabulary.
Corpus loadCorpus(const std::string &dataset, const std::string &dir,
                  const std::vector<Split> &encode = {
                      Split::Train, Split::Valid, Split::Test});

} // namespace txl::rt

#endif // TXL_RT_CORPUS_H
