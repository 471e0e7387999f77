//===- session.cpp - Run generated segments on the CPU -----------*- C++ -*-===//
//
// A session owns the parameters (float32, in the generated function's
// argument order), the memory of every layer, and calls the generated
// `txl_segment_forward` (and `txl_segment_grad`) through its packed convention: args[i] points at
// argument i — an MLIR memref descriptor {allocated, aligned, offset,
// sizes[rank], strides[rank]} or an int64 scalar.
//
//===----------------------------------------------------------------------===//

#include "txl/runtime.h"

#include "txl/rt/MemRef.h"
#include "txl/rt/ParamInit.h"
#include "txl/rt/SafeTensors.h"
#include "txl/rt/Status.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace txl::rt;


struct txl_session {
  const txl_model_info_t *info = nullptr;
  txl_segment_fn segment = nullptr;
  txl_segment_fn segmentGrad = nullptr; ///< null: no backward entry linked
  std::vector<std::vector<float>> params; ///< by txl_param_info_t order
  bool loaded = false;
  /// mems[l]: [mlen, batch, d_model] row-major, l = 0..n_layer.
  std::vector<std::vector<float>> mems;
  int64_t mlen = 0, batch = 0;
};

static void requireSession(txl_session_t *session) {
  if (!session)
    fail(TXL_INVALID_ARGUMENT, "null session");
}

extern "C" txl_status_t txl_session_create(const txl_model_info_t *info,
                                           txl_segment_fn segment_fn,
                                           txl_session_t **out_session) {
  return guardStatus([&] {
    if (!info || !out_session)
      fail(TXL_INVALID_ARGUMENT, "txl_session_create: null argument");
    if (info->abi_version != TXL_ABI_VERSION)
      fail(TXL_INVALID_ARGUMENT,
           "model was compiled for runtime ABI {}, this runtime is ABI {}",
           info->abi_version, TXL_ABI_VERSION);
    auto session = std::make_unique<txl_session>();
    session->info = info;
    session->segment = segment_fn ? segment_fn : &txl_segment_forward;
    // Weak: null in executables compiled without the backward segment, and
    // unused when the caller brings its own forward function.
    session->segmentGrad = segment_fn ? nullptr : &txl_segment_grad;
    session->mems.resize(info->n_layer + 1);
    *out_session = session.release();
  });
}

extern "C" void txl_session_release(txl_session_t *session) { delete session; }

extern "C" txl_status_t txl_session_load_checkpoint(txl_session_t *session,
                                                    const char *path) {
  return guardStatus([&] {
    requireSession(session);
    if (!path)
      fail(TXL_INVALID_ARGUMENT, "null checkpoint path");
    SafeTensorsFile file = SafeTensorsFile::open(path);
    const txl_model_info_t &info = *session->info;
    std::vector<std::vector<float>> params(info.n_params);
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
      file.readF32(name, shape, params[i].data());
    }
    session->params = std::move(params);
    session->loaded = true;
  });
}

extern "C" txl_status_t txl_session_init_parameters(txl_session_t *session,
                                                    uint64_t seed) {
  return guardStatus([&] {
    requireSession(session);
    const txl_model_info_t &info = *session->info;
    std::vector<std::vector<float>> params(info.n_params);
    for (int32_t i = 0; i < info.n_params; ++i) {
      int64_t count = 1;
      for (int32_t d = 0; d < info.params[i].rank; ++d)
        count *= info.params[i].shape[d];
      params[i].resize(count);
      initParameter(info, i, seed, params[i].data());
    }
    session->params = std::move(params);
    session->loaded = true;
  });
}

extern "C" txl_status_t txl_session_parameter(txl_session_t *session,
                                              int32_t index, float **out_data) {
  return guardStatus([&] {
    requireSession(session);
    if (!out_data)
      fail(TXL_INVALID_ARGUMENT, "txl_session_parameter: null argument");
    if (!session->loaded)
      fail(TXL_INVALID_ARGUMENT, "no checkpoint loaded");
    if (index < 0 || index >= session->info->n_params)
      fail(TXL_INVALID_ARGUMENT, "parameter index {} out of range [0, {})",
           index, session->info->n_params);
    *out_data = session->params[index].data();
  });
}

extern "C" txl_status_t txl_session_set_memory(txl_session_t *session,
                                               int64_t mlen, int64_t batch,
                                               const float *const *layers) {
  return guardStatus([&] {
    requireSession(session);
    if (batch <= 0 || mlen < 0)
      fail(TXL_INVALID_ARGUMENT,
           "memory of {} rows and batch size {}: need rows >= 0, batch > 0",
           mlen, batch);
    const txl_model_info_t &info = *session->info;
    size_t count = static_cast<size_t>(mlen * batch * info.d_model);
    std::vector<std::vector<float>> mems(info.n_layer + 1);
    for (int64_t l = 0; l <= info.n_layer; ++l) {
      if (count && (!layers || !layers[l]))
        fail(TXL_INVALID_ARGUMENT, "no memory given for layer {}", l);
      if (count)
        mems[l].assign(layers[l], layers[l] + count);
    }
    session->mems = std::move(mems);
    session->mlen = mlen;
    session->batch = batch;
  });
}

extern "C" txl_status_t txl_session_reset_memory(txl_session_t *session,
                                                 int64_t batch) {
  return guardStatus([&] {
    requireSession(session);
    if (batch <= 0)
      fail(TXL_INVALID_ARGUMENT, "batch size must be positive, got {}", batch);
    for (auto &m : session->mems)
      m.clear();
    session->mlen = 0;
    session->batch = batch;
  });
}

