// SPDX-License-Identifier: Apache-2.0
// The job report's model: the run report's charts and findings (report_model.h) per node, merged.
#include "trainmon/report/job_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "report/report_model.h"
#include "report/writers.h"
#include "trainmon/diagnose/train_summary.h"

namespace trainmon::report {
namespace {

using nlohmann::json;

json node_gpus(const diagnose::RunSeries& rs) {
  json out = json::array();
  for (const auto& g : rs.gpus) {
    const auto util = stat(g.util_gpu_pct), mem = stat(g.mem_used_mib), total = stat(g.mem_total_mib),
               power = stat(g.power_w), temp = stat(g.temp_c), clock = stat(g.sm_clock_mhz);
    const bool lost = std::find(g.state.begin(), g.state.end(), diagnose::GpuState::lost) != g.state.end();
    out.push_back({{"index", g.index},
                   {"name", g.name},
                   {"mean_util_pct", rounded(util.mean)},
                   {"peak_util_pct", rounded(util.max)},
                   {"peak_mem_used_mib", rounded(mem.max)},
                   {"mem_total_mib", rounded(total.max)},
                   {"mean_power_w", rounded(power.mean)},
                   {"peak_temp_c", rounded(temp.max)},
                   {"mean_sm_clock_mhz", rounded(clock.mean)},
                   {"lost", lost}});
  }
  return out;
}

/// A node's charts, renamed for the job: ids "n<i>-...", groups "<host> · ...".
json node_charts(const cluster::JobNode& node, std::size_t i, int max_points, json& grid) {
  json m = json::object();
  add_charts(m, node.series, max_points);
  if (grid.is_null()) grid = {{"x", m["x"]}, {"reduced", m["reduced"]}, {"bucket_s", m["bucket_s"]}};
  json out = json::array();
  for (auto& c : m["charts"]) {
    if (c["kind"] == "train") continue;  // the job's training charts are drawn once, for every rank
    c["id"] = fmt::format("n{}-{}", i, c["id"].get<std::string>());
    c["group"] = node.host + " · " + c["group"].get<std::string>();
    c["host"] = node.host;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

json build_job_report_model(const cluster::JobHistory& h, int max_points) {
  json model = json::object();
  model["format"] = "trainmon-report";
  model["version"] = kModelVersion;
  json nodes = json::array();
  std::size_t gpus = 0;
  for (const auto& n : h.nodes) {
    std::size_t ranks = 0;
    for (const auto& r : h.train.ranks) ranks += r.id.host == n.host ? 1 : 0;
    nodes.push_back({{"host", n.host}, {"gpus", node_gpus(n.series)}, {"ranks", ranks}});
    gpus += n.series.gpus.size();
  }
  const std::string name = fmt::format("job {}", h.job);
  model["job"] = {{"id", h.job},
                  {"prometheus", h.prometheus},
                  {"start_unix_s", h.start_unix_s},
                  {"end_unix_s", h.end_unix_s},
                  {"duration_s", h.end_unix_s - h.start_unix_s},
                  {"step_s", h.step_s},
                  {"gpus", gpus},
                  {"nodes", std::move(nodes)}};
  // The run header's keys the page and the JSON readers expect (a job is no run of a store: id 0).
  model["run"] = {{"id", 0},
                  {"name", name},
                  {"kind", "job"},
                  {"start_unix_s", h.start_unix_s},
                  {"duration_s", h.end_unix_s - h.start_unix_s}};

  // Training: every rank of the job on one set of charts; the grid is the one every node shares.
  diagnose::RunSeries job;
  diagnose::append_empty_rows(job, h.t);
  job.train = h.train;
  json train_model = json::object();
  add_charts(train_model, job, max_points);
  json charts = json::array();
  for (auto& c : train_model["charts"])
    if (c["kind"] == "train") charts.push_back(std::move(c));
  json grid;
  std::vector<json> per_node;
  for (std::size_t i = 0; i < h.nodes.size(); ++i) {
    per_node.push_back(node_charts(h.nodes[i], i, max_points, grid));
    for (const auto& c : per_node.back()) charts.push_back(c);
  }
  if (grid.is_null())
    grid = {
        {"x", train_model["x"]}, {"reduced", train_model["reduced"]}, {"bucket_s", train_model["bucket_s"]}};
  model["x"] = grid["x"];
  model["reduced"] = grid["reduced"];
  model["bucket_s"] = grid["bucket_s"];
  model["charts"] = charts;
  model["epochs"] = json::array();
  model["ticks"] = h.t.size();
  model["train_events"] = 0;
  const auto train = diagnose::summarize_train(h.train);
  model["train"] = train ? diagnose::train_summary_to_json(*train) : json(nullptr);

  // Findings: critical first, then by start; each shaded on its node's charts (add_findings' rule).
  std::vector<const cluster::JobFinding*> order;
  for (const auto& f : h.findings) order.push_back(&f);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto* a, const auto* b) { return a->finding.severity > b->finding.severity; });
  json findings = json::array(), advice = json::array(), shown = json::array();
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& jf = *order[i];
    json scope = json::object();
    scope["charts"] = json::array();
    for (std::size_t n = 0; n < h.nodes.size(); ++n)
      if (jf.host.empty() || h.nodes[n].host == jf.host)
        for (const auto& c : per_node[n]) scope["charts"].push_back(c);
    for (const auto& c : charts)
      if (c["kind"] == "train") scope["charts"].push_back(c);
    add_findings(scope, {jf.finding});
    if (scope.contains("findings_shown"))
      shown.push_back(scope["findings_shown"][0]);  // the reader's language
    json f = scope["findings"][0];
    f["id"] = fmt::format("f{}", i);
    f["host"] = jf.host;
    f["firing_at_end"] = jf.firing_at_end;
    findings.push_back(std::move(f));
    for (auto& a : scope["batch_advice"]) advice.push_back(std::move(a));
  }
  model["findings"] = std::move(findings);
  if (!shown.empty()) model["findings_shown"] = std::move(shown);
  model["batch_advice"] = std::move(advice);
  model["processes"] = json::array();
  model["processes_unknown"] = json::array();
  json notes = json::array();
  for (const auto& n : h.notes) notes.push_back(n);
  model["notes"] = std::move(notes);
  return model;
}

std::string default_job_report_path(const std::string& db_path, std::string_view job) {
  std::filesystem::path dir = std::filesystem::path(db_path).parent_path();
  if (dir.empty()) dir = ".";
  std::string name;
  for (unsigned char c : job.substr(0, 100))
    name += std::isalnum(c) || c == '-' || c == '_' || c == '.' ? static_cast<char>(c) : '_';
  if (name.empty() || name == "." || name == "..") name = "_";
  return (dir / "reports" / fmt::format("job-{}.html", name)).string();
}

Expected<std::string> render_job_report(const cluster::JobHistory& h, const ReportOptions& o) {
  if (o.format == Format::markdown)
    return std::unexpected(Error{ErrorDomain::usage, 0, "USAGE",
                                 "a job's report is HTML or JSON (--format html or json), not Markdown"});
  json model = build_job_report_model(h, o.max_points);
  if (o.format == Format::json) {
    model.erase("findings_shown");  // JSON stays English, as a run's (render_report)
    return write_json(model);
  }
  std::string html = write_html(model);
  if (html.empty())
    return std::unexpected(Error{ErrorDomain::internal, 0, "REPORT_ASSETS_MISSING",
                                 "the report's scripts are not built into this binary"});
  return html;
}

}  // namespace trainmon::report
