//===- KvCache.h - The key/value cache's rows and slices --------*- C++ -*-===//
//
// The key/value cache of txl_session_run_segment (runtime.h): per batch
// slice, each layer's memory and the keys and values of its rows, each in a
// RowWindow that txl_segment_kv appends a segment's rows to (KvCache.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_SESSION_KVCACHE_H
#define TXL_RT_SESSION_KVCACHE_H

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include <sys/mman.h>

namespace txl::rt {

/// One state of the key/value cache's slices (a layer's memory, keys or
/// values) [rows, count, width]: `rows` consecutive rows of a buffer with
/// room after them. txl_segment_kv writes a segment's rows straight into
/// that room, and the window then slides over them to keep the last mem_len
/// rows. The window moves back to the buffer's front only when the room
/// runs out: with a buffer of 2·mem_len rows, once every mem_len / qlen
/// segments, where the official recurrence's cat(mem, hids)[-mem_len:]
/// copies the memory every segment.
class RowWindow {
public:
  explicit RowWindow(int64_t rowFloats = 0) : rowFloats(rowFloats) {}

  int64_t rows() const { return windowRows; }

  /// The window's first row: [rows(), count, width] (a valid pointer when
  /// empty, as the generated code takes none other).
  const float *data() const {
    return buffer ? buffer.get() + first * rowFloats : &kEmpty;
  }
  /// data() of a window with room reserved: the entry writes after it.
  float *data() { return buffer ? buffer.get() + first * rowFloats : nullptr; }

  /// Where `added` new rows go, right after the window, in a buffer of at
  /// least `capacity` rows (capacity >= rows() + added); the window moves to
  /// the buffer's front when the rows after it do not fit. The buffer is
  /// not cleared (every row is written before the window holds it) and
  /// asks for transparent huge pages: at the enwik8 paper setting the
  /// cache is 787.5 MiB, and zeroing it in 4 KiB page faults took about a
  /// tenth of a 30-segment eval (Intel Xeon, session 50).
  float *reserve(int64_t added, int64_t capacity) {
    capacity = std::max(capacity, windowRows + added);
    if (size < capacity * rowFloats) {
      Buffer grown = allocate(capacity * rowFloats);
      if (windowRows)
        std::copy_n(data(), windowRows * rowFloats, grown.get());
      buffer = std::move(grown);
      size = capacity * rowFloats;
      first = 0;
    }
    if ((first + windowRows + added) * rowFloats > size) {
      std::copy_n(buffer.get() + first * rowFloats, windowRows * rowFloats,
                  buffer.get());
      first = 0;
    }
    return buffer.get() + (first + windowRows) * rowFloats;
  }

  /// Takes the `added` rows written at reserve()'s pointer into the window
  /// and keeps its last `keep` rows (keep <= rows() + added).
  void append(int64_t added, int64_t keep) {
    first += windowRows + added - keep;
    windowRows = keep;
  }

private:
  struct Free {
    void operator()(float *p) const { std::free(p); }
  };
  using Buffer = std::unique_ptr<float[], Free>;
  /// `floats` uninitialised floats, 2 MiB aligned, advised as huge pages.
  static Buffer allocate(int64_t floats) {
    constexpr size_t kHugePage = size_t(2) << 20;
    size_t bytes = (size_t(floats) * sizeof(float) + kHugePage - 1) /
                   kHugePage * kHugePage;
    auto *p = static_cast<float *>(std::aligned_alloc(kHugePage, bytes));
    if (!p)
      throw std::bad_alloc();
    madvise(p, bytes, MADV_HUGEPAGE);
    return Buffer(p);
  }

  static inline const float kEmpty = 0.0f;
  Buffer buffer;
  int64_t rowFloats, size = 0, first = 0, windowRows = 0;
};

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
