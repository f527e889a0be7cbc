// SPDX-License-Identifier: Apache-2.0
// The whole-job report (`trainmon report --prometheus URL --job ID`, docs/cluster.md): the run
// report's model and renderer (report.h, docs/report.md) fed with every node of a job as read from
// Prometheus (cluster/job_history.h) instead of one run of the local store.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "trainmon/cluster/job_history.h"
#include "trainmon/core/error.h"
#include "trainmon/report/report.h"

namespace trainmon::report {

/// The report model of a job (the run model's keys, docs/report.md "Data model", plus "job": its id,
/// Prometheus, range, step and per node its GPUs' figures over the range). Charts: the job's training
/// charts (every rank of every node), then per node its GPU comparison, per-GPU and host charts, each
/// group titled with the node ("node-a · GPU 0 (NVIDIA H100)") and ids prefixed "n<i>-". Findings:
/// the job's alerts, each with its node ("host") and shaded on its node's charts of its GPU (the
/// node's every chart without a GPU; every chart for a finding of the whole job). `max_points`:
/// buckets per chart series (0: every point).
nlohmann::json build_job_report_model(const cluster::JobHistory& history, int max_points);

/// The default file of job `job`'s HTML report: `<directory of db_path>/reports/job-<job>.html`, with
/// every character of the id other than letters, digits, '-', '_' and '.' written as '_'.
std::string default_job_report_path(const std::string& db_path, std::string_view job);

/// The report as HTML (or JSON, Format::json). Error: Format::markdown (not available for a job),
/// or the report's scripts are not built into this binary.
Expected<std::string> render_job_report(const cluster::JobHistory& history, const ReportOptions& options);

}  // namespace trainmon::report
