// SPDX-License-Identifier: Apache-2.0
// `trainmon agent`: a small background sampler for the Python package outside `trainmon run`.
// It rewrites the snapshot file (docs/python.md) every interval so that the training process's
// resource line has GPU data without ever spawning nvidia-smi, and exits when the process that
// started it is gone. One agent per snapshot file (an flock on PATH.lock); a second one exits 0.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/option_checks.h"
#include "cli/parse_errors.h"
#include "trainmon/core/clock.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/private_files.h"
#include "trainmon/device/backend.h"
#include "trainmon/host/host_collector.h"
#include "trainmon/ipc/snapshot_file.h"
#include "trainmon/runner/stop_signals.h"

namespace trainmon::cli {
namespace {

struct AgentOptions {
  std::string snapshot_file;
  int interval_ms = 1000;
  int parent_pid = 0;
  double duration_s = 0;
  int count = 0;
  bool quiet = false;
};

// The directory holding the snapshot must be ours and closed to others (it lives in /tmp when
// there is no XDG_RUNTIME_DIR): created 0700; one owned by someone else, writable by others or a
// symlink is refused (files::ensure_private_dir).
bool prepare_directory(const std::string& file, std::string& why) {
  std::filesystem::path dir = std::filesystem::path(file).parent_path();
  if (dir.empty()) return true;
  if (auto ok = files::ensure_private_dir(dir.string()); !ok) {
    why = ok.error().message;
    return false;
  }
  return true;
}

int run_agent(const AgentOptions& o) {
  std::string path = o.snapshot_file.empty() ? ipc::default_agent_snapshot_path() : o.snapshot_file;
  std::string why;
  if (!prepare_directory(path, why)) {
    std::fprintf(stderr, "trainmon agent: %s\n", why.c_str());
    return kExitFailure;
  }
  std::string lock_path = path + ".lock";
  int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock_fd < 0) {
    std::fputs(i18n::trf("trainmon agent: cannot open {}: {}\n", lock_path, std::strerror(errno)).c_str(),
               stderr);
    return kExitFailure;
  }
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    if (!o.quiet)
      std::fputs(i18n::trf("trainmon agent: another agent already writes {}\n", path).c_str(), stderr);
    ::close(lock_fd);
    return kExitOk;
  }
  if (o.parent_pid > 0 && ::getppid() == o.parent_pid) ::prctl(PR_SET_PDEATHSIG, SIGTERM);

  runner::catch_stop_signals(/*hangup=*/true, /*restart=*/false);

  // Only what the resource line needs: no process lists, no high-resolution samples, no 20 ms
  // PCIe throughput reads, no GPM, no event thread.
  BackendOptions bo;
  bo.collect_processes = false;
  bo.collect_high_res_samples = false;
  bo.collect_pcie_throughput = false;
  bo.collect_gpm = false;
  bo.watch_events = false;
  bo.tick_wait = tick_wait_for(std::chrono::milliseconds(o.interval_ms), bo.device_timeout);
  bo.init_wait = bo.tick_wait;
  bo.stop_requested = runner::stop_requested;
  auto backend = open_nvml_backend(bo);
  HostOptions ho;
  ho.disks = false;
  ho.nets = false;
  HostCollector host(ho);
  std::vector<ProcessSample> no_processes;

  if (!o.quiet) {
    std::fprintf(stderr, "trainmon agent: writing %s every %d ms (pid %d)\n", path.c_str(), o.interval_ms,
                 static_cast<int>(::getpid()));
  }
  const std::int64_t start = now_ns(CLOCK_MONOTONIC);
  int written = 0;
  int rc = kExitOk;
  while (!runner::stop_requested()) {
    Snapshot snap;
    snap.time_unix_ns = now_ns(CLOCK_REALTIME);
    snap.monotonic_ns = now_ns(CLOCK_MONOTONIC);
    backend->sample(snap.gpus, snap.gpu_processes);
    snap.driver = backend->driver_info();
    host.collect(snap.host, no_processes, {});
    if (auto w = ipc::write_file_atomic(path, ipc::snapshot_json(snap, "agent", o.interval_ms)); !w) {
      std::fprintf(stderr, "trainmon agent: %s\n", said(w.error()).c_str());
      rc = kExitFailure;
      break;
    }
    ++written;
    if (o.count > 0 && written >= o.count) break;
    if (o.duration_s > 0 && static_cast<double>(now_ns(CLOCK_MONOTONIC) - start) / 1e9 >= o.duration_s) break;
    if (o.parent_pid > 0 && ::kill(o.parent_pid, 0) != 0 && errno == ESRCH) break;
    // Sleep in short steps so a signal or a vanished parent ends us promptly.
    const std::int64_t wake = now_ns(CLOCK_MONOTONIC) + std::int64_t{o.interval_ms} * 1'000'000;
    while (!runner::stop_requested() && now_ns(CLOCK_MONOTONIC) < wake) {
      timespec step{0, 50'000'000};
      ::nanosleep(&step, nullptr);
    }
  }
  // A file nobody refreshes any more would only mislead readers (they also check its age).
  if (o.count == 0) ::unlink(path.c_str());
  ::close(lock_fd);
  return runner::stop_requested() ? kExitOk : rc;
}

const Registrar kRegistrar{CommandSpec{
    "agent", N_("Background sampler for the Python package: rewrite a snapshot file every interval"),
    [](CLI::App& app, const GlobalOptions&) -> Runner {
      auto o = std::make_shared<AgentOptions>();
      app.add_option("--snapshot-file", o->snapshot_file,
                     tr("Snapshot file to rewrite (default: $XDG_RUNTIME_DIR/trainmon/agent.json, else "
                        "/tmp/trainmon-UID/agent.json)"));
      app.add_option("--interval-ms", o->interval_ms, tr("Milliseconds between snapshots"))
          ->check(CLI::Range(100, 3'600'000))
          ->capture_default_str();
      app.add_option("--parent-pid", o->parent_pid, tr("Exit when this process is gone"))
          ->check(CLI::PositiveNumber);
      app.add_option("--duration", o->duration_s, tr("Exit after this many seconds (0: no limit)"))
          ->check(seconds_span(kMaxDurationS, true));
      app.add_option("--count", o->count, tr("Exit after writing this many snapshots (0: no limit)"))
          ->check(CLI::NonNegativeNumber);
      app.add_flag("-q,--quiet", o->quiet, tr("No start-up message"));
      return [o] { return run_agent(*o); };
    },
    900}};

}  // namespace
}  // namespace trainmon::cli
