// SPDX-License-Identifier: Apache-2.0
// Durations on the command line: "0.5" (seconds), "500ms", "45s", "90m", "12h", "30d".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainmon::recorder {

/// The longest duration parse_duration_ns accepts: 36500 days (about 100 years), far below the
/// int64 nanosecond limit (292 years) so that adding it to a clock reading cannot overflow either.
inline constexpr std::int64_t kMaxDurationNs = 36'500LL * 86'400 * 1'000'000'000;

/// Nanoseconds for `text`; a bare number is seconds. nullopt for a malformed, negative, NaN or
/// infinite value, or one longer than kMaxDurationNs.
std::optional<std::int64_t> parse_duration_ns(std::string_view text);

/// The accepted syntax, for error messages, in the chosen language (core/i18n.h): "a duration such as
/// 0.5, 500ms, 90s, 30m, 12h, 2d (at most 36500d)".
std::string duration_syntax();

/// "1h02m03s", "4m05s", "12.3s" for a duration in milliseconds.
std::string format_duration_ms(std::int64_t ms);

}  // namespace trainmon::recorder
