// SPDX-License-Identifier: Apache-2.0
// Internal helpers shared by dmon_format.cpp and pmon_format.cpp (not part of the public API).
#pragma once

#include <cstdint>
#include <string>

#include "trainmon/export/monitor_format.h"

namespace trainmon::exp {

/// "#Date     Time     " (names) or "#YYYYMMDD HH:MM:SS " (units) for -o DT; empty without -o.
std::string monitor_time_header(const MonitorOptions& opt, bool units_line);
/// " 20260703 22:10:46 " for -o DT, local time; empty without -o.
std::string monitor_time_prefix(const MonitorOptions& opt, std::int64_t time_unix_ns);
/// "# gpu" / "# Idx", or "  gpu" / "  Idx" after a time prefix.
std::string monitor_index_header(const MonitorOptions& opt, bool units_line);

}  // namespace trainmon::exp
