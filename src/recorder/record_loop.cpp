// SPDX-License-Identifier: Apache-2.0
#include "trainmon/recorder/record_loop.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"

#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trainmon/core/clock.h"
#include "trainmon/core/timeline.h"
#include "trainmon/diagnose/engine.h"
#include "trainmon/recorder/job_tree.h"
#include "trainmon/recorder/labels.h"
#include "trainmon/recorder/monitor_loop.h"
#include "trainmon/recorder/recording.h"
#include "trainmon/recorder/session.h"
#include "trainmon/runner/launcher.h"
#include "trainmon/sampler/sampler.h"

extern char** environ;

namespace trainmon::recorder {
namespace {

void apply_retention(const RecordLoopOptions& o) {
  const auto& policy = o.retention;
  if (!policy.delete_after_ns && !policy.downsample_after_ns) return;
  auto s = store::Store::open(o.db_path, store::OpenMode::read_write);
  if (!s) return;
  auto r = s->apply_retention(now_ns(CLOCK_REALTIME), policy);
  if (!r) {
    std::fprintf(stderr, "trainmon %s: retention failed: %s\n", o.tool.c_str(), r.error().message.c_str());
  } else if (!o.quiet && (r->runs_deleted || r->chunks_downsampled || r->chunks_deleted)) {
    std::fprintf(stderr, "trainmon %s: retention: %lld runs deleted, %lld chunks downsampled, %lld deleted\n",
                 o.tool.c_str(), static_cast<long long>(r->runs_deleted),
                 static_cast<long long>(r->chunks_downsampled), static_cast<long long>(r->chunks_deleted));
  }
}

/// Retention on its own thread and connection, at start and hourly: deleting a month of samples, or
/// waiting for a store another process holds locked, never stalls sampling.
class RetentionThread {
 public:
  explicit RetentionThread(const RecordLoopOptions& o) : o_(o) {
    if (!o_.retention.delete_after_ns && !o_.retention.downsample_after_ns) return;
    thread_ = std::thread([this] {
      std::unique_lock lock(mu_);
      while (!stop_) {
        lock.unlock();
        apply_retention(o_);
        lock.lock();
        cv_.wait_for(lock, std::chrono::hours(1), [&] { return stop_; });
      }
    });
  }
  ~RetentionThread() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  RetentionThread(const RetentionThread&) = delete;
  RetentionThread& operator=(const RetentionThread&) = delete;

 private:
  const RecordLoopOptions& o_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

/// What record and serve do at the steps of the one loop (monitor_loop.h).
class DaemonHooks final : public MonitorHooks {
 public:
  DaemonHooks(const RecordLoopOptions& o, std::int64_t start_unix, std::int64_t start_mono)
      : o_(o), start_unix_(start_unix), start_mono_(start_mono) {}

  std::vector<std::uint32_t> watch_pids(std::int64_t now_mono_ns) override {
    if (gpu_pids_.empty()) return {};
    return parents_.descendants_of(gpu_pids_, 0, now_mono_ns);
  }
  void on_sample(const Snapshot& snap, TrainUpdate&, std::optional<std::string>&) override {
    gpu_pids_.clear();
    // The trees to watch grow from the GPU processes seen here, never from a number that means
    // another process in this PID namespace (gpu_process_join.h).
    for (const auto& p : snap.gpu_processes)
      if (joined_to_host(p.host)) gpu_pids_.push_back(p.pid);
  }
  diagnose::JobContext job_context(const std::vector<std::uint32_t>&) override {
    return diagnose::JobContext{start_unix_, 0, {}, std::nullopt, start_mono_};
  }
  bool tick_failed(const std::exception& e) override {
    std::fprintf(stderr, "trainmon %s: tick failed: %s\n", o_.tool.c_str(), e.what());
    return true;
  }
  void observer_failed(const std::exception& e) override {
    std::fprintf(stderr, "trainmon %s: an observer failed and is off from now on: %s\n", o_.tool.c_str(),
                 e.what());
  }
  Wake wait_until(std::int64_t next, bool) override {
    // --duration D lasts D from the start, whatever the set-up took: the last tick is the one at or
    // before start + D, then the rest of D is waited out (a signal still ends it at once).
    std::int64_t wake = next;
    const bool last = o_.stop_after_ns && next - start_mono_ > *o_.stop_after_ns;
    if (last) wake = start_mono_ + *o_.stop_after_ns;
    for (;;) {
      std::int64_t left = wake - now_ns(CLOCK_MONOTONIC);
      if (left <= 0) break;
      auto ev = runner::wait_for_event(0, std::chrono::nanoseconds(left));
      if (ev.kind == runner::Event::signal) {
        stop_signal = ev.signal_number;
        break;
      }
    }
    if (last) return Wake::stop;
    return stop_signal ? Wake::stop_after_gap : Wake::tick;
  }

  int stop_signal = 0;  ///< the signal that stopped the recording (0: --duration)

 private:
  const RecordLoopOptions& o_;
  std::int64_t start_unix_;
  std::int64_t start_mono_;
  std::vector<std::uint32_t> gpu_pids_;
  // The GPU processes' children (data-loader workers, ...) are found again at most every 5 s when
  // other processes appear on the machine, at once for a new GPU process: a daemon must not scan
  // all of /proc every second on a node with thousands of processes.
  ParentTable parents_{o_.proc_root, 5'000'000'000LL};
};

}  // namespace

int run_record_loop(const RecordLoopOptions& o, std::span<diagnose::TickObserver* const> observers) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);

