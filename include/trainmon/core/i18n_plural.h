// SPDX-License-Identifier: Apache-2.0
// English's two number forms for translated messages ("1 process", "2 processes"), on top of
// i18n::trf (trainmon/core/i18n.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trainmon/core/i18n.h"

namespace trainmon::i18n {

/// trf with English's two number forms: `one` when `n` == 1, else `other` ("1 process", "0 processes",
/// "2 processes"). Each form is its own msgid, translated on its own (Chinese, which has no plural
/// forms, gives both the same text); `n` chooses the form only, the arguments fill it. The catalogue
/// script extracts both (keywords trfn:2 and trfn:3, scripts/i18n_catalogue.py).
template <typename... Args>
std::string trfn(std::uint64_t n, std::string_view one, std::string_view other, const Args&... args) {
  return trf(n == 1 ? one : other, args...);
}

}  // namespace trainmon::i18n
