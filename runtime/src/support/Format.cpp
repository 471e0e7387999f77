//===- Format.cpp - fmt's compiled part, built once -------------*- C++ -*-===//
//
// The runtime uses fmt (Debian's libfmt-dev, headers only: Debian ships no
// static libfmt.a, and a generated executable links nothing but the runtime's
// archives, BLAS and the C/C++ libraries). In header-only mode
// (FMT_HEADER_ONLY) every file that includes <fmt/format.h> compiles fmt's
// implementation (format-inl.h) again: 2 s per file at -O3, 4 s with
// AddressSanitizer and UBSan, for about 50 files of the runtime and its
// tests. This file compiles it once, into libtxl_runtime.a, and instantiates
// the templates <fmt/format.h> declares but leaves to format-inl.h (fmt 9; a
// missing one is an undefined symbol at link time, never a silent
// difference).
//
//===----------------------------------------------------------------------===//

#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept
    -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept
    -> dragonbox::decimal_fp<double>;

template FMT_API locale_ref::locale_ref(const std::locale &loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;

template FMT_API auto thousands_sep_impl(locale_ref)
    -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto thousands_sep_impl(locale_ref)
    -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;

} // namespace detail
FMT_END_NAMESPACE