/// One segment through the forward entry, or through the backward entry
/// when `outGrads` is not null (one float32 buffer per trainable parameter,
/// in parameter order; entries for buffers are ignored).
static void runSegment(txl_session_t *session, const int64_t *data,
                       const int64_t *target, int64_t qlen, int64_t batch,
                       const txl_run_options_t *options, float *out_nll,
                       float *const *outGrads) {
  requireSession(session);
  const txl_model_info_t &info = *session->info;
  if (!session->loaded)
    fail(TXL_INVALID_ARGUMENT, "no checkpoint loaded");
  if (!data || !target || !options || !out_nll)
    fail(TXL_INVALID_ARGUMENT, "txl_session_run_segment: null argument");
  if (qlen <= 0)
    fail(TXL_INVALID_ARGUMENT, "segment length must be positive, got {}", qlen);
  if (batch != session->batch)
    fail(TXL_INVALID_ARGUMENT,
         "batch size {} differs from the memory's batch size {} (reset the "
         "memory first)",
         batch, session->batch);
  if (options->mem_len < 0)
    fail(TXL_INVALID_ARGUMENT, "mem_len must be >= 0, got {}",
         options->mem_len);
  if (options->same_length && options->mem_len == 0)
    fail(TXL_INVALID_ARGUMENT, "same_length requires mem_len > 0");
  for (int64_t i = 0; i < qlen * batch; ++i) {
    if (data[i] < 0 || data[i] >= info.n_token || target[i] < 0 ||
        target[i] >= info.n_token)
      fail(TXL_INVALID_ARGUMENT,
           "token id out of range [0, {}) at position {} of the segment",
           info.n_token, i);
  }
  txl_segment_fn entry = session->segment;
  if (outGrads) {
    entry = session->segmentGrad;
    if (!entry)
      fail(TXL_INVALID_ARGUMENT,
           "this executable has no backward segment (txl_segment_grad); "
           "compile the model with the fused attention (the default)");
  }

  const int64_t dModel = info.d_model;
  const int64_t klen = session->mlen + qlen;
  const int64_t newMlen = std::min(options->mem_len, klen);
  std::vector<MemRefDescriptor> descriptors;
  descriptors.reserve(2 * info.n_params + 2 * (info.n_layer + 1) + 3);
  std::vector<void *> args;
  auto pushMemRef = [&](const void *ptr, std::vector<int64_t> sizes) {
    descriptors.emplace_back(const_cast<void *>(ptr), sizes);
    args.push_back(descriptors.back().get());
  };
  auto shapeOf = [&](int32_t i) {
    const txl_param_info_t &p = info.params[i];
    return std::vector<int64_t>(p.shape, p.shape + p.rank);
  };
  for (int32_t i = 0; i < info.n_params; ++i)
    pushMemRef(session->params[i].data(), shapeOf(i));
  pushMemRef(data, {qlen, batch});
  pushMemRef(target, {qlen, batch});
  // An empty memory still needs a valid (non-null) pointer.
  static float emptyMemory = 0.0f;
  for (auto &m : session->mems)
    pushMemRef(m.empty() ? &emptyMemory : m.data(),
               {session->mlen, batch, dModel});
  int64_t scalars[6] = {options->mem_len,
                        options->clamp_len,
                        options->same_length ? 1 : 0,
                        options->dropout_seed,
                        options->dropout_offset,
                        options->training ? 1 : 0};
  for (int64_t &s : scalars)
    args.push_back(&s);
  pushMemRef(out_nll, {qlen, batch});
  std::vector<std::vector<float>> newMems(info.n_layer + 1);
  for (auto &m : newMems) {
    m.resize(std::max<int64_t>(newMlen * batch * dModel, 1));
    pushMemRef(m.data(), {newMlen, batch, dModel});
  }
  if (outGrads) {
    for (int32_t i = 0; i < info.n_params; ++i) {
      if (!info.params[i].trainable)
        continue;
      if (!outGrads[i])
        fail(TXL_INVALID_ARGUMENT, "no gradient buffer for parameter '{}'",
             info.params[i].name);
      pushMemRef(outGrads[i], shapeOf(i));
    }
  }

  entry(args.data());

  for (auto &m : newMems)
    m.resize(newMlen * batch * dModel);
  session->mems = std::move(newMems);
  session->mlen = newMlen;
}

extern "C" txl_status_t
txl_session_run_segment(txl_session_t *session, const int64_t *data,
                        const int64_t *target, int64_t qlen, int64_t batch,
                        const txl_run_options_t *options, float *out_nll) {
  return guardStatus([&] {
    runSegment(session, data, target, qlen, batch, options, out_nll, nullptr);
  });
}

extern "C" txl_status_t txl_session_run_segment_grad(
    txl_session_t *session, const int64_t *data, const int64_t *target,
    int64_t qlen, int64_t batch, const txl_run_options_t *options,
    float *out_nll, float *const *out_grads) {
  return guardStatus([&] {
    if (!out_grads)
      fail(TXL_INVALID_ARGUMENT, "txl_session_run_segment_grad: null "
                                 "gradient list");
    runSegment(session, data, target, qlen, batch, options, out_nll, out_grads);
  });
}

extern "C" txl_status_t txl_session_memory(txl_session_t *session,
                                           int64_t layer,
                                           const float **out_data,
                                           int64_t *out_mlen) {
  return guardStatus([&] {
    requireSession(session);
    if (!out_data || !out_mlen)
      fail(TXL_INVALID_ARGUMENT, "txl_session_memory: null argument");
    if (layer < 0 || layer > session->info->n_layer)
      fail(TXL_INVALID_ARGUMENT, "memory layer {} out of range [0, {}]", layer,
           session->info->n_layer);
    *out_data = session->mems[layer].data();
    *out_mlen = session->mlen;
  });
}
