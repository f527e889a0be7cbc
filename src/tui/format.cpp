// SPDX-License-Identifier: Apache-2.0
#include "trainmon/tui/format.h"

#include "trainmon/core/units.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace trainmon::tui {

std::string human_bytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "K", "M", "G", "T", "P", "E"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) return fmt::format("{}B", bytes);
  if (v < 10.0) return fmt::format("{:.1f}{}", v, kUnits[u]);
  return fmt::format("{:.0f}{}", v, kUnits[u]);
}

std::string human_rate(double bytes_per_s) {
  if (!(bytes_per_s > 0) || !std::isfinite(bytes_per_s)) return "0B/s";
  return human_bytes(static_cast<std::uint64_t>(bytes_per_s)) + "/s";
}

std::string human_elapsed(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return "0s";
  const auto s = static_cast<std::uint64_t>(seconds);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}:{:02}", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{}d{:02}h", s / 86400, (s / 3600) % 24);
}

int bar_filled_cells(double pct, int width) {
  if (width <= 0 || !(pct > 0)) return 0;
  pct = std::min(pct, 100.0);
  return std::min(width, static_cast<int>(std::ceil(pct / 100.0 * width - 1e-9)));
}

std::string bar_text(double pct, int width, bool utf8) {
  std::string out;
  if (width <= 0) return out;
  if (!(pct > 0)) pct = 0;
  pct = std::min(pct, 100.0);
  const double cells = pct / 100.0 * width;
  int full = static_cast<int>(cells);
  int eighths = static_cast<int>((cells - full) * 8.0);
  if (!utf8) {
    const int filled = bar_filled_cells(pct, width);
    out.append(static_cast<std::size_t>(filled), '|');
    out.append(static_cast<std::size_t>(width - filled), ' ');
    return out;
  }
  static constexpr const char* kPartial[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  for (int i = 0; i < full; ++i) out += "█";
  int used = full;
  if (used < width && eighths > 0) {
    out += kPartial[eighths];
    ++used;
  } else if (used < width && cells > full) {
    out += "▏";  // a sliver: something, not nothing
    ++used;
  }
  out.append(static_cast<std::size_t>(width - used), ' ');
  return out;
}

std::string sparkline(std::span<const double> values, int width, bool utf8) {
  std::string out;
  if (width <= 0) return out;
  static constexpr const char* kUtf[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static constexpr char kAscii[] = "_.-:=+*#";
  const auto n = static_cast<int>(values.size());
  const int shown = std::min(n, width);
  out.append(static_cast<std::size_t>(width - shown), ' ');
  for (int i = n - shown; i < n; ++i) {
    const double v = values[static_cast<std::size_t>(i)];
    if (std::isnan(v)) {
      out.push_back(' ');
      continue;
    }
    const int level = std::clamp(static_cast<int>(v / 100.0 * 7.999), 0, 7);
    if (utf8)
      out += kUtf[level];
    else
      out.push_back(kAscii[level]);
  }
  return out;
}

std::vector<std::string> wrap_text(std::string_view text, int first_width, int width, int max_lines,
                                   bool utf8) {
  std::vector<std::string> out;
  if (max_lines <= 0) return out;
  const auto cols = [](std::string_view s) { return static_cast<int>(display_width(s)); };
  const auto limit = [&](std::size_t line) { return std::max(1, line == 0 ? first_width : width); };
  std::size_t i = 0;
  while (i < text.size() && text[i] == ' ') ++i;
  while (i < text.size()) {
    const int w = limit(out.size());
    const bool last = static_cast<int>(out.size()) + 1 == max_lines;
    // The longest run of whole words that fits; a single word wider than the line is cut.
    std::size_t end = i;
    std::size_t fit = std::string_view::npos;
    while (end < text.size()) {
      std::size_t next = text.find(' ', end + 1);
      if (next == std::string_view::npos) next = text.size();
      if (cols(text.substr(i, next - i)) > w) break;
      fit = next;
      end = next;
    }
    std::string line;
    std::size_t rest;
    if (fit == std::string_view::npos) {
      line = truncate_display(text.substr(i), static_cast<std::size_t>(w));
      rest = i + line.size();
    } else {
      line = std::string(text.substr(i, fit - i));
      rest = fit;
    }
    while (rest < text.size() && text[rest] == ' ') ++rest;
    if (last && rest < text.size()) {
      // More than fits: the mark replaces the line's last column(s).
      std::string cut = truncate_display(text.substr(i), static_cast<std::size_t>(std::max(0, w - 1)));
      while (!cut.empty() && cut.back() == ' ') cut.pop_back();
      out.push_back(cut + (utf8 ? "\u2026" : "~"));
      return out;
    }
    out.push_back(std::move(line));
    if (rest >= text.size() || static_cast<int>(out.size()) >= max_lines) break;
    i = rest;
  }
  return out;
}

}  // namespace trainmon::tui
