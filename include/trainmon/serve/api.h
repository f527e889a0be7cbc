// SPDX-License-Identifier: Apache-2.0
// The store-backed part of serve's JSON API (docs/serve.md): runs, one run, its samples, findings
// and events. Each call opens its own read-only connection, so HTTP threads never share one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace trainmon::serve {

/// An HTTP answer: status code, body, content type.
struct ApiReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

/// GET /api/v1/runs: every run, newest first.
ApiReply api_runs(const std::string& db_path);
/// GET /api/v1/runs/<id>: the run's header, GPUs and labels.
ApiReply api_run(const std::string& db_path, std::int64_t run_id);

/// Range and step for /api/v1/runs/<id>/samples (seconds since the run's start).
struct SampleQuery {
  std::optional<double> from_s;  ///< first second kept (default: the start)
  std::optional<double> to_s;    ///< last second kept (default: the end)
  double step_s = 0;             ///< keep at most one row per step (the first in each); 0 = every row
  std::size_t max_rows = 5000;   ///< the step is widened so that no more rows are returned
};
/// Parses from / to / step query values; nullopt (and `error`) when one is not a finite number >= 0.
std::optional<SampleQuery> parse_sample_query(const std::string& from, const std::string& to,
                                              const std::string& step, std::string& error);
/// GET /api/v1/runs/<id>/samples: {"t": [...], "gpus": [{"index", "name", "util_gpu_pct",
/// "mem_used_mib", "mem_total_mib", "power_w", "temp_c", "sm_clock_mhz"}], "host": {"cpu_busy_pct",
/// "mem_available_mib", "mem_total_mib"}}; null for N/A.
ApiReply api_samples(const std::string& db_path, std::int64_t run_id, const SampleQuery& q);
/// GET /api/v1/runs/<id>/findings: the findings stored for the run.
ApiReply api_findings(const std::string& db_path, std::int64_t run_id);
/// GET /api/v1/runs/<id>/findings/l10n: their evidence and advice for people in serve's language
/// (serve::findings_l10n_json): the stored translation when the run was recorded in it.
ApiReply api_findings_l10n(const std::string& db_path, std::int64_t run_id);
/// GET /api/v1/runs/<id>/events: {"gpu_events": [...], "train_events": [...]}.
ApiReply api_events(const std::string& db_path, std::int64_t run_id);
/// GET /runs/<id>/report: the run's self-contained HTML report (report::render_report).
ApiReply api_report(const std::string& db_path, std::int64_t run_id);

}  // namespace trainmon::serve
