//===- Corpus.h - Word/character LM corpora, official semantics -*- C++ -*-===//
//
// The vocabulary and corpora of the official Transformer-XL code
// (kimiyoung/transformer-xl: pytorch/utils/vocabulary.py `Vocab`,
// pytorch/data_utils.py `Corpus` / `get_lm_corpus`, prep_text8.py,
// getdata.sh and the prep_enwik8.py it downloads from
// salesforce/awd-lstm-lm), so that token ids match a checkpoint trained by the
// official train.py. docs/datasets.md describes every dataset.
//  * a file is read as Python text mode does: lines end at "\n", "\r\n" or
//    "\r"; it must be valid UTF-8;
//  * `tokenize`: line.strip(), lower-cased if `lower_case`, split on runs of
//    whitespace (Python's str.split(): ASCII and Unicode whitespace), then
//    "<eos>" appended when `add_eos`, or "<S>" put at both ends when
//    `add_double_eos` (lm1b); every line, empty ones too, is framed;
//  * `build_vocab` (min_freq = 0, max_size = None): the specials first, then
//    the counted symbols by count, descending, ties in first-occurrence order
//    (Counter.most_common is a stable sort of an insertion-ordered dict);
//    with a `vocab_file` (lm1b): the first field of every line, in file order;
//  * `get_idx`: a symbol missing from the vocabulary maps to `unk_idx` where
//    the vocabulary has one (lm1b's "<UNK>") and is an error otherwise (the
//    official code asserts there); PTB's "<unk>" is an ordinary symbol.
// Lower-casing covers ASCII letters only (Python's str.lower() is
// Unicode-wide); the lower-cased corpora (PTB, enwik8, text8) are ASCII.
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

/// Sentences encoded one by one (official `encode_file(..., ordered=False)`,
/// a list of LongTensors), stored flat: sentence i is
/// ids[offsets[i], offsets[i + 1]).
struct Sentences {
  std::vector<int64_t> ids;
  std::vector<int64_t> offsets{0}; ///< size() + 1 entries, offsets[0] = 0

  int64_t size() const { return static_cast<int64_t>(offsets.size()) - 1; }
  /// Number of ids of sentence `i` in [0, size()).
  int64_t length(int64_t i) const {
    return offsets[static_cast<size_t>(i) + 1] -
           offsets[static_cast<size_t>(i)];
  }
  /// The first id of sentence `i`.
  const int64_t *begin(int64_t i) const {
    return ids.data() + offsets[static_cast<size_t>(i)];
  }
  /// Appends one sentence.
  void push(const std::vector<int64_t> &sentence);
};

/// The official `Vocab` with min_freq = 0, max_size = None, delimiter = None.
class Vocab {
public:
  /// `special`: symbols placed first, in order (official ['<eos>'] for
  /// ptb/wt2/wt103, none for enwik8/text8/lm1b); `lowerCase` as the official
  /// flag. A special whose strip('<>') is "unk" becomes the unknown symbol
  /// (official add_special sets `unk_idx`; no official dataset uses one).
  explicit Vocab(std::vector<std::string> special = {}, bool lowerCase = true);

  bool lowerCase() const { return lowerCase_; }

  /// Official `tokenize(line, add_eos, add_double_eos)` of one line (no line
  /// breaks inside); `addDoubleEos` wins over `addEos`, as there.
  std::vector<std::string> tokenize(std::string_view line, bool addEos = false,
                                    bool addDoubleEos = false) const;

  /// Official `count_file` over in-memory `text`; `source` names it in errors
  /// (invalid UTF-8: TXL_DATA_ERROR "<source>:<line>: invalid UTF-8").
  /// Must precede `build`.
  void countText(std::string_view text, bool addEos = false,
                 const std::string &source = "<text>");

  /// Official `count_file(path, add_eos)`. Errors: as `readFile`, and as
  /// `countText`.
  void countFile(const std::string &path, bool addEos = false);

  /// Counts `symbol` `times` times, as `times` occurrences in a counted file
  /// would (a new symbol takes the next first-occurrence rank). For readers
  /// that count without building the text (enwik8/text8 from the raw file).
  void countSymbol(std::string_view symbol, int64_t times = 1);

  /// Official `build_vocab()` without a vocab_file: fixes the symbol order
  /// (see the file comment). Calling it again rebuilds from all counts so far.
  void build();

  /// Official `build_vocab()` with `vocab_file` (`_build_from_file`): the
  /// symbols are the first whitespace-separated field of every line, in file
  /// order (a repeated symbol keeps its first id); the specials are not
  /// added; "<UNK>" becomes the unknown symbol. Errors: as `readFile`;
  /// TXL_DATA_ERROR "<path>:<line>: empty line" (the official code fails on
  /// `split()[0]`), invalid UTF-8, and "<path>: no '<UNK>' symbol".
  void buildFromFile(const std::string &path);

