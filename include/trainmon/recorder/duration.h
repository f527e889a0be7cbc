// SPDX-License-Identifier: Apache-2.0
// Durations on the command line: "0.5" (seconds), "500ms", "45s", "90m", "12h", "30d".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainmon::recorder {

/// Nanoseconds for `text`; a bare number is seconds. nullopt for a malformed or negative value.
std::optional<std::int64_t> parse_duration_ns(std::string_view text);

/// "1h02m03s", "4m05s", "12.3s" for a duration in milliseconds.
std::string format_duration_ms(std::int64_t ms);

}  // namespace trainmon::recorder
