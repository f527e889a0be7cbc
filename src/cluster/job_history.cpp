// SPDX-License-Identifier: Apache-2.0
#include "trainmon/cluster/job_history.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cluster/job_history_parts.h"
#include "cluster/serve_series.h"
#include "trainmon/cluster/cluster_view.h"
#include "trainmon/cluster/job_query.h"
#include "trainmon/diagnose/prom_rules.h"

namespace trainmon::cluster {

using job_parts::int_label;
using job_parts::kHostMetrics;
using job_parts::kRankMetrics;
using job_parts::label;
using job_parts::Metric;
using job_parts::utc;

namespace {

constexpr double kMiB = 1048576.0;

/// (metric, label matchers) of the series whose samples say the job was there: its nodes'
/// trainmon_labels_info, and the info series of the GPU processes attributed to it.
std::vector<std::pair<std::string_view, std::string>> job_presence(std::string_view job) {
  std::vector<std::pair<std::string_view, std::string>> out;
  for (auto& m : job_matchers(job)) out.emplace_back("trainmon_labels_info", std::move(m));
  for (auto& m : attributed_matchers(job)) out.emplace_back("trainmon_gpu_process_info", std::move(m));
  return out;
}

Error job_error(std::string name, std::string message) {
  return Error{ErrorDomain::usage, 0, std::move(name), std::move(message)};
}

/// `agg(agg_over_time(timestamp(SEL)[window:res]) or ...)` over the job's info selectors: the time of
/// its first (min) or last (max) sample seen within the window before `at`. NaN: none.
Expected<double> edge(const PromEndpoint& ep, std::string_view job, bool first, double at, double window_s,
                      double res_s) {
  const char* agg = first ? "min" : "max";
  std::string inner;
  for (const auto& [metric, m] : job_presence(job))
    inner +=
        fmt::format("{}{}_over_time(timestamp({}{{{}}})[{}s:{}s])", inner.empty() ? "" : " or ", agg, metric,
                    m, static_cast<long long>(std::ceil(window_s)), static_cast<long long>(res_s));
  auto r = query(ep, fmt::format("{}({})", agg, inner), at);
  if (!r) return std::unexpected(r.error());
  if (r->empty() || !std::isfinite(r->front().value)) return NAN;
  return r->front().value;
}

/// The first and last bucket end (unix s) within (hi - n * step_s, hi] in which the job's
/// trainmon_labels_info has a sample: one range query of count_over_time per bucket (a range
/// function reads every sample, so no job between two steps is missed, as an instant selector's
/// 5 min lookback would). NaN, NaN: none.
Expected<std::pair<double, double>> active_buckets(const PromEndpoint& ep, std::string_view job, double lo,
                                                   double hi, double step_s) {
  std::string inner;
  for (const auto& [metric, m] : job_presence(job))
    inner += fmt::format("{}count_over_time({}{{{}}}[{}s])", inner.empty() ? "" : " or ", metric, m,
                         static_cast<long long>(step_s));
  const double n = std::max(1.0, std::ceil((hi - lo) / step_s));
  auto r = query_range(ep, fmt::format("sum({})", inner), hi - (n - 1) * step_s, hi, step_s);
  if (!r) return std::unexpected(r.error());
  double first = NAN, last = NAN;
  for (const auto& s : *r)
    for (const auto& [t, v] : s.points)
      if (v > 0) {
        first = std::fmin(first, t);
        last = std::fmax(last, t);
      }
  return std::pair{first, last};
}

}  // namespace

Expected<std::string> known_jobs(const PromEndpoint& ep, double at, double window_s) {
  std::string by;
  for (auto k : kJobLabels) by += (by.empty() ? "" : ", ") + std::string(k);
  auto r = query(ep,
                 fmt::format("group by (Hostname, {}) (last_over_time(trainmon_labels_info[{}s]))", by,
                             static_cast<long long>(std::ceil(window_s))),
                 at);
  if (!r) return std::unexpected(r.error());
  std::set<std::string> jobs, bare;
  for (const auto& s : *r) {
    const auto id = job_id_of(s.labels);
    (id.empty() ? bare : jobs).insert(id.empty() ? label(s.labels, "Hostname") : id);
  }
  // the jobs of the GPU processes of nodes where serve runs outside the jobs (docs/cluster.md 10)
  auto held = query(ep,
                    fmt::format("group by (job_id, namespace, pod, pod_uid) "
                                "(last_over_time(trainmon_gpu_process_info[{}s]))",
                                static_cast<long long>(std::ceil(window_s))),
                    at);
  if (held)
    for (const auto& s : *held)
      if (auto id = attributed_job_of(s.labels); !id.empty()) jobs.insert(std::move(id));
  if (jobs.empty() && bare.empty())
    return std::string("none (no node's trainmon_labels_info: is serve scraped?)");
  std::string out;
  std::size_t n = 0;
  for (const auto& j : jobs) {
    if (++n > 20) {
      out += fmt::format(" and {} more", jobs.size() - 20);
      break;
    }
    out += (out.empty() ? "" : ", ") + j;
  }
  if (jobs.empty()) out = "none";
  if (!bare.empty())
    out += fmt::format(" ({} node{} without a job id)", bare.size(), bare.size() == 1 ? "" : "s");
  return out;
}

std::vector<std::pair<std::string, std::string>> job_range_queries(std::string_view job) {
  const std::string nodes = job_selector("trainmon_labels_info", job);
  // The GPUs its processes hold on nodes where serve runs outside the jobs (docs/cluster.md 10).
  const std::string held = attributed_selector(job);
  std::vector<std::pair<std::string, std::string>> q;
  q.emplace_back("info", fmt::format("{} or group by (Hostname) ({})", nodes, held));
  for (const auto& m : kServeGpuSeries)
    q.emplace_back(m.key, fmt::format("{0} and on (Hostname) ({1}) or {0} and on (Hostname, gpu) ({2})",
                                      per_gpu(m, m.name), nodes, held));
  for (const auto& m : kHostMetrics)
    q.emplace_back(m.key, fmt::format("{0} and on (Hostname) ({1}) or {0} and on (Hostname) ({2})", m.name,
                                      nodes, held));
  for (const auto& m : kRankMetrics) q.emplace_back(m.key, job_selector(m.name, job));
  return q;
}

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

Expected<JobHistory> read_job_history(const JobHistoryOptions& o, double now_unix_s) {
  if (o.job.empty()) return std::unexpected(job_error("USAGE", "no job id given"));
  // Prometheus has nothing after now: a --to in the future ends the range now (and the search for
  // the job looks back from now, not from that future time).
  if (std::isfinite(o.from_unix_s) && o.from_unix_s > now_unix_s)
    return std::unexpected(job_error(
        "EMPTY_RANGE", fmt::format("--from {} is in the future (now is {}): Prometheus has nothing after now",
                                   utc(o.from_unix_s), utc(now_unix_s))));
  const double to = std::isfinite(o.to_unix_s) ? std::min(o.to_unix_s, now_unix_s) : now_unix_s;
  if (std::isfinite(o.from_unix_s) && o.from_unix_s >= to)
    return std::unexpected(job_error(
        "EMPTY_RANGE",
        fmt::format("the range is empty: --from {} is not before --to {}", utc(o.from_unix_s), utc(to))));
  // The job's first and last sample that Prometheus has, looked for from now back to --from, or
  // search_s before --to (never from a --to in the future: nothing is there): the hours with
  // samples, in them the minutes, in those the seconds. The range is then cut to that span.
  const double at = now_unix_s;
  const double window = std::max(
      {o.search_s, std::isfinite(o.from_unix_s) ? at - o.from_unix_s + 60 : 0.0, at - to + o.search_s});
  // buckets of whole hours, at most 10,000 of them (Prometheus answers at most 11,000 points)
  const double coarse_s = 3600 * std::max(1.0, std::ceil(window / 10000 / 3600));
  auto hours = active_buckets(o.endpoint, o.job, at - window, at, coarse_s);
  if (!hours) return std::unexpected(hours.error());
  if (std::isnan(hours->first)) {
    auto jobs = known_jobs(o.endpoint, at, window);
    if (!jobs) return std::unexpected(jobs.error());
    return std::unexpected(
        job_error("JOB_NOT_FOUND",
                  fmt::format("Prometheus {} has no node of job {} between {} and {}; the jobs it has: {}",
                              o.endpoint.base_url, o.job, utc(at - window), utc(at), *jobs)));
  }
  auto first_min = active_buckets(o.endpoint, o.job, hours->first - coarse_s, hours->first, 60);
  if (!first_min) return std::unexpected(first_min.error());
  auto last_min = active_buckets(o.endpoint, o.job, hours->second - coarse_s, hours->second, 60);
  if (!last_min) return std::unexpected(last_min.error());
  // in the minute: the sample times themselves (timestamp() of the selector, every second)
  auto first = edge(o.endpoint, o.job, true, first_min->first, 60, 1);
  if (!first) return std::unexpected(first.error());
  auto last = edge(o.endpoint, o.job, false, last_min->second, 60, 1);
  if (!last) return std::unexpected(last.error());
  const double first_s = std::isfinite(*first) ? *first : first_min->first - 60;
  const double last_s = std::isfinite(*last) ? *last : last_min->second;

  JobHistory h;
  h.job = o.job;
  h.prometheus = o.endpoint.base_url;
  // The report covers the part of the range with the job's samples: a range wider than the job
  // (--from -30d) neither coarsens the step nor puts the job between two points.
  const auto span = clamp_to_job(o.from_unix_s, to, first_s, last_s);
  if (!span)
    return std::unexpected(job_error(
        "EMPTY_RANGE", fmt::format("job {} has no samples between {} and {}; Prometheus has it from {} to {}",
                                   o.job, utc(std::isfinite(o.from_unix_s) ? o.from_unix_s : first_s),
                                   utc(to), utc(first_s), utc(last_s))));
  h.start_unix_s = span->start_unix_s;
  h.end_unix_s = span->end_unix_s;
  h.from_job_start = h.start_unix_s <= first_s;
  if (std::isfinite(o.to_unix_s) && o.to_unix_s > now_unix_s + 1)
    h.notes.push_back(
        fmt::format("--to {} is in the future: the range ends now ({})", utc(o.to_unix_s), utc(now_unix_s)));
  if (h.end_unix_s <= h.start_unix_s) h.end_unix_s = h.start_unix_s + 1;  // one sample
  // No finer than the scrape interval (the points in between would repeat the last sample): the
  // interval from the number of samples of the job's busiest node over its last hour (at most).
  double scrape_s = 1;
  {
    const double w = std::clamp(last_s - first_s, 1.0, 3600.0);
    std::string inner;
    for (const auto& [metric, m] : job_presence(o.job))
      inner += fmt::format("{}count_over_time({}{{{}}}[{}s])", inner.empty() ? "" : " or ", metric, m,
                           static_cast<long long>(std::ceil(w)));
    auto counts = query(o.endpoint, fmt::format("max({})", inner), last_s);
    if (!counts) return std::unexpected(counts.error());
    if (!counts->empty() && counts->front().value > 1) scrape_s = std::floor(w / (counts->front().value - 1));
  }
  h.scrape_s = std::clamp(scrape_s, 1.0, 300.0);
  h.step_s = range_step_s(h.start_unix_s, h.end_unix_s, o.max_points, h.scrape_s);
  for (double t = h.start_unix_s; t <= h.end_unix_s + 1e-6; t += h.step_s) h.t.push_back(t - h.start_unix_s);

  // One range query per series kind: Prometheus joins a chain of `or` step by step, and one query of
  // them all took 300 times as long as these (bench/compare_cluster_top.sh).
  std::vector<PromSeries> series;
  for (const auto& [key, promql] : job_range_queries(o.job)) {
    auto part = query_range(o.endpoint, promql, h.start_unix_s, h.end_unix_s, h.step_s);
    if (!part) return std::unexpected(part.error());
    for (auto& x : *part) {
      x.labels["trainmon_m"] = key;
      series.push_back(std::move(x));
    }
  }
  add_job_series(h, series);
  if (h.nodes.empty())
    return std::unexpected(
        job_error("EMPTY_RANGE",
                  fmt::format("job {}'s nodes sent no series Prometheus kept between {} and {} (its "
                              "trainmon_labels_info is there from {} to {})",
                              o.job, utc(h.start_unix_s), utc(h.end_unix_s), utc(first_s), utc(last_s))));
  auto fired =
      query_range(o.endpoint, job_alerts_query(o.job, h.step_s), h.start_unix_s, h.end_unix_s, h.step_s);
  std::vector<PromAlert> live;
  if (auto a = alerts(o.endpoint)) live = std::move(*a);
  if (fired) {
    add_job_alerts(h, *fired, live);
    // The job's own hang (one alert per job_id, no node or rank label): its ranks, nodes and longest
    // stall over the episode, from the recording rule the alert is made of.
    for (auto& jf : h.findings) {
      if (jf.finding.code != "D23" || !jf.host.empty()) continue;
      const double t1 = h.start_unix_s + jf.finding.end_s,
                   dur = jf.finding.end_s - jf.finding.start_s + h.step_s;
      auto stalled = query(o.endpoint,
                           fmt::format("max_over_time(trainmon:rank_stalled:seconds{{job_id={}}}[{}s])",
                                       promql_string(o.job), static_cast<long long>(std::ceil(dur))),
                           t1);
      if (stalled) add_hang_ranks(jf, *stalled);
    }
  } else
    h.notes.push_back("the job's alerts could not be read: " + fired.error().message);
  if (h.train.empty())
    h.notes.push_back("no rank of the job exported step timing (trainmon_train_*) in the range");
  return h;
}

}  // namespace trainmon::cluster
