// SPDX-License-Identifier: Apache-2.0
// The detectors' two-form helpers ("1 core", "2 cores"), on top of say() and phrase() (detail.h).
#pragma once

#include <cstdint>
#include <string_view>

#include "diagnose/detail.h"

namespace trainmon::diagnose::detail {

/// phrase() with English's two number forms: `one` when `n` == 1, else `other` (i18n::trfn).
template <typename... Args>
Phrase phrasen(std::uint64_t n, std::string_view one, std::string_view other, const Args&... args) {
  return phrase(n == 1 ? one : other, args...);
}

/// say() with English's two number forms: `one` when `n` == 1, else `other` (i18n::trfn).
template <typename... Args>
void sayn(Finding& f, std::uint64_t n, std::string_view one, std::string_view other, const Args&... args) {
  say(f, n == 1 ? one : other, args...);
}
}  // namespace trainmon::diagnose::detail
