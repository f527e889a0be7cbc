// SPDX-License-Identifier: Apache-2.0
// One job's history across its nodes, read from Prometheus with range queries (what `serve` on each
// node exported, docs/cluster.md "The whole job's report"): per node its GPUs' series, per rank the
// training loop's, and the job's alerts over the range (ALERTS) as findings. The input of
// `trainmon report --prometheus` (report/job_report.h).
#pragma once

#include <cmath>
#include <map>
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
  double scrape_s = 1;  ///< the job's scrape interval as measured (the step's floor)
  /// The range begins with the job's first sample: the ranks' counters count from 0 (their steps
  /// before the first scrape are in the totals); else from their first value in the range.
  bool from_job_start = false;
  std::vector<double> t;             ///< seconds since start_unix_s, every step_s
  std::vector<JobNode> nodes;        ///< ordered by host
  diagnose::TrainSeries train;       ///< every rank of the job on every node (TrainRank::host set)
  std::vector<JobFinding> findings;  ///< ordered by start, then code
  std::vector<std::string> notes;    ///< what could not be read, one sentence each
};

/// Reads job `o.job` over the part of [from, to] in which it has samples (clamp_to_job: a range wider
/// than the job is cut to the job's span, the step chosen from that part; a `to` after `now_unix_s`
/// ends at now, with a note) at `now_unix_s`. Errors (Error::name): the request failed or the
/// answer is not Prometheus' ("HTTP", "PROMETHEUS": the message names the URL and the reason);
/// "JOB_NOT_FOUND" (the message lists the jobs Prometheus has within search_s, at most 20);
/// "EMPTY_RANGE" (from >= to, from after now, or the range and the job's span do not overlap: the
/// message says when Prometheus has the job).
Expected<JobHistory> read_job_history(const JobHistoryOptions& o, double now_unix_s);

/// "4242, 77 (3 nodes without a job id)": the jobs whose nodes' trainmon_labels_info Prometheus has
/// within `window_s` before `at_unix_s` (at most 20 named; "none (no node's trainmon_labels_info: is
/// serve scraped?)" when it has no node at all). Errors: the request failed (as query()).
Expected<std::string> known_jobs(const PromEndpoint& ep, double at_unix_s, double window_s);

// ---- the parts, pure (unit tests) ---------------------------------------------------------------

/// The range queries of every series the report draws, as (key, PromQL): "info" (the job's
/// trainmon_labels_info), the GPU and host series of the job's nodes (joined on Hostname at each
/// step: "util", "fb_used", ..., "cpu_busy", ...), the ranks' series by their own job labels
/// ("steps", "samples", "step_sum", "step_q", "data", "last_step"). add_job_series reads their
/// answers with the key as the label `trainmon_m`.
std::vector<std::pair<std::string, std::string>> job_range_queries(std::string_view job);

/// The alert codes of `trainmon rules` that name a node's hardware or host (ECC, Xid, GPU lost,
/// throttling, memory near full, host memory leak): the rules give them a job_id only where the
/// node is in a job, so a job's report also takes them without one on its nodes (docs/cluster.md
/// section 6, "Job identity"). The training and job alerts (D2, D7, D23, D24) are not among them:
/// without a job_id they belong to another run.
inline constexpr std::string_view kNodeAlertCodes[] = {"D3", "D10", "D12", "D13", "D14", "D21"};

/// The range query of the job's alerts, ALERTS{alertstate="firing"} with the job's job_id and the
/// node alerts (kNodeAlertCodes) without a job_id on the job's nodes. `window_s` > 0 (the step):
/// each point is the alert's value at that time `or`, where it had none, whether it fired at any
/// evaluation within the window before it (max_over_time), so that an episode shorter than the step
/// is still found (it comes back as a second series without __name__: add_job_alerts merges them).
std::string job_alerts_query(std::string_view job, double window_s = 0);

/// The hang alert of a job (D23, labels job_id only) made whole from what its ranks said during the
/// episode: `stalled` is max_over_time(trainmon:rank_stalled:seconds{job_id="J"}[episode]), one
/// sample per rank (labels rank, Hostname, gpu; value: its longest stall, s). Sets the finding's
/// host when every stuck rank is on one node, the ranks ("rank 1 on node-a (GPU 1) for 21.9 s", the
/// longest first) into the evidence, and numbers "stuck_ranks" and "max_stall_s". No sample: unchanged.
void add_hang_ranks(JobFinding& f, const std::vector<PromSample>& stalled);

/// Fills `h.nodes` and `h.train` from the answers of job_range_queries, each series labelled
/// `trainmon_m` with its query's key (h.t, start and step set).
void add_job_series(JobHistory& h, const std::vector<PromSeries>& series);

/// Fills `h.findings` from the answer of job_alerts_query: one finding per episode of each alert
/// (its series with and without __name__ merged; points no more than 1.5 steps apart), with code,
/// slug, severity, the rule's title, advice and thresholds (diagnose::prometheus_rule_groups with
/// default thresholds, `{{ $labels.X }}` filled in, the annotation `thresholds` read as numbers),
/// the GPU; `live`: the alerts firing now (GET /api/v1/alerts) whose summary, description and
/// thresholds replace the rule's for an episode that lasts to the range's end.
void add_job_alerts(JobHistory& h, const std::vector<PromSeries>& alerts, const std::vector<PromAlert>& live);

}  // namespace trainmon::cluster
