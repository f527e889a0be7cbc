// SPDX-License-Identifier: Apache-2.0
// `trainmon run [options] -- COMMAND [ARGS...]`: start the command as `time` would, watch its
// process tree, its GPUs and the host, record everything, print a resource line every
// --print-every seconds and a summary at the end; exit with the command's status. A trainmon
// failure (store, sampler, exception) only degrades monitoring: the command runs on untouched.
#include <fmt/format.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/parse_errors.h"
#include "cli/run_lookup.h"
#include "cli/threshold_options.h"
#include "trainmon/alerts/alert_observer.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/core/timeline.h"
#include "trainmon/diagnose/cuda_devices.h"
#include "trainmon/diagnose/engine.h"
#include "trainmon/ipc/run_state_file.h"
#include "trainmon/ipc/train_channel.h"
#include "trainmon/ipc/train_message.h"
#include "trainmon/recorder/duration.h"
#include "trainmon/recorder/labels.h"
#include "trainmon/recorder/recording.h"
#include "trainmon/recorder/run_stats.h"
#include "trainmon/recorder/session.h"
#include "trainmon/recorder/stack_capture.h"
#include "trainmon/recorder/tick_observer.h"
#include "trainmon/report/report_file.h"
#include "trainmon/runner/job_stop.h"
#include "trainmon/runner/launcher.h"
#include "trainmon/runner/oom.h"
#include "trainmon/runner/python_hook.h"
#include "trainmon/sampler/sampler.h"
#include "trainmon/store/db_path.h"
#include "trainmon/store/job_gpus.h"
#include "trainmon/store/store.h"

extern char** environ;