  /// Number of symbols (specials included); 0 before `build`.
  int64_t size() const { return static_cast<int64_t>(idx2sym_.size()); }

  /// Symbol of id `index` in [0, size()).
  const std::string &symbol(int64_t index) const {
    return idx2sym_.at(static_cast<size_t>(index));
  }

  /// Id of `symbol`, or nullopt (no unknown-symbol fallback).
  std::optional<int64_t> find(std::string_view symbol) const;

  /// Official `unk_idx`: the id unknown symbols map to, if any.
  std::optional<int64_t> unkIndex() const { return unkIdx_; }

  /// How often `symbol` was counted (0 if never).
  int64_t count(std::string_view symbol) const;

  /// Official `encode_file(..., ordered=True, add_eos)` over in-memory
  /// `text`: the ids of every line's tokens, concatenated. Errors:
  /// TXL_DATA_ERROR "<source>:<line>: symbol '<s>' is not in the vocabulary"
  /// (without an unknown symbol, or when an unknown symbol contains "<eos>":
  /// official get_idx asserts both) and invalid UTF-8.
  std::vector<int64_t> encodeText(std::string_view text, bool addEos = true,
                                  const std::string &source = "<text>") const;

  /// `encodeText` of the file at `path`. Errors: as `readFile`, `encodeText`.
  std::vector<int64_t> encodeFile(const std::string &path,
                                  bool addEos = true) const;

  /// Official `encode_file(..., ordered=False, add_eos, add_double_eos)` over
  /// in-memory `text`: one sentence per line. Errors: as `encodeText`.
  Sentences encodeSentencesText(std::string_view text, bool addEos = true,
                                bool addDoubleEos = false,
                                const std::string &source = "<text>") const;

  /// `encodeSentencesText` of the file at `path`. Errors: as `readFile`,
  /// `encodeText`.
  Sentences encodeSentencesFile(const std::string &path, bool addEos = true,
                                bool addDoubleEos = false) const;

private:
  struct Counted {
    int64_t count = 0;
    int64_t firstSeen = 0;
  };

  /// Official `add_symbol`: appends `symbol` unless present.
  void addSymbol(const std::string &symbol);
  /// Official `get_idx` of `token` of line `lineNo` of `source`.
  int64_t lookup(std::string_view token, std::string &key,
                 const std::string &source, int64_t lineNo) const;

  std::vector<std::string> special_;
  bool lowerCase_;
  std::unordered_map<std::string, Counted> counter_;
  std::vector<std::string> idx2sym_;
  std::unordered_map<std::string, int64_t> sym2idx_;
  std::optional<int64_t> unkIdx_;
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
  bool addDoubleEos = false;        ///< encode_file add_double_eos (lm1b)
  bool countValidTest = true;       ///< counted over valid/test too (not wt103)
  bool characterLevel = false;      ///< reported in bpc by eval.py
  /// The raw file the prepared splits can be made from ("enwik8", "text8").
  std::string rawFile;
  /// Words spelled out character by character (ptb-char, see `ptbCharText`).
  bool spellWords = false;
  /// Vocabulary read from this file in the data directory (lm1b:
  /// "1b_word_vocab.txt") instead of counted.
  std::string vocabFile;
  /// Encoded sentence by sentence; the train split is a list of shard files
  /// iterated by LMMultiFileIterator (lm1b).
  bool sentenceLevel = false;
};

/// The spec of `dataset` (official `get_lm_corpus` kwargs and `Corpus`):
///  * "ptb": special ['<eos>'], lower-cased, counts train+valid+test;
///  * "wt2", "wt103": special ['<eos>'], cased; wt103 counts train only;
///  * "enwik8", "text8": no specials, lower_case=True (the Vocab default), no
///    "<eos>" (encode_file add_eos=False), counts train+valid+test;
///  * "ptb-char" (not official): PTB spelled out, see `ptbCharText`;
///    special ['<eos>'], cased, one "<eos>" per line, counts all three;
///  * "lm1b": special [], cased, vocabulary from 1b_word_vocab.txt,
///    sentences framed by "<S>" at both ends.
/// Errors: TXL_INVALID_ARGUMENT naming the dataset and the supported ones.
DatasetSpec datasetSpec(std::string_view dataset);

/// Whether eval.py reports `dataset` in bits per character (enwik8, text8,
/// and ptb-char) rather than perplexity.
bool isCharacterDataset(std::string_view dataset);

/// The One Billion Word archive's folder inside the lm1b data directory.
inline constexpr std::string_view kLm1bArchiveDir =
    "1-billion-word-language-modeling-benchmark-r13output";

/// The file of `split` in `dir`: "<dir>/<split>.txt" as the official scripts
/// lay data out; for wt2/wt103, "<dir>/wiki.<split>.tokens" when only that
/// (the name inside the WikiText archives) exists; for lm1b valid and test,
/// when valid.txt / test.txt are absent, the held-out shard getdata.sh copies
/// into both (<archive>/heldout-monolingual.tokenized.shuffled/
/// news.en.heldout-00000-of-00050), and for lm1b train the glob pattern of
/// the shards (<archive>/training-monolingual.tokenized.shuffled/news.en-*).
std::string splitPath(std::string_view dataset, const std::string &dir,
                      Split split);

