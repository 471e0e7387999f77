//===- Text.h - User text to token ids and back, per dataset -----*- C++
//-*-===//
//
// `generate` and `score` read text a user writes and print what a model
// predicts. The ids are those the dataset's reader (Corpus.h) gives the same
// text in a corpus file, so that a model trained by `train` (or converted
// from the official code) sees what it was trained on.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_TEXT_H
#define TXL_RT_TEXT_H

#include "txl/rt/data/Corpus.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace txl::rt {

/// The ids of `text` for `dataset` with vocabulary `vocab`, line by line as
/// the dataset's reader encodes a file (DatasetSpec): words (ptb, wt2,
/// wt103, lm1b) as `Vocab::tokenize` splits them, ptb-char's spelled-out
/// characters with "_" between words, text8's characters with " " as "_",
/// enwik8's bytes as their decimal numbers. A line that ends in "\n" gets the
/// dataset's end of line ("<eos>"; lm1b frames it with "<S>"; enwik8 and
/// text8 have none); a last line without one gets none, so that a prompt
/// continues its sentence. A symbol not in the vocabulary maps to the
/// vocabulary's unknown symbol (lm1b "<UNK>"), or to PTB's "<unk>" where the
/// vocabulary has one. Errors (TXL_DATA_ERROR): a symbol with no unknown
/// symbol to map to ("<source>:<line>: symbol 'x' is not in the
/// vocabulary"); invalid UTF-8 but for enwik8, whose symbols are bytes
/// ("<source>:<line>: invalid UTF-8 (byte 0xNN at offset N)", checkUtf8).
/// `source` names the text: its file, or "--prompt".
std::vector<int64_t> encodeUserText(std::string_view dataset,
                                    const Vocab &vocab, std::string_view text,
                                    const std::string &source);

/// Turns ids back into text as the dataset writes it, one token at a time
/// (for streaming): words separated by spaces and "<eos>" (lm1b: "<S>") as a
/// line break; ptb-char's and text8's "_" as a space; enwik8's decimal
/// numbers as the bytes they are.
class Detokenizer {
public:
  Detokenizer(std::string_view dataset, const Vocab &vocab);
  /// The text of token `id`, given every token before it went through this
  /// object. Errors: TXL_INVALID_ARGUMENT for an id outside the vocabulary.
  std::string next(int64_t id);

private:
  const Vocab &vocab_;
  bool words_ = true;       ///< word-level: spaces between symbols
  bool underscore_ = false; ///< "_" is a space (ptb-char, text8)
  bool bytes_ = false;      ///< decimal byte values (enwik8)
  std::string lineBreak_;   ///< the symbol written as "\n"
  bool atLineStart_ = true;
};

} // namespace txl::rt

#endif // TXL_RT_TEXT_H
