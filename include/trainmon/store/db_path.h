// SPDX-License-Identifier: Apache-2.0
// Where the run store lives.
#pragma once

#include <string>

namespace trainmon::store {

/// The store path to use: `cli_value` when not empty (--db), else $TRAINMON_DB, else
/// $XDG_STATE_HOME/trainmon/trainmon.db, else $HOME/.local/state/trainmon/trainmon.db, else
/// ./trainmon.db when HOME is unset too.
std::string resolve_db_path(const std::string& cli_value = {});

}  // namespace trainmon::store
