// SPDX-License-Identifier: Apache-2.0
// The PromQL that picks one job out of a cluster (docs/cluster.md "Job identity"), and the times a
// user gives on the command line. Pure functions: `top --prometheus --job`, `report --prometheus`
// and their unit tests use them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainmon/core/error.h"

namespace trainmon::cluster {

/// The run labels that give a job id, in precedence order (the same order as the rules' job_id,
/// src/diagnose/prom_rules.cpp, and job_id_of()): the first one set wins; torchrun's default
/// `torchelastic_run_id="none"` is no id.
inline constexpr std::string_view kJobLabels[] = {"train_job", "slurm_job_id", "torchelastic_run_id",
                                                  "pbs_jobid", "lsb_jobid",    "job_id"};

/// `s` as a PromQL double-quoted string literal (backslash, quote and control characters escaped as
/// in Go, which Prometheus' parser reads back).
std::string promql_string(std::string_view s);

/// The label matchers (without braces) of the series whose job id is `job`, one entry per label of
/// kJobLabels: `train_job="J"`, then `train_job="",slurm_job_id="J"`, ... (an earlier label set to
/// another id wins, as in job_id_of()). A series belongs to the job when one entry matches.
/// `job` = "none" leaves out torchelastic_run_id (it means no id there). Empty job: empty list.
std::vector<std::string> job_matchers(std::string_view job);

/// `metric{M1} or metric{M2} or ...` over job_matchers(job); `range` non-empty wraps each selector
/// as `last_over_time(metric{M}[range])`. Empty job: the bare metric (or its last_over_time).
std::string job_selector(std::string_view metric, std::string_view job, std::string_view range = {});

/// The label matchers (without braces) of the GPU processes serve attributed to `job` from the host
/// (trainmon_gpu_process_info, docs/cluster.md section 10), for nodes where serve runs outside the
/// jobs: `job_id="J"` (a Slurm job), then for "namespace/pod" `job_id="",namespace="NS",pod="POD"`,
/// else `job_id="",pod="",pod_uid="J"` (a pod known by its uid). Empty job: empty list.
std::vector<std::string> attributed_matchers(std::string_view job);

/// The job of one trainmon_gpu_process_info series' labels: its job_id (Slurm), else its pod as
/// "namespace/pod", else the pod's uid; empty: none. The precedence of the rules'
/// trainmon:gpu_job_attributed:info and of attributed_matchers.
std::string attributed_job_of(const std::map<std::string, std::string>& labels);

/// job_selector's form over trainmon_gpu_process_info and attributed_matchers(job).
std::string attributed_selector(std::string_view job, std::string_view range = {});

/// A time on the command line, in unix seconds: RFC 3339 ("2026-12-01T22:00:00Z",
/// "2026-12-01T23:00:00+01:00", fractional seconds allowed), unix seconds ("1764626400", "1764626400.5"),
/// "now", or relative to `now_unix_s` ("-2h", "-90m", "-30s", "-1d", "-1h30m"). Error (usage): a
/// sentence naming the accepted forms.
Expected<double> parse_time_arg(std::string_view text, double now_unix_s);

/// The step (seconds) of a range query over [start, end] that gives at most `max_points` points a
/// series: span / (max_points - 1) rounded up to a whole second, at least `min_step_s`.
double range_step_s(double start_unix_s, double end_unix_s, int max_points, double min_step_s = 1);

/// A time range in unix seconds.
struct TimeRange {
  double start_unix_s = 0, end_unix_s = 0;
};

/// The part of the asked range [from, to] in which the job has samples: [max(from, first_s),
/// min(to, last_s)], where first_s / last_s are the job's first and last sample that Prometheus has.
/// A NaN `from` / `to` (not given) is the job's own edge. The report is drawn over this part, so a
/// range much wider than the job (`--from -30d`) neither stretches the step nor loses the job
/// between two points. Empty: the range and the job's span do not overlap (or first_s / last_s NaN).
std::optional<TimeRange> clamp_to_job(double from_unix_s, double to_unix_s, double first_s, double last_s);

}  // namespace trainmon::cluster
