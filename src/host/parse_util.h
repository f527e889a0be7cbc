// SPDX-License-Identifier: Apache-2.0
// Small helpers shared by the /proc parsers: line splitting and number parsing on string_view.
// Never throw; a malformed number yields std::nullopt.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace trainmon::host_detail {

inline bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

inline std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

/// Pops the next line (without '\n') from `text`; false when `text` is exhausted.
inline bool next_line(std::string_view& text, std::string_view& line) noexcept {
  if (text.empty()) return false;
  const auto nl = text.find('\n');
  if (nl == std::string_view::npos) {
    line = text;
    text = {};
  } else {
    line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
  }
  return true;
}

/// Pops the next whitespace-separated token; false when none is left.
inline bool next_token(std::string_view& text, std::string_view& token) noexcept {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  if (text.empty()) return false;
  std::size_t n = 0;
  while (n < text.size() && !is_space(text[n])) ++n;
  token = text.substr(0, n);
  text.remove_prefix(n);
  return true;
}

template <class T>
std::optional<T> to_number(std::string_view s) noexcept {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  if constexpr (std::is_unsigned_v<T>) {
    if (s.front() == '+') s.remove_prefix(1);
  }
  T v{};
  const auto* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, v);
  if (r.ec != std::errc{} || r.ptr != end) return std::nullopt;
  return v;
}

/// Parses a decimal such as "12.34" without locale (from_chars for double).
inline std::optional<double> to_double(std::string_view s) noexcept {
  return to_number<double>(s);
}

/// Pops the next token and parses it as T.
template <class T>
std::optional<T> next_number(std::string_view& text) noexcept {
  std::string_view tok;
  if (!next_token(text, tok)) return std::nullopt;
  return to_number<T>(tok);
}

}  // namespace trainmon::host_detail
