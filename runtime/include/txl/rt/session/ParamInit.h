//===- ParamInit.h - Official parameter initialisation ----------*- C++ -*-===//
//
// Training from scratch initialises every parameter as the official train.py
// `weights_init` does (kimiyoung/transformer-xl, applied to every module):
//
//   Linear weights, Embedding tables, r_w_bias / r_r_bias, cluster_weight,
//   r_emb (attn_type 1 and 3)
//       init_weight: N(0, init_std) for init = "normal",
//                    U(-init_range, init_range) for init = "uniform"
//   biases of Linear / LayerNorm, cluster_bias, r_bias (attn_type 1)   0
//   LayerNorm weights                                 N(1, init_std)
//   AdaptiveEmbedding emb_projs, crit.out_projs       N(0, proj_init_std)
//   pos_emb.inv_freq (a buffer)                       1 / 10000^(2i/d_model)
//
// (emb_init / emb_init_range are parsed but, as in train.py, unused.)
// Draws are Philox4x32-10 keyed by the seed, counter (element pair, parameter
// index): the values differ from PyTorch's generator but follow the same
// distributions, and each tensor is reproducible on its own.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_PARAMINIT_H
#define TXL_RT_PARAMINIT_H

#include "txl/runtime.h"

#include <cstdint>
#include <string_view>

namespace txl::rt {

/// How one parameter is initialised (see the file comment).
enum class InitRule {
  Weight,     ///< init_weight: normal(0, init_std) or uniform(+-init_range)
  Zero,       ///< biases
  NormWeight, ///< LayerNorm weight: normal(1, init_std)
  Projection, ///< normal(0, proj_init_std)
  InvFreq,    ///< pos_emb.inv_freq
};

/// The rule for the parameter called `name` (official state_dict name).
/// Errors: TXL_INVALID_ARGUMENT for a name no rule covers.
InitRule initRuleFor(std::string_view name);

/// Fills `out` (the parameter's element count) with parameter `index` of
/// `info` initialised from `seed`. Errors: as initRuleFor; an `init` other
/// than "normal" / "uniform".
void initParameter(const txl_model_info_t &info, int32_t index, uint64_t seed,
                   float *out);

} // namespace txl::rt

#endif // TXL_RT_PARAMINIT_H
