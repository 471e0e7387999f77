//===- Gemm.cpp - Row-major products onto the BLAS libraries --------------===//

#include "txl/rt/device/Gemm.h"

#include "txl/rt/device/Device.h"
#include "txl/rt/support/Status.h"

#include <algorithm>
#include <utility>

namespace txl::rt {

GemmDesc toColumnMajor(const GemmDesc &rowMajor) {
  GemmDesc desc = rowMajor;
  std::swap(desc.m, desc.n);
  std::swap(desc.transA, desc.transB);
  std::swap(desc.a, desc.b);
  return desc;
}

std::string describe(const GemmDesc &desc) {
  return fmt::format("{}({},{} m={} n={} k={} lda={} ldb={} ldc={} "
                     "batch={})",
                     desc.inputs == GemmDesc::Inputs::Bf16  ? "sgemm_bf16"
                     : desc.inputs == GemmDesc::Inputs::F16 ? "sgemm_f16"
                                                            : "sgemm",
                     desc.transA ? 'T' : 'N', desc.transB ? 'T' : 'N', desc.m,
                     desc.n, desc.k, desc.a.ld, desc.b.ld, desc.c.ld,
                     desc.batch);
}

void checkGemm(const GemmDesc &desc) {
  auto bad = [&](const char *why) {
    fail(TXL_INVALID_ARGUMENT, "{}: {}", describe(desc), why);
  };
  if (desc.m < 0 || desc.n < 0 || desc.k < 0 || desc.batch < 0)
    bad("negative size");
  if (desc.a.offset < 0 || desc.b.offset < 0 || desc.c.offset < 0 ||
      desc.a.stride < 0 || desc.b.stride < 0 || desc.c.stride < 0)
    bad("negative offset or batch stride");
  if (desc.batch > 1 && desc.c.stride == 0)
    bad("every product of the batch would write the same C");
  // Column-major: a leading dimension spans one stored column.
  int64_t rowsA = desc.transA ? desc.k : desc.m;
  int64_t rowsB = desc.transB ? desc.n : desc.k;
  if (desc.a.ld < std::max<int64_t>(1, rowsA) ||
      desc.b.ld < std::max<int64_t>(1, rowsB) ||
      desc.c.ld < std::max<int64_t>(1, desc.m))
    bad("a leading dimension is smaller than its matrix's stored rows");
}

void enqueueGemm(Device &device, const GemmDesc &rowMajor) {
  GemmDesc desc = toColumnMajor(rowMajor);
  checkGemm(desc);
  if (desc.m == 0 || desc.n == 0 || desc.batch == 0)
    return;
  // A plain product's C has no batch stride (0 from generated code);
  // CLBlast takes 0 for "every product writes the same C" and rejects it.
  if (desc.batch == 1)
    desc.c.stride = desc.c.ld * desc.n;
  if (desc.k == 0) {
    // C = beta C. Neither library takes k = 0 alike (CLBlast rejects it),
    // and generated code only asks for beta 1 (nothing to do) or 0 (the
    // product stands in for zeroing C): zero each column of each C_b.
    if (desc.beta == 1.0f)
      return;
    if (desc.beta != 0.0f)
      fail(TXL_INVALID_ARGUMENT, "{}: k = 0 with beta {} is not supported",
           describe(desc), desc.beta);
    for (int64_t b = 0; b < desc.batch; ++b)
      for (int64_t j = 0; j < desc.n; ++j)
        device.fill32(
            desc.c.buffer,
            size_t(desc.c.offset + b * desc.c.stride + j * desc.c.ld) *
                sizeof(float),
            0, size_t(desc.m));
    return;
  }
  device.gemm(desc);
}

} // namespace txl::rt
