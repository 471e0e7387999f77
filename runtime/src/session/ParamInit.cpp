//===- ParamInit.cpp - Official parameter initialisation --------*- C++ -*-===//

#include "txl/rt/session/ParamInit.h"

#include "txl/rt/session/ModelInfo.h"
#include "txl/rt/support/Philox.h"
#include "txl/rt/support/Status.h"

#include <cmath>
#include <string>

namespace txl::rt {

namespace {

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.substr(s.size() - suffix.size()) == suffix;
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

/// Normal(mean, std) draws for elements [0, count), Box-Muller on Philox
/// words: element 2k and 2k+1 share counter (k, param index).
void fillNormal(float *out, int64_t count, double mean, double stddev,
                uint64_t seed, uint32_t stream) {
  PhiloxKey key = philoxKey(seed);
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  for (int64_t pair = 0; 2 * pair < count; ++pair) {
    PhiloxCounter bits = philox4x32(
        {uint32_t(pair), uint32_t(uint64_t(pair) >> 32), stream, 0}, key);
    double radius = std::sqrt(-2.0 * std::log(uniformOpen(bits[0])));
    double angle = kTwoPi * uniformOpen(bits[1]);
    out[2 * pair] =
        static_cast<float>(mean + stddev * radius * std::cos(angle));
    if (2 * pair + 1 < count)
      out[2 * pair + 1] =
          static_cast<float>(mean + stddev * radius * std::sin(angle));
  }
}

/// Uniform(-range, range) draws, one Philox word per element.
void fillUniform(float *out, int64_t count, double range, uint64_t seed,
                 uint32_t stream) {
  PhiloxKey key = philoxKey(seed);
  for (int64_t quad = 0; 4 * quad < count; ++quad) {
    PhiloxCounter bits = philox4x32(
        {uint32_t(quad), uint32_t(uint64_t(quad) >> 32), stream, 1}, key);
    for (int64_t j = 0; j < 4 && 4 * quad + j < count; ++j)
      out[4 * quad + j] =
          static_cast<float>(-range + 2.0 * range * uniformOpen(bits[j]));
  }
}

} // namespace

InitRule initRuleFor(std::string_view name) {
  if (name == "pos_emb.inv_freq")
    return InitRule::InvFreq;
  if (contains(name, "emb_projs.") || contains(name, "crit.out_projs."))
    return InitRule::Projection;
  if (contains(name, "layer_norm."))
    return endsWith(name, ".weight") ? InitRule::NormWeight : InitRule::Zero;
  // train.py's weights_init: r_bias (attn_type 1) by init_bias, r_emb
  // (attn_type 1 and 3) by init_weight.
  if (endsWith(name, ".bias") || name == "crit.cluster_bias" ||
      name == "r_bias")
    return InitRule::Zero;
  if (endsWith(name, ".weight") || endsWith(name, "r_w_bias") ||
      endsWith(name, "r_r_bias") || name == "crit.cluster_weight" ||
      name == "r_emb")
    return InitRule::Weight;
  fail(TXL_INVALID_ARGUMENT, "no initialisation rule for parameter '{}'", name);
}

void initParameter(const txl_model_info_t &info, int32_t index, uint64_t seed,
                   float *out) {
  const txl_param_info_t &p = info.params[index];
  const int64_t count = parameterElements(p);
  std::string_view init = info.init ? info.init : "normal";
  if (init != "normal" && init != "uniform")
    fail(TXL_INVALID_ARGUMENT, "[train] init '{}' is not normal or uniform",
         init);
  auto stream = static_cast<uint32_t>(index);
  switch (initRuleFor(p.name)) {
  case InitRule::Weight:
    if (init == "normal")
      fillNormal(out, count, 0.0, info.init_std, seed, stream);
    else
      fillUniform(out, count, info.init_range, seed, stream);
    return;
  case InitRule::Zero:
    std::fill(out, out + count, 0.0f);
    return;
  case InitRule::NormWeight:
    fillNormal(out, count, 1.0, info.init_std, seed, stream);
    return;
  case InitRule::Projection:
    fillNormal(out, count, 0.0, info.proj_init_std, seed, stream);
    return;
  case InitRule::InvFreq:
    // Official PositionalEmbedding: 1 / (10000 ** (arange(0, d, 2) / d)).
    for (int64_t i = 0; i < count; ++i)
      out[i] = static_cast<float>(
          1.0 / std::pow(10000.0, double(2 * i) / double(2 * count)));
    return;
  }
}

} // namespace txl::rt
