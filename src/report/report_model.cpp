// SPDX-License-Identifier: Apache-2.0
// The report model: the run's header, findings, charts, per-GPU figures and processes in one object.
#include "report/report_model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "report/report_processes.h"
#include "trainmon/diagnose/train_summary.h"
#include "trainmon/recorder/run_report.h"
#include "trainmon/store/load_run_series.h"

namespace trainmon::report {
namespace {

using nlohmann::json;

/// GPU utilisation over the run, as the recorder's end-of-run summary measures it
/// (recorder::RunStats with recorder::gpu_utilization): each tick counts once, with the mean of the
/// driver's high-resolution samples of that tick (the ones after the previous tick, up to this one)
/// when there are any, else its utilization.gpu reading; the mean is over ticks, the peak the largest
/// high-resolution sample or reading. Plain utilization.gpu (the chart) only covers the last
/// sample period of each tick, so its mean can differ on bursty loads.
Stat utilisation(const diagnose::RunSeries& rs, const diagnose::GpuSeries& g) {
  const auto& ht = g.hires_util.t;
  const auto& hv = g.hires_util.value;
  double sum = 0, mx = -INFINITY;
  std::size_t n = 0, h = 0;
  for (std::size_t i = 0; i < rs.t.size() && i < g.util_gpu_pct.size(); ++i) {
    double tick_sum = 0, tick_max = -INFINITY;
    std::size_t tick_n = 0;
    for (; h < ht.size() && ht[h] <= rs.t[i]; ++h) {
      if (std::isnan(hv[h])) continue;
      tick_sum += hv[h];
      tick_max = std::max(tick_max, static_cast<double>(hv[h]));
      ++tick_n;
    }
    double u = NAN;
    if (tick_n) {
      u = tick_sum / static_cast<double>(tick_n);
      mx = std::max(mx, tick_max);
    } else if (!std::isnan(g.util_gpu_pct[i])) {
      u = g.util_gpu_pct[i];
      mx = std::max(mx, u);
    }
    if (std::isnan(u)) continue;
    sum += u;
    ++n;
  }
  return n ? Stat{sum / static_cast<double>(n), mx} : Stat{};
}

json gpu_stats(const diagnose::RunSeries& rs) {
  json out = json::array();
  for (const auto& g : rs.gpus) {
    const Stat util = utilisation(rs, g);
    out.push_back({{"index", g.index},
                   {"name", g.name},
                   {"mean_util_pct", rounded(util.mean)},
                   {"peak_util_pct", rounded(util.max)},
                   {"peak_mem_used_mib", rounded(stat(g.mem_used_mib).max)},
                   {"mem_total_mib", rounded(stat(g.mem_total_mib).max)},
                   {"mean_power_w", rounded(stat(g.power_w).mean)},
                   {"power_limit_w", rounded(stat(g.power_limit_w).max)},
                   {"peak_temp_c", rounded(stat(g.temp_c).max)},
                   {"temp_slowdown_c", rounded(stat(g.temp_slowdown_c).max)}});
  }
  return out;
}

}  // namespace

Expected<json> build_report_model(store::Store& st, std::int64_t run_id, int max_points) {
  auto run = st.get_run(run_id);
  if (!run) return std::unexpected(run.error());
  json model = json::object();
  model["format"] = "trainmon-report";
  model["version"] = kModelVersion;
  model["run"] = recorder::run_to_json(*run);
  json notes = json::array();

  diagnose::RunSeries series;
  if (auto s = store::load_run_series(st, run_id)) {
    series = std::move(*s);
  } else {
    notes.push_back("samples could not be read: " + s.error().message);
  }
  add_charts(model, series, max_points);
  model["ticks"] = series.size();
  model["gpu_stats"] = gpu_stats(series);
  model["train_events"] = series.train_events.size();
  // The training loop over the run, as the run's summary computes it (null: no step timing).
  const auto train = diagnose::summarize_train(series);
  model["train"] = train ? diagnose::train_summary_to_json(*train) : json(nullptr);

  std::vector<diagnose::Finding> findings;
  if (auto f = st.findings(run_id)) {
    findings = std::move(*f);
  } else {
    notes.push_back("findings could not be read: " + f.error().message);
  }
  // What to fix first: critical faults, then by cost (also for stores written before the ranking).
  diagnose::rank_findings(findings, series.t.empty() ? 0.0 : series.t.back() - series.t.front());
  add_findings(model, findings);

  if (auto p = process_table(st, run_id)) {
    model["processes"] = std::move(*p);
  } else {
    model["processes"] = json::array();
    notes.push_back("processes could not be read: " + p.error().message);
  }
  if (auto u = processes_unknown(st, run_id)) {
    model["processes_unknown"] = std::move(*u);
  } else {
    model["processes_unknown"] = json::array();
    notes.push_back("process list failures could not be read: " + u.error().message);
  }
  if (series.size() == 0) notes.push_back("no samples were recorded for this run");
  model["notes"] = std::move(notes);
  return model;
}

nlohmann::json rounded(double v) {
  return std::isfinite(v) ? nlohmann::json(std::round(v * 100.0) / 100.0) : nlohmann::json(nullptr);
}

Stat stat(const std::vector<float>& v) {
  double sum = 0, mx = -INFINITY;
  std::size_t n = 0;
  for (float x : v) {
    if (std::isnan(x)) continue;
    sum += x;
    mx = std::max(mx, static_cast<double>(x));
    ++n;
  }
  return n ? Stat{sum / static_cast<double>(n), mx} : Stat{};
}

}  // namespace trainmon::report