namespace trainmon::cli {
namespace {

struct RunOptions {
  std::string name;
  std::string interval = "1";
  std::string db;
  std::vector<std::string> labels;
  bool quiet = false;
  std::string print_every = "30";
  std::string kill_after = "30";        ///< grace between the stop signal and SIGKILL (runner::kDefaultGrace)
  std::vector<std::string> thresholds;  ///< diagnosis threshold overrides, name=value
  std::string report;                   ///< HTML report file (default: beside the store, docs/report.md)
  bool no_report = false;
  bool no_instrument = false;  ///< no start-up hook for Python (docs/python.md "Zero code changes")
  std::vector<std::string> command;
  alerts::AlertSetup alerts;  ///< --alerts FILE, --alerts-spool DIR (docs/alerts.md)
};

/// What the event socket took and refused, for the summary (nothing is dropped silently).
recorder::RunSummary::TrainEvents train_event_counts(const ipc::EventServerStats& st) {
  recorder::RunSummary::TrainEvents e;
  e.received = st.received;
  e.accepted = st.accepted;
  for (std::size_t r = 0; r < st.rejected.size(); ++r) {
    if (st.rejected[r] > 0)
      e.rejected.emplace_back(std::string(ipc::reject_reason_name(static_cast<ipc::RejectReason>(r))),
                              st.rejected[r]);
  }
  return e;
}

std::int64_t now_ns(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int run_command(const RunOptions& o, const GlobalOptions& global) {
  auto interval = recorder::parse_duration_ns(o.interval);
  auto print_every = recorder::parse_duration_ns(o.print_every);
  if (!interval || *interval < 100'000'000) {
    std::fputs(i18n::trf("trainmon run: --interval must be at least 0.1 s, as {} (got '{}')\n",
                         recorder::duration_syntax(), o.interval)
                   .c_str(),
               stderr);
    return kExitUsage;
  }
  if (!print_every) {
    std::fputs(i18n::trf("trainmon run: --print-every wants {} (got '{}')\n", recorder::duration_syntax(),
                         o.print_every)
                   .c_str(),
               stderr);
    return kExitUsage;
  }
  const auto kill_after = recorder::parse_duration_ns(o.kill_after);
  if (!kill_after) {
    std::fputs(i18n::trf("trainmon run: --kill-after wants {} (got '{}')\n", recorder::duration_syntax(),
                         o.kill_after)
                   .c_str(),
               stderr);
    return kExitUsage;
  }
  std::vector<std::pair<std::string, std::string>> given;
  for (const auto& l : o.labels) {
    auto kv = recorder::parse_label(l);
    if (!kv) {
      std::fputs(i18n::trf("trainmon run: --label wants KEY=VALUE (got '{}')\n", l).c_str(), stderr);
      return kExitUsage;
    }
    given.push_back(*kv);
  }
  const auto given_th = thresholds_from_options("run", "", o.thresholds);  // prints why
  if (!given_th) return kExitUsage;
  const diagnose::Thresholds th = *given_th;
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);

  // Before any thread exists: every thread inherits the blocked signals.
  runner::prepare_signals();
  alerts::AlertSetup alert_setup = o.alerts;
  alert_setup.tool = "run";
  alert_setup.quiet = o.quiet;
  alert_setup.findings_printed = true;  // live findings are printed below
  auto alert_observer = alerts::make_alert_observer(alert_setup);
  if (!alert_observer) {
    std::fprintf(stderr, "trainmon run: %s\n", said(alert_observer.error()).c_str());
    return kExitUsage;
  }
  if (auto why = reserved_run_name(o.name); why && !o.name.empty()) {
    std::fputs(i18n::trf("trainmon run: --name {}; choose another name\n", *why).c_str(), stderr);
    return kExitUsage;
  }
  std::string name = o.name.empty() ? recorder::default_run_name(o.command) : o.name;
  if (reserved_run_name(name)) name = "run-" + name;  // `trainmon run -- ./last`: still reachable by name
  const std::int64_t start_unix = now_ns(CLOCK_REALTIME);
  const std::int64_t start_mono = now_ns(CLOCK_MONOTONIC);

  // ---- the store (failure: one message, monitoring in memory) ----
  const Timeline timeline{start_unix, start_mono};  // every stored time: core/timeline.h
  store::RunInfo info = recorder::this_process_run_info("run", name, start_unix, start_mono);
  info.command = o.command;
  info.labels = recorder::collect_labels(given, env);
  info.thresholds = diagnose::threshold_changes(th);  // `diagnose` of this run judges it as the run did
  info.interval_ms = *interval / 1'000'000;
  const std::string db_path = store::resolve_db_path(o.db);
  std::optional<recorder::Recording> recording;
  // A store that is locked or full now does not delay the command: the writer creates the run
  // when it can, and what was sampled meanwhile is written then.
  if (auto r = recorder::start_recording(db_path, info)) {
    recording = std::move(*r);
  } else {
    std::fputs(
        i18n::trf("trainmon: not recording: {}; monitoring goes on (summary at the end)\n", said(r.error()))
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
  std::unique_ptr<ipc::TrainChannel> channel;
  if (auto ch = ipc::TrainChannel::open(std::to_string(run_id))) {
    channel = std::move(*ch);
    channel->set_clock(
        ipc::RunClock{static_cast<double>(start_unix) / 1e9, static_cast<double>(start_mono) / 1e9});
    for (auto& kv : channel->child_environment()) {
      if (kv.first != ipc::kEnvRunId) launch.extra_env.push_back(std::move(kv));
    }
    // Zero code changes: Python finds our sitecustomize.py first and times PyTorch by itself.
    if (!o.no_instrument) {
      if (auto py = runner::write_python_hook(channel->directory())) {
        const char* current = std::getenv("PYTHONPATH");
        for (auto& kv : runner::python_hook_environment(*py, current ? current : ""))
          launch.extra_env.push_back(std::move(kv));
      } else if (!o.quiet) {
        std::fprintf(stderr, "trainmon: Python not instrumented: %s\n", said(py.error()).c_str());
      }
    }
  } else {
    std::fprintf(stderr, "trainmon: no training events: %s; monitoring goes on\n", said(ch.error()).c_str());
  }
  auto child = runner::launch(launch);
  if (!child) {
    std::fprintf(stderr, "trainmon: %s\n", said(child.error()).c_str());
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

  // The live diagnosis (below); the resource line reads its series. It evaluates every 10 s, more
  // often when the hang window is shorter (tests), so a hang is found within its window and a half.
  diagnose::LiveOptions live_opt;
  live_opt.every_s = std::clamp(th.hang_floor_s / 2, 1.0, 10.0);
  diagnose::LiveDiagnosis live(th, live_opt);
  // ---- monitoring: any failure here stops monitoring, never the command ----
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<recorder::RecorderSession> session;
  bool monitoring = true;
  try {
    SamplerOptions so;
    so.backend.library_path = global.nvml_library;
    so.host.proc_root = global.proc_root;
    so.host.sys_root = global.sys_root;
    if (!global.pod_logs_root.empty()) so.host.pod_logs_root = global.pod_logs_root;
    // A hung GPU or driver never stretches a tick, nor delays a signal.
    so.backend.tick_wait = tick_wait_for(std::chrono::nanoseconds(*interval), so.backend.device_timeout);
    so.backend.init_wait = so.backend.tick_wait;
    so.backend.stop_requested = runner::stop_signal_pending;
    sampler = std::make_unique<Sampler>(so);
    if (const DriverInfo d = sampler->driver_info(); !d.loaded && !o.quiet)
      std::fputs(i18n::trf("trainmon: GPUs not monitored: {}\n", text::terminal(d.error)).c_str(), stderr);
    recorder::SessionOptions opts;
    opts.child_pid = static_cast<std::uint32_t>(*child);
    opts.self_pid = static_cast<std::uint32_t>(::getpid());
    opts.proc_root = global.proc_root;
    opts.sys_root = global.sys_root;
    opts.print_every_ms = *print_every / 1'000'000;
    opts.quiet = o.quiet;
    opts.start_monotonic_ns = start_mono;
    opts.start_unix_ns = start_unix;
    opts.interval_ns = *interval;
    opts.train = [&](double seconds) -> std::optional<diagnose::TrainStats> {
      const auto& train = live.series().train;
      if (train.empty() || live.series().t.empty()) return std::nullopt;
      const double now = live.series().t.back();
      return diagnose::train_stats(train, now - seconds, now);
    };
    opts.rank_prints_lines = [&] { return channel && channel->rank_prints_lines().has_value(); };
    session = std::make_unique<recorder::RecorderSession>(
        opts, recording ? std::move(recording->writer) : std::unique_ptr<store::StoreWriter>());
  } catch (const std::exception& e) {
    std::fputs(i18n::trf("trainmon: monitoring stopped: {}; the command runs on\n", e.what()).c_str(),
               stderr);
    monitoring = false;
  }

  // ---- diagnosis, live: the same detectors `trainmon diagnose` runs on the stored run ----
  std::size_t announced = 0;  // live.history() entries already printed
  // Everything the training processes sent since the last call: to the live diagnosis, and as
  // store rows for the session.
  auto collect_train = [&](const Snapshot* snap) {
    std::vector<diagnose::NvmlGpuRef> gpus;
    if (snap) gpus = diagnose::nvml_gpu_refs(*snap);  // only pids that are this namespace's
    auto tick = channel->collect(gpus);
    for (auto& e : tick.diagnose_events) live.on_train_event(std::move(e));
    for (const auto& [rank, w] : tick.windows) live.on_train_window(rank, w);
    recorder::TrainUpdate update;
    update.events = std::move(tick.events);
    update.windows = std::move(tick.windows);
    update.ranks = std::move(tick.ranks);
    return update;
  };

  // ---- a hang: ask the job's Python processes for their stacks (docs/diagnosis.md D23) ----
  auto ask_for_stacks = [&](const std::vector<std::uint32_t>& job_pids) {
    if (!channel) return;
    std::vector<recorder::StackTarget> targets;
    for (const auto& r : channel->ranks()) {
      if (r.stack_signal <= 0 || r.pid == 0) continue;
      if (!std::binary_search(job_pids.begin(), job_pids.end(), r.pid)) continue;  // the job's only
      targets.push_back({r.key, r.pid, r.stack_signal});
    }
    if (targets.empty()) {
      if (!o.quiet)
        std::fputs(i18n::tr("trainmon: no process of the job can send its stacks\n").data(), stderr);
      return;
    }
    recorder::StackCaptureOptions sco;
    sco.proc_root = global.proc_root;
    sco.directory = channel->directory();
    const std::int64_t asked_unix = now_ns(CLOCK_REALTIME);
    const double asked_t = static_cast<double>(asked_unix - start_unix) / 1e9;
    recorder::TrainUpdate update;
    for (auto& res : recorder::capture_stacks(targets, sco)) {
      if (res.text.empty()) {
        if (!o.quiet)
          std::fprintf(stderr, "trainmon: no stacks from pid %u: %s\n", res.target.pid, res.skipped.c_str());
        continue;
      }
      live.on_train_stack({asked_t, res.target.rank_key, res.target.pid, "D23", res.text});
      update.stacks.push_back({asked_unix, res.target.rank_key, res.target.pid, "D23", std::move(res.text)});
    }
    if (update.stacks.empty()) return;
    if (session) session->add_train(std::move(update));
    live.evaluate();  // the open hang finding now names the line each rank is stuck on
    if (o.quiet) return;
    for (const auto& f : live.active()) {
      if (f.code != "D23") continue;
      for (const auto& st : f.stacks) {
        const std::string where = st.where.empty() ? std::string(i18n::tr("(no Python frame)")) : st.where;
        const std::string caller =
            st.caller.empty() ? std::string() : i18n::trf(" (called from {})", st.caller);
        std::fputs(
            (st.rank >= 0 ? i18n::trf("trainmon: rank {} pid {} is at {}{}\n", st.rank, st.pid, where, caller)
                          : i18n::trf("trainmon: process {} is at {}{}\n", st.pid, where, caller))
                .c_str(),
            stderr);
      }
      // The advice as the stacks make it (the rank that holds the job, ranks in different
      // collectives), so that someone watching a job that never ends reads it here, in their language.
      if (!f.stacks.empty())
        std::fputs(fmt::format("trainmon: D23 -> {}\n", diagnose::shown_advice(f)).c_str(), stderr);
    }
  };

  // ---- observers (alerts): one that throws is reported and left out from then on ----
  std::vector<recorder::TickObserver*> observers;
  if (*alert_observer) observers.push_back(alert_observer->get());
  auto notify = [&](auto&& f) {
    for (auto& obs : observers) {
      if (!obs) continue;
      try {
        f(*obs);
      } catch (const std::exception& e) {
        std::fputs(i18n::trf("trainmon: an observer failed and is off from now on: {}\n", e.what()).c_str(),
                   stderr);
        obs = nullptr;
      }
    }
  };
  const std::string run_name = info.name;
  notify([&](recorder::TickObserver& x) {
    x.on_start(recorder::StartContext{"run", run_id, run_name, db_path, start_unix});
  });
  std::vector<diagnose::Finding> active;
  double stored_eval_s = -1e300;  ///< the live evaluation whose findings were last given to the store
  std::vector<diagnose::NvmlGpuRef> gpu_refs;  ///< the GPUs as last seen (for job_gpus' UUID match)

  // ---- the live state file for `top` and `serve` (docs/top.md): failure only loses it ----
  std::optional<ipc::RunStateFile> state_file;
  bool state_error_reported = false;
  {
    ipc::RunStateHeader h;
    h.run_id = run_id;
    h.name = info.name;
    h.db = db_path;
    h.pid = static_cast<std::uint32_t>(::getpid());
    h.pid_start_ticks = ipc::process_start_ticks(h.pid).value_or(0);
    h.host = info.host;
    h.start_unix_s = static_cast<double>(start_unix) / 1e9;
    h.interval_ms = info.interval_ms;
    h.labels = info.labels;
    if (auto f = ipc::RunStateFile::create(std::move(h))) {
      state_file = std::move(*f);
    } else if (!o.quiet) {
      std::fprintf(stderr, "trainmon: no live state for top and serve: %s\n", said(f.error()).c_str());
    }
  }

  // A stop signal goes to the whole job; SIGKILL after the grace period (runner/job_stop.h).
  runner::JobStop job_stop{*child,
                           runner::JobStopOptions{"run", std::chrono::nanoseconds(*kill_after), o.quiet}};
  runner::ChildExit exit;
  bool told_rejected = false;  // the first rejected training events are said at once, the rest in the summary
  std::int64_t next = now_ns(CLOCK_MONOTONIC);  // the schedule's phase: the first tick, after the set-up
  // The job's cgroup limits, said when first known and again when they change (a launcher that
  // moves the job into a limited cgroup after the start).
  std::uint64_t limits_reads = 0;
  std::string limits_said;
  for (bool done = false; !done;) {
    if (monitoring) {
      try {
        auto job_pids = session->refresh_job_pids();
        sampler->options().watch_pids = job_pids;
        auto snap = sampler->sample();
        if (!snap.gpus.empty()) gpu_refs = diagnose::nvml_gpu_refs(snap);
        recorder::TrainUpdate train;
        std::optional<std::string> epoch;
        if (channel) {
          (void)channel->publish(snap, *interval / 1'000'000);
          train = collect_train(&snap);
          epoch = channel->epoch_text();
          if (!told_rejected && !o.quiet) {
            if (const auto st = channel->stats(); st.total_rejected() > 0) {
              told_rejected = true;
              std::fputs(
                  i18n::trf("trainmon: events from the training process are being rejected ({}); counts "
                            "at the end\n",
                            recorder::format_train_events(train_event_counts(st)))
                      .c_str(),
                  stderr);
            }
          }
        }
        session->tick(snap, std::move(train), std::move(epoch));
        if (const auto& w = session->oom_watch(); w.cgroup_reads() != limits_reads) {
          limits_reads = w.cgroup_reads();
          if (auto said = runner::describe_cgroup_limits(w.limits()); !said.empty() && said != limits_said) {
            if (!o.quiet) std::fprintf(stderr, "trainmon: the job's cgroup limits it to %s\n", said.c_str());
            limits_said = std::move(said);
          }
        }
        // The job's memory cgroups (the session stores the same with the host row): D20 names every OOM
        // kill as it happens, D3 measures the headroom to the job's limit.
        diagnose::JobContext job_ctx{start_unix, static_cast<std::uint32_t>(*child), job_pids, std::nullopt,
                                     start_mono};
        if (const auto kills = session->oom_watch().kills_since_start())
          job_ctx.cgroup_oom_kills = static_cast<double>(*kills);
        if (const auto lim = session->oom_watch().memory_limit_bytes())
          job_ctx.memory_limit_mib = static_cast<double>(*lim) / (1024.0 * 1024);
        live.on_snapshot(snap, job_ctx);
        bool hang_opened = false;
        for (; announced < live.history().size(); ++announced) {
          const auto& found = live.history()[announced].finding;
          hang_opened = hang_opened || found.code == "D23";
          if (!o.quiet) std::fprintf(stderr, "trainmon: %s\n", diagnose::to_text(found).c_str());
        }
        if (hang_opened) ask_for_stacks(job_pids);
        // What was found so far goes into the store with the next tick (at most once per evaluation),
        // so that `runs`, `show`, `report` of the running run, and a run whose recorder is killed,
        // list it; the final diagnosis replaces it at the end.
        if (live.last_evaluation_s() != stored_eval_s && !live.history().empty()) {
          stored_eval_s = live.last_evaluation_s();
          std::vector<diagnose::Finding> so_far;
          so_far.reserve(live.history().size());
          for (const auto& h : live.history()) so_far.push_back(h.finding);
          diagnose::rank_findings(so_far, static_cast<double>(now_ns(CLOCK_MONOTONIC) - start_mono) / 1e9);
          // which are still open (an episode that closed is kept, and `runs` counts only the open)
          std::vector<bool> open;
          for (const auto& f : so_far)
            open.push_back(
                std::any_of(live.history().begin(), live.history().end(),
                            [&](const diagnose::LiveFinding& h) { return h.open && h.finding == f; }));
          session->set_live_findings(std::move(so_far), std::move(open));
        }
        if (!observers.empty() || state_file) {
          active = live.active();  // in the order to fix them, as diagnose and the summary list them
          diagnose::rank_findings(active, static_cast<double>(now_ns(CLOCK_MONOTONIC) - start_mono) / 1e9);
        }
        if (state_file) {
          state_file->set_run_id(session->run_id());
          const double now_s = static_cast<double>(now_ns(CLOCK_MONOTONIC) - start_mono) / 1e9;
          if (auto w = state_file->write(live.series().train, now_s, active); !w && !state_error_reported) {
            state_error_reported = true;
            if (!o.quiet)
              std::fprintf(stderr, "trainmon: live state not written: %s\n", said(w.error()).c_str());
          }
        }
        if (!observers.empty()) {
          const recorder::TickContext ctx{snap, active, session->run_id(),
                                          static_cast<double>(now_ns(CLOCK_MONOTONIC) - start_mono) / 1e9};
          notify([&](recorder::TickObserver& x) { x.on_tick(ctx); });
        }
      } catch (const std::exception& e) {
        std::fputs(i18n::trf("trainmon: monitoring stopped: {}; the command runs on\n", e.what()).c_str(),
                   stderr);
        monitoring = false;
      }
    }
    next += *interval;
    for (;;) {
      const std::int64_t now = now_ns(CLOCK_MONOTONIC);
      std::int64_t left = next - now;
      if (left <= 0 && monitoring) break;
      std::int64_t wait = monitoring ? std::max<std::int64_t>(left, 0) : 1'000'000'000;
      if (const auto d = job_stop.deadline_ns()) wait = std::clamp<std::int64_t>(*d - now, 0, wait);
      auto ev = runner::wait_for_event(*child, std::chrono::nanoseconds(wait));
      if (ev.kind == runner::Event::child_exited) {
        exit = ev.exit;
        done = true;
        break;
      }
      // A stop signal goes on to the whole job (where the terminal's did not reach); the monitoring
      // goes on while the job shuts down, until its main command ends.
      if (ev.kind == runner::Event::signal)
        job_stop.on_signal(ev.signal_number, ev.from_terminal, now_ns(CLOCK_MONOTONIC));
      job_stop.tick(now_ns(CLOCK_MONOTONIC));
      if (ev.kind == runner::Event::timeout && monitoring && now_ns(CLOCK_MONOTONIC) >= next) break;
    }
    // Woken a whole interval or more late (stopped, a hung call, a suspended VM): the ticks missed
    // are skipped and recorded as a gap, not replayed as a burst of stale rows.
    if (const NextTick step = catch_up(next, *interval, now_ns(CLOCK_MONOTONIC));
        monitoring && !done && step.skipped > 0) {
      if (session)
        session->note_skipped_ticks(next, step.at_ns - *interval, step.skipped,
                                    "the sampling loop was stalled (stopped or a call hung)");
      next = step.at_ns;
    }
  }
  // Nothing of the job outlives the run: what the command left behind is stopped too (and waited for).
  const runner::JobStopReport& stopped = job_stop.finish();
  notify([](recorder::TickObserver& x) { x.on_finish(); });
  if (state_file) state_file->remove();  // the run is no longer live for top and serve
  // The last events (epoch_end, train_end) were sent just before the command exited.
  if (channel && session) {
    ::usleep(50'000);  // let the receiving thread read what is still in the socket
    session->add_train(collect_train(nullptr));
  }
  const std::int64_t end_mono = now_ns(CLOCK_MONOTONIC);
  const std::int64_t end_unix = timeline.at(end_mono);  // a clock step during the run changes nothing
  const std::int64_t end_elapsed_ms = (end_mono - start_mono) / 1'000'000;

  // ---- verdict and summary ----
  recorder::RunSummary summary;
  std::optional<runner::OomVerdict> oom;
  runner::OomInputs oom_in;
  if (session) {
    summary = session->summary();
    summary.duration_ms = end_elapsed_ms;
    summary.train = recorder::summarize_train(live.series());
    if (channel) summary.train_events = train_event_counts(channel->stats());
    runner::OomInputs& in = oom_in;
    in.exit = exit;
    in.oom_kills = session->oom_watch().kills_since_start();
    in.end_elapsed_ms = end_elapsed_ms;
    in.tree_rss_bytes = summary.last_job_rss_bytes;
    in.rss_growth_bytes_per_h = summary.job_rss_growth_bytes_per_h;
    in.min_available_bytes = summary.min_available_recent_bytes;
    in.memory_total_bytes = summary.memory_total_bytes;
    in.cgroup = session->oom_watch().limits();
    oom = runner::oom_verdict(in);
    summary.cgroup = in.cgroup;
    summary.oom_at_cgroup_limit = oom && oom->at_cgroup_limit;
    summary.oom_kills = in.oom_kills;
  }
  std::string status = exit.signal ? "signaled" : "exited";
  if (oom && oom->main_process_killed) status = "oom_killed";
  // runner::describe_exit's words for people, in the reader's language (the summary's first line)
  std::string status_line =
      exit.signal ? i18n::trf("command killed by {} (signal {}{})", runner::signal_name(*exit.signal),
                              *exit.signal, exit.core_dumped ? i18n::tr(", core dumped") : std::string_view())
                  : i18n::trf("command exit status {}", exit.code);
  // The final diagnosis: every detector over the whole run (what `trainmon diagnose` gives offline).
  std::optional<std::vector<diagnose::Finding>> findings;
  if (session) {
    diagnose::JobFacts facts;
    if (exit.signal) {
      facts.signal = exit.signal;
    } else {
      facts.exit_status = runner::exit_code_for(exit);
    }
    facts.oom_killed = status == "oom_killed";
    facts.oom_at_cgroup_limit = summary.oom_at_cgroup_limit;
    if (summary.oom_kills) facts.oom_kills_at_end = static_cast<double>(*summary.oom_kills);
    if (summary.cgroup.memory_limit_bytes)
      facts.cgroup_memory_limit_mib =
          static_cast<double>(*summary.cgroup.memory_limit_bytes) / (1024.0 * 1024);
    std::vector<unsigned> used;
    for (const auto& g : summary.gpus) {
      if (g.used_by_job) used.push_back(g.index);
    }
    facts.gpus = store::job_gpus(std::move(used), info.labels, gpu_refs);
    facts.root_pid = static_cast<std::uint32_t>(*child);
    try {
      findings = live.finish(facts);
      // What to fix first: critical faults, then by what each costs (docs/diagnosis.md "Cost").
      diagnose::rank_findings(*findings, static_cast<double>(end_elapsed_ms) / 1e3);
    } catch (const std::exception& e) {
      std::fputs(i18n::trf("trainmon: no diagnosis: {}\n", e.what()).c_str(), stderr);
    }
  }
  if (session) {
    store::RunEnd end{end_unix, status, runner::exit_code_for(exit), exit.signal,
                      recorder::summary_to_json(summary)};
    // The end and the findings in one transaction, waiting (bounded) for a store that refuses
    // writes now; a signal stops the wait.
    auto give_up = [] {
      return runner::wait_for_event(0, std::chrono::milliseconds(20)).kind == runner::Event::signal;
    };
    if (auto err = session->finish(end, findings, std::chrono::seconds(30), give_up); err && recording) {
      std::fprintf(stderr, "trainmon: the run's end was not recorded: %s\n", err->message.c_str());
    }
    run_id = session->run_id();
  }
  // ---- the HTML report (docs/report.md): a failure is one message, never the exit status ----
  std::string report_path;
  if (!o.no_report && run_id) {
    const std::string path = o.report.empty() ? report::default_report_path(db_path, run_id) : o.report;
    auto st = store::Store::open(db_path, store::OpenMode::read_only);
    auto r = st ? report::write_report_file(*st, run_id, path) : Expected<void>(std::unexpected(st.error()));
    if (r) {
      report_path = path;
    } else {
      std::fprintf(stderr, "trainmon: no report: %s\n", said(r.error()).c_str());
    }
  } else if (!o.no_report && !o.report.empty()) {
    std::fputs(i18n::tr("trainmon: no report: the run was not recorded\n").data(), stderr);
  }
  if (oom && findings) {
    // Name the process the kill ended, with its own RSS (the job's after the kill says little), as the
    // diagnosis found it (D20: the main process's kill, else the last kill).
    const diagnose::Finding* kill = nullptr;
    for (const auto& f : *findings)
      if (f.code == "D20" && f.numbers.contains("killed_pid") &&
          (!kill || (oom->main_process_killed ? f.numbers.at("killed_pid") == static_cast<double>(*child)
                                              : f.start_s > kill->start_s)))
        kill = &f;
    if (kill && kill->numbers.contains("killed_rss_mib")) {
      oom_in.killed_pid = static_cast<std::uint32_t>(kill->numbers.at("killed_pid"));
      oom_in.killed_rss_bytes = static_cast<std::uint64_t>(kill->numbers.at("killed_rss_mib") * 1048576.0);
      const auto k = kill->numbers.find("killed_kind");
      oom_in.killed_kind = std::string(diagnose::job_process_kind_name(
          k == kill->numbers.end() ? diagnose::JobProcessKind::other
                                   : static_cast<diagnose::JobProcessKind>(static_cast<int>(k->second))));
      if (auto again = runner::oom_verdict(oom_in)) oom->message = std::move(again->message);
    }
  }
  if (oom) std::fprintf(stderr, "trainmon: %s\n", oom->message.c_str());
  if (!o.quiet) {
    std::fputs(
        recorder::format_summary(summary, status_line, run_id,
                                 findings ? std::optional<std::int64_t>(findings->size()) : std::nullopt)
            .c_str(),
        stderr);
    if (const std::string line = runner::describe_stop(stopped, std::chrono::nanoseconds(*kill_after));
        !line.empty())
      std::fprintf(stderr, "%s\n", line.c_str());
    if (findings) {
      for (const auto& f : *findings) std::fprintf(stderr, "  %s\n", diagnose::to_text(f).c_str());
    }
    if (!report_path.empty()) std::fprintf(stderr, "report: %s\n", report_path.c_str());
  }
  return runner::exit_code_for(exit);
}

const Registrar kRegistrar{CommandSpec{
    "run", N_("Run a training command and watch, record and summarise it (trainmon run -- python train.py)"),
    [](CLI::App& app, const GlobalOptions& global) -> Runner {
      auto o = std::make_shared<RunOptions>();
      app.add_option("--name", o->name, tr("Run name (default: the script or program name)"));
      app.add_option("--interval", o->interval,
                     tr("Sampling interval: seconds (0.5) or 500ms; at least 0.1 s"))
          ->capture_default_str();
      app.add_option("--db", o->db,
                     tr("Run store (default: $TRAINMON_DB, then $XDG_STATE_HOME/trainmon/trainmon.db)"));
      app.add_option("--label", o->labels, tr("KEY=VALUE label for the run (repeatable)"))
          ->allow_extra_args(false);  // one value per --label, so `--label a=b -- cmd` keeps its `--`
      app.add_flag("-q,--quiet", o->quiet, tr("No resource lines and no summary"));
      app.add_option("--kill-after", o->kill_after,
                     tr("Grace period after a stop signal (or after the command ended leaving processes "
                        "behind) before what is left of the job gets SIGKILL; 0: at once"))
          ->capture_default_str();
      app.add_option("--print-every", o->print_every, tr("Seconds between resource lines on stderr; 0: none"))
          ->capture_default_str();
      app.add_option("--threshold", o->thresholds,
                     tr("Override a diagnosis threshold: name=value (repeatable)"))
          ->allow_extra_args(false);
      app.add_option("--report", o->report,
                     tr("HTML report file (default: <store dir>/reports/<db name>-run-<id>.html)"));
      app.add_flag("--no-report", o->no_report, tr("Write no HTML report at the end"));
      app.add_flag("--no-instrument", o->no_instrument,
                   tr("Do not time PyTorch by itself (no start-up hook on the child's PYTHONPATH; "
                      "explicit trainmon callbacks still report)"));
      alerts::add_alert_options(app, o->alerts);
      app.add_option("command", o->command, tr("The command to run, after --"))->required();
      app.prefix_command(false);
      return [o, &global] { return run_command(*o, global); };
    },
    30}};

}  // namespace
}  // namespace trainmon::cli
