// SPDX-License-Identifier: Apache-2.0
#include "trainmon/serve/accept_language.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

namespace trainmon::serve {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// RFC 9110's qvalue: "0" ["." up to 3 digits] or "1" ["." up to 3 zeros]; nullopt when malformed.
std::optional<double> qvalue(std::string_view v) {
  if (v.empty() || v.size() > 5 || (v[0] != '0' && v[0] != '1')) return std::nullopt;
  if (v.size() > 1 && v[1] != '.') return std::nullopt;
  for (std::size_t i = 2; i < v.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(v[i]))) return std::nullopt;
  double q = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), q);
  if (r.ec != std::errc() || q > 1) return std::nullopt;
  return q;
}

std::string lower_underscored(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::vector<std::string> accepted_languages(std::string_view header) {
  struct Entry {
    std::string tag;
    double q;
    std::size_t order;
  };
  std::vector<Entry> entries;
  std::size_t order = 0;
  while (!header.empty()) {
    const std::size_t comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
    const std::size_t semi = item.find(';');
    const std::string_view tag = trim(item.substr(0, semi));
    double q = 1;
    bool ok = !tag.empty() && tag.size() <= 64;
    for (char c : tag) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '*');
    if (ok && semi != std::string_view::npos) {
      std::string_view param = trim(item.substr(semi + 1));
      if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
        const auto v = qvalue(trim(param.substr(2)));
        ok = v.has_value();
        q = v.value_or(0);
      } else {
        ok = false;
      }
    }
    if (ok && q > 0 && tag != "*") entries.push_back({std::string(tag), q, order++});
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.q > b.q; });
  std::vector<std::string> out;
  out.reserve(entries.size());
  for (auto& e : entries) out.push_back(std::move(e.tag));
  return out;
}

std::string choose_language(std::string_view accept_language, const std::vector<std::string>& available) {
  for (const auto& tag : accepted_languages(accept_language)) {
    const std::string t = lower_underscored(tag);
    const std::string primary = t.substr(0, t.find('_'));
    if (primary == "en") return {};
    for (const auto& lang : available)
      if (lower_underscored(lang) == t) return lang;
    for (const auto& lang : available) {
      const std::string l = lower_underscored(lang);
      if (l.substr(0, l.find('_')) == primary) return lang;
    }
  }
  return {};
}

}  // namespace trainmon::serve
