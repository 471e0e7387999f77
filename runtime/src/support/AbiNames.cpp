//===- AbiNames.cpp - The names of the ABI's enums ------------------------===//
//
// txl_backend_name and txl_precision_name (txl/runtime.h): the spellings of
// txlc's --target and --precision, for messages and the run header.
//
//===----------------------------------------------------------------------===//

#include "txl/runtime.h"

extern "C" const char *txl_backend_name(int32_t backend) {
  switch (backend) {
  case TXL_BACKEND_CPU:
    return "cpu";
  case TXL_BACKEND_CUDA:
    return "cuda";
  case TXL_BACKEND_OPENCL:
    return "opencl";
  }
  return nullptr;
}

extern "C" const char *txl_precision_name(int32_t precision) {
  switch (precision) {
  case TXL_PRECISION_F32:
    return "f32";
  case TXL_PRECISION_BF16:
    return "bf16";
  case TXL_PRECISION_FP16:
    return "fp16";
  }
  return nullptr;
}
