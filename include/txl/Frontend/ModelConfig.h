//===- ModelConfig.h - Transformer-XL model files (TOML) ---------*- C++
//-*-===//
//
// A model file is TOML with the official hyper-parameter names of
// kimiyoung/transformer-xl (train.py / mem_transformer.py):
//
//   [model]   n_token n_layer d_model n_head d_head d_inner d_embed attn_type
//             pre_lnorm dropout dropatt tie_weight div_val cutoffs tie_projs
//             same_length clamp_len untie_r
//   [segment] tgt_len mem_len ext_len
//   [eval]    tgt_len mem_len clamp_len same_length batch_size
//   [train]   optimizer / schedule / init settings (parsed, used by training),
//             objective multiple_positions intermediate_layers multiple_targets
//   [data]    dataset path
//
//===----------------------------------------------------------------------===//

#ifndef TXL_FRONTEND_MODELCONFIG_H
#define TXL_FRONTEND_MODELCONFIG_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir {
namespace txl {

/// `[model]`: the architecture (official `MemTransformerLM.__init__` args).
struct ModelSection {
  int64_t nToken = 0;       ///< n_token, required: vocabulary size
  int64_t nLayer = 0;       ///< n_layer
  int64_t dModel = 0;       ///< d_model
  int64_t nHead = 0;        ///< n_head
  int64_t dHead = 0;        ///< d_head
  int64_t dInner = 0;       ///< d_inner
  int64_t dEmbed = -1;      ///< d_embed; -1 in the file means d_model
  /// attn_type: 0 relative (Transformer-XL), 1 Shaw et al. learned
  /// relative, 2 Vaswani et al. absolute sinusoid, 3 Al-Rfou et al. learned
  /// absolute per layer (the official MemTransformerLM's four).
  int64_t attnType = 0;
  bool preLnorm = false;    ///< pre_lnorm
  double dropout = 0.0;     ///< dropout
  double dropatt = 0.0;     ///< dropatt
  bool tieWeight = true;    ///< tie_weight
  int64_t divVal = 1;       ///< div_val
  llvm::SmallVector<int64_t> cutoffs; ///< cutoffs, without n_token
  llvm::SmallVector<bool> tieProjs;   ///< tie_projs, one per cluster
  bool sameLength = false;  ///< same_length
  int64_t clampLen = -1;    ///< clamp_len; <= 0 means no clamping
  /// untie_r: per-layer u/v biases (`layers.<l>.dec_attn.r_w_bias`/`r_r_bias`,
  /// the official code's layers built with r_w_bias=None), as in the released
  /// Hugging Face TransfoXL checkpoints; false = one pair for all layers.
  bool untieR = false;
};

/// `[segment]`: training segment shape (official tgt_len/mem_len/ext_len).
struct SegmentSection {
  int64_t tgtLen = 0;
  int64_t memLen = 0;
  int64_t extLen = 0;
};

/// `[eval]`: evaluation overrides; unset keys fall back to `[segment]` /
/// `[model]`, and batch_size to 10 as in the official eval.py.
struct EvalSection {
  std::optional<int64_t> tgtLen, memLen, clampLen, batchSize;
  std::optional<bool> sameLength;
};

/// `[train]`: the official train.py options under their names. Parsed and
/// validated now; the training driver consumes them.
struct TrainSection {
  int64_t batchSize = 60;
  int64_t batchChunk = 1;
  std::string optim = "adam";
  double lr = 0.00025;
  double mom = 0.0;
  std::string scheduler = "cosine";
  int64_t warmupStep = 0;
  int64_t maxStep = 100000;
  double etaMin = 0.0;
  double decayRate = 0.5;
  double lrMin = 0.0; ///< lr_min: dev_perf's floor (ReduceLROnPlateau min_lr)
  int64_t patience = 0;
  double clip = 0.25;
  bool clipNonemb = false;
  std::string init = "normal";
  std::string embInit = "normal";
  double initRange = 0.1;
  double embInitRange = 0.01;
  double initStd = 0.02;
  double projInitStd = 0.01;
  int64_t seed = 1111;
  int64_t logInterval = 200;
  int64_t evalInterval = 4000;
  int64_t maxEvalSteps = -1;
  bool varlen = false;
  /// "lm": train.py's objective, the mean next-token NLL of consecutive
  /// segments with memory. "alrfou": Al-Rfou et al. (2018) §2.1–2.3, the
  /// vanilla character transformer's objective on windows of tgt_len
  /// characters at random positions with its three auxiliary losses, each
  /// switched by one of the keys below (docs/alrfou.md).
  std::string objective = "lm";
  bool multiplePositions = true; ///< every position predicts (§2.1)
  bool intermediateLayers =
      true;                    ///< a head per layer, dropped over time (§2.2)
  bool multipleTargets = true; ///< a second head, two positions ahead (§2.3)
  bool isAlRfou() const { return objective == "alrfou"; }
};

/// `[data]`.
struct DataSection {
  std::string dataset; ///< ptb, wt2, wt103, enwik8, text8, lm1b, ptb-char
  std::string path;
};

/// A parsed and validated model file.
struct ModelConfig {
  std::string fileName;  ///< path as given
  std::string modelName; ///< file stem, used to name generated symbols
  ModelSection model;
  SegmentSection segment;
  EvalSection eval;
  TrainSection train;
  DataSection data;

