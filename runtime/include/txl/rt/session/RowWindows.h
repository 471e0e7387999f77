//===- RowWindows.h - Sliding windows of rows in one device buffer -*- C++
//-*-===//
//
// The key/value cache's state (runtime/src/session/KvCache.h): a batch
// slice's last mem_len rows of every layer's memory, keys and values, in one
// buffer of the session's device that the compiled code appends to.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_SESSION_ROWWINDOWS_H
#define TXL_RT_SESSION_ROWWINDOWS_H

#include "txl/rt/device/Device.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace txl::rt {

/// The states of one key/value cache slice (its layers' memories, keys and
/// values), state s [rows, count, width_s]: each a window of `rows`
/// consecutive rows with room after them, in its own region of one buffer
/// of the session's device, every window at the same rows of its region
/// (the states are appended to together). txl_segment_kv writes a
/// segment's rows straight into that room, and the windows then slide over
/// them to keep the last mem_len rows. They move back to their regions'
/// fronts only when the room runs out: with regions of 2·mem_len rows, once
/// every mem_len / qlen segments, where the official recurrence's cat(mem,
/// hids)[-mem_len:] copies the memory every segment; and then all states of
/// one row width move by one 2-D copy (Device::copyStridedOnDevice: one
/// device copy for ptb_small's 10 states, where a copy a state took 10).
/// The buffer is not cleared (every row is written before a window holds
/// it; on the host a large one is asked for as huge pages, HostDevice).
class RowWindows {
public:
  /// States of `rowFloats[s]` floats a row.
  RowWindows(Device &device, std::vector<int64_t> rowFloats) : device(&device) {
    for (int64_t floats : rowFloats)
      rowBytes.push_back(size_t(floats) * sizeof(float));
  }
  RowWindows(RowWindows &&other) noexcept { *this = std::move(other); }
  RowWindows &operator=(RowWindows &&other) noexcept {
    std::swap(device, other.device);
    std::swap(rowBytes, other.rowBytes);
    std::swap(buffer, other.buffer);
    std::swap(capacityRows, other.capacityRows);
    std::swap(first, other.first);
    std::swap(windowRows, other.windowRows);
    return *this;
  }
  RowWindows(const RowWindows &) = delete;
  RowWindows &operator=(const RowWindows &) = delete;
  ~RowWindows() {
    if (buffer)
      device->free(buffer);
  }

  size_t states() const { return rowBytes.size(); }
  int64_t rows() const { return windowRows; }
  /// The device buffer (null before the first reserve()) and the byte
  /// offset in it of state `state`'s window row `row`.
  void *data() const { return buffer; }
  size_t offsetBytes(size_t state, int64_t row = 0) const {
    return regionBytes(state, capacityRows) +
           size_t(first + row) * rowBytes[state];
  }
  /// State `state`'s window and the `added` rows after it as compiled code
  /// takes them (Device::view), after reserve(added, ...).
  BufferView window(size_t state, int64_t added = 0) const {
    return BufferView(*device, buffer, offsetBytes(state),
                      size_t(windowRows + added) * rowBytes[state]);
  }
  /// Where state `state`'s `added` new rows go, right after its window
  /// (after reserve(added, ...)).
  BufferView addedRows(size_t state, int64_t added) const {
    return BufferView(*device, buffer, offsetBytes(state, windowRows),
                      size_t(added) * rowBytes[state]);
  }

  /// Makes room for `added` rows after every window, in regions of at
  /// least `capacity` rows (capacity >= rows() + added): a larger buffer
  /// (the windows copied to its regions' fronts), or the windows moved to
  /// their regions' fronts when the rows after them do not fit.
  void reserve(int64_t added, int64_t capacity) {
    capacity = std::max(capacity, windowRows + added);
    if (capacityRows < capacity) {
      void *grown = device->allocate(regionBytes(states(), capacity));
      for (size_t s = 0; s < states() && windowRows; ++s)
        device->copyOnDevice(grown, regionBytes(s, capacity), buffer,
                             offsetBytes(s), size_t(windowRows) * rowBytes[s]);
      if (buffer)
        device->free(buffer);
      buffer = grown;
      capacityRows = capacity;
      first = 0;
    }
    if (first + windowRows + added > capacityRows)
      moveToFront();
  }

  /// Takes the `added` rows written after each window into it and keeps
  /// its last `keep` rows (keep <= rows() + added).
  void append(int64_t added, int64_t keep) {
    first += windowRows + added - keep;
    windowRows = keep;
  }

private:
  /// The byte offset of state `state`'s region in a buffer of regions of
  /// `capacity` rows (the states' regions one after the other).
  size_t regionBytes(size_t state, int64_t capacity) const {
    size_t bytes = 0;
    for (size_t s = 0; s < state; ++s)
      bytes += size_t(capacity) * rowBytes[s];
    return bytes;
  }

  /// Every window's rows to its region's front: for each run of states of
  /// one row width (consecutive regions of one pitch), one strided copy.
  /// A window's source and destination overlap when it starts within its
  /// own length of the front: the host's copies are memmoves, and
  /// elsewhere the rows move in runs of `first` rows, each run's source
  /// past every earlier run's destination.
  void moveToFront() {
    for (size_t s = 0; s < states();) {
      size_t end = s + 1;
      while (end < states() && rowBytes[end] == rowBytes[s])
        ++end;
      const size_t pitch = size_t(capacityRows) * rowBytes[s];
      const int64_t run =
          device->hostMemory() || first >= windowRows ? windowRows : first;
      for (int64_t row = 0; row < windowRows; row += run)
        device->copyStridedOnDevice(
            buffer, regionBytes(s, capacityRows) + size_t(row) * rowBytes[s],
            offsetBytes(s, row),
            size_t(std::min(run, windowRows - row)) * rowBytes[s], pitch,
            end - s);
      s = end;
    }
    first = 0;
  }

  Device *device;
  std::vector<size_t> rowBytes;
  void *buffer = nullptr;
  int64_t capacityRows = 0, first = 0, windowRows = 0;
};

} // namespace txl::rt

#endif // TXL_RT_SESSION_ROWWINDOWS_H
