// SPDX-License-Identifier: Apache-2.0
// `trainmon record`: record the whole machine (every GPU, the host, the processes on GPUs and their
// trees) until SIGINT / SIGTERM / SIGHUP, then close the run cleanly. For shared servers, under
// systemd (docs/trainmon-record.service). --retention deletes old runs and samples; samples older
// than --downsample-after are kept as one mean/min/max row per chunk (about one per minute at 1 s).
#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "trainmon/recorder/duration.h"
#include "trainmon/recorder/job_tree.h"
#include "trainmon/recorder/labels.h"
#include "trainmon/recorder/recording.h"
#include "trainmon/recorder/session.h"
#include "trainmon/runner/launcher.h"
#include "trainmon/sampler/sampler.h"
#include "trainmon/store/db_path.h"
#include "trainmon/store/store.h"

extern char** environ;

namespace trainmon::cli {
namespace {

struct RecordOptions {
  std::string name = "record";
  std::string interval = "1";
  std::string db;
  std::vector<std::string> labels;
  std::string retention;
  std::string downsample_after = "1d";
  std::string print_every = "0";
  std::string duration;  // stop after this long (tests, benchmarks)
  bool quiet = false;
};

std::int64_t now_ns(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void apply_retention(const std::string& db_path, const store::RetentionPolicy& policy, bool quiet) {
  if (!policy.delete_after_ns && !policy.downsample_after_ns) return;
  auto s = store::Store::open(db_path, store::OpenMode::read_write);
  if (!s) return;
  auto r = s->apply_retention(now_ns(CLOCK_REALTIME), policy);
  if (!r) {
    std::fprintf(stderr, "trainmon record: retention failed: %s\n", r.error().message.c_str());
  } else if (!quiet && (r->runs_deleted || r->chunks_downsampled || r->chunks_deleted)) {
    std::fprintf(stderr,
                 "trainmon record: retention: %lld runs deleted, %lld chunks downsampled, %lld deleted\n",
                 static_cast<long long>(r->runs_deleted), static_cast<long long>(r->chunks_downsampled),
                 static_cast<long long>(r->chunks_deleted));
  }
}

int record(const RecordOptions& o, const GlobalOptions& global) {
  auto interval = recorder::parse_duration_ns(o.interval);
  auto print_every = recorder::parse_duration_ns(o.print_every);
  if (!interval || *interval < 100'000'000 || !print_every) {
    std::fprintf(stderr, "trainmon record: --interval must be at least 0.1 s, --print-every a duration\n");
    return kExitUsage;
  }
  store::RetentionPolicy policy;
  if (!o.retention.empty()) {
    auto r = recorder::parse_duration_ns(o.retention);
    auto d = recorder::parse_duration_ns(o.downsample_after);
    if (!r || !d) {
      std::fprintf(stderr, "trainmon record: --retention / --downsample-after want 30d, 12h, 90m ...\n");
      return kExitUsage;
    }
    policy.delete_after_ns = *r;
    policy.downsample_after_ns = *d;
  }
  std::optional<std::int64_t> stop_after;
  if (!o.duration.empty()) stop_after = recorder::parse_duration_ns(o.duration);
  std::vector<std::pair<std::string, std::string>> given;
  for (const auto& l : o.labels) {
    auto kv = recorder::parse_label(l);
    if (!kv) {
      std::fprintf(stderr, "trainmon record: --label wants KEY=VALUE (got '%s')\n", l.c_str());
      return kExitUsage;
    }
    given.push_back(*kv);
  }
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);

  runner::prepare_signals();
  const std::int64_t start_unix = now_ns(CLOCK_REALTIME);
  const std::int64_t start_mono = now_ns(CLOCK_MONOTONIC);
  const std::string db_path = store::resolve_db_path(o.db);
  // Retention first, on its own connection: a damaged store is refused here too.
  apply_retention(db_path, policy, o.quiet);
  store::RunInfo info = recorder::this_process_run_info("record", o.name, start_unix);
  info.labels = recorder::collect_labels(given, env);
  info.interval_ms = *interval / 1'000'000;
  auto rec = recorder::start_recording(db_path, info);
  if (!rec) {
    std::fprintf(stderr, "trainmon record: %s\n", rec.error().message.c_str());
    return kExitFailure;
  }
  const std::int64_t run_id = rec->run_id;
  if (!o.quiet)
    std::fprintf(stderr, "trainmon record: recording run %lld into %s\n", static_cast<long long>(run_id),
                 db_path.c_str());

  SamplerOptions so;
  so.backend.library_path = global.nvml_library;
  so.host.proc_root = global.proc_root;
  so.host.sys_root = global.sys_root;
  // Not every process: only the trees below the GPU processes of the previous tick, found from the
  // parent pids in /proc/*/stat (one small read each, and only when some process uses a GPU).
  so.host.all_processes = false;
  Sampler sampler(so);
  recorder::SessionOptions opts;
  opts.self_pid = static_cast<std::uint32_t>(::getpid());
  opts.proc_root = global.proc_root;
  opts.sys_root = global.sys_root;
  opts.print_every_ms = *print_every / 1'000'000;
  opts.quiet = o.quiet;
  opts.start_monotonic_ns = start_mono;
  recorder::RecorderSession session(opts, std::move(rec->writer));

  int stop_signal = 0;
  std::int64_t next = start_mono;
  std::int64_t next_retention = start_mono + 3600LL * 1'000'000'000;
  std::vector<std::uint32_t> gpu_pids;
  while (!stop_signal) {
    try {
      if (gpu_pids.empty()) {
        sampler.options().watch_pids.clear();
      } else {
        sampler.options().watch_pids =
            recorder::descendants(recorder::read_parent_pids(global.proc_root), gpu_pids);
      }
      Snapshot snap = sampler.sample();
      gpu_pids.clear();
      for (const auto& p : snap.gpu_processes) gpu_pids.push_back(p.pid);
      session.tick(snap);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trainmon record: tick failed: %s\n", e.what());
    }
    next += *interval;
    if (stop_after && next - start_mono > *stop_after) break;
    for (;;) {
      std::int64_t left = next - now_ns(CLOCK_MONOTONIC);
      if (left <= 0) break;
      auto ev = runner::wait_for_event(0, std::chrono::milliseconds(left / 1'000'000));
      if (ev.kind == runner::Event::signal) {
        stop_signal = ev.signal_number;
        break;
      }
    }
    if (now_ns(CLOCK_MONOTONIC) >= next_retention) {
      apply_retention(db_path, policy, o.quiet);
      next_retention += 3600LL * 1'000'000'000;
    }
  }
  auto summary = session.summary();
  store::RunEnd end{now_ns(CLOCK_REALTIME), "stopped", std::nullopt, std::nullopt,
                    recorder::summary_to_json(summary)};
  auto err = session.finish(end);
  if (!o.quiet) {
    std::string why =
        stop_signal ? fmt::format("stopped by {}", runner::signal_name(stop_signal)) : "stopped";
    std::fputs(recorder::format_summary(summary, "recording " + why, run_id, std::nullopt).c_str(), stderr);
  }
  return err ? kExitFailure : kExitOk;
}

const Registrar kRegistrar{CommandSpec{
    "record", "Record the whole machine until stopped (a foreground daemon for shared servers)",
    [](CLI::App& app, const GlobalOptions& global) -> Runner {
      auto o = std::make_shared<RecordOptions>();
      app.add_option("--name", o->name, "Run name")->capture_default_str();
      app.add_option("--interval", o->interval, "Sampling interval: seconds (0.5) or 500ms")
          ->capture_default_str();
      app.add_option("--db", o->db,
                     "Run store (default: $TRAINMON_DB, then $XDG_STATE_HOME/trainmon/trainmon.db)");
      app.add_option("--label", o->labels, "KEY=VALUE label (repeatable)");
      app.add_option("--retention", o->retention,
                     "Delete runs and samples older than this (30d, 12h); default: keep");
      app.add_option("--downsample-after", o->downsample_after,
                     "With --retention: keep older samples as mean/min/max per minute")
          ->capture_default_str();
      app.add_option("--print-every", o->print_every, "Seconds between resource lines; 0: none")
          ->capture_default_str();
      app.add_option("--duration", o->duration, "Stop after this long (default: until SIGINT/SIGTERM)");
      app.add_flag("-q,--quiet", o->quiet, "Print only errors");
      return [o, &global] { return record(*o, global); };
    },
    31}};

}  // namespace
}  // namespace trainmon::cli
