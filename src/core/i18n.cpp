// SPDX-License-Identifier: Apache-2.0
// Catalogue lookup for include/trainmon/core/i18n.h. The catalogue is GNU gettext's .mo format
// (msgfmt's output; layout in the GNU gettext manual, "The Format of GNU MO Files"): a header, a
// table of original strings sorted by byte value and a parallel table of translations, each entry
// (length, offset). We read it ourselves instead of calling glibc's dcgettext() because glibc
// chooses the catalogue from setlocale(LC_MESSAGES): a process locale that is not generated on the
// machine ("C"), or one we must not set (LC_NUMERIC would change the CSV output) would silently
// give English, and --lang could not work without changing the process environment.
#include "trainmon/core/i18n.h"
#include "trainmon/core/i18n_english.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#ifndef TRAINMON_LOCALEDIR
#define TRAINMON_LOCALEDIR "/usr/local/share/locale"
#endif

namespace trainmon::i18n {
namespace {

struct Catalogue {
  std::string lang;  // "" = English
  std::string data;  // the whole .mo file
  std::vector<std::string_view> originals, translations;
};

Catalogue& catalogue() {
  static Catalogue c;
  return c;
}

bool english_only = false;  // an EnglishScope lives

bool parse_mo(Catalogue& c) {
  const std::string& d = c.data;
  if (d.size() < 28) return false;
  std::uint32_t magic = 0;
  std::memcpy(&magic, d.data(), 4);
  const bool swap = magic == 0xde120495u;
  if (!swap && magic != 0x950412deu) return false;
  auto u32 = [&](std::size_t off, std::uint32_t& v) {
    if (off + 4 > d.size()) return false;
    std::memcpy(&v, d.data() + off, 4);
    if (swap) v = __builtin_bswap32(v);
    return true;
  };
  std::uint32_t n = 0, orig = 0, trans = 0;
  if (!u32(8, n) || !u32(12, orig) || !u32(16, trans)) return false;
  if (n > d.size() / 16) return false;
  auto entry = [&](std::uint32_t table, std::uint32_t i, std::string_view& out) {
    std::uint32_t len = 0, off = 0;
    if (!u32(std::size_t{table} + 8u * i, len) || !u32(std::size_t{table} + 8u * i + 4, off)) return false;
    if (std::size_t{off} + len > d.size()) return false;
    out = std::string_view(d.data() + off, len);
    return true;
  };
  c.originals.resize(n);
  c.translations.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (!entry(orig, i, c.originals[i]) || !entry(trans, i, c.translations[i])) return false;
    // A plural entry's original is "singular\0plural": it is found by its singular.
    if (auto z = c.originals[i].find('\0'); z != std::string_view::npos)
      c.originals[i].remove_suffix(c.originals[i].size() - z);
    if (auto z = c.translations[i].find('\0'); z != std::string_view::npos)
      c.translations[i].remove_suffix(c.translations[i].size() - z);
  }
  // msgfmt writes the originals sorted; a file that is not would make the binary search lie.
  return std::is_sorted(c.originals.begin(), c.originals.end());
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

// "zh_CN.UTF-8@x" -> {"zh_CN", "zh"}; English, C and POSIX -> none.
std::vector<std::string> candidates(std::string_view lang) {
  std::vector<std::string> out;
  std::string_view l = lang.substr(0, lang.find_first_of(".@"));
  if (l.empty() || l == "C" || l == "POSIX" || l == "en" || l.starts_with("en_")) return out;
  out.emplace_back(l);
  if (auto u = l.find('_'); u != std::string_view::npos) out.emplace_back(l.substr(0, u));
  if (out.back() == "zh") out.back() = "zh_CN";  // "zh" alone: Simplified Chinese, our one catalogue
  return out;
}

std::string requested(std::string_view lang) {
  if (!lang.empty()) return std::string(lang);
  for (const char* var : {"TRAINMON_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"}) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    std::string_view s = v;
    if (std::string_view(var) == "LANGUAGE") {
      s = s.substr(0, s.find(':'));
      // gettext ignores LANGUAGE when the locale is C; so do we (then LC_ALL/LANG decide).
      const char* all = std::getenv("LC_ALL");
      const char* msg = std::getenv("LC_MESSAGES");
      const char* lng = std::getenv("LANG");
      const char* loc = all && *all ? all : msg && *msg ? msg : lng;
      if (!loc || !*loc || std::string_view(loc) == "C" || std::string_view(loc) == "POSIX") continue;
    }
    if (!s.empty()) return std::string(s);
  }
  return {};
}

std::vector<std::string> locale_dirs() {
  std::vector<std::string> dirs;
  if (const char* d = std::getenv("TRAINMON_LOCALEDIR"); d && *d) dirs.emplace_back(d);
  std::array<char, 4096> buf{};
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n > 0) {
    std::string exe(buf.data(), static_cast<std::size_t>(n));
    const std::string dir = exe.substr(0, exe.rfind('/'));
    dirs.push_back(dir + "/locale");
    dirs.push_back(dir + "/../share/locale");
  }
  dirs.emplace_back(TRAINMON_LOCALEDIR);
  return dirs;
}

}  // namespace

