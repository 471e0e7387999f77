//===- CLBlast.cpp - CLBlast, loaded with dlopen --------------------------===//

#include "txl/rt/device/BlasLibraries.h"

#include "txl/rt/support/Status.h"

namespace txl::rt {

namespace {

/// CLBlast's own status codes a user is likely to meet (clblast_c.h's
/// CLBlastStatusCode); the OpenCL codes it shares are named by OpenCL's
/// table.
constexpr KnownCode kKnownCodes[] = {
    {-1024, "CLBlastNotImplemented", "routine or option not implemented"},
    {-1022, "CLBlastInvalidMatrixA", "matrix A is not a valid buffer"},
    {-1021, "CLBlastInvalidMatrixB", "matrix B is not a valid buffer"},
    {-1020, "CLBlastInvalidMatrixC", "matrix C is not a valid buffer"},
    {-1017, "CLBlastInvalidDimension", "m, n and k must be positive"},
    {-1016, "CLBlastInvalidLeadDimA", "leading dimension of A too small"},
    {-1015, "CLBlastInvalidLeadDimB", "leading dimension of B too small"},
    {-1014, "CLBlastInvalidLeadDimC", "leading dimension of C too small"},
    {-1011, "CLBlastInsufficientMemoryA", "A's buffer is too small"},
    {-1010, "CLBlastInsufficientMemoryB", "B's buffer is too small"},
    {-1009, "CLBlastInsufficientMemoryC", "C's buffer is too small"},
    {-2049, "CLBlastInvalidBatchCount", "the batch count must be positive"},
    {-2046, "CLBlastInvalidLocalMemUsage",
     "not enough local memory on the device"},
    {-2041, "CLBlastDatabaseError", "no tuning entry for the device"},
    {-2040, "CLBlastUnknownError", "unspecified error"},
    {-2039, "CLBlastUnexpectedError", "unexpected exception"},
};

} // namespace

CLBlast::CLBlast(const std::string &library) : library_(library, "CLBlast") {
  const char *requirement = "the runtime needs CLBlast 1.5 or newer";
#define TXL_CLBLAST_SYMBOL(name, ret, params)                                  \
  name = reinterpret_cast<ret(*) params>(library_.symbol(#name, requirement));
#include "txl/rt/device/CLBlastSymbols.def"
#undef TXL_CLBLAST_SYMBOL
}

void CLBlast::check(CLBlastStatusCode status, const char *what) const {
  if (status == 0)
    return;
  if (const KnownCode *known = findKnownCode(kKnownCodes, status))
    failDeviceCall(what, known->name, known->description);
  if (status > -1000) {
    // An OpenCL code, passed through.
    OpenCL::check(status, what);
  }
  failDeviceCall(what, fmt::format("CLBlastStatusCode {}", status), nullptr);
}

} // namespace txl::rt
