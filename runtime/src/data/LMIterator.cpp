//===- LMIterator.cpp - LM segment iterators (official) ---------*- C++ -*-===//

#include "txl/rt/data/LMIterator.h"

#include "txl/rt/support/Status.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <vector>

namespace txl::rt {

namespace {

/// The checks shared by every iterator's sizes.
void checkSizes(int64_t batch, int64_t bptt, int64_t extLen) {
  if (batch <= 0)
    fail(TXL_INVALID_ARGUMENT, "batch size must be positive, got {}", batch);
  if (bptt <= 0)
    fail(TXL_INVALID_ARGUMENT, "tgt_len must be positive, got {}", bptt);
  if (extLen < 0)
    fail(TXL_INVALID_ARGUMENT, "ext_len must not be negative, got {}", extLen);
}

/// 0, 1, ..., n - 1.
std::vector<int64_t> identityOrder(int64_t n) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

} // namespace

LMOrderedIterator::LMOrderedIterator(const std::vector<int64_t> &stream,
                                     int64_t batch, int64_t bptt,
                                     int64_t extLen)
    : batch_(batch), bptt_(bptt), extLen_(extLen) {
  checkSizes(batch, bptt, extLen);
  nStep_ = static_cast<int64_t>(stream.size()) / batch;
  // view(bsz, -1).t(): matrix[t][b] = stream[b * n_step + t].
  matrix_.resize(static_cast<size_t>(nStep_ * batch));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < nStep_; ++t)
      matrix_[static_cast<size_t>(t * batch + b)] =
          stream[static_cast<size_t>(b * nStep_ + t)];
}

int64_t LMOrderedIterator::numSegments() const {
  if (nStep_ < 2)
    return 0;
  return (nStep_ - 1 + bptt_ - 1) / bptt_;
}

int64_t LMOrderedIterator::numPredictedTokens() const {
  return nStep_ < 2 ? 0 : (nStep_ - 1) * batch_;
}

LMSegment LMOrderedIterator::segmentAt(int64_t start, int64_t bptt) const {
  if (bptt <= 0)
    bptt = bptt_;
  if (start < 0 || start >= nStep_ - 1)
    fail(TXL_INVALID_ARGUMENT,
         "segment start {} out of range: the stream has {} rows of {}", start,
         nStep_, batch_);
  LMSegment segment;
  segment.start = start;
  segment.batch = batch_;
  segment.seqLen = std::min(bptt, nStep_ - 1 - start);
  int64_t begin = std::max<int64_t>(0, start - extLen_);
  int64_t end = start + segment.seqLen;
  segment.dataRows = end - begin;
  auto row = [&](int64_t r) { return matrix_.begin() + r * batch_; };
  segment.data.assign(row(begin), row(end));
  segment.target.assign(row(start + 1), row(end + 1));
  return segment;
}

void LMOrderedIterator::seek(int64_t row) {
  if (row < 0)
    fail(TXL_INVALID_ARGUMENT, "iterator position {} is negative", row);
  next_ = row;
}

bool LMOrderedIterator::next(LMSegment &out) {
  if (next_ >= nStep_ - 1)
    return false;
  out = segmentAt(next_);
  next_ += bptt_;
  return true;
}

uint64_t NumpyRandomState::interval(uint64_t max) {
  if (max == 0)
    return 0;
  uint64_t mask = max;
  for (int shift : {1, 2, 4, 8, 16, 32})
    mask |= mask >> shift;
  uint64_t value;
  if (max <= 0xffffffffu) {
    while ((value = (engine_() & mask)) > max) {
    }
    return value;
  }
  // mt19937_next64: the high word is drawn first.
  do {
    uint64_t high = engine_();
    value = ((high << 32) | engine_()) & mask;
  } while (value > max);
  return value;
}

std::vector<int64_t> NumpyRandomState::permutation(int64_t n) {
  std::vector<int64_t> order = identityOrder(n);
  shuffle(order);
  return order;
}

double NumpyRandomState::randomSample() {
  uint64_t a = engine_() >> 5, b = engine_() >> 6;
  return (double(a) * 67108864.0 + double(b)) / 9007199254740992.0;
}

