//===- KvCache.h - The key/value cache's rows and slices --------*- C++ -*-===//
//
// The key/value cache of txl_session_run_segment (runtime.h): per batch
// slice, each layer's memory and the keys and values of its rows, the
// states of one RowWindows of the session's device that txl_segment_kv
// appends a segment's rows to (KvCache.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_SESSION_KVCACHE_H
#define TXL_RT_SESSION_KVCACHE_H

#include "txl/rt/session/RowWindows.h"

#include <cstdint>
#include <vector>

namespace txl::rt {

/// The key/value cache's state of one batch slice: the columns [first,
/// first + count) that one call of txl_segment_kv runs (as the
/// batch-parallel slices of a segment). It keeps the slice's memory and its
/// layers' keys and values of the memory rows, the states of one
/// RowWindows, so that a run moves nothing between the batch and the
/// slices, and txl_segment_kv writes a segment's rows straight after them.
struct KvSlice {
  KvSlice(Device &device, int64_t first, int64_t count, int64_t layers,
          int64_t dModel, int64_t nLayer, int64_t hd)
      : first(first), count(count), layers(layers), nLayer(nLayer),
        windows(device, stateWidths(count, layers, dModel, nLayer, hd)) {}

  /// The states' order in `windows`: the n_layer + 1 memories, then each
  /// layer's keys, then each layer's values ([mlen, count, *] each).
  size_t mem(int64_t l) const { return size_t(l); }
  size_t key(int64_t l) const { return size_t(layers + l); }
  size_t value(int64_t l) const { return size_t(layers + nLayer + l); }

  int64_t first = 0, count = 0, layers = 0, nLayer = 0;
  RowWindows windows;

private:
  static std::vector<int64_t> stateWidths(int64_t count, int64_t layers,
                                          int64_t dModel, int64_t nLayer,
                                          int64_t hd) {
    std::vector<int64_t> widths(size_t(layers), count * dModel);
    widths.resize(size_t(layers + 2 * nLayer), count * hd);
    return widths;
  }
};

} // namespace txl::rt

#endif // TXL_RT_SESSION_KVCACHE_H
