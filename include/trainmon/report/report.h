// SPDX-License-Identifier: Apache-2.0
// Run reports (`trainmon report RUN`, the end of `trainmon run`, and serve's run pages): one
// self-contained HTML file (uPlot and the data inlined, opens offline), a Markdown summary for
// terminals and CI logs, or JSON. Built from what the store holds for the run: its header, the
// findings, the samples (reduced to screen resolution with a min/max envelope so spikes survive),
// the processes and the training events (epoch markers). See docs/report.md.
#pragma once

#include <cstdint>
#include <string>

#include "trainmon/core/error.h"
#include "trainmon/store/store.h"

namespace trainmon::report {

enum class Format { html, markdown, json };

struct ReportOptions {
  Format format = Format::html;
  /// Points per chart series after reduction (each a min / mean / max bucket); 0 = no reduction.
  int max_points = 2000;
};

/// The report of run `run_id`. Errors: the run does not exist, or the store cannot be read. A run
/// with no samples (failed to start, lost recorder) still gets a report with what is known.
Expected<std::string> render_report(store::Store& store, std::int64_t run_id,
                                    const ReportOptions& options = {});

}  // namespace trainmon::report
