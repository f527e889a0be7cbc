// SPDX-License-Identifier: Apache-2.0
// Short human formats for the dashboard: sizes with binary prefixes (htop's K/M/G/T, powers of
// 1024), rates, elapsed times, and bar / sparkline glyphs in UTF-8 or ASCII.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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

/// `text` broken at blanks into lines of at most `first_width` display columns (the first line) and
/// `width` (the others), at most `max_lines` of them; a word wider than a line is cut. Text left over
/// after the last line is replaced by a mark at that line's end ("…", ASCII "~"), so that a cut line
/// never reads as the whole. Widths are terminal columns (CJK characters 2). Empty text or
/// max_lines <= 0 gives no line; a width < 1 counts as 1.
std::vector<std::string> wrap_text(std::string_view text, int first_width, int width, int max_lines,
                                   bool utf8);

}  // namespace trainmon::tui
