// SPDX-License-Identifier: Apache-2.0
// Reading recorded runs back for people and scripts: the run as JSON, the `runs` table, and the
// sample export (CSV per series kind, or JSON Lines with everything).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainmon/core/error.h"
#include "trainmon/store/store.h"

namespace trainmon::recorder {

/// The run header as JSON (id, name, kind, command, cwd, user, host, start/end as Unix seconds and
/// ISO text, duration_s, status (effective), exit_code, exit_signal, labels, gpus, finding_count,
/// summary object or null). duration_s runs up to `duration_until`: "end" (a finished run), "now"
/// (still recording) or "last_sample" (lost: the recorder died; its newest stored sample).
nlohmann::json run_to_json(const store::RunInfo& run);

/// The `trainmon runs` table, one line per run, newest first. A DURATION that is not final (running,
/// lost) ends in "+". The STATUS column is as wide as its widest entry ("failed_to_start(127)").
/// `columns` > 0 (a terminal's width): every line is cut to it, never wrapped. Names and commands
/// are shown with control characters as '?' (terminal_text).
std::string format_runs_table(const std::vector<store::RunInfo>& runs, std::size_t columns = 0);

/// `trainmon show` text for one run.
std::string format_run_details(const store::RunInfo& run);

/// CSV of one series kind of a run, or of its events (`what` = "events"): a header, then one line
/// per row with time_unix_s first and the series' key columns (gpu, pid). Values in the unit of the
/// column name; empty for N/A. Error for an unknown `what`.
Expected<void> export_csv(store::Store& store, std::int64_t run_id, const std::string& what,
                          std::ostream& out);

/// JSON Lines: one object per sample row of every series ({"t":..., "series":"gpu", "gpu":0, ...})
/// then one per event ({"t":..., "event":"gpu", ...}). `what` as for export_csv keeps one series kind
/// (or only the events, "events"); empty: everything. Error (domain usage) for an unknown `what`.
Expected<void> export_jsonl(store::Store& store, std::int64_t run_id, std::ostream& out,
                            const std::string& what = "");

}  // namespace trainmon::recorder
