// SPDX-License-Identifier: Apache-2.0
// The dashboard's language for one reader (docs/language.md): the browser's Accept-Language
// header, unless the server was told a language (--lang, $TRAINMON_LANG). Pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trainmon::serve {

/// The language tags of an Accept-Language header (RFC 9110 section 12.5.4: "zh-CN,zh;q=0.9,en;q=0.8")
/// in the reader's order: by q-value (1 when absent), ties in the order written. Tags with q=0, the
/// wildcard "*" and malformed entries (a tag that is not letters, digits and '-', a q that is not a
/// number in 0..1) are left out; empty for an empty or wholly malformed header.
std::vector<std::string> accepted_languages(std::string_view header);

/// The first of `available` (catalogue languages as gettext names them, e.g. {"zh_CN"}) that the
/// header asks for before any English tag, or "" for English (also when it asks for none of them). A
/// tag matches a language with the same name ("zh-CN" = "zh_CN", case ignored) or, failing that,
/// one with its primary subtag ("zh", "zh-SG" -> "zh_CN"), as the binary maps its own $LANG.
std::string choose_language(std::string_view accept_language, const std::vector<std::string>& available);

}  // namespace trainmon::serve
