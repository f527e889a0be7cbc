// SPDX-License-Identifier: Apache-2.0
// One job's history across its nodes, read from Prometheus with range queries (what `serve` on each
// node exported, docs/cluster.md "The whole job's report"): per node its GPUs' series, per rank the
// training loop's, and the job's alerts over the range (ALERTS) as findings. The input of
// `trainmon report --prometheus` (report/job_report.h).
#pragma once

#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainmon/cluster/prometheus_client.h"
#include "trainmon/core/error.h"
#include "trainmon/diagnose/finding.h"
#include "trainmon/diagnose/series.h"

namespace trainmon::cluster {

struct JobHistoryOptions {
  PromEndpoint endpoint;
  std::string job;                 ///< the job id (job_id_of(): train_job, slurm_job_id, ...)
  double from_unix_s = NAN;        ///< NaN: the job's first sample Prometheus has
  double to_unix_s = NAN;          ///< NaN: its last sample
  int max_points = 1000;           ///< points per series at most (the step follows from the range)
  double search_s = 30 * 86400.0;  ///< how far back from `to` (or now) the job is looked for (ours)
};

/// One node of the job: its GPUs' columns on the shared time axis (RunSeries::t, seconds since the
/// range's start; every node has the same rows). GpuSeries::name is the GPU's modelName.
struct JobNode {
  std::string host;
  diagnose::RunSeries series;
};

/// A finding made from an alert, and the node it names (empty: the whole job, e.g. D23).
struct JobFinding {
  diagnose::Finding finding;  ///< start_s / end_s: seconds since the range's start
  std::string host;
  bool firing_at_end = false;  ///< still firing at the range's end
};

struct JobHistory {
  std::string job;
  std::string prometheus;  ///< the base URL
  double start_unix_s = 0, end_unix_s = 0, step_s = 0;
  std::vector<double> t;             ///< seconds since start_unix_s, every step_s
  std::vector<JobNode> nodes;        ///< ordered by host
  diagnose::TrainSeries train;       ///< every rank of the job on every node (TrainRank::host set)
  std::vector<JobFinding> findings;  ///< ordered by start, then code
  std::vector<std::string> notes;    ///< what could not be read, one sentence each
};

/// Reads job `o.job` over [from, to] at `now_unix_s`. Errors (Error::name): the request failed or the
/// answer is not Prometheus' ("HTTP", "PROMETHEUS": the message names the URL and the reason);
/// "JOB_NOT_FOUND" (the message lists the jobs Prometheus has within search_s, at most 20);
/// "EMPTY_RANGE" (from >= to, or the job has no sample in the range: the message says when it has).
Expected<JobHistory> read_job_history(const JobHistoryOptions& o, double now_unix_s);

// ---- the parts, pure (unit tests) ---------------------------------------------------------------

/// The range queries of every series the report draws, as (key, PromQL): "info" (the job's
/// trainmon_labels_info), the GPU and host series of the job's nodes (joined on Hostname at each
/// step: "util", "fb_used", ..., "cpu_busy", ...), the ranks' series by their own job labels
/// ("steps", "samples", "step_sum", "step_q", "data", "last_step"). add_job_series reads their
/// answers with the key as the label `trainmon_m`.
std::vector<std::pair<std::string, std::string>> job_range_queries(std::string_view job);

/// The range query of the job's alerts: ALERTS{alertstate="firing"} with the job's job_id, and those
/// without a job_id on the job's nodes (hardware alerts of a node outside a job's rules).
std::string job_alerts_query(std::string_view job);

/// Fills `h.nodes` and `h.train` from the answers of job_range_queries, each series labelled
/// `trainmon_m` with its query's key (h.t, start and step set).
void add_job_series(JobHistory& h, const std::vector<PromSeries>& series);

/// Fills `h.findings` from the answer of job_alerts_query: one finding per episode of each alert
/// (points no more than 1.5 steps apart), with code, slug, severity, the rule's title and advice
/// (diagnose::prometheus_rule_groups with default thresholds, `{{ $labels.X }}` filled in), the
/// GPU; `live`: the alerts firing now (GET /api/v1/alerts) whose summary and description replace
/// the rule's for an episode that lasts to the range's end.
void add_job_alerts(JobHistory& h, const std::vector<PromSeries>& alerts, const std::vector<PromAlert>& live);

}  // namespace trainmon::cluster
