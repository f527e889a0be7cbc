// SPDX-License-Identifier: Apache-2.0
// The job report's reading (job_history.h): the job's span and scrape interval, the jobs Prometheus
// knows, the range queries; their answers are filed by job_series.cpp and job_alerts.cpp.
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

using job_parts::kHostMetrics;
using job_parts::kRankMetrics;
using job_parts::label;
using job_parts::utc;

namespace {

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
