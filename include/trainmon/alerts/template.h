// SPDX-License-Identifier: Apache-2.0
// Message templates: "{name}" is replaced by the variable's value; "{{" and "}}" are literal braces;
// an unknown name is left as written ("{nope}"), so a typo shows in the message instead of failing.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "trainmon/alerts/notification.h"

namespace trainmon::alerts {

std::string render_template(std::string_view tmpl,
                            const std::map<std::string, std::string, std::less<>>& vars);

/// The variables of a notification: rule, state, severity, target, metric, value, condition, for,
/// host, tool, run_id, run_name, time (ISO 8601 UTC).
std::map<std::string, std::string, std::less<>> template_vars(const Notification& n);

/// Names render_template knows for notifications (for `alerts check`: unknown names are reported).
bool is_template_var(std::string_view name) noexcept;

}  // namespace trainmon::alerts