bool load_catalogue(const std::string& mo_path, std::string_view lang) {
  Catalogue c;
  c.lang = std::string(lang);
  if (!lang.empty()) {
    if (!read_file(mo_path, c.data) || !parse_mo(c)) {
      catalogue() = Catalogue{};
      return false;
    }
  }
  catalogue() = std::move(c);
  return true;
}

namespace {

// The first catalogue `lang` names that is found and reads as a .mo (lang "" when none).
Catalogue find_catalogue(std::string_view lang) {
  std::string tag(lang);
  std::replace(tag.begin(), tag.end(), '-', '_');  // a browser's "zh-CN" is gettext's "zh_CN"
  for (const auto& l : candidates(tag)) {
    for (const auto& dir : locale_dirs()) {
      const std::string path = dir + "/" + l + "/LC_MESSAGES/trainmon.mo";
      Catalogue c;
      c.lang = l;
      if (::access(path.c_str(), R_OK) == 0 && read_file(path, c.data) && parse_mo(c)) return c;
    }
  }
  return Catalogue{};
}

}  // namespace

void init(std::string_view lang) {
  catalogue() = find_catalogue(requested(lang));
}

std::string catalogue_language(std::string_view lang) {
  return find_catalogue(lang).lang;
}

std::vector<std::pair<std::string, std::string>> translations_of(std::string_view lang) {
  const Catalogue c = find_catalogue(lang);
  std::vector<std::pair<std::string, std::string>> out;
  if (c.lang.empty()) return out;
  for (std::size_t i = 0; i < c.originals.size(); ++i)
    if (!c.originals[i].empty() && !c.translations[i].empty())
      out.emplace_back(c.originals[i], c.translations[i]);
  return out;
}

std::string_view language() noexcept {
  return english_only ? std::string_view{} : std::string_view(catalogue().lang);
}

EnglishScope::EnglishScope() noexcept : was_(english_only) {
  english_only = true;
}

EnglishScope::~EnglishScope() {
  english_only = was_;
}

std::string_view tr(std::string_view msgid) noexcept {
  const Catalogue& c = catalogue();
  if (c.lang.empty() || english_only || msgid.empty()) return msgid;
  const auto it = std::lower_bound(c.originals.begin(), c.originals.end(), msgid);
  if (it == c.originals.end() || *it != msgid) return msgid;
  const std::string_view t = c.translations[static_cast<std::size_t>(it - c.originals.begin())];
  return t.empty() ? msgid : t;
}

std::vector<std::pair<std::string_view, std::string_view>> translations() {
  const Catalogue& c = catalogue();
  std::vector<std::pair<std::string_view, std::string_view>> out;
  if (c.lang.empty()) return out;
  for (std::size_t i = 0; i < c.originals.size(); ++i)
    if (!c.originals[i].empty() && !c.translations[i].empty())
      out.emplace_back(c.originals[i], c.translations[i]);
  return out;
}

}  // namespace trainmon::i18n
