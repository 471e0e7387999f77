//===- CorpusFuzzer.cpp - libFuzzer targets of the corpus readers ---------===//
//
// One source, three targets (TXL_FUZZ_CORPUS selects which):
//  * word: ptb, wt2 (train.txt or wiki.train.tokens), wt103 and ptb-char,
//          three split files cut from the input;
//  * char: enwik8 and text8, from the prepared split files or from the raw
//          file split at a `num_test_chars` the input picks;
//  * lm1b: the vocabulary file, one training shard and the held-out shard,
//          with every shard encoded through LMMultiFileIterator.
// Each then runs LMOrderedIterator (or the sentence iterator) over what was
// encoded. Checks: refusal only by txl::rt::Error, and every id inside the
// vocabulary.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "txl/rt/data/Corpus.h"
#include "txl/rt/data/LMIterator.h"
#include "txl/rt/support/Status.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

using namespace txl::rt;

namespace {

enum class Kind { Word, Char, Lm1b };
constexpr Kind kKind = Kind::TXL_FUZZ_CORPUS;

/// Every id of `ids` is a vocabulary index.
void checkIds(const std::vector<int64_t> &ids, const Vocab &vocab) {
  for (int64_t id : ids)
    FUZZ_CHECK(id >= 0 && id < vocab.size());
}

/// Walks an ordered iterator over `stream` with small, input-chosen sizes.
void iterate(const std::vector<int64_t> &stream, FuzzedDataProvider &input) {
  int64_t batch = input.ConsumeIntegralInRange<int64_t>(1, 4);
  int64_t bptt = input.ConsumeIntegralInRange<int64_t>(1, 8);
  LMOrderedIterator iterator(stream, batch, bptt);
  LMSegment segment;
  while (iterator.next(segment))
    FUZZ_CHECK(segment.target.size() ==
               static_cast<size_t>(segment.seqLen * segment.batch));
}

/// Removes what a previous input left, so that the reader's choice between
/// file layouts depends on this input only.
void clearScratch() {
  for (const auto &entry :
       std::filesystem::directory_iterator(txl::fuzz::scratchDir()))
    std::filesystem::remove_all(entry.path());
}

void fuzzWord(FuzzedDataProvider &input) {
  static const char *const kDatasets[] = {"ptb", "wt2", "wt103", "ptb-char"};
  std::string dataset = input.PickValueInArray(kDatasets);
  bool wikiNames = dataset == "wt2" && input.ConsumeBool();
  for (const char *split : {"train", "valid", "test"}) {
    std::string name = wikiNames ? std::string("wiki.") + split + ".tokens"
                                 : std::string(split) + ".txt";
    txl::fuzz::writeScratch(name, input.ConsumeRandomLengthString(4096));
  }
  Corpus corpus = loadCorpus(dataset, txl::fuzz::scratchDir());
  for (Split split : {Split::Train, Split::Valid, Split::Test}) {
    checkIds(corpus.stream(split), corpus.vocab);
    iterate(corpus.stream(split), input);
  }
}

void fuzzChar(FuzzedDataProvider &input) {
  std::string dataset = input.ConsumeBool() ? "enwik8" : "text8";
  CorpusOptions options;
  options.numTestChars = input.ConsumeIntegralInRange<int64_t>(-1, 64);
  if (input.ConsumeBool()) {
    for (const char *split : {"train", "valid", "test"})
      txl::fuzz::writeScratch(std::string(split) + ".txt",
                              input.ConsumeRandomLengthString(4096));
  } else {
    txl::fuzz::writeScratch(dataset, input.ConsumeRemainingBytesAsString());
  }
  Corpus corpus =
      loadCorpus(dataset, txl::fuzz::scratchDir(),
                 {Split::Train, Split::Valid, Split::Test}, options);
  for (Split split : {Split::Train, Split::Valid, Split::Test}) {
    checkIds(corpus.stream(split), corpus.vocab);
    iterate(corpus.stream(split), input);
  }
}

void fuzzLm1b(FuzzedDataProvider &input) {
  namespace fs = std::filesystem;
  fs::path archive = fs::path(txl::fuzz::scratchDir()) / kLm1bArchiveDir;
  fs::create_directories(archive / "training-monolingual.tokenized.shuffled");
  fs::create_directories(archive / "heldout-monolingual.tokenized.shuffled");
  txl::fuzz::writeScratch("1b_word_vocab.txt",
                          input.ConsumeRandomLengthString(2048));
  txl::fuzz::writeScratch(std::string(kLm1bArchiveDir) +
                              "/heldout-monolingual.tokenized.shuffled/"
                              "news.en.heldout-00000-of-00050",
                          input.ConsumeRandomLengthString(2048));
  txl::fuzz::writeScratch(std::string(kLm1bArchiveDir) +
                              "/training-monolingual.tokenized.shuffled/"
                              "news.en-00001-of-00100",
                          input.ConsumeRandomLengthString(2048));
  int64_t batch = input.ConsumeIntegralInRange<int64_t>(1, 4);
  int64_t bptt = input.ConsumeIntegralInRange<int64_t>(1, 8);
  bool shuffle = input.ConsumeBool();
  Corpus corpus = loadCorpus("lm1b", txl::fuzz::scratchDir());
  for (Split split : {Split::Valid, Split::Test}) {
    const Sentences &sentences = corpus.sentences(split);
    for (int64_t i = 0; i < sentences.size(); ++i)
      for (int64_t j = 0; j < sentences.length(i); ++j)
        FUZZ_CHECK(sentences.begin(i)[j] >= 0 &&
                   sentences.begin(i)[j] < corpus.vocab.size());
  }
  LMMultiFileIterator iterator(corpus.trainPaths, corpus.vocab, batch, bptt,
                               /*extLen=*/0, shuffle, /*seed=*/1);
  LMSegment segment;
  while (iterator.next(segment)) {
    checkIds(segment.data, corpus.vocab);
    checkIds(segment.target, corpus.vocab);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  clearScratch();
  FuzzedDataProvider input(data, size);
  try {
    switch (kKind) {
    case Kind::Word:
      fuzzWord(input);
      break;
    case Kind::Char:
      fuzzChar(input);
      break;
    case Kind::Lm1b:
      fuzzLm1b(input);
      break;
    }
  } catch (const Error &) {
  }
  return 0;
}
