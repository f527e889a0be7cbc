// SPDX-License-Identifier: Apache-2.0
#include "trainmon/store/db_path.h"

#include <cstdlib>

namespace trainmon::store {

std::string resolve_db_path(const std::string& cli_value) {
  if (!cli_value.empty()) return cli_value;
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v && *v ? v : "";
  };
  if (auto v = env("TRAINMON_DB"); !v.empty()) return v;
  if (auto v = env("XDG_STATE_HOME"); !v.empty()) return v + "/trainmon/trainmon.db";
  if (auto v = env("HOME"); !v.empty()) return v + "/.local/state/trainmon/trainmon.db";
  return "trainmon.db";
}

}  // namespace trainmon::store
