// SPDX-License-Identifier: Apache-2.0
// Where reports go and how they are written (shared by `trainmon report` and `trainmon run`).
#pragma once

#include <cstdint>
#include <string>

#include "trainmon/core/error.h"
#include "trainmon/report/report.h"
#include "trainmon/store/store.h"

namespace trainmon::report {

/// The default file of run `run_id`'s HTML report: `<directory of db_path>/reports/<db name>-run-<id>.html`
/// (with the default store, $XDG_STATE_HOME/trainmon/reports/trainmon-run-<id>.html): stores that
/// share a directory do not overwrite each other's reports.
std::string default_report_path(const std::string& db_path, std::int64_t run_id);

/// Renders the report and writes it to `path` through a temporary file renamed into place, so that
/// a reader never sees half a report. `create_directory`: create `path`'s missing directories (the
/// default location); false (`report -o FILE`, as `curl -o` without --create-dirs): a missing
/// directory is an error (domain os, ENOENT, naming it), found before anything is rendered. Errors:
/// rendering failed (see render_report), or the file cannot be written (domain os, errno).
Expected<void> write_report_file(store::Store& store, std::int64_t run_id, const std::string& path,
                                 const ReportOptions& options = {}, bool create_directory = true);

}  // namespace trainmon::report
