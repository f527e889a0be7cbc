// SPDX-License-Identifier: Apache-2.0
// The charts of a report: which series each chart draws, reduced onto one shared time grid.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "report/reduce.h"
#include "report/report_model.h"
#include "report/report_train.h"
#include "trainmon/core/i18n.h"

namespace trainmon::report {
namespace {

using nlohmann::json;
constexpr double kMiB = 1024.0 * 1024.0;

/// Two decimals are plenty on a chart and keep the page small; under 1, four significant digits (a
/// step of 4.2 ms is 0.0042 s).
json number_or_null(float v) {
  if (std::isnan(v) || std::isinf(v)) return nullptr;
  const double d = v;
  if (d != 0 && std::abs(d) < 1) {
    const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::abs(d))));
    return std::round(d * scale) / scale;
  }
  return std::round(d * 100.0) / 100.0;
}

json to_array(const std::vector<float>& v) {
  json a = json::array();
  auto& arr = a.get_ref<json::array_t&>();
  arr.reserve(v.size());
  for (float x : v) arr.push_back(number_or_null(x));
  return a;
}

struct SeriesSpec {
  std::string label;
  std::string scale = "y";
  bool envelope = true;    ///< emit min / max when buckets hold several samples
  bool span_gaps = false;  ///< sparse series (events): connect the points across empty buckets
  bool dash = false;       ///< a limit or threshold line
};

class ChartSet {
 public:
  explicit ChartSet(const Grid& grid) : grid_(grid) {}

  /// Starts a chart; series are added to it with `series`; `done` keeps it when it has data.
  void begin(std::string id, std::string group, std::string title, std::string unit,
             std::optional<unsigned> gpu, std::string kind) {
    chart_ = json::object();
    chart_["id"] = std::move(id);
    chart_["group"] = std::move(group);
    chart_["title"] = std::move(title);
    chart_["unit"] = std::move(unit);
    chart_["gpu"] = gpu ? json(*gpu) : json(nullptr);
    chart_["kind"] = std::move(kind);
    chart_["series"] = json::array();
    data_series_ = 0;
  }
  void range(double lo, double hi) {
    chart_["y_min"] = lo;
    chart_["y_max"] = hi;
  }
  /// The chart's series are drawn stacked, each on top of the ones before (their sum is the top).
  void stacked() { chart_["stacked"] = true; }
  void gpus(const std::vector<int>& list) { chart_["gpus"] = list; }
  void second_scale(std::string unit, double lo, double hi) {
    chart_["y2"] = {{"unit", std::move(unit)}, {"min", lo}, {"max", hi}};
  }
  /// Adds a series from samples (t, v); a series without one finite sample is left out.
  void series(const SeriesSpec& s, std::span<const double> t, std::span<const float> v) {
    Envelope e = reduce_to_grid(grid_, t, v);
    if (e.samples == 0) return;
    json j = {{"label", s.label}, {"scale", s.scale}, {"spanGaps", s.span_gaps}, {"dash", s.dash}};
    j["mean"] = to_array(e.mean);
    if (s.envelope && e.spread()) {
      j["min"] = to_array(e.min);
      j["max"] = to_array(e.max);
    }
    chart_["series"].push_back(std::move(j));
    if (!s.dash) ++data_series_;
  }
  void done() {
    if (data_series_ > 0) charts_.push_back(std::move(chart_));
    chart_ = json();
  }
  json take() { return std::move(charts_); }

 private:
  const Grid& grid_;
  json chart_;
  json charts_ = json::array();
  int data_series_ = 0;
};

struct Reason {
  std::uint64_t bit;
  const char* name;
};
// nvmlClocksEventReasons (nvml.h); idle and display-clock reasons are not a slowdown.
constexpr Reason kReasons[] = {
    {0x2, "applications clocks"}, {0x4, "SW power cap"},         {0x8, "HW slowdown"},
    {0x10, "sync boost"},         {0x20, "SW thermal slowdown"}, {0x40, "HW thermal slowdown"},
    {0x80, "HW power brake"},
};

std::vector<float> scaled(const std::vector<float>& v, double factor) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(v[i] * factor);
  return out;
}

