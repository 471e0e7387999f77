//===- RowWindow.h - A sliding window of rows in a device buffer -*- C++
//-*-===//
//
// The key/value cache's state (runtime/src/session/KvCache.h): the last
// mem_len rows of a layer's memory, keys or values, in a buffer of the
// session's device that the compiled code appends to.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_SESSION_ROWWINDOW_H
#define TXL_RT_SESSION_ROWWINDOW_H

#include "txl/rt/device/Device.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace txl::rt {

/// One state of the key/value cache's slices (a layer's memory, keys or
/// values) [rows, count, width]: `rows` consecutive rows of a buffer of the
/// session's device with room after them. txl_segment_kv writes a
/// segment's rows straight into that room, and the window then slides over
/// them to keep the last mem_len rows. The window moves back to the
/// buffer's front only when the room runs out: with a buffer of 2·mem_len
/// rows, once every mem_len / qlen segments, where the official
/// recurrence's cat(mem, hids)[-mem_len:] copies the memory every segment.
/// The buffer is not cleared (every row is written before the window holds
/// it; on the host a large one is asked for as huge pages, HostDevice).
class RowWindow {
public:
  RowWindow(Device &device, int64_t rowFloats)
      : device(&device), rowBytes(size_t(rowFloats) * sizeof(float)) {}
  RowWindow(RowWindow &&other) noexcept { *this = std::move(other); }
  RowWindow &operator=(RowWindow &&other) noexcept {
    std::swap(device, other.device);
    std::swap(rowBytes, other.rowBytes);
    std::swap(buffer, other.buffer);
    std::swap(capacityRows, other.capacityRows);
    std::swap(first, other.first);
    std::swap(windowRows, other.windowRows);
    return *this;
  }
  RowWindow(const RowWindow &) = delete;
  RowWindow &operator=(const RowWindow &) = delete;
  ~RowWindow() {
    if (buffer)
      device->free(buffer);
  }

  int64_t rows() const { return windowRows; }
  /// The device buffer and the byte offset of the window's row `row` in it
  /// (null before the first reserve()).
  void *data() const { return buffer; }
  size_t offsetBytes(int64_t row = 0) const {
    return size_t(first + row) * rowBytes;
  }
  /// The window and the `added` rows after it as compiled code takes them
  /// (Device::view), after reserve(added, ...).
  BufferView window(int64_t added = 0) const {
    return BufferView(*device, buffer, offsetBytes(),
                      size_t(windowRows + added) * rowBytes);
  }

  /// Where `added` new rows go (as compiled code takes them), right after
  /// the window, in a buffer of at least `capacity` rows (capacity >= rows()
  /// + added); the window moves to the buffer's front when the rows after
  /// it do not fit.
  BufferView reserve(int64_t added, int64_t capacity) {
    capacity = std::max(capacity, windowRows + added);
    if (capacityRows < capacity) {
      void *grown = device->allocate(size_t(capacity) * rowBytes);
      if (windowRows)
        device->copyOnDevice(grown, 0, buffer, offsetBytes(),
                             size_t(windowRows) * rowBytes);
      if (buffer)
        device->free(buffer);
      buffer = grown;
      capacityRows = capacity;
      first = 0;
    }
    if (first + windowRows + added > capacityRows)
      moveToFront();
    return BufferView(*device, buffer, offsetBytes(windowRows),
                      size_t(added) * rowBytes);
  }

  /// Takes the `added` rows written at reserve()'s handle into the window
  /// and keeps its last `keep` rows (keep <= rows() + added).
  void append(int64_t added, int64_t keep) {
    first += windowRows + added - keep;
    windowRows = keep;
  }

private:
  /// The window's rows to the buffer's front. The ranges overlap when the
  /// window starts within its own length of the front: the host's copy is
  /// a memmove, and elsewhere the rows move in runs of `first` rows, each
  /// run's source past every earlier run's destination.
  void moveToFront() {
    if (device->hostMemory() || first >= windowRows) {
      device->copyOnDevice(buffer, 0, buffer, offsetBytes(),
                           size_t(windowRows) * rowBytes);
    } else {
      for (int64_t row = 0; row < windowRows; row += first)
        device->copyOnDevice(
            buffer, size_t(row) * rowBytes, buffer, offsetBytes(row),
            size_t(std::min(first, windowRows - row)) * rowBytes);
    }
    first = 0;
  }

  Device *device;
  size_t rowBytes;
  void *buffer = nullptr;
  int64_t capacityRows = 0, first = 0, windowRows = 0;
};

} // namespace txl::rt

#endif // TXL_RT_SESSION_ROWWINDOW_H
