// SPDX-License-Identifier: Apache-2.0
#include "trainmon/cluster/job_query.h"

#include "trainmon/core/duration.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

namespace trainmon::cluster {
namespace {

Error usage(std::string message) {
  return Error{ErrorDomain::usage, 0, "USAGE", std::move(message)};
}

/// Digits of `s` from `i` as an integer; npos-safe. -1: none.
long long digits(std::string_view s, std::size_t& i, std::size_t max_len) {
  long long v = 0;
  std::size_t n = 0;
  while (i < s.size() && n < max_len && s[i] >= '0' && s[i] <= '9') {
    v = v * 10 + (s[i] - '0');
    ++i;
    ++n;
  }
  return n ? v : -1;
}

/// RFC 3339: YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM); 't' / ' ' as separator, 'z' accepted. NaN: not one.
double rfc3339(std::string_view s) {
  std::size_t i = 0;
  auto field = [&](std::size_t len, char after) -> long long {
    const std::size_t start = i;
    const long long v = digits(s, i, len);
    if (v < 0 || i - start != len) return -1;
    if (after) {
      if (i >= s.size() || s[i] != after) return -1;
      ++i;
    }
    return v;
  };
  const long long year = field(4, '-'), mon = field(2, '-'), day = field(2, 0);
  if (year < 0 || mon < 1 || mon > 12 || day < 1 || day > 31) return NAN;
  if (i >= s.size() || (s[i] != 'T' && s[i] != 't' && s[i] != ' ')) return NAN;
  ++i;
  const long long hour = field(2, ':'), min = field(2, ':'), sec = field(2, 0);
  if (hour < 0 || hour > 23 || min < 0 || min > 59 || sec < 0 || sec > 60) return NAN;
  double frac = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    double scale = 0.1;
    const std::size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      frac += (s[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
    if (i == start) return NAN;
  }
  long long offset_s = 0;
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    const int sign = s[i] == '-' ? -1 : 1;
    ++i;
    const long long oh = field(2, ':'), om = field(2, 0);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return NAN;
    offset_s = sign * (oh * 3600 + om * 60);
  } else {
    return NAN;  // RFC 3339 requires the offset
  }
  if (i != s.size()) return NAN;
  std::tm tm{};
  tm.tm_year = static_cast<int>(year - 1900);
  tm.tm_mon = static_cast<int>(mon - 1);
  tm.tm_mday = static_cast<int>(day);
  tm.tm_hour = static_cast<int>(hour);
  tm.tm_min = static_cast<int>(min);
  tm.tm_sec = static_cast<int>(sec);
  const time_t t = timegm(&tm);
  if (tm.tm_mday != day) return NAN;  // 2026-02-31 normalised to March
  return static_cast<double>(t) - static_cast<double>(offset_s) + frac;
}

/// "-2h", "-1h30m", "-45s", "-1d", "-2w": seconds before now (positive); NaN: not one. The duration
/// after the minus is core's grammar (core/duration.h); a bare number is refused here ("-5" reads as
/// a typo, not five seconds).
double relative(std::string_view s) {
  if (s.size() < 3 || s[0] != '-' || !std::isalpha(static_cast<unsigned char>(s.back()))) return NAN;
  const auto ns = parse_duration_ns(s.substr(1));
  return ns ? static_cast<double>(*ns) / 1e9 : NAN;
}

}  // namespace

std::string promql_string(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::vector<std::string> job_matchers(std::string_view job) {
  std::vector<std::string> out;
  if (job.empty()) return out;
  std::string before;  // the labels of higher precedence, unset
  for (std::string_view k : kJobLabels) {
    const bool torch = k == "torchelastic_run_id";
    if (!(torch && job == "none")) out.push_back(before + fmt::format("{}={}", k, promql_string(job)));
    // torchelastic_run_id="none" is no id: a later label decides then
    before += torch ? fmt::format("{}=~\"|none\",", k) : fmt::format("{}=\"\",", k);
  }
  return out;
}

namespace {

/// `metric{M1} or metric{M2} ...`, each wrapped in last_over_time(...[range]) when range is set.
std::string selector_over(std::string_view metric, const std::vector<std::string>& m,
                          std::string_view range) {
  auto one = [&](std::string_view matchers) {
    const std::string sel =
        matchers.empty() ? std::string(metric) : fmt::format("{}{{{}}}", metric, matchers);
    return range.empty() ? sel : fmt::format("last_over_time({}[{}])", sel, range);
  };
  if (m.empty()) return one({});
  std::string q;
  for (const auto& x : m) q += (q.empty() ? "" : " or ") + one(x);
  return q;
}

}  // namespace

std::string job_selector(std::string_view metric, std::string_view job, std::string_view range) {
  return selector_over(metric, job_matchers(job), range);
}

std::vector<std::string> attributed_matchers(std::string_view job) {
  std::vector<std::string> out;
  if (job.empty()) return out;
  out.push_back(fmt::format("job_id={}", promql_string(job)));
  const auto slash = job.find('/');
  if (slash != std::string_view::npos)
    out.push_back(fmt::format("job_id=\"\",namespace={},pod={}", promql_string(job.substr(0, slash)),
                              promql_string(job.substr(slash + 1))));
  else
    out.push_back(fmt::format("job_id=\"\",pod=\"\",pod_uid={}", promql_string(job)));
  return out;
}

std::string attributed_job_of(const std::map<std::string, std::string>& labels) {
  const auto get = [&](const char* k) {
    auto it = labels.find(k);
    return it == labels.end() ? std::string() : it->second;
  };
  if (auto j = get("job_id"); !j.empty()) return j;
  if (auto pod = get("pod"); !pod.empty()) return get("namespace") + "/" + pod;
  return get("pod_uid");
}

std::string attributed_selector(std::string_view job, std::string_view range) {
  return selector_over("trainmon_gpu_process_info", attributed_matchers(job), range);
}

Expected<double> parse_time_arg(std::string_view text, double now_unix_s) {
  if (text == "now") return now_unix_s;
  if (const double r = relative(text); std::isfinite(r)) return now_unix_s - r;
  if (const double t = rfc3339(text); std::isfinite(t)) return t;
  if (!text.empty() && text.size() < 24 && text.find_first_not_of("0123456789.") == std::string_view::npos &&
      text.front() != '.') {
    const std::string s(text);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() + s.size() && std::isfinite(v)) return v;
  }
  return std::unexpected(usage(fmt::format(
      "'{}' is not a time: give RFC 3339 (2026-12-01T22:00:00Z), unix seconds (1764626400), now, or a "
      "time before now (-2h, -90m, -1d, -1h30m)",
      text.substr(0, 64))));
}

double range_step_s(double start_unix_s, double end_unix_s, int max_points, double min_step_s) {
  const double span = std::max(0.0, end_unix_s - start_unix_s);
  const double per = max_points > 1 ? span / (max_points - 1) : span;
  return std::max({min_step_s, std::ceil(per), 1.0});
}

std::optional<TimeRange> clamp_to_job(double from_unix_s, double to_unix_s, double first_s, double last_s) {
  if (!std::isfinite(first_s) || !std::isfinite(last_s) || last_s < first_s) return std::nullopt;
  TimeRange r{std::isfinite(from_unix_s) ? std::max(from_unix_s, first_s) : first_s,
              std::isfinite(to_unix_s) ? std::min(to_unix_s, last_s) : last_s};
  if (r.end_unix_s < r.start_unix_s) return std::nullopt;
  return r;
}

}  // namespace trainmon::cluster
