// SPDX-License-Identifier: Apache-2.0
#include "trainmon/recorder/labels.h"

#include <algorithm>
#include <map>

namespace trainmon::recorder {

std::optional<std::pair<std::string, std::string>> parse_label(std::string_view text) {
  auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) return std::nullopt;
  return std::pair<std::string, std::string>{std::string(text.substr(0, eq)),
                                             std::string(text.substr(eq + 1))};
}

std::vector<std::pair<std::string, std::string>> collect_labels(
    const std::vector<std::pair<std::string, std::string>>& given, const std::vector<std::string>& env) {
  std::map<std::string, std::string> out;
  for (const auto& kv : env) {
    auto p = parse_label(kv);
    if (!p) continue;
    if (std::find(std::begin(kLabelEnvVars), std::end(kLabelEnvVars), p->first) != std::end(kLabelEnvVars)) {
      out[p->first] = p->second;
    }
  }
  for (const auto& [k, v] : given) out[k] = v;
  return {out.begin(), out.end()};
}

}  // namespace trainmon::recorder
