//===- BufferPool.h - Freed device buffers kept for reuse -------*- C++ -*-===//
//
// A caching allocator in front of a device (as PyTorch's CUDA caching
// allocator): the buffers the compiled code and the session free are kept
// and handed out again, so that a segment of the same shape as the last
// allocates nothing from the device (issue 51: no allocation per steady
// segment, which CUDA graphs also need).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_DEVICE_BUFFERPOOL_H
#define TXL_RT_DEVICE_BUFFERPOOL_H

#include "txl/rt/device/Device.h"

#include <cstddef>
#include <memory>

namespace txl::rt {

/// The size class a request of `bytes` bytes is served from: a multiple of
/// 512 bytes below 1 MiB; above it, a multiple of 1/16 of the largest
/// power of two not above `bytes` (at most 6.25 % more than asked). A
/// request of 0 bytes gets 512.
size_t poolSizeClass(size_t bytes);

/// What a pool holds, for tests and TXL_PROFILE.
struct BufferPoolStats {
  /// Buffers handed out and not freed, and their bytes (by size class).
  size_t liveBuffers = 0, liveBytes = 0;
  /// Freed buffers kept for reuse, and their bytes.
  size_t keptBuffers = 0, keptBytes = 0;
  /// The most bytes live at once since the pool was made.
  size_t peakLiveBytes = 0;
};

/// `device` with its freed buffers kept for reuse. An allocation takes the
/// buffer of its size class (poolSizeClass) freed last, or allocates one
/// of that class from `device`; a free keeps the buffer. Sound because a
/// Device has one in-order queue: work enqueued after a free that reuses
/// the buffer runs after the work enqueued before it.
///
/// Bounded: the pool keeps at most as many bytes as were ever live at once
/// (`peakLiveBytes`), releasing the buffers kept longest first, so that
/// the memory of shapes that do not come back (a memory still growing, a
/// last shorter segment) returns to the device. When `device` cannot
/// allocate (an Error), every kept buffer is released to it and the
/// allocation is tried once more. freeMemory() counts the kept bytes as
/// free. Destroying the pool releases the kept buffers; the live ones are
/// the caller's to free before.
///
/// `stats`, when given, is updated on every call (it must outlive the
/// pool).
std::unique_ptr<Device> poolBuffers(std::unique_ptr<Device> device,
                                    BufferPoolStats *stats = nullptr);

/// False when TXL_DEVICE_POOL=0 is set: the device the mgpu ABI opens then
/// allocates and frees every buffer from the device (for tools that check
/// each allocation, such as compute-sanitizer, and for the tests' negative
/// controls).
bool devicePoolEnabled();

} // namespace txl::rt

#endif // TXL_RT_DEVICE_BUFFERPOOL_H