void gpu_charts(ChartSet& cs, const diagnose::RunSeries& rs, const diagnose::GpuSeries& g, bool only_gpu) {
  const std::string p = fmt::format("gpu{}-", g.index);
  const std::string group =
      g.name.empty() ? fmt::format("GPU {}", g.index) : fmt::format("GPU {} ({})", g.index, g.name);
  const std::span<const double> t = rs.t;

  cs.begin(p + "util", group, "Utilisation", "%", g.index, "gpu");
  cs.range(0, 100);
  cs.series({"utilization.gpu", "y", false}, t, g.util_gpu_pct);
  cs.series({"utilization.gpu (high-resolution samples)"}, g.hires_util.t, g.hires_util.value);
  cs.series({"utilization.memory"}, t, g.util_mem_pct);
  cs.done();

  cs.begin(p + "mem", group, "Memory", "MiB", g.index, "gpu");
  cs.series({"memory.used"}, t, g.mem_used_mib);
  cs.series({"memory.total", "y", false, false, true}, t, g.mem_total_mib);
  // PyTorch's allocator, from the training process (its rank's device; -1: the only GPU)
  std::vector<double> et;
  std::vector<float> alloc, reserved;
  for (const auto& e : rs.train_events) {
    if (e.torch_allocated_bytes < 0 && e.torch_reserved_bytes < 0) continue;
    if (!(e.gpu == static_cast<int>(g.index) || (e.gpu < 0 && only_gpu))) continue;
    et.push_back(e.t);
    alloc.push_back(e.torch_allocated_bytes < 0 ? diagnose::kNA
                                                : static_cast<float>(e.torch_allocated_bytes / kMiB));
    reserved.push_back(e.torch_reserved_bytes < 0 ? diagnose::kNA
                                                  : static_cast<float>(e.torch_reserved_bytes / kMiB));
  }
  cs.series({"torch allocated", "y", true, true}, et, alloc);
  cs.series({"torch reserved", "y", true, true}, et, reserved);
  cs.done();

  cs.begin(p + "power", group, "Power", "W", g.index, "gpu");
  cs.series({"power.draw"}, t, g.power_w);
  cs.series({"enforced.power.limit", "y", false, false, true}, t, g.power_limit_w);
  cs.done();

  cs.begin(p + "temp", group, "Temperature", "°C", g.index, "gpu");
  cs.series({"temperature.gpu"}, t, g.temp_c);
  cs.series({"slowdown threshold", "y", false, false, true}, t, g.temp_slowdown_c);
  cs.done();

  cs.begin(p + "clock", group, "SM clock and throttle reasons", "MHz", g.index, "gpu");
  cs.second_scale("% of time", 0, 100);
  cs.series({"clocks.sm"}, t, g.sm_clock_mhz);
  cs.series({"clocks.max.sm", "y", false, false, true}, t, g.sm_clock_max_mhz);
  for (const auto& r : kReasons) {
    bool seen = false;
    std::vector<float> v(g.clock_reasons.size(), diagnose::kNA);
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (g.clock_reasons[i] == diagnose::kReasonsNA) continue;
      const bool on = (g.clock_reasons[i] & r.bit) != 0;
      seen = seen || on;
      v[i] = on ? 100.0f : 0.0f;
    }
    if (seen) cs.series({fmt::format("throttle: {}", r.name), "y2", false}, t, v);
  }
  cs.done();
}

void host_charts(ChartSet& cs, const diagnose::RunSeries& rs) {
  const std::span<const double> t = rs.t;
  const auto& h = rs.host;
  cs.begin("host-cpu", "Host", "CPU", "%", std::nullopt, "host");
  cs.range(0, 100);
  cs.series({"CPU busy"}, t, h.cpu_busy_pct);
  cs.series({"iowait"}, t, h.cpu_iowait_pct);
  cs.series({"busiest core"}, t, h.cpu_core_max_pct);
  std::vector<float> job(t.size(), diagnose::kNA);
  for (std::size_t i = 0; i < t.size() && i < rs.job.cpu_pct.size() && i < h.cpu_count.size(); ++i) {
    if (h.cpu_count[i] > 0) job[i] = rs.job.cpu_pct[i] / h.cpu_count[i];
  }
  cs.series({"job CPU (% of machine)"}, t, job);
  cs.done();

  cs.begin("host-mem", "Host", "Memory", "MiB", std::nullopt, "host");
  std::vector<float> used(t.size(), diagnose::kNA);
  for (std::size_t i = 0; i < t.size() && i < h.mem_total_mib.size() && i < h.mem_available_mib.size(); ++i)
    used[i] = h.mem_total_mib[i] - h.mem_available_mib[i];
  cs.series({"used"}, t, used);
  cs.series({"available"}, t, h.mem_available_mib);
  cs.series({"buff/cache"}, t, h.mem_cached_mib);
  cs.series({"job RSS"}, t, rs.job.rss_mib);
  cs.series({"total", "y", false, false, true}, t, h.mem_total_mib);
  cs.done();

  cs.begin("host-disk", "Host", "Disk read", "MiB/s", std::nullopt, "host");
  cs.series({"disk read"}, t, scaled(h.disk_read_bps, 1.0 / kMiB));
  cs.done();
}

void compare_charts(ChartSet& cs, const diagnose::RunSeries& rs) {
  if (rs.gpus.size() < 2) return;
  cs.begin("cmp-util", "All GPUs", "Utilisation per GPU", "%", std::nullopt, "compare");
  cs.range(0, 100);
  for (const auto& g : rs.gpus) cs.series({fmt::format("GPU {}", g.index), "y", false}, rs.t, g.util_gpu_pct);
  cs.done();
  cs.begin("cmp-mem", "All GPUs", "Memory used per GPU", "MiB", std::nullopt, "compare");
  for (const auto& g : rs.gpus) cs.series({fmt::format("GPU {}", g.index), "y", false}, rs.t, g.mem_used_mib);
  cs.done();
}