double NumpyRandomState::normal(double loc, double scale) {
  if (hasGauss_) {
    hasGauss_ = false;
    return loc + scale * gauss_;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * randomSample() - 1.0;
    x2 = 2.0 * randomSample() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  hasGauss_ = true;
  return loc + scale * (f * x2);
}

std::string NumpyRandomState::save() const {
  std::ostringstream out;
  out << engine_ << ' ' << (hasGauss_ ? 1 : 0) << ' '
      << fmt::format("{:a}", gauss_);
  return out.str();
}

void NumpyRandomState::restore(const std::string &text) {
  // libstdc++ writes the 624 state words, then the position in them.
  constexpr size_t kWords = std::mt19937::state_size;
  std::istringstream in(text);
  std::vector<unsigned long long> words(kWords + 1);
  bool degenerate = true;
  for (size_t i = 0; i < words.size(); ++i) {
    std::string word;
    char *end = nullptr;
    if (!(in >> word) || word[0] == '-' || word[0] == '+')
      fail(TXL_DATA_ERROR, "malformed random generator state");
    errno = 0;
    words[i] = std::strtoull(word.c_str(), &end, 10);
    if (*end != '\0' || errno == ERANGE ||
        words[i] > (i < kWords ? 0xffffffffull : kWords))
      fail(TXL_DATA_ERROR, "malformed random generator state");
    // Mersenne Twister's one bad state: the top bit of word 0 and all of
    // the others zero, which then yields zeros for ever.
    if (i < kWords && (i == 0 ? words[i] >> 31 : words[i]) != 0)
      degenerate = false;
  }
  int hasGauss = 0;
  std::string gauss;
  if (!(in >> hasGauss >> gauss) || (hasGauss != 0 && hasGauss != 1) ||
      !(in >> std::ws).eof())
    fail(TXL_DATA_ERROR, "malformed random generator state");
  if (degenerate)
    fail(TXL_DATA_ERROR, "random generator state is all zero");
  char *end = nullptr;
  double gaussValue = std::strtod(gauss.c_str(), &end);
  if (*end != '\0' || !std::isfinite(gaussValue))
    fail(TXL_DATA_ERROR, "malformed random generator state");
  std::ostringstream canonical;
  for (size_t i = 0; i < words.size(); ++i)
    canonical << (i ? " " : "") << words[i];
  std::istringstream engineText(canonical.str());
  std::mt19937 engine;
  if (!(engineText >> engine))
    fail(TXL_DATA_ERROR, "malformed random generator state");
  engine_ = engine;
  hasGauss_ = hasGauss != 0;
  gauss_ = gaussValue;
}

LMVarlenIterator::LMVarlenIterator(const std::vector<int64_t> &stream,
                                   int64_t batch, int64_t bptt,
                                   NumpyRandomState &rng)
    : rows_(stream, batch, bptt), rng_(rng) {}

bool LMVarlenIterator::next(LMSegment &out) {
  int64_t nStep = rows_.numSteps();
  if (nStep < 2 || (next_ > 0 && next_ >= nStep - 2))
    return false;
  int64_t tgtLen = rows_.bptt();
  double bptt = rng_.randomSample() < 0.95 ? double(tgtLen) : tgtLen / 2.0;
  // int() truncates toward zero; min_len 5, max_len tgt_len + 3 * 5.
  auto length = static_cast<int64_t>(rng_.normal(bptt, 5.0));
  length = std::min<int64_t>(maxLength(tgtLen), std::max<int64_t>(5, length));
  out = rows_.segmentAt(next_, length);
  next_ += out.seqLen;
  return true;
}

LMStreamBatcher::LMStreamBatcher(int64_t batch, int64_t bptt, int64_t extLen)
    : batch_(batch), bptt_(bptt), extLen_(extLen) {
  checkSizes(batch, bptt, extLen);
  restart();
}

void LMStreamBatcher::restart() {
  streams_.assign(static_cast<size_t>(batch_), Stream());
  retained_.clear();
  nRetain_ = 0;
  done_ = false;
}

bool LMStreamBatcher::next(const SentenceSource &source, LMSegment &out) {
  if (done_)
    return false;
  int64_t rows = nRetain_ + bptt_;
  std::vector<int64_t> data(static_cast<size_t>(rows * batch_), -1);
  std::vector<int64_t> target(static_cast<size_t>(bptt_ * batch_), -1);
  std::copy(retained_.begin(), retained_.end(), data.begin());
  for (int64_t i = 0; i < batch_; ++i) {
    Stream &stream = streams_[static_cast<size_t>(i)];
    int64_t filled = 0;
    while (filled < bptt_) {
      if (!stream.ids || stream.length <= 1) {
        if (!source(stream.ids, stream.length)) {
          done_ = true; // StopIteration: the partial segment is dropped
          return false;
        }
        continue;
      }
      int64_t nNew = std::min(stream.length - 1, bptt_ - filled);
      for (int64_t k = 0; k < nNew; ++k) {
        data[static_cast<size_t>((nRetain_ + filled + k) * batch_ + i)] =
            stream.ids[k];
        target[static_cast<size_t>((filled + k) * batch_ + i)] =
            stream.ids[k + 1];
      }
      // streams[i] = streams[i][n_new:]: the last target token stays.
      stream.ids += nNew;
      stream.length -= nNew;
      filled += nNew;
    }
  }
  out.seqLen = bptt_;
  out.dataRows = rows;
  out.batch = batch_;
  out.data = std::move(data);
  out.target = std::move(target);
  nRetain_ = std::min(rows, extLen_);
  retained_.assign(out.data.end() - nRetain_ * batch_, out.data.end());
  return true;
}

LMShuffledIterator::LMShuffledIterator(Sentences sentences, int64_t batch,
                                       int64_t bptt, int64_t extLen,
                                       bool shuffle, uint32_t seed)
    : sentences_(std::move(sentences)), batch_(batch), bptt_(bptt),
      shuffle_(shuffle), rng_(seed), batcher_(batch, bptt, extLen) {}

/// The sentence at order[cursor] (advancing the cursor), or false at the end
/// of the order: the sentence source both stream iterators feed the batcher.
static bool nextSentence(const Sentences &sentences,
                         const std::vector<int64_t> &order, size_t &cursor,
                         const int64_t *&ids, int64_t &length) {
  if (cursor >= order.size())
    return false;
  int64_t index = order[cursor++];
  ids = sentences.begin(index);
  length = sentences.length(index);
  return true;
}

bool LMShuffledIterator::next(LMSegment &out) {
  if (!started_) {
    // get_sent_stream: the epoch's order, drawn when iteration starts.
    order_ = shuffle_ ? rng_.permutation(sentences_.size())
                      : identityOrder(sentences_.size());
    cursor_ = 0;
    segments_ = 0;
    batcher_.restart();
    started_ = true;
  }
  auto source = [&](const int64_t *&ids, int64_t &length) {
    return nextSentence(sentences_, order_, cursor_, ids, length);
  };
  if (!batcher_.next(source, out))
    return false;
  out.start = segments_++;
  return true;
}

LMMultiFileIterator::LMMultiFileIterator(std::vector<std::string> paths,
                                         const Vocab &vocab, int64_t batch,
                                         int64_t bptt, int64_t extLen,
                                         bool shuffle, uint32_t seed)
    : paths_(std::move(paths)), vocab_(vocab), batch_(batch), bptt_(bptt),
      shuffle_(shuffle), rng_(seed), batcher_(batch, bptt, extLen) {}

bool LMMultiFileIterator::next(LMSegment &out) {
  if (!started_) {
    if (shuffle_)
      rng_.shuffle(paths_);
    nextFile_ = 0;
    fileOpen_ = false;
    segments_ = 0;
    started_ = true;
  }
  auto source = [&](const int64_t *&ids, int64_t &length) {
    return nextSentence(sentences_, order_, cursor_, ids, length);
  };
  while (true) {
    if (!fileOpen_) {
      if (nextFile_ >= paths_.size())
        return false;
      openFile(nextFile_++);
    }
    if (batcher_.next(source, out)) {
      out.start = segments_++;
      ++segmentsInFile_;
      return true;
    }
    fileOpen_ = false;
  }
}

void LMMultiFileIterator::openFile(size_t index) {
  // A fresh stream_iterator per file: drop the columns before the sentences
  // they point into.
  batcher_.restart();
  currentPath_ = paths_[index];
  sentences_ = vocab_.encodeSentencesFile(currentPath_, /*addEos=*/true,
                                          /*addDoubleEos=*/true);
  fileRng_ = rng_.save();
  order_ = shuffle_ ? rng_.permutation(sentences_.size())
                    : identityOrder(sentences_.size());
  cursor_ = 0;
  segmentsInFile_ = 0;
  fileOpen_ = true;
}

namespace {

/// The file name of `path` (what follows its last '/').
std::string fileName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

} // namespace

std::string LMMultiFileIterator::saveState() const {
  nlohmann::json names = nlohmann::json::array();
  for (const std::string &path : paths_)
    names.push_back(fileName(path));
  nlohmann::json state = {{"paths", names},
                          {"started", started_},
                          {"file_open", started_ && fileOpen_},
                          {"next_file", nextFile_},
                          {"segments", segments_},
                          {"segments_in_file", segmentsInFile_},
                          {"file_rng", fileRng_},
                          {"rng", rng_.save()}};
  return state.dump();
}

void LMMultiFileIterator::restoreState(const std::string &text,
                                       const std::string &source) {
  nlohmann::json state;
  std::vector<std::string> names;
  bool started = false, fileOpen = false;
  size_t nextFile = 0;
  int64_t segments = 0, segmentsInFile = 0;
  std::string fileRng, rng;
  try {
    state = nlohmann::json::parse(text);
    names = state.at("paths").get<std::vector<std::string>>();
    started = state.at("started").get<bool>();
    fileOpen = state.at("file_open").get<bool>();
    nextFile = state.at("next_file").get<size_t>();
    segments = state.at("segments").get<int64_t>();
    segmentsInFile = state.at("segments_in_file").get<int64_t>();
    fileRng = state.at("file_rng").get<std::string>();
    rng = state.at("rng").get<std::string>();
  } catch (const nlohmann::json::exception &error) {
    fail(TXL_DATA_ERROR, "{}: malformed training iterator state ({})", source,
         error.what());
  }
  if (segments < 0 || segmentsInFile < 0 || segmentsInFile > segments ||
      nextFile > names.size() || (fileOpen && nextFile == 0))
    fail(TXL_DATA_ERROR,
         "{}: training iterator state out of range (file {} of {}, segment {} "
         "of the file, {} of the epoch)",
         source, nextFile, names.size(), segmentsInFile, segments);
  for (const std::string *saved : {&fileRng, &rng}) {
    if (saved->empty() && saved == &fileRng && !fileOpen)
      continue; // no file was opened yet
    try {
      NumpyRandomState(0).restore(*saved);
    } catch (const Error &error) {
      fail(TXL_DATA_ERROR, "{}: training iterator state: {}", source,
           error.what());
    }
  }
  // The saved order, by name, of this iterator's files.
  std::map<std::string, std::string> pathOf;
  for (const std::string &path : paths_)
    pathOf[fileName(path)] = path;
  std::vector<std::string> paths;
  for (const std::string &name : names) {
    auto found = pathOf.find(name);
    if (found == pathOf.end())
      fail(TXL_DATA_ERROR,
           "{}: the checkpoint trained on shard '{}', which the data has not",
           source, name);
    paths.push_back(found->second);
  }
  if (std::set<std::string>(names.begin(), names.end()).size() !=
          names.size() ||
      names.size() != paths_.size())
    fail(TXL_DATA_ERROR,
         "{}: the checkpoint trained on {} shard files, the data has {}",
         source, names.size(), paths_.size());

  paths_ = std::move(paths);
  started_ = started;
  nextFile_ = nextFile;
  segments_ = segments;
  fileOpen_ = false;
  segmentsInFile_ = 0;
  if (!fileOpen) {
    rng_.restore(rng);
    return;
  }
  rng_.restore(fileRng);
  openFile(nextFile_ - 1);
  auto sentence = [&](const int64_t *&ids, int64_t &length) {
    return nextSentence(sentences_, order_, cursor_, ids, length);
  };
  LMSegment skipped;
  for (int64_t i = 0; i < segmentsInFile; ++i)
    if (!batcher_.next(sentence, skipped))
      fail(TXL_DATA_ERROR,
           "{}: {} gives {} segments, the checkpoint had taken {} from it: "
           "the file changed since",
           source, currentPath_, i, segmentsInFile);
  segmentsInFile_ = segmentsInFile;
  if (rng_.save() != rng)
    fail(TXL_DATA_ERROR,
         "{}: reading {} again does not give the checkpoint's random state: "
         "the file changed since",
         source, currentPath_);
}

SplitIterator::SplitIterator(const Corpus &corpus, Split split, int64_t batch,
                             int64_t bptt) {
  if (datasetSpec(corpus.dataset).sentenceLevel) {
    const Sentences &sentences = corpus.sentences(split);
    sentences_.emplace(sentences, batch, bptt);
    expectedTokens_ = static_cast<int64_t>(sentences.ids.size());
    return;
  }
  const std::vector<int64_t> &stream = corpus.stream(split);
  ordered_.emplace(stream, batch, bptt);
  if (ordered_->numSegments() == 0)
    fail(TXL_DATA_ERROR,
         "the {} split has {} tokens: too few for one segment at batch size "
         "{} (each of the {} columns needs at least 2 tokens)",
         splitName(split), stream.size(), batch, batch);
  expectedTokens_ = ordered_->numPredictedTokens();
}

} // namespace txl::rt
