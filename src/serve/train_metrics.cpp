// SPDX-License-Identifier: Apache-2.0
// The training families of /metrics (trainmon_train_*): one series per rank of each live run.
#include <fmt/format.h>

#include <set>
#include <string>

#include "serve/prometheus_text.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/serve/metrics_text.h"

namespace trainmon::serve {

using namespace metrics;

std::string render_train_metrics(std::span<const ipc::LiveRunState> runs, std::string_view hostname) {
  struct Series {
    std::string labels;
    const ipc::LiveRankState* rank;
  };
  std::vector<Series> series;
  for (const auto& run : runs) {
    if (!run.train) continue;
    for (const auto& r : run.ranks) {
      std::string l;
      add_label(l, "Hostname",
                !hostname.empty() ? std::string(hostname)
                : r.host.empty()  ? run.host
                                  : r.host);
      add_label(l, "run_id", std::to_string(run.run_id));
      add_label(l, "run", run.name);
      add_label(l, "rank", r.rank >= 0 ? std::to_string(r.rank) : "");
      add_label(l, "local_rank", r.local_rank >= 0 ? std::to_string(r.local_rank) : "");
      if (r.node_rank >= 0) add_label(l, "node_rank", std::to_string(r.node_rank));
      if (r.rank < 0) add_label(l, "pid", std::to_string(r.pid));  // no RANK: the process tells them apart
      if (r.gpu >= 0) add_label(l, "gpu", std::to_string(r.gpu));
      // The job's labels (Slurm job id, --label ...) so that Prometheus joins the ranks of one job
      // across nodes; our own label names win.
      std::set<std::string> names{"hostname", "run_id", "run",      "rank", "local_rank", "node_rank",
                                  "pid",      "gpu",    "quantile", "le",   "phase"};
      for (const auto& [k, v] : run.labels) {
        auto name = text::prometheus_label_name(k);
        if (!names.insert(name).second) continue;
        add_label(l, name, v);
      }
      series.push_back({std::move(l), &r});
    }
  }
  std::string out;
  if (series.empty()) return out;
  Writer w(out);
  auto family = [&](std::string_view name, std::string_view type, std::string_view help, auto get) {
    bool any = false;
    for (const auto& s : series) {
      const double v = get(*s.rank);
      if (!std::isfinite(v)) continue;
      if (!any) w.family(name, type, help);
      any = true;
      w.sample(s.labels, v);
    }
  };
  family("trainmon_train_steps_total", "counter", "Optimisation steps the rank completed (its own count).",
         [](const ipc::LiveRankState& r) { return r.total_steps; });
  family("trainmon_train_samples_total", "counter", "Samples the rank trained on.",
         [](const ipc::LiveRankState& r) { return r.total_samples; });
  family("trainmon_train_data_wait_seconds_total", "counter",
         "Time the rank's steps waited for the next batch (inside the data loader's next()).",
         [](const ipc::LiveRankState& r) { return r.total_data_s; });
  family("trainmon_train_collective_wait_seconds_total", "counter",
         "Time the rank's main thread waited inside torch.distributed collectives and point-to-point calls "
         "(DDP's gradient buckets included); from protocol v3 senders only.",
         [](const ipc::LiveRankState& r) { return r.total_comm_s; });
  family("trainmon_train_energy_joules_total", "counter",
         "Energy the rank's GPU used while serve watched the rank (NVML total energy counter). A GPU shared "
         "with other ranks or programs counts whole: the GPU's energy, not the rank's share.",
         [](const ipc::LiveRankState& r) { return r.energy_j; });
  family("trainmon_train_last_step_timestamp_seconds", "gauge", "Unix time the rank's last step ended.",
         [](const ipc::LiveRankState& r) { return r.last_step_unix_s; });
  // Where the rank is (the package's phases: data, compute, or idle outside the training loop:
  // evaluation, checkpointing, epoch end): a state set, 1 on the current phase; the rules keep the
  // hang and straggler alerts quiet while a job's rank is idle (docs/cluster.md).
  bool any_phase = false;
  for (const auto& s : series) {
    const auto& ph = s.rank->phase;
    if (ph != "data" && ph != "compute" && ph != "idle") continue;
    if (!any_phase)
      w.family(
          "trainmon_train_phase", "gauge",
          "1 on the rank's current phase of the training loop: data, compute, or idle (outside the loop: "
          "evaluation, checkpointing).");
    any_phase = true;
    for (const char* p : {"data", "compute", "idle"}) {
      std::string l = s.labels;
      add_label(l, "phase", p);
      w.sample(l, ph == p ? 1 : 0);
    }
  }
  family("trainmon_train_phase_since_timestamp_seconds", "gauge", "Unix time the rank's current phase began.",
         [](const ipc::LiveRankState& r) {
           return r.phase == "data" || r.phase == "compute" || r.phase == "idle"
                      ? r.phase_since_unix_s
                      : std::numeric_limits<double>::quiet_NaN();
         });
  // A summary: quantiles over the recent window, _sum and _count the exact totals since the rank
  // started timing (rate(_sum) / rate(_count) is the mean step time over any range).
  bool any = false;
  for (const auto& s : series) {
    const auto& r = *s.rank;
    if (!std::isfinite(r.total_step_s) || !std::isfinite(r.total_steps)) continue;
    if (!any)
      w.family(
          "trainmon_train_step_seconds", "summary",
          fmt::format("Wall time of the rank's steps (end of one step to the end of the next); quantiles "
                      "over the last {:g} s.",
                      ipc::kRunStateRecentS));
    any = true;
    const std::pair<const char*, double> q[] = {
        {"0.5", r.step_p50_s}, {"0.9", r.step_p90_s}, {"0.99", r.step_p99_s}};
    for (const auto& [name, v] : q) {
      std::string l = s.labels;
      add_label(l, "quantile", name);
      w.sample(l, v);
    }
    out += fmt::format("trainmon_train_step_seconds_sum{{{}}} {}\n", s.labels, r.total_step_s);
    out += fmt::format("trainmon_train_step_seconds_count{{{}}} {}\n", s.labels, r.total_steps);
  }
  return out;
}

}  // namespace trainmon::serve
