// SPDX-License-Identifier: Apache-2.0
#include "trainmon/recorder/job_run.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>

#include "recorder/job_run_parts.h"
#include "trainmon/core/clock.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/core/timeline.h"
#include "trainmon/diagnose/cuda_devices.h"
#include "trainmon/diagnose/engine.h"
#include "trainmon/ipc/run_state_file.h"
#include "trainmon/ipc/train_channel.h"
#include "trainmon/recorder/labels.h"
#include "trainmon/recorder/monitor_loop.h"
#include "trainmon/recorder/recording.h"
#include "trainmon/recorder/run_verdict.h"
#include "trainmon/recorder/session.h"
#include "trainmon/runner/job_stop.h"
#include "trainmon/runner/launcher.h"
#include "trainmon/sampler/sampler.h"

extern char** environ;

namespace trainmon::recorder {
namespace {

using job_parts::collect_train;
using job_parts::train_event_counts;

/// What `run` does at the steps of the one loop (monitor_loop.h): the launched job. Each concern
/// is a part of job_run_parts.h; the hooks call them.
class JobHooks final : public MonitorHooks {
 public:
  JobHooks(const JobRunOptions& o, pid_t child, std::int64_t start_unix, std::int64_t start_mono,
           ipc::TrainChannel* channel, diagnose::LiveDiagnosis& live, RecorderSession* session,
           std::optional<ipc::RunStateFile>& state_file, runner::JobStop& job_stop)
      : o_(o),
        child_(child),
        start_unix_(start_unix),
        start_mono_(start_mono),
        channel_(channel),
        live_(live),
        session_(session),
        state_file_(state_file),
        job_stop_(job_stop) {}

  std::vector<std::uint32_t> watch_pids(std::int64_t) override { return session_->refresh_job_pids(); }

  void on_sample(const Snapshot& snap, TrainUpdate& train, std::optional<std::string>& epoch) override {
    if (!snap.gpus.empty()) gpu_refs = diagnose::nvml_gpu_refs(snap);
    if (!channel_) return;
    (void)channel_->publish(snap, o_.interval_ns / 1'000'000);
    train = collect_train(*channel_, live_, &snap);
    epoch = channel_->epoch_text();
    job_parts::say_rejected_once(*channel_, o_.quiet, told_rejected_);
  }

  void on_stored(RecorderSession& session) override {
    // The job's cgroup limits, said when first known and again when they change (a launcher that
    // moves the job into a limited cgroup after the start).
    if (const auto& w = session.oom_watch(); w.cgroup_reads() != limits_reads_) {
      limits_reads_ = w.cgroup_reads();
      if (auto said = runner::describe_cgroup_limits(w.limits()); !said.empty() && said != limits_said_) {
        if (!o_.quiet) std::fprintf(stderr, "trainmon: the job's cgroup limits it to %s\n", said.c_str());
        limits_said_ = std::move(said);
      }
    }
  }

  diagnose::JobContext job_context(const std::vector<std::uint32_t>& job_pids) override {
    // The job's memory cgroups (the session stores the same with the host row): D20 names every OOM
    // kill as it happens, D3 measures the headroom to the job's limit.
    diagnose::JobContext job_ctx{start_unix_, static_cast<std::uint32_t>(child_), job_pids, std::nullopt,
                                 start_mono_};
    if (const auto kills = session_->oom_watch().kills_since_start())
      job_ctx.cgroup_oom_kills = static_cast<double>(*kills);
    if (const auto lim = session_->oom_watch().memory_limit_bytes())
      job_ctx.memory_limit_mib = static_cast<double>(*lim) / (1024.0 * 1024);
    return job_ctx;
  }

  void on_diagnosed(const std::vector<std::uint32_t>& job_pids) override {
    bool hang_opened = false;
    for (; announced_ < live_.history().size(); ++announced_) {
      const auto& found = live_.history()[announced_].finding;
      hang_opened = hang_opened || found.code == "D23";
      if (!o_.quiet) std::fprintf(stderr, "trainmon: %s\n", diagnose::to_text(found).c_str());
    }
    if (hang_opened) job_parts::ask_for_stacks(o_, channel_, job_pids, start_unix_, live_, session_);
  }

  bool wants_active() const override { return state_file_.has_value(); }

  void on_findings(const std::vector<diagnose::Finding>& active, double) override {
    // the live state file for `top` and `serve` (docs/top.md)
    job_parts::write_state_file(*state_file_, o_, session_->run_id(), live_, start_mono_, active,
                                state_error_reported_);
  }

  bool tick_failed(const std::exception& e) override {
    std::fputs(i18n::trf("trainmon: monitoring stopped: {}; the command runs on\n", e.what()).c_str(),
               stderr);
    return false;
  }

  void observer_failed(const std::exception& e) override {
    std::fputs(i18n::trf("trainmon: an observer failed and is off from now on: {}\n", e.what()).c_str(),
               stderr);
  }

  Wake wait_until(std::int64_t next, bool monitoring) override {
    return job_parts::wait_for_job(child_, job_stop_, next, monitoring, exit);
  }

