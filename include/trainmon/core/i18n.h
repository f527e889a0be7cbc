// SPDX-License-Identifier: Apache-2.0
// The language of human-facing text (docs/language.md). Messages are GNU gettext catalogues:
// po/<lang>.po in the tree, compiled by msgfmt into <lang>/LC_MESSAGES/trainmon.mo at build time and
// installed under share/locale. English is the source language (the msgids): with no catalogue, no
// entry, or an English/C locale, every call returns its argument unchanged.
//
// Only text for people goes through here. What scripts read (JSON, CSV, finding codes and slugs,
// Prometheus names, nvidia-smi- and gpustat-compatible output) never calls tr(): it stays
// byte-identical whatever the locale.
//
// Strings are marked for xgettext (scripts/i18n_catalogue.py) by the names tr, trf and N_.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

/// Marks a string literal for the catalogue without translating it here (tables of constants
/// that are translated where they are shown, with tr()).
#define N_(s) s

namespace trainmon::i18n {

/// Chooses the language once, before any other call (main does it after parsing --lang). The first
/// set of: `lang` (--lang), $TRAINMON_LANG, then as gettext orders them $LANGUAGE (its first entry),
/// $LC_ALL, $LC_MESSAGES, $LANG. "zh_CN.UTF-8", "zh_CN" and "zh" select zh_CN; "C", "POSIX", "en*" or
/// a language without a catalogue select English. The catalogue is read from (first found)
/// $TRAINMON_LOCALEDIR, the build tree next to the binary (<exe dir>/locale), the install tree
/// (<exe dir>/../share/locale) and the configured install prefix's share/locale. A damaged or missing
/// catalogue means English; it is never an error. Not thread-safe: call before starting threads.
void init(std::string_view lang = {});

/// Sets the language from a catalogue file directly ("" = English). For tests. Returns false (and
/// selects English) when the file cannot be read or is not a .mo file.
bool load_catalogue(const std::string& mo_path, std::string_view lang);

/// The selected language: "zh_CN", or "" for English (the msgids).
std::string_view language() noexcept;

/// The translation of `msgid` in the selected language, or `msgid` itself when there is none. The
/// result lives as long as the program (or as `msgid`). Thread-safe after init().
std::string_view tr(std::string_view msgid) noexcept;

/// Every (msgid, translation) pair of the selected catalogue in msgid order, the header left out;
/// empty for English. For pages that translate in the browser (the HTML report).
std::vector<std::pair<std::string_view, std::string_view>> translations();

/// The language of the catalogue `lang` names, as init() would find it ("zh_CN.UTF-8", "zh_CN", "zh",
/// and a browser's "zh-CN" -> "zh_CN"), without selecting it; "" for English, C, POSIX, an empty
/// `lang`, or a language whose catalogue is not found or damaged. Reads the catalogue file.
std::string catalogue_language(std::string_view lang);

/// Every (msgid, translation) pair of the catalogue `lang` names (as catalogue_language), in msgid
/// order, the header left out; empty when that is English or no catalogue is found. Does not change
/// the selected language: for a server that answers each reader in their own (serve's dashboard).
std::vector<std::pair<std::string, std::string>> translations_of(std::string_view lang);

/// fmt::format of the translation of `fmt_msgid` (fmt syntax: {}, {:.1f}, {0}) with `args`. A
/// translation whose placeholders do not fit the arguments (a catalogue the build-time check did not
/// see) falls back to the English msgid: never throws for the translation's sake.
template <typename... Args>
std::string trf(std::string_view fmt_msgid, const Args&... args) {
  const std::string_view t = tr(fmt_msgid);
  if (t.data() != fmt_msgid.data()) {
    try {
      return fmt::format(fmt::runtime(t), args...);
    } catch (const fmt::format_error&) {
    }
  }
  return fmt::format(fmt::runtime(fmt_msgid), args...);
}

}  // namespace trainmon::i18n
