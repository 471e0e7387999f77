//===- ModelInfo.cpp - What a compiled model's info implies -----*- C++ -*-===//
//
// A parameter's size, the objective and the dropout mask limit
// (ModelInfo.h).
//
//===----------------------------------------------------------------------===//

#include "txl/rt/session/ModelInfo.h"

#include "txl/rt/support/Status.h"

#include <algorithm>
#include <string_view>

namespace txl::rt {

int64_t parameterElements(const txl_param_info_t &p) {
  int64_t count = 1;
  for (int32_t d = 0; d < p.rank; ++d)
    count *= p.shape[d];
  return count;
}

bool isAlRfouObjective(const txl_model_info_t &info) {
  return info.objective && std::string_view(info.objective) == "alrfou";
}

void checkDropoutElements(const txl_model_info_t &info, int64_t qlen,
                          int64_t klen, int64_t batch) {
  using Wide = unsigned __int128;
  auto check = [&](Wide elements, const char *what) {
    if (elements > static_cast<Wide>(kMaxDropoutElements))
      fail(TXL_INVALID_ARGUMENT,
           "{} of {:.0f} elements (segment of {} positions over up to {} "
           "keys, batch {}) is more than the 2^34 elements whose dropout masks "
           "are distinct",
           what, static_cast<double>(elements), qlen, klen, batch);
  };
  int64_t width = std::max({info.d_model, info.d_inner, info.d_embed});
  if (info.dropout > 0)
    check(Wide(qlen) * Wide(batch) * Wide(width), "a hidden state");
  if (info.dropatt > 0)
    check(Wide(qlen) * Wide(klen) * Wide(batch) * Wide(info.n_head),
          "the attention probabilities");
}

} // namespace txl::rt