  runner::ChildExit exit;                      ///< how the command ended (set when wait_until says stop)
  std::vector<diagnose::NvmlGpuRef> gpu_refs;  ///< the GPUs as last seen (for job_gpus' UUID match)

 private:
  const JobRunOptions& o_;
  pid_t child_;
  std::int64_t start_unix_;
  std::int64_t start_mono_;
  ipc::TrainChannel* channel_;
  diagnose::LiveDiagnosis& live_;
  RecorderSession* session_;
  std::optional<ipc::RunStateFile>& state_file_;
  runner::JobStop& job_stop_;
  std::size_t announced_ = 0;   ///< live.history() entries already printed
  bool told_rejected_ = false;  ///< the first rejected training events are said at once, the rest at the end
  bool state_error_reported_ = false;
  std::uint64_t limits_reads_ = 0;
  std::string limits_said_;
};

}  // namespace

int run_job(const JobRunOptions& o_in, std::span<diagnose::TickObserver* const> observers) {
  JobRunOptions o = o_in;
  if (!o.said) o.said = [](const Error& e) { return e.message; };
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  const std::int64_t start_unix = now_ns(CLOCK_REALTIME);
  const std::int64_t start_mono = now_ns(CLOCK_MONOTONIC);

  // ---- the store (failure: one message, monitoring in memory) ----
  const Timeline timeline{start_unix, start_mono};  // every stored time: core/timeline.h
  store::RunInfo info = this_process_run_info("run", o.name, start_unix, start_mono);
  info.command = o.command;
  info.labels = collect_labels(o.labels, env);
  info.thresholds =
      diagnose::threshold_changes(o.thresholds);  // `diagnose` of this run judges it as the run did
  info.interval_ms = o.interval_ns / 1'000'000;
  const std::string& db_path = o.db_path;
  std::optional<Recording> recording;
  // A store that is locked or full now does not delay the command: the writer creates the run
  // when it can, and what was sampled meanwhile is written then.
  if (auto r = start_recording(db_path, info)) {
    recording = std::move(*r);
  } else {
    std::fputs(
        i18n::trf("trainmon: not recording: {}; monitoring goes on (summary at the end)\n", o.said(r.error()))
            .c_str(),
        stderr);
  }
  std::int64_t run_id = recording ? recording->run_id : 0;  // 0 until the store accepts the run

  // ---- the command ----
  runner::LaunchOptions launch;
  launch.argv = o.command;
  if (run_id) launch.extra_env.emplace_back("TRAINMON_RUN_ID", std::to_string(run_id));
  launch.extra_env.emplace_back("TRAINMON_DB", db_path);
  // The job's trainmon package (resource line, notices) speaks the language chosen here, --lang included.
  launch.extra_env.emplace_back("TRAINMON_LANG",
                                i18n::language().empty() ? "en" : std::string(i18n::language()));
  // ---- the training process's events (python/trainmon): failure only loses them ----
  std::unique_ptr<ipc::TrainChannel> channel =
      job_parts::open_event_channel(o, run_id, start_unix, start_mono, launch);
  auto child = runner::launch(launch);
  if (!child) {
    std::fprintf(stderr, "trainmon: %s\n", o.said(child.error()).c_str());
    if (recording) {
      (void)recording->writer->finish(store::RunEnd{timeline.at(now_ns(CLOCK_MONOTONIC)),
                                                    "failed_to_start",
                                                    runner::exit_code_for_launch_error(child.error()),
                                                    {},
                                                    ""});
    }
    return runner::exit_code_for_launch_error(child.error());
  }
  if (!o.quiet) {
    const int pid = static_cast<int>(*child);
    std::fputs((run_id ? i18n::trf("trainmon: watching pid {} as run {} ({})\n", pid, run_id, db_path)
                : recording
                    ? i18n::trf("trainmon: watching pid {}; the run store {} is busy: the run is recorded as "
                                "soon as it accepts writes\n",
                                pid, db_path)
                    : i18n::trf("trainmon: watching pid {}\n", pid))
                   .c_str(),
               stderr);
  }

  // The live diagnosis (the same detectors `trainmon diagnose` runs on the stored run); the resource
  // line reads its series. It evaluates every 10 s, more often when the hang window is shorter
  // (tests), so a hang is found within its window and a half.
  diagnose::LiveOptions live_opt;
  live_opt.every_s = std::clamp(o.thresholds.hang_floor_s / 2, 1.0, 10.0);
  diagnose::LiveDiagnosis live(o.thresholds, live_opt);
  // ---- monitoring: any failure here stops monitoring, never the command ----
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<RecorderSession> session;
  try {
    SamplerOptions so;
    so.backend.library_path = o.nvml_library;
    so.host.proc_root = o.proc_root;
    so.host.sys_root = o.sys_root;
    if (!o.pod_logs_root.empty()) so.host.pod_logs_root = o.pod_logs_root;
    // A hung GPU or driver never stretches a tick, nor delays a signal.
    so.backend.tick_wait = tick_wait_for(std::chrono::nanoseconds(o.interval_ns), so.backend.device_timeout);
    so.backend.init_wait = so.backend.tick_wait;
    so.backend.stop_requested = runner::stop_signal_pending;
    sampler = std::make_unique<Sampler>(so);
    if (const DriverInfo d = sampler->driver_info(); !d.loaded && !o.quiet)
      std::fputs(i18n::trf("trainmon: GPUs not monitored: {}\n", text::terminal(d.error)).c_str(), stderr);
    SessionOptions opts;
    opts.child_pid = static_cast<std::uint32_t>(*child);
    opts.self_pid = static_cast<std::uint32_t>(::getpid());
    opts.proc_root = o.proc_root;
    opts.sys_root = o.sys_root;
    opts.idle_util_pct = o.thresholds.idle_util_pct;
    opts.print_every_ms = o.print_every_ns / 1'000'000;
    opts.quiet = o.quiet;
    opts.start_monotonic_ns = start_mono;
    opts.start_unix_ns = start_unix;
    opts.interval_ns = o.interval_ns;
    opts.train = [&](double seconds) -> std::optional<diagnose::TrainStats> {
      const auto& train = live.series().train;
      if (train.empty() || live.series().t.empty()) return std::nullopt;
      const double now = live.series().t.back();
      return diagnose::train_stats(train, now - seconds, now);
    };
    opts.rank_prints_lines = [&] { return channel && channel->rank_prints_lines().has_value(); };
    session = std::make_unique<RecorderSession>(
        opts, recording ? std::move(recording->writer) : std::unique_ptr<store::StoreWriter>());
  } catch (const std::exception& e) {
    std::fputs(i18n::trf("trainmon: monitoring stopped: {}; the command runs on\n", e.what()).c_str(),
               stderr);
    session.reset();  // nothing is monitored (the loop only waits for the job)
  }

  // ---- observers (alerts): one that throws is reported and left out from then on ----
  std::optional<ipc::RunStateFile> state_file;
  // A stop signal goes to the whole job; SIGKILL after the grace period (runner/job_stop.h).
  runner::JobStop job_stop{*child,
                           runner::JobStopOptions{"run", std::chrono::nanoseconds(o.kill_after_ns), o.quiet}};
  JobHooks hooks(o, *child, start_unix, start_mono, channel.get(), live, session.get(), state_file, job_stop);
  MonitorLoopOptions mo;
  mo.interval_ns = o.interval_ns;
  mo.start_unix_ns = start_unix;
  mo.start_mono_ns = start_mono;
  mo.live_findings = LiveFindings::whole_run;
  MonitorLoop loop(mo, sampler.get(), session.get(), &live, observers, hooks);
  loop.start_observers(diagnose::StartContext{"run", run_id, info.name, db_path, start_unix});

  // ---- the live state file for `top` and `serve` (docs/top.md): failure only loses it ----
  state_file = job_parts::open_state_file(o, info, run_id, start_unix);

  loop.run();
  const runner::ChildExit exit = hooks.exit;
  // Nothing of the job outlives the run: what the command left behind is stopped too (and waited for).
  const runner::JobStopReport& stopped = job_stop.finish();
  loop.finish_observers();
  if (state_file) state_file->remove();  // the run is no longer live for top and serve
  // The last events (epoch_end, train_end) were sent just before the command exited.
  if (channel && session) {
    ::usleep(50'000);  // let the receiving thread read what is still in the socket
    session->add_train(collect_train(*channel, live, nullptr));
  }
  const std::int64_t end_mono = now_ns(CLOCK_MONOTONIC);
  const std::int64_t end_unix = timeline.at(end_mono);  // a clock step during the run changes nothing
  const std::int64_t end_elapsed_ms = (end_mono - start_mono) / 1'000'000;

  // ---- verdict and summary (run_verdict.h) ----
  RunVerdict v = judge_run(session.get(), live, exit, end_elapsed_ms);
  if (session && channel) v.summary.train_events = train_event_counts(channel->stats());
  if (session)
    diagnose_run(v, live, exit, info.labels, hooks.gpu_refs, static_cast<std::uint32_t>(*child),
                 end_elapsed_ms);
  if (session) {
    store::RunEnd end{end_unix, v.status, runner::exit_code_for(exit), exit.signal,
                      summary_to_json(v.summary)};
    // The end and the findings in one transaction, waiting (bounded) for a store that refuses
    // writes now; a signal stops the wait.
    auto give_up = [] {
      return runner::wait_for_event(0, std::chrono::milliseconds(20)).kind == runner::Event::signal;
    };
    if (auto err = session->finish(end, v.findings, std::chrono::seconds(30), give_up); err && recording) {
      std::fprintf(stderr, "trainmon: the run's end was not recorded: %s\n", err->message.c_str());
    }
    run_id = session->run_id();
  }
  // ---- the HTML report (docs/report.md): a failure is one message, never the exit status ----
  const std::string report_path = o.write_report ? o.write_report(run_id) : std::string();
  name_oom_kill(v, static_cast<std::uint32_t>(*child));
  print_run_end(v, run_id, stopped, std::chrono::nanoseconds(o.kill_after_ns), o.quiet, report_path);
  return runner::exit_code_for(exit);
}

}  // namespace trainmon::recorder
