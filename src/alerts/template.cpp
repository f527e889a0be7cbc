// SPDX-License-Identifier: Apache-2.0
#include "trainmon/alerts/template.h"

#include <array>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

namespace trainmon::alerts {

namespace {
constexpr std::array<std::string_view, 15> kVars = {"rule",   "state",     "severity", "target",  "metric",
                                                    "value",  "condition", "for",      "host",    "tool",
                                                    "run_id", "run_name",  "time",     "finding", "id"};

std::string number(double v) {
  if (std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1e15)
    return fmt::format("{}", static_cast<long long>(std::round(v)));
  return fmt::format("{:.1f}", v);
}

std::string duration(double s) {
  if (s >= 3600 && std::fmod(s, 3600) == 0) return fmt::format("{}h", static_cast<long long>(s / 3600));
  if (s >= 60 && std::fmod(s, 60) == 0) return fmt::format("{}m", static_cast<long long>(s / 60));
  return number(s) + "s";
}
}  // namespace

bool is_template_var(std::string_view name) noexcept {
  for (auto v : kVars)
    if (v == name) return true;
  return false;
}

std::string render_template(std::string_view t, const std::map<std::string, std::string, std::less<>>& vars) {
  std::string out;
  out.reserve(t.size() + 32);
  for (std::size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if ((c == '{' || c == '}') && i + 1 < t.size() && t[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '{') {
      auto e = t.find('}', i);
      if (e != std::string_view::npos) {
        auto it = vars.find(t.substr(i + 1, e - i - 1));
        if (it != vars.end()) {
          out += it->second;
          i = e;
          continue;
        }
      }
    }
    out += c;
  }
  return out;
}

std::map<std::string, std::string, std::less<>> template_vars(const Notification& n) {
  std::time_t secs = static_cast<std::time_t>(n.time_unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return {{"rule", n.rule},
          {"state", n.state},
          {"severity", n.severity},
          {"target", n.target},
          {"metric", n.metric},
          {"value", number(n.value)},
          {"condition", n.condition},
          {"for", duration(n.for_s)},
          {"host", n.hostname},
          {"tool", n.tool},
          {"run_id", fmt::format("{}", n.run_id)},
          {"run_name", n.run_name},
          {"time", buf},
          {"id", n.id}};
}

}  // namespace trainmon::alerts
