// SPDX-License-Identifier: Apache-2.0
// Short human formats for the dashboard: sizes with binary prefixes (htop's K/M/G/T, powers of
// 1024), rates, elapsed times, and bar / sparkline glyphs in UTF-8 or ASCII.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace trainmon::tui {

/// Bytes as at most 5 characters with a binary prefix: "512B", "1.5K", "61.0G", "143G", "1.2T".
std::string human_bytes(std::uint64_t bytes);
/// Bytes per second as human_bytes + "/s" ("1.2M/s"); negative or NaN counts as 0.
std::string human_rate(double bytes_per_s);
/// Seconds as "59s", "12:03" (min:sec), "3:04:05" (h:min:sec), "2d04h" (days); negative as "0s".
std::string human_elapsed(double seconds);

/// A bar `width` cells wide filled to `pct` (0..100, clamped): UTF-8 uses full and eighth blocks,
/// ASCII '|'. The empty part is spaces. Width <= 0 gives "".
std::string bar_text(double pct, int width, bool utf8);
/// Number of leading cells of bar_text that are filled (partial blocks count as filled).
int bar_filled_cells(double pct, int width);

/// A sparkline of the last `width` values (0..100; NaN = no data, a space), right-aligned: UTF-8
/// "▁▂▃▄▅▆▇█", ASCII "_.-:=+*#". Shorter history leaves spaces on the left.
std::string sparkline(std::span<const double> values, int width, bool utf8);

}  // namespace trainmon::tui
