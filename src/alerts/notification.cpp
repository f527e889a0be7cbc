// SPDX-License-Identifier: Apache-2.0
#include "trainmon/alerts/notification.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "trainmon/core/i18n.h"

namespace trainmon::alerts {

std::string Notification::summary() const {
  std::string st = state;
  std::transform(st.begin(), st.end(), st.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  // For people (the log line, Slack's text, the e-mail): severity and state in the reader's language;
  // the rule and target are names and stay. The JSON fields keep the English values.
  [[maybe_unused]] static constexpr const char* kStates[] = {N_("FIRING"), N_("RESOLVED"), N_("TEST")};
  std::string s = fmt::format("[{}] {} {} {}: {}", i18n::tr(severity), i18n::tr(st), rule, target, message);
  if (suppressed > 0) s += i18n::trf(" ({} earlier alerts dropped by the rate limit)", suppressed);
  return s;
}

void to_json(nlohmann::json& j, const Notification& n) {
  j = nlohmann::json{{"id", n.id},
                     {"state", n.state},
                     {"rule", n.rule},
                     {"severity", n.severity},
                     {"target", n.target},
                     {"metric", n.metric},
                     {"value", n.value},
                     {"condition", n.condition},
                     {"for_s", n.for_s},
                     {"message", n.message},
                     {"hostname", n.hostname},
                     {"tool", n.tool},
                     {"run_id", n.run_id},
                     {"run_name", n.run_name},
                     {"time_unix_ns", n.time_unix_ns},
                     {"suppressed", n.suppressed}};
}

void from_json(const nlohmann::json& j, Notification& n) {
  j.at("id").get_to(n.id);
  j.at("state").get_to(n.state);
  j.at("rule").get_to(n.rule);
  n.severity = j.value("severity", "warning");
  n.target = j.value("target", "");
  n.metric = j.value("metric", "");
  n.value = j.value("value", 0.0);
  n.condition = j.value("condition", "");
  n.for_s = j.value("for_s", 0.0);
  n.message = j.value("message", "");
  n.hostname = j.value("hostname", "");
  n.tool = j.value("tool", "");
  n.run_id = j.value("run_id", std::int64_t{0});
  n.run_name = j.value("run_name", "");
  n.time_unix_ns = j.value("time_unix_ns", std::int64_t{0});
  n.suppressed = j.value("suppressed", std::int64_t{0});
}

}  // namespace trainmon::alerts
