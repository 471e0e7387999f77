//===- GradientReducer.h - A session's gradients over the ranks -*- C++ -*-===//
//
// The data-parallel step between a rank's backward and its optimizer step:
// the session's gradients averaged over the ranks through the collectives
// (DataParallel.h), which work on buffers and spans and never call the
// session's API themselves.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_COMMANDS_GRADIENTREDUCER_H
#define TXL_RT_COMMANDS_GRADIENTREDUCER_H

#include "txl/rt/collectives/DataParallel.h"
#include "txl/runtime.h"

#include <cstdint>
#include <vector>

namespace txl::rt {

/// Averages the session's gradients over the ranks (after the backward,
/// before txl_session_optimizer_step): every rank's gradient is that of its
/// equal share of the global batch, so their mean is the global batch's.
/// The flat gradient (runtime.h: txl_session_read_gradients) goes in
/// buckets of at most `bucketFloats` floats from its end (gradientBuckets),
/// each bucket one
/// collective: on the host (MPI), its floats are read, multiplied by 1/N
/// (exact for N a power of two), summed over the ranks and written back; on
/// the device (NCCL), its parts of each gradient tensor are averaged in
/// place as one group.
class GradientReducer {
public:
  GradientReducer(Communicator &comm, const txl_model_info_t &info,
                  int64_t bucketFloats = int64_t(1) << 22);
  void reduce(txl_session_t *session);

private:
  Communicator &comm_;
  int64_t bucketFloats_;
  std::vector<int32_t> trainable_; ///< parameter index per tensor
  std::vector<int64_t> sizes_;     ///< elements per tensor
  std::vector<float> staging_;
};

} // namespace txl::rt

#endif // TXL_RT_COMMANDS_GRADIENTREDUCER_H