  /// d_embed with the official default applied (-1 -> d_model).
  int64_t dEmbed() const { return model.dEmbed < 0 ? model.dModel : model.dEmbed; }
  /// Evaluation defaults after merging `[eval]` over `[segment]`/`[model]`.
  int64_t evalTgtLen() const { return eval.tgtLen.value_or(segment.tgtLen); }
  int64_t evalMemLen() const { return eval.memLen.value_or(segment.memLen); }
  /// The official `max_klen = tgt_len + ext_len + mem_len`: the rows of the
  /// learned position tables of attn_type 1 and 3 (`r_emb`, `r_bias`).
  int64_t maxKlen() const {
    return segment.tgtLen + segment.extLen + segment.memLen;
  }
  int64_t evalClampLen() const { return eval.clampLen.value_or(model.clampLen); }
  bool evalSameLength() const { return eval.sameLength.value_or(model.sameLength); }
  int64_t evalBatchSize() const { return eval.batchSize.value_or(10); }
};

/// Parses `text` (the contents of `fileName`) as a model file.
///
/// Errors are returned as a single StringError whose message has the form
/// `<file>:<line>:<col>: error: <message naming the key>` — for TOML syntax
/// errors, unknown sections or keys, wrong value types, missing required keys
/// (`n_token`, `n_layer`, `d_model`, `n_head`, `d_head`, `d_inner`,
/// `tgt_len`) and impossible values (non-positive sizes, `div_val < 1`,
/// cutoffs not strictly increasing inside (0, n_token), tie_projs length not
/// `len(cutoffs) + 1`, `same_length` with `mem_len = 0`, negative mem_len,
/// `mom >= 1` with optim sgd).
/// `ext_len != 0` is rejected as not yet supported; attn_type 3 needs
/// n_head * d_head = d_model, untie_r needs attn_type 0; objective "alrfou"
/// needs mem_len = 0, no varlen and no cutoffs, and its three switches are
/// rejected under objective "lm".
llvm::Expected<ModelConfig> parseModelConfig(llvm::StringRef text,
                                             llvm::StringRef fileName);

/// The largest model file loadModelConfig reads (1 MiB; the official
/// configurations are under 2 KB).
constexpr uint64_t kMaxModelFileBytes = 1 << 20;

/// Reads `path` and parses it; an unreadable file, one that is not a regular
/// file or one over kMaxModelFileBytes is `<path>: error: ...`.
llvm::Expected<ModelConfig> loadModelConfig(llvm::StringRef path);

/// The model name of a model file (ModelConfig::modelName): the file stem with
/// every character outside [A-Za-z0-9_] replaced by `_`, and `model_` put in
/// front when it would be empty or start with a digit, so that it can prefix
/// generated symbols (`models/ptb-small.v2.toml` -> `ptb_small_v2`).
std::string modelNameFromPath(llvm::StringRef path);

} // namespace txl
} // namespace mlir

#endif // TXL_FRONTEND_MODELCONFIG_H
