// SPDX-License-Identifier: MIT
// fmt's compiled part (what fmt's own src/format.cc holds: the out-of-line formatting code and its
// explicit instantiations), built from the installed fmt headers, for the release binary: Debian's
// libfmt-dev ships no static archive, and linking libfmt.so pulls libstdc++.so into every start-up
// (CMakeLists.txt, TRAINMON_STATIC_SYSTEM_LIBS). The code is fmt's (format-inl.h), Copyright (c)
// 2012 - present, Victor Zverovich, MIT licence; only the instantiation list is restated here.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;

#ifndef FMT_STATIC_THOUSANDS_SEPARATOR
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
#endif

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
template FMT_API void buffer<wchar_t>::append(const wchar_t*, const wchar_t*);

}  // namespace detail
FMT_END_NAMESPACE
