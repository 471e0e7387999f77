//===- ModelParameters.h - The parameters from a checkpoint -----*- C++ -*-===//
//
// Reading a compiled model's parameters (txl_model_info_t's table: official
// state_dict names, shapes, tied aliases, training-only tensors) from a
// safetensors checkpoint, with every check a loaded model relies on. The
// session loads through it (txl_session_load_checkpoint); the training
// checkpoint's other tensors (train.*, optim.*) are the commands'.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_DATA_MODELPARAMETERS_H
#define TXL_RT_DATA_MODELPARAMETERS_H

#include "txl/runtime.h"

#include <string>
#include <vector>

namespace txl::rt {

/// The parameters of a model read from a checkpoint.
struct ModelParameters {
  /// values[i]: parameter i of the table, row-major float32, as many
  /// elements as its shape has.
  std::vector<std::vector<float>> values;
  /// The first training-only tensor (objective "alrfou"'s auxiliary heads)
  /// the file left out, zeros in `values`; empty when none.
  std::string missingTrainingOnly;
};

/// Reads every parameter of `info` from the safetensors file `path`, each
/// under its name or one of its aliases (a tied parameter may be stored
/// under either). A training-only tensor may be missing (zeros stand in:
/// evaluation never reads it). Errors (txl::rt::Error; the message starts
/// with the path and names the tensor): the file's own (SafeTensorsFile);
/// a missing tensor, or one of another shape or dtype (TXL_DATA_ERROR from
/// SafeTensorsFile::readF32); an element that is not finite ("tensor
/// 'r_w_bias': element 3 is nan"), since a NaN would not stop a run; two
/// names of one tied parameter holding different values; and, unless
/// `allowExtraTensors`, a tensor no parameter claims, outside the runtime's
/// own train.* and optim.* (another model's checkpoint, as
/// load_state_dict(strict=True) refuses it).
ModelParameters readModelParameters(const char *path,
                                    const txl_model_info_t &info,
                                    bool allowExtraTensors);

} // namespace txl::rt

#endif // TXL_RT_DATA_MODELPARAMETERS_H
