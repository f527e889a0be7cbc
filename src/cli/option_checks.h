// SPDX-License-Identifier: Apache-2.0
// CLI11 checks shared by the commands' numeric options, so that every loop interval and every sample
// count is refused the same way (bad value: CLI11's "OPTION: message", exit status 2, docs/cli.md).
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "trainmon/core/i18n.h"

namespace trainmon::cli {

/// CLI::IsMember(`choices`), listed with '|' between the choices in --help, the man pages and the
/// completions: "{draw|limit|draw,limit}". CLI11's own list joins them with ',' and reads wrongly as
/// soon as one choice holds a comma ("{draw,limit,draw,limit}"). An empty choice (an option whose
/// value may be left out, ->expected(0, 1)) is accepted and not listed. Use it for every choice list.
inline CLI::Validator one_of(const std::vector<std::string>& choices) {
  CLI::Validator v = CLI::IsMember(choices);
  std::string listed;
  for (const auto& c : choices)
    if (!c.empty()) listed += (listed.empty() ? "" : "|") + c;
  v.description("{" + listed + "}");
  return v;
}

/// The longest loop interval of status / query (one day); longer ones are refused rather than
/// overflowing the sleep arithmetic.
inline constexpr double kMaxLoopIntervalS = 86400.0;

/// A loop interval in `unit` ("seconds" or "milliseconds"): a finite number > 0 and <= `max`.
/// 0, negatives, NaN and infinities are refused (they would run once or never stop).
inline CLI::Validator loop_interval(double max, const std::string& unit) {
  return CLI::Validator(
      [max, unit](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v <= 0 || v > max)
          return unit == "milliseconds"
                     ? i18n::trf(
                           "interval must be a number of milliseconds greater than 0 and at most {} (got "
                           "'{}')",
                           max, text)
                     : i18n::trf(
                           "interval must be a number of seconds greater than 0 and at most {} (got '{}')",
                           max, text);
        return {};
      },
      fmt::format("{} in (0, {}]", unit, max), "loop_interval");
}

/// The longest duration any option takes (the recording duration cap of src/recorder/duration.cpp:
/// 36500 days, about 100 years).
inline constexpr double kMaxDurationS = 36500.0 * 86400.0;

/// A number of seconds that is a time span rather than a loop interval (agent --duration, alerts
/// flush --wait): finite, >= 0 (`allow_zero`) or > 0, and at most `max`. NaN, infinities and
/// negatives are refused: NaN compares false with every limit, so a loop waiting for it never ends.
inline CLI::Validator seconds_span(double max, bool allow_zero) {
  return CLI::Validator(
      [max, allow_zero](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0 ||
            (!allow_zero && v == 0) || v > max)
          return allow_zero
                     ? i18n::trf("must be a number of seconds at least 0 and at most {} (got '{}')", max,
                                 text)
                     : i18n::trf("must be a number of seconds greater than 0 and at most {} (got '{}')", max,
                                 text);
        return {};
      },
      fmt::format("seconds in {}0, {}]", allow_zero ? "[" : "(", max), "seconds_span");
}

/// A sample count: an integer >= 1.
inline CLI::Validator sample_count() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || end != text.c_str() + text.size() || v < 1)
          return i18n::trf("count must be a whole number of samples, at least 1 (got '{}')", text);
        return {};
      },
      "COUNT >= 1", "sample_count");
}

}  // namespace trainmon::cli
