//===- DeviceArray.h - A float32 array in a device buffer -------*- C++ -*-===//
//
// The session's arrays (parameters, memory, optimizer states) live in
// buffers of the session's device on every target: the host device on the
// CPU (Device.h), the opened GPU device otherwise. A DeviceArray owns one
// such buffer and gives the host a view of it the way a mapped buffer does
// (IREE's HAL: map, flush, invalidate). Where the device's memory is the
// host's the view is the buffer itself and flush and invalidate do
// nothing; elsewhere the view is a host copy, read back on `map` after the
// device wrote the buffer (`invalidate`) and sent back on `flush`.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_SESSION_DEVICEARRAY_H
#define TXL_RT_SESSION_DEVICEARRAY_H

#include "txl/rt/device/Device.h"

#include <cstddef>
#include <vector>

namespace txl::rt {

class DeviceArray {
public:
  /// No buffer: size 0, a null handle, a null view.
  DeviceArray() = default;
  /// `count` floats on `device`, their values undefined until written
  /// (the host view, if any, is stale). A buffer is allocated even for 0
  /// floats, so that every array of a device has a handle.
  DeviceArray(Device &device, size_t count);
  /// A copy of `host[0, count)` on `device`.
  DeviceArray(Device &device, const float *host, size_t count);
  /// `count` zeros on `device` (filled there; no host copy yet).
  static DeviceArray zeros(Device &device, size_t count);

  DeviceArray(DeviceArray &&other) noexcept;
  DeviceArray &operator=(DeviceArray &&other) noexcept;
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;
  /// Frees the buffer (in the device's queue order).
  ~DeviceArray();

  size_t size() const { return count_; }
  /// The buffer's handle, as compiled code takes it in a memref descriptor
  /// (on the host device its address).
  void *buffer() const { return buffer_; }

  /// The host view of the `size()` floats, up to date: the buffer itself on
  /// a device whose memory is the host's, else the host copy, read back
  /// first when the device wrote the buffer since. Writes through it reach
  /// the buffer there at once, elsewhere on `flush`. Valid until the array
  /// is moved or destroyed.
  float *map();
  /// Sends the host copy's contents to the buffer (nothing to do where the
  /// view is the buffer).
  void flush();
  /// Records that the device wrote the buffer: the next `map` reads it
  /// back (nothing to do where the view is the buffer).
  void invalidate();

  /// Copies floats [offset, offset + count) of the buffer to `out`.
  void read(float *out, size_t offset, size_t count) const;
  /// Copies `in[0, count)` into floats [offset, offset + count) of the
  /// buffer (and of the host copy, which stays as current as it was).
  void write(const float *in, size_t offset, size_t count);

private:
  void release();

  Device *device_ = nullptr;
  void *buffer_ = nullptr;
  size_t count_ = 0;
  /// The buffer's host address, or null where the view is `shadow_`.
  float *address_ = nullptr;
  std::vector<float> shadow_;
  bool shadowCurrent_ = false;
};

/// A caller's host array as an argument of compiled code on a device: on a
/// device whose memory is the host's, the array itself (no copy);
/// elsewhere a buffer of the device holding a copy of it (In), or receiving
/// what the code writes (Out; OutZeroed: filled with zeros first), which
/// `finish` copies back into the array.
class HostArgument {
public:
  enum Kind { In, Out, OutZeroed };
  /// `bytes` bytes at `host` (null: no argument, a null buffer).
  HostArgument(Device &device, const void *host, size_t bytes, Kind kind);
  HostArgument(HostArgument &&other) noexcept;
  HostArgument(const HostArgument &) = delete;
  HostArgument &operator=(const HostArgument &) = delete;
  HostArgument &operator=(HostArgument &&) = delete;
  /// Frees the device's copy, if any.
  ~HostArgument();

  /// What compiled code takes: the host array, or the device's copy.
  void *buffer() const { return buffer_; }
  /// An output's contents back into the host array (nothing to do where
  /// the buffer is the array, or for an input).
  void finish();
  /// finish() without waiting for the device: the host array holds the
  /// output once the device is next synchronized
  /// (Device::copyToHostAsync). The device's copy may be freed at once.
  void finishLater();

private:
  Device *device_;
  void *host_;
  size_t bytes_;
  Kind kind_;
  void *buffer_ = nullptr;
  bool staged_ = false; ///< buffer_ is the device's copy
};

} // namespace txl::rt

#endif // TXL_RT_SESSION_DEVICEARRAY_H
