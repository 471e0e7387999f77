//===- KvCache.h - The key/value cache's rows and slices --------*- C++ -*-===//
//
// The key/value cache of txl_session_run_segment (runtime.h): per batch
// slice, each layer's memory and the keys and values of its rows, each in a
// RowWindow of the session's device that txl_segment_kv appends a
// segment's rows to (KvCache.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_SESSION_KVCACHE_H
#define TXL_RT_SESSION_KVCACHE_H

#include "txl/rt/session/RowWindow.h"

#include <cstdint>
#include <vector>

namespace txl::rt {

/// The key/value cache's state of one batch slice: the columns [first,
/// first + count) that one call of txl_segment_kv runs (as the
/// batch-parallel slices of a segment). It keeps the slice's memory and its
/// layers' keys and values of the memory rows, each in a RowWindow, so that
/// a run moves nothing between the batch and the slices, and
/// txl_segment_kv writes a segment's rows straight after them.
struct KvSlice {
  int64_t first = 0, count = 0;
  std::vector<RowWindow> mems, k, v; ///< [mlen, count, *] each
};

} // namespace txl::rt

#endif // TXL_RT_SESSION_KVCACHE_H
