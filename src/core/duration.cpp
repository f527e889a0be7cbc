// SPDX-License-Identifier: Apache-2.0
#include "trainmon/core/duration.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "trainmon/core/i18n.h"

namespace trainmon {

namespace {

bool blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
bool letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/// Nanoseconds per `unit`; 0 for an unknown one.
double unit_ns(std::string_view unit) {
  if (unit == "s") return 1e9;
  if (unit == "ms") return 1e6;
  if (unit == "m" || unit == "min") return 60e9;
  if (unit == "h") return 3600e9;
  if (unit == "d") return 86400e9;
  if (unit == "w") return 604800e9;
  return 0;
}

}  // namespace

std::optional<std::int64_t> parse_duration_ns(std::string_view text) {
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  double total_ns = 0;
  const char* p = text.data();
  const char* const end = text.data() + text.size();
  bool first = true;
  while (p < end) {
    if (*p == '-' || *p == '+') return std::nullopt;
    double value = 0;
    auto [q, ec] = std::from_chars(p, end, value);
    if (ec != std::errc() || q == p || !std::isfinite(value) || value < 0) return std::nullopt;
    const char* u = q;
    while (u < end && letter(*u)) ++u;
    const std::string_view unit(q, static_cast<std::size_t>(u - q));
    double scale = 0;
    if (unit.empty()) {
      if (!first || u != end) return std::nullopt;  // a bare number only alone
      scale = 1e9;
    } else {
      scale = unit_ns(unit);
      if (scale == 0) return std::nullopt;
    }
    total_ns += value * scale;
    // Compare in double before converting: a value past int64 (1e12 s) would wrap around.
    if (!(total_ns <= static_cast<double>(kMaxDurationNs))) return std::nullopt;
    first = false;
    p = u;
  }
  return static_cast<std::int64_t>(std::llround(total_ns));
}

std::string duration_syntax() {
  return std::string(i18n::tr("a duration such as 0.5, 500ms, 90s, 30m, 12h, 2d (at most 36500d)"));
}

std::string format_duration_ms(std::int64_t ms) {
  if (ms < 0) ms = 0;
  std::int64_t s = ms / 1000;
  if (s >= 3600) return fmt::format("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000.0);
}

}  // namespace trainmon
