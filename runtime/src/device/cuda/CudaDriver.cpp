//===- CudaDriver.cpp - The CUDA driver API, loaded with dlopen -----------===//

#include "txl/rt/device/CudaDriver.h"

#include "txl/rt/support/Status.h"

namespace txl::rt {

namespace {

/// The CUresult codes a user is likely to meet (cuda.h's CUresult enum),
/// for when the driver cannot name them itself (the toolkit's stub libcuda).
constexpr KnownCode kKnownResults[] = {
    TXL_KNOWN_CODE(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    TXL_KNOWN_CODE(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    TXL_KNOWN_CODE(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    TXL_KNOWN_CODE(CUDA_ERROR_STUB_LIBRARY,
                   "the CUDA toolkit's stub libcuda was loaded, not a driver"),
    TXL_KNOWN_CODE(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    TXL_KNOWN_CODE(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    TXL_KNOWN_CODE(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    TXL_KNOWN_CODE(CUDA_ERROR_NO_BINARY_FOR_GPU,
                   "no kernel image is available for execution on the device"),
    TXL_KNOWN_CODE(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
    TXL_KNOWN_CODE(CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
                   "the PTX was compiled with an unsupported toolchain"),
    TXL_KNOWN_CODE(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    TXL_KNOWN_CODE(CUDA_ERROR_ILLEGAL_ADDRESS,
                   "an illegal memory access was encountered"),
    TXL_KNOWN_CODE(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    TXL_KNOWN_CODE(
        CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
        "the CUDA driver library and the kernel driver differ in version"),
};

} // namespace

CudaDriver::CudaDriver(const std::string &library)
    : library_(library, "CUDA driver") {
  const char *requirement = "the runtime needs the CUDA 11 driver API or newer";
#define TXL_CUDA_SYMBOL(name, ret, params)                                     \
  name = reinterpret_cast<ret(*) params>(library_.symbol(#name, requirement));
#include "txl/rt/device/CudaSymbols.def"
#undef TXL_CUDA_SYMBOL
}

std::string CudaDriver::errorName(int result) const {
  const char *name = nullptr;
  if (cuGetErrorName(result, &name) == CUDA_SUCCESS && name)
    return name;
  if (const KnownCode *known = findKnownCode(kKnownResults, result))
    return known->name;
  return fmt::format("CUresult {}", result);
}

void CudaDriver::check(int result, const char *what) const {
  if (result == CUDA_SUCCESS)
    return;
  const char *description = nullptr;
  if (cuGetErrorString(result, &description) != CUDA_SUCCESS || !description) {
    const KnownCode *known = findKnownCode(kKnownResults, result);
    description = known ? known->description : nullptr;
  }
  failDeviceCall(what, errorName(result), description);
}

} // namespace txl::rt
