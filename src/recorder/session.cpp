// SPDX-License-Identifier: Apache-2.0
#include "trainmon/recorder/session.h"

#include "trainmon/core/i18n.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <set>
#include <thread>

#include "trainmon/recorder/job_tree.h"
#include "trainmon/store/chunk_codec.h"
#include "trainmon/store/series_fields.h"
#include "trainmon/store/train_rows.h"
#include "trainmon/store/usage_ledger.h"

namespace trainmon::recorder {
namespace {

bool contains(std::span<const std::uint32_t> sorted, std::uint32_t pid) {
  return std::binary_search(sorted.begin(), sorted.end(), pid);
}

std::int64_t ms_of_ns(std::int64_t ns) {
  return ns / 1'000'000;
}

}  // namespace

store::TickBatch make_tick_batch(const Snapshot& snap, std::span<const std::uint32_t> stored_pids,
                                 std::span<const std::uint32_t> job_pids) {
  // The snapshot's own clock: the identity timeline, nothing clamped.
  return make_tick_batch(snap, stored_pids, job_pids, Timeline{snap.time_unix_ns, snap.monotonic_ns},
                         std::numeric_limits<std::int64_t>::min() / 2,
                         std::numeric_limits<std::int64_t>::max() / 4);
}

store::TickBatch make_tick_batch(const Snapshot& snap, std::span<const std::uint32_t> stored_pids,
                                 std::span<const std::uint32_t> job_pids, const Timeline& timeline,
                                 std::int64_t prev_t_ns, std::int64_t interval_ns) {
  using store::SeriesKind;
  store::TickBatch batch;
  const std::int64_t t_ns = timeline.of(snap);
  const std::int64_t floor_ns = prev_t_ns - kWallReadingSlackNs;
  const std::int64_t ceil_ns = t_ns + interval_ns;
  const std::int64_t t = ms_of_ns(t_ns);
  batch.t_ns = t_ns;
  for (const auto& g : snap.gpus) {
    store::SeriesRow row;
    row.series.kind = SeriesKind::gpu;
    row.series.gpu_index = g.index;
    row.t_ms = t;
    row.values = store::gpu_row(g);
    batch.rows.push_back(std::move(row));
    for (const auto& s : g.gpu_utilization_samples) {
      store::SeriesRow hr;
      hr.series.kind = SeriesKind::gpu_util_hr;
      hr.series.gpu_index = g.index;
      hr.t_ms =
          ms_of_ns(timeline.of_wall(static_cast<std::int64_t>(s.time_us) * 1000, snap, floor_ns, ceil_ns));
      hr.values = {static_cast<std::int64_t>(std::llround(s.value))};
      batch.rows.push_back(std::move(hr));
    }
  }
  {
    store::SeriesRow row;
    row.series.kind = SeriesKind::host;
    row.t_ms = t;
    row.values = store::host_row(snap.host);
    batch.rows.push_back(std::move(row));
  }
  for (const auto& p : snap.processes) {
    if (!contains(stored_pids, p.pid)) continue;
    store::SeriesRow row;
    row.series.kind = SeriesKind::process;
    row.series.pid = p.pid;
    row.series.start_time_ticks = p.start_time_ticks;
    row.series.ppid = p.ppid;
    row.series.comm = p.comm;
    row.series.cmdline = p.cmdline;
    row.series.user = p.user;
    row.series.attribution = p.attribution;
    row.series.in_job = contains(job_pids, p.pid);
    row.t_ms = t;
    row.values = store::process_row(p);
    batch.rows.push_back(std::move(row));
  }
  for (const auto& p : snap.gpu_processes) {
    store::SeriesRow row;
    row.series.kind = SeriesKind::gpu_process;
    row.series.gpu_index = p.gpu_index;
    row.series.pid = p.pid;
    row.series.comm = p.process_name.value_or("");
    // Who it works for, from the local process the join matched (schema 5; the usage ledger).
    if (const ProcessSample* host = host_process_of(snap, p)) {
      row.series.user = host->user;
      row.series.attribution = host->attribution;
    }
    // By number only when the join matched the number to the local process (a container's job
    // pid 12 is not the host's GPU process 12).
    row.series.in_job = joined_to_host(p.host) && contains(job_pids, p.pid);
    row.t_ms = t;
    row.values = store::gpu_process_row(p);
    batch.rows.push_back(std::move(row));
  }
  batch.events = snap.events;
  for (auto& e : batch.events) e.time_unix_ns = timeline.of_wall(e.time_unix_ns, snap, floor_ns, ceil_ns);
  return batch;
}

JobTotals job_totals(const Snapshot& snap, std::span<const std::uint32_t> pids) {
  JobTotals t;
  for (const auto& p : snap.processes) {
    if (!contains(pids, p.pid) || p.state == 'Z') continue;
    ++t.processes;
    t.rss_bytes += p.rss_bytes.value_or(0);
    t.cpu_pct += p.cpu_pct.value_or(0);
  }
  return t;
}

RecorderSession::RecorderSession(SessionOptions options, std::unique_ptr<store::StoreWriter> writer)
    : options_(std::move(options)),
      writer_(std::move(writer)),
      oom_(options_.proc_root, options_.sys_root),
      parents_(options_.proc_root, 0) {}

std::vector<std::uint32_t> RecorderSession::refresh_job_pids() {
  if (!options_.child_pid) return {};
  std::vector<std::uint32_t> roots{*options_.child_pid};
  if (options_.self_pid) roots.push_back(options_.self_pid);
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  job_pids_ = parents_.descendants_of(roots, options_.self_pid, ts.tv_sec * 1'000'000'000LL + ts.tv_nsec);
  oom_.observe_job(job_pids_);  // and forget the processes that are gone (bounded memory)
  return job_pids_;
}

void RecorderSession::tick(const Snapshot& snap) {
  tick(snap, TrainUpdate{}, std::nullopt);
}

void RecorderSession::tick(const Snapshot& snap, std::vector<store::TrainEvent> train_events,
                           std::optional<std::string> epoch) {
  TrainUpdate train;
  train.events = std::move(train_events);
  tick(snap, std::move(train), std::move(epoch));
}

namespace {

/// Store rows of the training ranks' step timing, on the run's clock mapped to Unix time.
void add_train_rows(store::TickBatch& batch, TrainUpdate& train, std::int64_t start_unix_ns) {
  const std::int64_t start_ms = start_unix_ns / 1'000'000;
  for (const auto& [rank, w] : train.windows) {
    store::SeriesRow row;
    row.series.kind = store::SeriesKind::train_rank;
    row.series.rank_key = rank.key;
    row.t_ms = start_ms + static_cast<std::int64_t>(std::llround(w.t * 1e3));
    row.values = store::train_window_row(w, start_ms);
    batch.rows.push_back(std::move(row));
  }
  batch.train_events = std::move(train.events);
  batch.train_ranks = std::move(train.ranks);
  batch.train_stacks = std::move(train.stacks);
}

}  // namespace

void RecorderSession::add_usage_shares(store::TickBatch& batch, const Snapshot& snap) {
  // Each GPU's energy over this tick: the counter's difference since the previous tick when that
  // was at most 1.5 intervals ago, else power.draw x interval (store/usage_ledger.h).
  const double dt_s = static_cast<double>(options_.interval_ns) / 1e9;
  const bool consecutive = prev_energy_mono_ns_ != 0 && snap.monotonic_ns > prev_energy_mono_ns_ &&
                           snap.monotonic_ns - prev_energy_mono_ns_ <= options_.interval_ns * 3 / 2;
  std::vector<std::optional<double>> energy(snap.gpus.size());
  std::vector<std::pair<unsigned, std::uint64_t>> now;
  for (std::size_t i = 0; i < snap.gpus.size(); ++i) {
    const auto& g = snap.gpus[i];
    if (g.total_energy_mj.ok()) {
      now.emplace_back(g.index, *g.total_energy_mj);
      if (consecutive) {
        for (const auto& [idx, mj] : prev_energy_mj_) {
          if (idx == g.index && *g.total_energy_mj >= mj)
            energy[i] = static_cast<double>(*g.total_energy_mj - mj) / 1e3;
        }
      }
    }
    if (!energy[i] && g.power_draw_mw.ok()) energy[i] = static_cast<double>(*g.power_draw_mw) / 1e3 * dt_s;
  }
  prev_energy_mj_ = std::move(now);
  prev_energy_mono_ns_ = snap.monotonic_ns;
  for (const auto& t : store::usage_ticks_of(snap, energy)) {
    for (const auto& share : store::usage_shares(t, dt_s, options_.idle_util_pct)) {
      for (auto& row : batch.rows) {
        if (row.series.kind == store::SeriesKind::gpu_process && row.series.gpu_index == share.gpu_index &&
            row.series.pid == share.pid) {
          row.usage = share;
          break;
        }
      }
    }
  }
}

void RecorderSession::tick(const Snapshot& snap, TrainUpdate train, std::optional<std::string> epoch) {
  const std::int64_t elapsed_ms = (snap.monotonic_ns - options_.start_monotonic_ns) / 1'000'000;
  std::optional<JobTotals> job;
  std::vector<std::uint32_t> stored;
  std::vector<unsigned> job_gpus;
  if (options_.child_pid) {
    last_job_ = job_totals(snap, job_pids_);
    job = last_job_;
    stored = job_pids_;
    for (const auto& gp : snap.gpu_processes) {
      if (joined_to_host(gp.host) && contains(job_pids_, gp.pid)) job_gpus.push_back(gp.gpu_index);
    }
  } else {
    // record: keep the processes using a GPU and everything below them (the machine's jobs).
    std::vector<std::pair<std::uint32_t, std::uint32_t>> parents;
    parents.reserve(snap.processes.size());
    for (const auto& p : snap.processes) parents.emplace_back(p.pid, p.ppid);
    std::vector<std::uint32_t> roots;
    for (const auto& gp : snap.gpu_processes)
      if (joined_to_host(gp.host)) roots.push_back(gp.pid);  // not another namespace's number
    stored = descendants(parents, roots);
  }
  stats_.add(snap, elapsed_ms, job, job_gpus);

  if (writer_) {
    auto batch = make_tick_batch(snap, stored, job_pids_, timeline(), prev_t_ns_, options_.interval_ns);
    if (options_.child_pid) {
      // `run`: the job's OOM kills since its start and its memory cgroup limit, with the host row (the
      // columns store/series_fields.cpp leaves NULL), for D20 and D3 offline as live.
      static const auto kills_col = store::field_index(store::SeriesKind::host, "job_oom_kills");
      static const auto limit_col = store::field_index(store::SeriesKind::host, "job_memory_limit_bytes");
      const auto kills = oom_.kills_since_start();
      const auto limit = oom_.memory_limit_bytes();
      for (auto& row : batch.rows) {
        if (row.series.kind != store::SeriesKind::host) continue;
        if (kills && kills_col && *kills_col < row.values.size())
          row.values[*kills_col] = static_cast<std::int64_t>(*kills);
        if (limit && limit_col && *limit_col < row.values.size())
          row.values[*limit_col] = static_cast<std::int64_t>(*limit);
      }
    }
    add_usage_shares(batch, snap);
    prev_t_ns_ = batch.t_ns;
    batch.gaps = std::exchange(gaps_, {});
    add_train_rows(batch, train, options_.start_unix_ns);
    std::vector<std::string> ids;
    for (const auto& g : snap.gpus) {
      ids.push_back(g.info && g.info->uuid.ok() ? *g.info->uuid : fmt::format("#{}", g.index));
    }
    // The GPU list (and which GPUs the job uses) is sent when it changes.
    std::sort(job_gpus.begin(), job_gpus.end());
    job_gpus.erase(std::unique(job_gpus.begin(), job_gpus.end()), job_gpus.end());
    for (auto i : job_gpus) ids.push_back(fmt::format("used{}", i));
    if (ids != gpu_ids_) {
      gpu_ids_ = ids;
      std::vector<store::RunGpu> gpus;
      auto summary = stats_.summary();
      for (const auto& g : snap.gpus) {
        store::RunGpu r;
        r.index = g.index;
        if (g.info) {
          r.uuid = g.info->uuid.value_or("");
          r.name = g.info->name.value_or("");
          r.pci_bus_id = g.info->pci_bus_id.value_or("");
          if (g.info->memory_total_bytes.ok()) r.memory_total_bytes = *g.info->memory_total_bytes;
          if (g.info->power_default_limit_mw.ok()) r.power_limit_mw = *g.info->power_default_limit_mw;
        }
        if (!r.memory_total_bytes && g.memory_total_bytes.ok()) r.memory_total_bytes = *g.memory_total_bytes;
        for (const auto& s : summary.gpus) {
          if (s.index == g.index) r.used_by_job = s.used_by_job;
        }
        gpus.push_back(std::move(r));
      }
      batch.gpus = std::move(gpus);
    }
    writer_->push(std::move(batch));
    report_store_notices();
  }

  if (options_.print_every_ms > 0 && !options_.quiet &&
      elapsed_ms - last_print_ms_ >= options_.print_every_ms) {
    last_print_ms_ = elapsed_ms;
    // One line per interval: a training process that prints its own (the package's callbacks)
    // makes trainmon quiet.
    if (!(options_.rank_prints_lines && options_.rank_prints_lines())) {
      if (!epoch && options_.epoch) epoch = options_.epoch();
      std::optional<diagnose::TrainStats> train_now;
      if (options_.train) train_now = options_.train(static_cast<double>(options_.print_every_ms) / 1e3);
      std::fprintf(
          options_.out, "%s\n",
          format_resource_line(snap, elapsed_ms, job, epoch, train_now ? &*train_now : nullptr).c_str());
      std::fflush(options_.out);
    }
  }
}

void RecorderSession::add_train_events(std::vector<store::TrainEvent> train_events) {
  TrainUpdate train;
  train.events = std::move(train_events);
  add_train(std::move(train));
}

void RecorderSession::add_train(TrainUpdate train) {
  if (!writer_ ||
      (train.events.empty() && train.windows.empty() && train.ranks.empty() && train.stacks.empty()))
    return;
  store::TickBatch batch;
  add_train_rows(batch, train, options_.start_unix_ns);
  writer_->push(std::move(batch));
}

void RecorderSession::note_skipped_ticks(std::int64_t first_monotonic_ns, std::int64_t last_monotonic_ns,
                                         std::int64_t ticks, std::string detail) {
  if (ticks <= 0) return;
  const Timeline tl = timeline();
  gaps_.push_back(store::RecordingGap{tl.at(first_monotonic_ns), tl.at(last_monotonic_ns), ticks,
                                      std::string(store::kGapSamplingStalled), std::move(detail)});
}

std::int64_t RecorderSession::run_id() const {
  return writer_ ? writer_->run_id() : 0;
}

bool RecorderSession::report_store_notices() {
  if (!writer_) return false;
  auto notices = writer_->take_notices();
  for (const auto& n : notices) std::fprintf(options_.out, "trainmon: %s\n", n.c_str());
  if (!notices.empty()) std::fflush(options_.out);
  return !notices.empty();
}

void RecorderSession::set_live_findings(std::vector<diagnose::Finding> findings, std::vector<bool> open) {
  if (writer_) writer_->set_live_findings(std::move(findings), std::move(open));
}

std::optional<Error> RecorderSession::finish(const store::RunEnd& end,
                                             std::optional<std::vector<diagnose::Finding>> findings,
                                             std::chrono::nanoseconds wait,
                                             const std::function<bool()>& give_up) {
  if (!writer_) return std::nullopt;
  if (!gaps_.empty()) {
    store::TickBatch last;
    last.gaps = std::exchange(gaps_, {});
    writer_->push(std::move(last));
  }
  writer_->request_finish(end, std::move(findings));
  const auto deadline = std::chrono::steady_clock::now() + wait;
  bool said = false;
  for (;;) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds(0)) break;
    if (writer_->wait_finished(std::min<std::chrono::nanoseconds>(left, std::chrono::milliseconds(200))))
      break;
    report_store_notices();
    if (!said && writer_->retrying_error() && wait - left >= std::chrono::seconds(1)) {
      said = true;
      const auto seconds = static_cast<long long>(std::llround(std::chrono::duration<double>(wait).count()));
      std::fputs(
          (give_up
               ? i18n::trf("trainmon: waiting up to {} s for the run store to record the run's end ({}); "
                           "Ctrl-C gives up\n",
                           seconds, writer_->retrying_error()->message)
               : i18n::trf("trainmon: waiting up to {} s for the run store to record the run's end ({})\n",
                           seconds, writer_->retrying_error()->message))
              .c_str(),
          options_.out);
      std::fflush(options_.out);
    }
    if (give_up && give_up()) break;
  }
  auto r = writer_->finish(end, std::chrono::nanoseconds(0));
  report_store_notices();
  if (!r) return r.error();
  return std::nullopt;
}

}  // namespace trainmon::recorder