/// The training loop's charts (docs/report.md), from the data computed on the grid: one value per
/// bucket, drawn at the bucket's x.
void train_charts(ChartSet& cs, const Grid& grid, const diagnose::TrainSeries& train) {
  if (train.empty() || grid.size() == 0) return;
  const TrainChartData d = train_chart_data(grid, train);
  const std::span<const double> x = grid.x;
  const SeriesSpec job{"samples/s", "y", false};
  cs.begin("train-throughput", "Training", "Throughput", "samples/s", std::nullopt, "train");
  cs.gpus(d.gpus);
  cs.series(job, x, d.samples_per_s);
  cs.done();

  cs.begin("train-step", "Training", "Step time: data wait and the rest", "s", std::nullopt, "train");
  cs.gpus(d.gpus);
  const bool split =
      std::any_of(d.data_wait_s.begin(), d.data_wait_s.end(), [](float v) { return !std::isnan(v); });
  if (split) {
    cs.stacked();
    cs.series({"data wait", "y", false}, x, d.data_wait_s);
    cs.series({"compute + sync", "y", false}, x, d.compute_s);
  } else {
    cs.series({"step time", "y", false}, x, d.step_s);
  }
  cs.done();

  if (d.rank_step_s.size() > 1) {
    cs.begin("train-ranks", "Training", "Step time per rank", "s", std::nullopt, "train");
    cs.gpus(d.gpus);
    for (const auto& [label, v] : d.rank_step_s) cs.series({label, "y", false}, x, v);
    cs.done();
  }
}

}  // namespace

void add_charts(json& model, const diagnose::RunSeries& rs, int max_points) {
  const Grid grid = make_grid(rs.t, max_points);
  ChartSet cs(grid);
  train_charts(cs, grid, rs.train);
  compare_charts(cs, rs);
  for (const auto& g : rs.gpus) gpu_charts(cs, rs, g, rs.gpus.size() == 1);
  host_charts(cs, rs);
  model["reduced"] = grid.reduced;
  model["bucket_s"] =
      grid.size() > 0 ? (grid.edges.back() - grid.edges.front()) / static_cast<double>(grid.size()) : 0.0;
  json x = json::array();
  for (double v : grid.x) x.push_back(std::round(v * 1000.0) / 1000.0);
  model["x"] = std::move(x);
  model["charts"] = cs.take();

  // Epoch markers: the end of each epoch (the first rank that reports it), shown 1-based.
  json epochs = json::array();
  std::map<int, double> ends;
  for (const auto& e : rs.train_events) {
    if (e.kind == "epoch_end" && e.epoch >= 0 && !ends.contains(e.epoch)) ends[e.epoch] = e.t;
  }
  for (const auto& [epoch, t] : ends)
    epochs.push_back({{"epoch", epoch + 1}, {"t", std::round(t * 1000.0) / 1000.0}});
  model["epochs"] = std::move(epochs);
}

void add_findings(json& model, const std::vector<diagnose::Finding>& findings) {
  json out = json::array();
  json advice = json::array();
  static const json kNoCharts = json::array();
  const auto it = model.find("charts");
  const json& charts = it != model.end() ? *it : kNoCharts;
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const auto& f = findings[i];
    json j = f;
    j["id"] = fmt::format("f{}", i);
    // Shaded on the charts of its GPUs (and the comparison charts); without GPUs, on every chart.
    json ids = json::array();
    for (const auto& c : charts) {
      bool on = f.gpus.empty() || c["kind"] == "compare";
      if (!on && c["gpu"].is_number()) {
        on = std::find(f.gpus.begin(), f.gpus.end(), c["gpu"].get<unsigned>()) != f.gpus.end();
      }
      // A training chart: also the findings on a GPU one of the ranks uses.
      if (!on && c.contains("gpus")) {
        for (const auto& g : c["gpus"])
          on = on || std::find(f.gpus.begin(), f.gpus.end(), g.get<unsigned>()) != f.gpus.end();
      }
      if (on) ids.push_back(c["id"]);
    }
    j["charts"] = std::move(ids);
    if (f.code == "D22")
      advice.push_back({{"evidence", f.evidence}, {"advice", f.advice}, {"numbers", f.numbers}});
    out.push_back(std::move(j));
  }
  model["findings"] = std::move(out);
  // What people read, in their language (core/i18n.h), beside the English the JSON format keeps:
  // the Markdown and HTML writers show these; render_report drops them from the JSON format.
  if (!i18n::language().empty()) {
    json shown = json::array();
    for (const auto& f : findings)
      shown.push_back({{"title", diagnose::shown_title(f)},
                       {"evidence", diagnose::shown_evidence(f)},
                       {"advice", diagnose::shown_advice(f)}});
    model["findings_shown"] = std::move(shown);
  }
  model["batch_advice"] = std::move(advice);
}

}  // namespace trainmon::report