  const std::int64_t start_unix = now_ns(CLOCK_REALTIME);
  const std::int64_t start_mono = now_ns(CLOCK_MONOTONIC);
  const Timeline timeline{start_unix, start_mono};  // every stored time: core/timeline.h
  store::RunInfo info = this_process_run_info(o.kind, o.name, start_unix, start_mono);
  info.labels = collect_labels(o.labels, env);
  info.thresholds = diagnose::threshold_changes(o.thresholds);  // `diagnose` of the run judges it alike
  info.interval_ms = o.interval_ns / 1'000'000;
  // A store that can never be written ends here (status 1); one that is locked or full now is
  // retried by the writer while sampling starts.
  auto rec = start_recording(o.db_path, info, std::chrono::seconds(1));
  if (!rec) {
    std::fprintf(stderr, "trainmon %s: %s\n", o.tool.c_str(), rec.error().message.c_str());
    return 1;
  }
  const std::int64_t run_id = rec->run_id;
  if (!o.quiet) {
    if (run_id) {
      std::fprintf(stderr, "trainmon %s: recording run %lld into %s\n", o.tool.c_str(),
                   static_cast<long long>(run_id), o.db_path.c_str());
    } else {
      std::fprintf(stderr,
                   "trainmon %s: the run store %s is busy; recording starts as soon as it accepts writes\n",
                   o.tool.c_str(), o.db_path.c_str());
    }
  }
  RetentionThread retention(o);

  SamplerOptions so;
  so.backend.library_path = o.nvml_library;
  so.host.proc_root = o.proc_root;
  so.host.sys_root = o.sys_root;
  if (!o.pod_logs_root.empty()) so.host.pod_logs_root = o.pod_logs_root;
  // Not every process: only the trees below the GPU processes of the previous tick, found from the
  // parent pids in /proc/*/stat (one small read each, and only when some process uses a GPU).
  so.host.all_processes = false;
  // A hung GPU or driver never stretches a tick, nor delays a signal (docs/fake-nvml.md hangs).
  so.backend.tick_wait = tick_wait_for(std::chrono::nanoseconds(o.interval_ns), so.backend.device_timeout);
  so.backend.init_wait = so.backend.tick_wait;
  so.backend.stop_requested = runner::stop_signal_pending;
  Sampler sampler(so);
  if (const DriverInfo d = sampler.driver_info(); !d.loaded && !o.quiet)
    std::fputs(i18n::trf("trainmon {}: GPUs not monitored: {}\n", o.tool, text::terminal(d.error)).c_str(),
               stderr);
  SessionOptions opts;
  opts.self_pid = static_cast<std::uint32_t>(::getpid());
  opts.proc_root = o.proc_root;
  opts.sys_root = o.sys_root;
  opts.print_every_ms = o.print_every_ns / 1'000'000;
  opts.quiet = o.quiet;
  opts.idle_util_pct = o.thresholds.idle_util_pct;
  opts.start_monotonic_ns = start_mono;
  opts.start_unix_ns = start_unix;
  opts.interval_ns = o.interval_ns;
  RecorderSession session(opts, std::move(rec->writer));
  // The live diagnosis of a daemon keeps one hour: bounded memory for runs of weeks.
  diagnose::LiveDiagnosis live(o.thresholds, diagnose::LiveOptions{.retain_s = 3600});

  MonitorLoopOptions mo;
  mo.interval_ns = o.interval_ns;
  mo.start_unix_ns = start_unix;
  mo.start_mono_ns = start_mono;
  mo.live_findings = LiveFindings::merged_episodes;
  DaemonHooks hooks(o, start_unix, start_mono);
  MonitorLoop loop(mo, &sampler, &session, o.diagnose ? &live : nullptr, observers, hooks);
  loop.start_observers(diagnose::StartContext{o.tool, run_id, o.name, o.db_path, start_unix});
  loop.run();
  const int stop_signal = hooks.stop_signal;
  loop.finish_observers();
  auto summary = session.summary();
  std::optional<std::vector<diagnose::Finding>> findings;
  if (o.diagnose) {
    try {
      findings = loop.merged(live.finish(diagnose::JobFacts{}));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trainmon %s: no diagnosis: %s\n", o.tool.c_str(), e.what());
    }
  }
  // The end and the findings in one transaction, waiting (bounded) for a store that refuses writes
  // now; another signal stops the wait.
  store::RunEnd end{timeline.at(now_ns(CLOCK_MONOTONIC)), "stopped", std::nullopt, std::nullopt,
                    summary_to_json(summary)};
  auto give_up = [] {
    return runner::wait_for_event(0, std::chrono::milliseconds(20)).kind == runner::Event::signal;
  };
  auto err = session.finish(end, findings, std::chrono::seconds(30), give_up);
  if (err) {
    std::fprintf(stderr, "trainmon %s: the run's end was not recorded: %s\n", o.tool.c_str(),
                 err->message.c_str());
  }
  std::optional<std::int64_t> finding_count;
  if (findings && !err) finding_count = static_cast<std::int64_t>(findings->size());
  if (!o.quiet) {
    const std::string what = stop_signal
                                 ? i18n::trf("recording stopped by {}", runner::signal_name(stop_signal))
                                 : std::string(i18n::tr("recording stopped"));
    std::fputs(format_summary(summary, what, session.run_id(), finding_count).c_str(), stderr);
    for (const auto& f : loop.seen()) std::fprintf(stderr, "  %s\n", diagnose::to_text(f).c_str());
  }
  return err ? 1 : 0;
}

}  // namespace trainmon::recorder
