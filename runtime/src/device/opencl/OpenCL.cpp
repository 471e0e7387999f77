//===- OpenCL.cpp - The OpenCL API, loaded with dlopen --------------------===//

#include "txl/rt/device/OpenCL.h"

#include "txl/rt/support/Status.h"

#include <cstdlib>
#include <pthread.h>

namespace txl::rt {

namespace {

/// The cl_int codes a user is likely to meet (cl.h, cl_ext.h); OpenCL has
/// no call that names them.
constexpr KnownCode kKnownCodes[] = {
    TXL_KNOWN_CODE(CL_DEVICE_NOT_FOUND, "no device of the requested type"),
    TXL_KNOWN_CODE(CL_MEM_OBJECT_ALLOCATION_FAILURE, "device memory exhausted"),
    TXL_KNOWN_CODE(CL_OUT_OF_RESOURCES, "the device ran out of resources"),
    TXL_KNOWN_CODE(CL_OUT_OF_HOST_MEMORY,
                   "the OpenCL implementation ran out of host memory"),
    TXL_KNOWN_CODE(CL_BUILD_PROGRAM_FAILURE,
                   "the kernel program did not build"),
    TXL_KNOWN_CODE(CL_INVALID_VALUE, "invalid argument"),
    TXL_KNOWN_CODE(CL_INVALID_PLATFORM, "invalid platform"),
    TXL_KNOWN_CODE(CL_INVALID_DEVICE, "invalid device"),
    TXL_KNOWN_CODE(CL_INVALID_BINARY,
                   "the program binary or SPIR-V is invalid"),
    TXL_KNOWN_CODE(
        CL_INVALID_BUILD_OPTIONS,
        "the driver refuses the build options (TXL_OPENCL_BUILD_OPTIONS)"),
    TXL_KNOWN_CODE(CL_INVALID_KERNEL_NAME,
                   "no kernel of that name in the program"),
    TXL_KNOWN_CODE(CL_INVALID_ARG_SIZE, "kernel argument of the wrong size"),
    TXL_KNOWN_CODE(CL_INVALID_KERNEL_ARGS, "kernel arguments not all set"),
    TXL_KNOWN_CODE(CL_INVALID_WORK_GROUP_SIZE, "work-group size not supported"),
    TXL_KNOWN_CODE(CL_INVALID_BUFFER_SIZE, "invalid buffer size"),
    TXL_KNOWN_CODE(
        CL_PLATFORM_NOT_FOUND_KHR,
        "the ICD loader found no OpenCL implementation in /etc/OpenCL/vendors "
        "or in the folder OCL_ICD_VENDORS names"),
};

/// Bytes of stack for the threads that run OpenCL workgroups on Intel's
/// CPU runtime. It runs a workgroup's 128 work-items as SIMD lanes in one
/// frame on one thread's stack, and the tensor-core backward kernels, their
/// mma.sync emulated by shuffles, need more than the 8 MiB that glibc gives
/// a thread by default (RLIMIT_STACK): rel_attention_grad_kv_bf16_dropatt_d80
/// has an 8.5 MiB frame and overflowed the 8 MiB stack of the TBB worker
/// that ran it (a SIGSEGV in the kernel, seen in gdb). Stack is reserved,
/// not committed: threads touch only what they use.
constexpr size_t kKernelStackBytes = size_t(64) << 20;

/// The runtime's own setting (its cl.cfg: the default stack size for kernel
/// execution, beyond which it reallocates a kernel's stack), in the units
/// that file documents. It does not size the runtime's worker threads.
constexpr const char *kIntelCpuStackSetting = "64MB";

} // namespace

void reserveKernelThreadStacks() {
  // Intel's runtime creates its TBB workers with the process's default
  // thread attributes, so the default is what sizes them: raised before the
  // runtime is loaded, never lowered.
  pthread_attr_t attr;
  if (pthread_getattr_default_np(&attr) != 0)
    return;
  size_t bytes = 0;
  if (pthread_attr_getstacksize(&attr, &bytes) == 0 &&
      bytes < kKernelStackBytes &&
      pthread_attr_setstacksize(&attr, kKernelStackBytes) == 0)
    pthread_setattr_default_np(&attr);
  pthread_attr_destroy(&attr);
}

OpenCL::OpenCL(const std::string &library)
    : library_(library, "OpenCL ICD loader") {
  reserveKernelThreadStacks();
  // Read by the Intel runtime when the ICD loader first loads it (the
  // first clGetPlatformIDs); a value the user set is kept.
  ::setenv("CL_CONFIG_STACK_DEFAULT_SIZE", kIntelCpuStackSetting,
           /*overwrite=*/0);
  const char *requirement = "the runtime needs OpenCL 2.1 or newer";
#define TXL_OPENCL_SYMBOL(name, ret, params)                                   \
  name = reinterpret_cast<ret(*) params>(library_.symbol(#name, requirement));
#include "txl/rt/device/OpenCLSymbols.def"
#undef TXL_OPENCL_SYMBOL
}

std::string OpenCL::errorName(cl_int result) {
  if (const KnownCode *known = findKnownCode(kKnownCodes, result))
    return known->name;
  return fmt::format("cl_int {}", result);
}

void OpenCL::check(cl_int result, const char *what) {
  if (result == 0)
    return;
  const KnownCode *known = findKnownCode(kKnownCodes, result);
  failDeviceCall(what, errorName(result), known ? known->description : nullptr);
}

std::vector<cl_platform_id> OpenCL::platforms() const {
  cl_uint count = 0;
  cl_int result = clGetPlatformIDs(0, nullptr, &count);
  // Some loaders answer "none" with success and a count of 0.
  if (result == 0 && count == 0)
    result = CL_PLATFORM_NOT_FOUND_KHR;
  check(result, "no OpenCL platform: clGetPlatformIDs");
  std::vector<cl_platform_id> ids(count);
  check(clGetPlatformIDs(count, ids.data(), nullptr), "clGetPlatformIDs");
  return ids;
}

} // namespace txl::rt
