// SPDX-License-Identifier: Apache-2.0
#include "trainmon/recorder/duration.h"

#include "trainmon/core/i18n.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace trainmon::recorder {

std::optional<std::int64_t> parse_duration_ns(std::string_view text) {
  double value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || p == text.data() || !std::isfinite(value) || value < 0) return std::nullopt;
  std::string_view unit(p, static_cast<std::size_t>(text.data() + text.size() - p));
  double scale = 0;
  if (unit.empty() || unit == "s")
    scale = 1e9;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "m" || unit == "min")
    scale = 60e9;
  else if (unit == "h")
    scale = 3600e9;
  else if (unit == "d")
    scale = 86400e9;
  else
    return std::nullopt;
  // Compare in double before converting: a value past int64 (1e12 s) would wrap around.
  const double ns = value * scale;
  if (!(ns <= static_cast<double>(kMaxDurationNs))) return std::nullopt;
  return static_cast<std::int64_t>(std::llround(ns));
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

}  // namespace trainmon::recorder
