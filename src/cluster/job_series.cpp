// SPDX-License-Identifier: Apache-2.0
// The job report's series (job_history.h): the answers of job_range_queries filed into the nodes' GPU
// and host columns and the ranks' training windows on the report's time grid.
#include <algorithm>
#include <cmath>
#include <map>

#include "cluster/job_history_parts.h"
#include "trainmon/cluster/job_history.h"

namespace trainmon::cluster {

using job_parts::int_label;
using job_parts::kHostMetrics;
using job_parts::kRankMetrics;
using job_parts::label;
using job_parts::Metric;

namespace {

constexpr double kMiB = 1048576.0;

}  // namespace

void add_job_series(JobHistory& h, const std::vector<PromSeries>& series) {
  const std::size_t n = h.t.size();
  std::map<std::string, JobNode> nodes;
  auto node = [&](const std::string& host) -> JobNode& {
    auto [it, fresh] = nodes.try_emplace(host);
    if (fresh) {
      it->second.host = host;
      diagnose::append_empty_rows(it->second.series, h.t);
    }
    return it->second;
  };
  auto row = [&](double t_unix) -> long {
    if (h.step_s <= 0) return -1;
    const double k = std::round((t_unix - h.start_unix_s) / h.step_s);
    return k >= 0 && k < static_cast<double>(n) ? static_cast<long>(k) : -1;
  };
  // ranks: identity and per-row totals
  struct RankRows {
    diagnose::TrainRank id;
    std::map<std::string, std::vector<double>> v;  // by key ("steps", ..., "q0.5") per row
  };
  std::map<std::string, RankRows> ranks;
  // trainmon_gpu_memory_total_bytes by (host, GPU index), MiB per row
  std::map<std::pair<std::string, unsigned>, std::vector<float>> totals;
  const auto total_of = [&](const std::string& host, unsigned gpu) -> std::vector<float>& {
    auto& t = totals[{host, gpu}];
    if (t.empty()) t.assign(n, NAN);
    return t;
  };
  for (const auto& s : series) {
    const auto key = label(s.labels, "trainmon_m");
    const auto host = label(s.labels, "Hostname");
    if (host.empty()) continue;
    if (key == "info") {
      node(host);
      continue;
    }
    const bool rank_metric = std::any_of(std::begin(kRankMetrics), std::end(kRankMetrics),
                                         [&](const Metric& m) { return key == m.key; });
    if (rank_metric) {
      auto l = s.labels;
      for (const char* k : {"__name__", "trainmon_m", "quantile", "instance", "job"}) l.erase(k);
      std::string id;
      for (const auto& [k, v] : l) id += k + "=" + v + ",";
      auto& r = ranks[id];
      if (r.v.empty()) {
        r.id.rank = int_label(s.labels, "rank");
        r.id.local_rank = int_label(s.labels, "local_rank");
        r.id.node_rank = int_label(s.labels, "node_rank");
        r.id.gpu = int_label(s.labels, "gpu");
        r.id.host = host;
      }
      const std::string col = key == "step_q" ? "q" + label(s.labels, "quantile") : key;
      auto& c = r.v[col];
      if (c.empty()) c.assign(n, NAN);
      for (const auto& [t, v] : s.points)
        if (const long i = row(t); i >= 0) c[static_cast<std::size_t>(i)] = v;
      continue;
    }
    auto& nd = node(host);
    auto& rs = nd.series;
    const int idx = int_label(s.labels, "gpu");
    const bool host_metric = std::any_of(std::begin(kHostMetrics), std::end(kHostMetrics),
                                         [&](const Metric& m) { return key == m.key; });
    if (host_metric) {
      std::vector<float>* col = key == "cpu_busy"        ? &rs.host.cpu_busy_pct
                                : key == "cpu_iowait"    ? &rs.host.cpu_iowait_pct
                                : key == "mem_total"     ? &rs.host.mem_total_mib
                                : key == "mem_available" ? &rs.host.mem_available_mib
                                                         : &rs.host.mem_cached_mib;
      const double f = key.starts_with("cpu") ? 100.0 : 1.0 / kMiB;
      for (const auto& [t, v] : s.points)
        if (const long i = row(t); i >= 0 && std::isfinite(v))
          (*col)[static_cast<std::size_t>(i)] = static_cast<float>(v * f);
      continue;
    }
    if (idx < 0) continue;
    auto& g = diagnose::ensure_gpu(rs, static_cast<unsigned>(idx));
    if (g.name.empty()) g.name = label(s.labels, "modelName");
    for (const auto& [t, v] : s.points) {
      const long i = row(t);
      if (i < 0 || !std::isfinite(v)) continue;
      const auto k = static_cast<std::size_t>(i);
      const auto fv = static_cast<float>(v);
      if (g.state[k] == diagnose::GpuState::absent) g.state[k] = diagnose::GpuState::ok;
      if (key == "util")
        g.util_gpu_pct[k] = fv;
      else if (key == "mem_util")
        g.util_mem_pct[k] = fv;
      else if (key == "fb_used")
        g.mem_used_mib[k] = fv;
      else if (key == "fb_free")
        g.mem_total_mib[k] = std::isnan(g.mem_total_mib[k]) ? fv : g.mem_total_mib[k] + fv;
      else if (key == "fb_reserved")
        g.mem_reserved_mib[k] = fv;
      else if (key == "temp")
        g.temp_c[k] = fv;
      else if (key == "power")
        g.power_w[k] = fv;
      else if (key == "power_limit")
        g.power_limit_w[k] = fv;
      else if (key == "sm_clock")
        g.sm_clock_mhz[k] = fv;
      else if (key == "reasons" && v >= 0)
        g.clock_reasons[k] = static_cast<std::uint64_t>(v);
      else if (key == "up" && v == 0)
        g.state[k] = diagnose::GpuState::lost;
      else if (key == "fb_total")
        total_of(host, g.index)[k] = static_cast<float>(v / kMiB);
    }
  }
  // memory.total: serve's trainmon_gpu_memory_total_bytes (the GPU's, MIG or not), else used + free
  // + reserved (dcgm-exporter's FB fields, MiB, each rounded)
  for (auto& [host, nd] : nodes)
    for (auto& g : nd.series.gpus)
      for (std::size_t k = 0; k < n; ++k) {
        if (auto t = totals.find({host, g.index});
            t != totals.end() && !std::isnan(t->second[k]) && !std::isnan(g.mem_used_mib[k])) {
          g.mem_total_mib[k] = t->second[k];
          continue;
        }
        if (std::isnan(g.mem_total_mib[k]) || std::isnan(g.mem_used_mib[k])) {
          g.mem_total_mib[k] = diagnose::kNA;
          continue;
        }
        g.mem_total_mib[k] +=
            g.mem_used_mib[k] + (std::isnan(g.mem_reserved_mib[k]) ? 0.f : g.mem_reserved_mib[k]);
      }
  // ranks: one TrainWindow per step of the grid, from the cumulative counters' differences
  std::int64_t anonymous = 0;
  for (auto& [id, r] : ranks) {
    r.id.key = r.id.rank >= 0 ? r.id.rank : -1 - (++anonymous);
    const auto col = [&](const char* k) -> const std::vector<double>* {
      auto it = r.v.find(k);
      return it == r.v.end() ? nullptr : &it->second;
    };
    const auto at = [&](const std::vector<double>* c, std::size_t i) { return c ? (*c)[i] : NAN; };
    const auto *steps = col("steps"), *samples = col("samples"), *step_sum = col("step_sum"),
               *data = col("data"), *last = col("last_step"), *p50 = col("q0.5"), *p90 = col("q0.9"),
               *p99 = col("q0.99");
    if (!steps) continue;
    auto& rank = h.train.upsert(r.id);
    double prev_steps = NAN, prev_samples = NAN, prev_sum = NAN, prev_data = NAN;
    bool seen = false;
    for (std::size_t i = 0; i < n; ++i) {
      const double st = at(steps, i);
      if (std::isnan(st)) continue;
      // A counter that began in the range (the range starts with the job, or the rank's series
      // appears after the range's start) counts from 0: the steps before its first scrape are the
      // job's too.
      if (!seen && (h.from_job_start || i > 0)) prev_steps = prev_samples = prev_sum = prev_data = 0;
      seen = true;
      diagnose::TrainWindow w;
      w.t = h.t[i];
      w.total_steps = st;
      w.total_samples = at(samples, i);
      w.total_step_s = at(step_sum, i);
      w.total_data_s = at(data, i);
      if (const double ls = at(last, i); std::isfinite(ls) && ls > 0) w.last_step_t = ls - h.start_unix_s;
      // a counter that went down restarted (a new run): its value is all that came since
      const auto delta = [](double now, double before) -> double {
        if (std::isnan(now)) return NAN;
        if (std::isnan(before)) return NAN;
        return now >= before ? now - before : now;
      };
      const double d_steps = delta(st, prev_steps);
      if (std::isfinite(d_steps) && d_steps > 0) {
        w.steps = static_cast<std::uint32_t>(std::llround(d_steps));
        w.samples = delta(w.total_samples, prev_samples);
        const double d_sum = delta(w.total_step_s, prev_sum), d_data = delta(w.total_data_s, prev_data);
        if (std::isfinite(d_sum)) {
          w.step.sum = static_cast<float>(d_sum);
          w.span_s = static_cast<float>(d_sum);
        }
        if (std::isfinite(d_data)) w.data.sum = static_cast<float>(d_data);
        w.step.p50 = static_cast<float>(at(p50, i));
        w.step.p90 = static_cast<float>(at(p90, i));
        w.step.p99 = static_cast<float>(at(p99, i));
      }
      prev_steps = st;
      prev_samples = w.total_samples;
      prev_sum = w.total_step_s;
      prev_data = w.total_data_s;
      rank.rows.push_back(w);
    }
  }
  for (auto& [host, nd] : nodes) h.nodes.push_back(std::move(nd));
}

}  // namespace trainmon::cluster
