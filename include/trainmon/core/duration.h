// SPDX-License-Identifier: Apache-2.0
// The one duration grammar of trainmon: command-line options (--interval, --retention, --since ...)
// and the alert rules file ("for", "cooldown") read durations with it.
//   duration := term+ | number          a bare number is seconds, and only alone ("1m30" is refused)
//   term     := number unit             unit: ms, s, m (or min), h, d, w (7 d)
//   number   := digits with an optional fraction and exponent, no sign ("0.5", "1e3")
// Terms add up ("1h30m" = 5400 s). Blanks around the text are ignored, blanks inside are not
// ("5 s" is refused). Negative, NaN, infinite and longer-than-kMaxDurationNs values are refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainmon {

/// The longest duration parse_duration_ns accepts: 36500 days (about 100 years), far below the
/// int64 nanosecond limit (292 years) so that adding it to a clock reading cannot overflow either.
inline constexpr std::int64_t kMaxDurationNs = 36'500LL * 86'400 * 1'000'000'000;

/// Nanoseconds for `text` (the grammar above), rounded to the nearest nanosecond; nullopt when
/// malformed or out of range.
std::optional<std::int64_t> parse_duration_ns(std::string_view text);

/// The accepted syntax, for error messages, in the chosen language (core/i18n.h): "a duration such as
/// 0.5, 500ms, 90s, 30m, 12h, 2d (at most 36500d)".
std::string duration_syntax();

/// "1h02m03s", "4m05s", "12.3s" for a duration in milliseconds (negative reads as 0).
std::string format_duration_ms(std::int64_t ms);

}  // namespace trainmon
