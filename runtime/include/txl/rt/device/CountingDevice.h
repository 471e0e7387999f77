//===- CountingDevice.h - What a device is asked to do -----------*- C++
//-*-===//
//
// The open device's counters (txl_device_counters, txl/device.h): a Device
// that forwards every operation to another and counts launches, library
// calls, copies with their bytes, host synchronisations and allocations.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_DEVICE_COUNTINGDEVICE_H
#define TXL_RT_DEVICE_COUNTINGDEVICE_H

#include "txl/device.h"
#include "txl/rt/device/Device.h"

#include <atomic>
#include <cstdint>
#include <memory>

namespace txl::rt {

/// txl_device_counters_t's fields, counted from any thread.
struct DeviceCounters {
  std::atomic<uint64_t> launches{0}, libraryCalls{0}, uploads{0},
      uploadBytes{0}, downloads{0}, downloadBytes{0}, deviceCopies{0}, syncs{0},
      allocations{0}, frees{0}, serialLaunches{0}, workItems{0},
      productFlops{0}, productBytes{0};

  txl_device_counters_t snapshot() const;
  /// All back to 0 (a device opened).
  void reset();
};

/// TXL_PROFILE (a comma-separated list): "counts" asks the session to print
/// the device's counters per segment and per optimizer step; any other
/// value but "0" (e.g. 1) times each kernel and library call, which waits
/// for the device before and after each (docs/gpu.md).
bool profileCounts();
bool profileTimes();

/// The serial-launch lint of the counters (txl_device_serial_steps): a
/// launch is serial when its work-items run more than kSerialStepsBudget
/// loop steps over device memory (or an unknown number) on a grid of fewer
/// than kLintMultiprocessors workgroups, the multiprocessors of an
/// H100/H200 (SXM), which such a grid leaves partly idle while a few
/// work-items walk their loops (issue #51, item 7).
inline constexpr int64_t kSerialStepsBudget = 64;
inline constexpr uint64_t kLintMultiprocessors = 132;

/// `device` with every operation counted in `counters` (which must outlive
/// it): a launch, a matrix product (a library call), a copy each way with
/// its bytes, a copy within the device, a synchronize or a copy to the
/// host (each a host synchronisation: the copy waits for the queue; an
/// asynchronous one, copyToHostAsync, is a download only), an allocation,
/// a free. Fills and module loads are not counted.
std::unique_ptr<Device> countOperations(std::unique_ptr<Device> device,
                                        DeviceCounters &counters);

} // namespace txl::rt

#endif // TXL_RT_DEVICE_COUNTINGDEVICE_H