/// The lm1b training shards: the files matching the official glob
/// `<dir>/<archive>/training-monolingual.tokenized.shuffled/news.en-*`,
/// sorted by name (glob.glob's order is the directory's, which is not
/// portable). Errors: TXL_NOT_FOUND naming the pattern when nothing matches.
std::vector<std::string> lm1bTrainShards(const std::string &dir);

/// The ptb-char text of the word-level PTB `wordText` (not an official data
/// set; docs/datasets.md): each line is split into words as the official
/// `tokenize` does (line.strip().split(): leading, trailing and repeated
/// whitespace vanish; no lower-casing), every character (Unicode code point)
/// of a word becomes a symbol, "_" stands between words, and the line is
/// written space-separated, e.g. " aer banknote " -> "a e r _ b a n k n o t
/// e". Read with the "ptb-char" spec, each line then ends in "<eos>". PTB's
/// "<unk>" is spelled out like any word (< u n k >) and "N" stays upper-case.
/// Errors: invalid UTF-8 (TXL_DATA_ERROR naming `source` and the line).
std::string ptbCharText(std::string_view wordText,
                        const std::string &source = "<text>");

/// Fails (TXL_DATA_ERROR) with "<source>:<line>: invalid UTF-8 (byte 0xNN
/// at offset N)", the line 1-based and the offset in bytes from the start
/// of `text`, unless `text` is valid UTF-8 (no overlong forms, surrogates
/// or code points above U+10FFFF).
void checkUtf8(std::string_view text, const std::string &source);

/// Knobs of `loadCorpus` beyond the official `Corpus`.
struct CorpusOptions {
  /// prep_enwik8.py / prep_text8.py `num_test_chars`: when splitting the raw
  /// enwik8 / text8 file, valid and test are each this many bytes (enwik8) or
  /// characters (text8) at its end and train is the rest (official: 5M each
  /// of the 100M, train 90M). Must be positive.
  int64_t numTestChars = 5000000;
};

/// A loaded corpus: the vocabulary and the encoded splits asked for (the
/// others stay empty). Word/character datasets fill the ordered streams
/// `train`/`valid`/`test`; lm1b fills `trainPaths` (when train is asked for)
/// and `validSentences`/`testSentences`.
struct Corpus {
  std::string dataset;
  Vocab vocab;
  std::vector<int64_t> train, valid, test;
  std::vector<std::string> trainPaths;
  Sentences validSentences, testSentences;

  /// The ordered stream of `split`. Errors: TXL_INVALID_ARGUMENT for lm1b,
  /// which has none (official get_iterator uses LMShuffledIterator /
  /// LMMultiFileIterator there).
  const std::vector<int64_t> &stream(Split split) const;

  /// The sentences of valid/test of a sentence-level dataset (lm1b).
  /// Errors: TXL_INVALID_ARGUMENT otherwise, and for train (a list of files).
  const Sentences &sentences(Split split) const;
};

/// Official `Corpus(dir, dataset)` (data_utils.py) for every dataset of
/// `datasetSpec`: builds the vocabulary (counting the files the dataset
/// counts, or reading lm1b's vocabulary file) and encodes the splits in
/// `encode`, each split's file read once. lm1b: train gives `trainPaths`
/// (`lm1bTrainShards`), valid/test give sentences (see `splitPath`).
///
/// enwik8 / text8 accept two layouts, the prepared one first:
///  * the official prepared files train.txt/valid.txt/test.txt (prep_enwik8.py:
///    every byte as its decimal number, space-separated, newline bytes kept
///    as line breaks; prep_text8.py: every character space-separated, " "
///    written "_");
///  * else the raw file "<dir>/enwik8" (the 100,000,000 bytes inside
///    enwik8.zip) or "<dir>/text8", split here as the prep scripts do (see
///    `CorpusOptions::numTestChars`) into exactly the symbols the prepared
///    files would give: enwik8, the decimal string of every byte except 10
///    (newlines are line breaks, never tokens); text8, every character of
///    each stripped part with " " as "_" and other whitespace dropped.
/// Both give the same ids.
///
/// Errors: unsupported dataset; a missing/unreadable file (naming its path;
/// for enwik8/text8 both the prepared and the raw path); invalid UTF-8; a
/// symbol not in the vocabulary; a raw file shorter than 2 * numTestChars;
/// numTestChars not positive (TXL_INVALID_ARGUMENT).
Corpus loadCorpus(const std::string &dataset, const std::string &dir,
                  const std::vector<Split> &encode = {Split::Train,
                                                      Split::Valid,
                                                      Split::Test},
                  const CorpusOptions &options = {});

} // namespace txl::rt

#endif // TXL_RT_CORPUS_H
