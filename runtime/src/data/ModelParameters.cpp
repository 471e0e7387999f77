//===- ModelParameters.cpp - The parameters from a checkpoint -------------===//
//
// readModelParameters (ModelParameters.h).
//
//===----------------------------------------------------------------------===//

#include "txl/rt/data/ModelParameters.h"

#include "txl/rt/data/SafeTensors.h"
#include "txl/rt/support/Status.h"

#include <cmath>
#include <cstring>
#include <set>
#include <string_view>

namespace txl::rt {

ModelParameters readModelParameters(const char *path,
                                    const txl_model_info_t &info,
                                    bool allowExtraTensors) {
  SafeTensorsFile file = SafeTensorsFile::open(path);
  std::vector<std::vector<float>> params(info.n_params);
  std::string missingTrainingOnly;
  for (int32_t i = 0; i < info.n_params; ++i) {
    const txl_param_info_t &p = info.params[i];
    Shape shape(p.shape, p.shape + p.rank);
    // A tied parameter may be stored under either of its names.
    std::string_view name = p.name;
    for (const char *const *alias = p.aliases; !file.find(name) && *alias;
         ++alias)
      if (file.find(*alias))
        name = *alias;
    int64_t count = 1;
    for (int64_t d : shape)
      count *= d;
    params[i].resize(count);
    // Evaluation never reads a training-only tensor: a checkpoint for
    // inference may drop it (zeros stand in).
    if (p.training_only && !file.find(name)) {
      if (missingTrainingOnly.empty())
        missingTrainingOnly = p.name;
      continue;
    }
    file.readF32(name, shape, params[i].data());
    // A NaN or infinity would not stop a run: ReLU maps NaN to 0, and a
    // loss can stay finite while the model is wrong.
    for (int64_t k = 0; k < count; ++k)
      if (!std::isfinite(params[i][k]))
        fail(TXL_DATA_ERROR,
             "{}: tensor '{}': element {} is {} (every parameter must be "
             "finite)",
             path, name, k, params[i][k]);
    // Tied copies stored under several names must agree (the official
    // state_dict holds each alias; a file edited by hand may not).
    std::vector<float> copy;
    for (const char *const *alias = p.aliases; *alias; ++alias) {
      std::string_view other = *alias == name ? p.name : *alias;
      if (other == name || !file.find(other))
        continue;
      copy.resize(count);
      file.readF32(other, shape, copy.data());
      if (std::memcmp(copy.data(), params[i].data(), sizeof(float) * count) !=
          0)
        fail(TXL_DATA_ERROR,
             "{}: tensors '{}' and '{}' are one tied parameter of this "
             "model but hold different values",
             path, name, other);
    }
  }
  // Tensors none of the model's parameters claim: another model's
  // (issue 48, item 14: layers.3.* of a 4-layer file loaded silently into
  // a 3-layer model). The runtime's training state (train.*, optim.*) is
  // its own.
  if (!allowExtraTensors) {
    std::set<std::string_view> known;
    for (int32_t i = 0; i < info.n_params; ++i) {
      known.insert(info.params[i].name);
      for (const char *const *alias = info.params[i].aliases; *alias; ++alias)
        known.insert(*alias);
    }
    std::vector<std::string_view> extra;
    for (const SafeTensorInfo &tensor : file.tensors()) {
      std::string_view name = tensor.name;
      if (!known.count(name) && name.substr(0, 6) != "train." &&
          name.substr(0, 6) != "optim.")
        extra.push_back(name);
    }
    if (!extra.empty())
      fail(TXL_DATA_ERROR,
           "{}: tensor '{}' is not a parameter of this model ({} such "
           "tensor{}; another model's checkpoint?); --allow-extra-tensors "
           "loads the model's and passes over the others",
           path, extra.front(), extra.size(), extra.size() == 1 ? "" : "s");
  }
  return {std::move(params), std::move(missingTrainingOnly)};
}

} // namespace txl::rt
