// SPDX-License-Identifier: Apache-2.0
// `trainmon top`: a sampling thread (its own cadence, the live diagnosis, a store look-up every
// few seconds) and the UI loop, which sleeps in poll() until a key, a new snapshot, a resize or a
// signal arrives: no busy loop, and the screen is redrawn only when something changed.
#include "trainmon/tui/app.h"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "curses_output.h"
#include "trainmon/diagnose/engine.h"
#include "trainmon/host/host_collector.h"
#include "trainmon/store/store.h"
#include "trainmon/tui/history.h"
#include "trainmon/tui/keys.h"
#include "trainmon/tui/screen.h"
#include "trainmon/tui/signal_target.h"

namespace trainmon::tui {

namespace {

int g_wake_fd = -1;
std::atomic<bool> g_stop{false};
std::atomic<bool> g_continued{false};
std::atomic<bool> g_suspend{false};

void on_stop_signal(int) {
  g_stop = true;
  if (g_wake_fd >= 0) {
    const char b = 's';
    [[maybe_unused]] auto n = ::write(g_wake_fd, &b, 1);
  }
}

// Back from a stop (kill -STOP / -CONT): draw everything again (the terminal may have been used).
void on_continue_signal(int) {
  g_continued = true;
  if (g_wake_fd >= 0) {
    const char b = 'c';
    [[maybe_unused]] auto n = ::write(g_wake_fd, &b, 1);
  }
}

// Ctrl-Z. Installed before ncurses starts, so ncurses does not install its own handler, which would
// restore the terminal and repaint ncurses' copy of the screen from inside the signal handler, on
// whichever thread took the signal; frames are written directly (curses_output.h), so that copy is
// not what top shows. The UI loop suspends instead (CursesOutput::suspend, SIGTSTP, resume).
void on_tstp_signal(int) {
  g_suspend = true;
  if (g_wake_fd >= 0) {
    const char b = 'z';
    [[maybe_unused]] auto n = ::write(g_wake_fd, &b, 1);
  }
}

struct SignalSet {
  struct sigaction old_int {
  }, old_term{}, old_hup{}, old_cont{}, old_tstp{};
  SignalSet() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    struct sigaction sc {};
    sc.sa_handler = on_continue_signal;
    sigemptyset(&sc.sa_mask);
    sc.sa_flags = SA_RESTART;
    sigaction(SIGCONT, &sc, &old_cont);
    struct sigaction st {};
    st.sa_handler = on_tstp_signal;
    sigemptyset(&st.sa_mask);
    st.sa_flags = SA_RESTART;
    sigaction(SIGTSTP, &st, &old_tstp);
  }
  ~SignalSet() {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
    sigaction(SIGCONT, &old_cont, nullptr);
    sigaction(SIGTSTP, &old_tstp, nullptr);
  }
  SignalSet(const SignalSet&) = delete;
  SignalSet& operator=(const SignalSet&) = delete;
};

/// Ctrl-Z: give the terminal back, stop, and take it again when continued.
void suspend_self(CursesOutput& out) {
  out.suspend();
  struct sigaction dfl {
  }, ours{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGTSTP, &dfl, &ours);
  ::kill(::getpid(), SIGTSTP);  // stops here (discarded in an orphaned process group: tmux's pane)
  sigaction(SIGTSTP, &ours, nullptr);
  out.resume();
}

// What the sampling thread publishes.
struct Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::shared_ptr<const Snapshot> snapshot;
  std::vector<diagnose::Finding> findings;
  std::string active_run;
  std::uint64_t seq = 0;
  int interval_ms = 1000;
  bool all_processes = false;  ///< the table lists every process (else only the GPU processes)
  bool stop = false;
};

std::string describe_active_run(const std::string& db_path) {
  if (db_path.empty()) return {};
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) return {};
  auto st = store::Store::open(db_path, store::OpenMode::read_only);
  if (!st) return {};
  auto runs = st->list_runs();
  if (!runs) return {};
  for (const auto& r : *runs) {
    if (store::effective_status(r) != "running") continue;
    const std::time_t t = static_cast<std::time_t>(r.start_unix_ns / 1000000000);
    std::tm tm{};
    localtime_r(&t, &tm);
    char since[16];
    std::strftime(since, sizeof since, "%H:%M", &tm);
    std::string what = r.command.empty() ? r.kind : r.command.front();
    for (std::size_t i = 1; i < r.command.size() && i < 4; ++i) what += " " + r.command[i];
    return "run " + std::to_string(r.id) + " '" + r.name + "' since " + since + " (" + what + ")";
  }
  return {};
}

void sampling_thread(const TopOptions& opt, Shared& sh, int wake_fd) {
  // The sampler reads only the GPU processes' /proc entries (the default view needs no more);
  // a second collector lists every process while the "all processes" view is on. Reading every
  // process every tick is most of the CPU cost of a process monitor.
  SamplerOptions so = opt.sampler;
  so.host.all_processes = false;
  // What the screen does not show is not read: per-CPU frequencies, /proc/PID/io and cgroup, and
  // /proc/PID/status on every tick (only the user is shown: status is read once per process).
  so.host.cpu_frequency = false;
  so.host.requested_process_details = false;
  so.host.process_status_every_tick = false;
  Sampler sampler(so);
  HostOptions all_opts = so.host;
  all_opts.all_processes = true;
  all_opts.disks = all_opts.nets = false;
  std::unique_ptr<HostCollector> all_collector;
  diagnose::LiveDiagnosis diag(diagnose::Thresholds{}, diagnose::LiveOptions{.retain_s = 3600});
  std::int64_t start_ns = 0;
  auto last_store = std::chrono::steady_clock::time_point{};
  std::string active_run;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    auto snap = std::make_shared<Snapshot>(sampler.sample());
    bool want_all = false;
    {
      std::lock_guard lk(sh.mu);
      want_all = sh.all_processes;
    }
    if (want_all) {
      if (!all_collector) all_collector = std::make_unique<HostCollector>(all_opts);
      HostSample scratch;
      std::vector<ProcessSample> all;
      all_collector->collect(scratch, all, {});
      snap->processes = std::move(all);
      snap->host.process_count = scratch.process_count;
    }
    if (start_ns == 0) start_ns = snap->time_unix_ns;
    std::vector<diagnose::Finding> findings;
    if (opt.diagnose) {
      diag.on_snapshot(*snap, diagnose::JobContext{start_ns, 0, {}, std::nullopt});
      findings = diag.active();
    }
    if (t0 - last_store >= std::chrono::seconds(5)) {
      active_run = describe_active_run(opt.db_path);
      last_store = t0;
    }
    std::unique_lock lk(sh.mu);
    sh.snapshot = std::move(snap);
    sh.findings = std::move(findings);
    sh.active_run = active_run;
    ++sh.seq;
    const char b = 'n';
    [[maybe_unused]] auto n = ::write(wake_fd, &b, 1);
    const auto deadline = t0 + std::chrono::milliseconds(sh.interval_ms);
    const int seen_interval = sh.interval_ms;
    const bool seen_all = sh.all_processes;
    sh.cv.wait_until(lk, deadline, [&] {
      return sh.stop || sh.interval_ms != seen_interval || sh.all_processes != seen_all;
    });
    if (sh.stop) return;
  }
}

}  // namespace

int run_top(const TopOptions& opt) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) {
    std::perror("trainmon top: pipe");
    return 1;
  }
  g_wake_fd = pipefd[1];
  g_stop = false;
  g_continued = false;
  g_suspend = false;
  std::optional<SignalSet> signals(std::in_place);
  CursesOutput out;
  std::string err;
  if (!out.open(opt.color, err)) {
    signals.reset();
    g_wake_fd = -1;
    std::fprintf(stderr, "trainmon top: %s\n", err.c_str());
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    return kTerminalUnusable;
  }

  Shared sh;
  sh.interval_ms = opt.interval_ms;
  UiState ui;
  ui.interval_ms = opt.interval_ms;
  std::thread sampler([&] { sampling_thread(opt, sh, pipefd[1]); });

  History history;
  std::shared_ptr<const Snapshot> snap;
  LiveInfo live;
  live.diagnosis_enabled = opt.diagnose;
  std::uint64_t seen_seq = 0;
  KeyContext keys;
  bool dirty = true;
  bool sh_all = false;
  while (!ui.quit && !g_stop) {
    if (dirty) {
      ScreenInput in{snap.get(), &history, live};
      RenderResult r = render(in, ui, out.columns(), out.rows(), opt.utf8);
      out.draw(std::move(r.canvas));
      keys = std::move(r.keys);
      dirty = false;
    }
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {pipefd[0], POLLIN, 0}};
    const int n = ::poll(fds, 2, -1);
    if (n < 0 && errno != EINTR) break;
    if (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) break;  // the terminal went away
    if (g_suspend.exchange(false)) {
      suspend_self(out);
      dirty = true;
    }
    if (g_continued.exchange(false)) {
      out.invalidate();
      dirty = true;
    }
    if (fds[1].revents & POLLIN) {
      char buf[64];
      [[maybe_unused]] auto rd = ::read(pipefd[0], buf, sizeof buf);
      std::lock_guard lk(sh.mu);
      if (sh.seq != seen_seq) {
        seen_seq = sh.seq;
        snap = sh.snapshot;
        live.findings = std::move(sh.findings);  // published anew with every snapshot
        live.active_run = sh.active_run;
        history.add(*snap);
        dirty = true;
      }
    }
    // Keys (also after EINTR: ncurses turns SIGWINCH into KEY_RESIZE).
    while (auto key = out.read_key()) {
      if (*key == kKeyResize) out.invalidate();
      const KeyResult res = handle_key(ui, *key, keys);
      dirty = true;
      if (res.kind == KeyResult::send_signal) {
        // Only the process the dialog was opened for: (pid, start time), never a later holder of
        // the pid (signal_target.h).
        if (!res.start_time_ticks) {
          signal_not_sent(ui, "process " + std::to_string(res.pid) +
                                  " has no /proc entry here (another PID namespace?): nothing sent");
        } else {
          const SignalOutcome o =
              send_signal_checked(opt.sampler.host.proc_root, res.pid, *res.start_time_ticks, res.signal);
          if (o.check == TargetCheck::same)
            signal_result(ui, res.signal, o.err);
          else
            signal_not_sent(ui, describe_not_sent(res.pid, o.check));
        }
      } else if (res.kind == KeyResult::interval_changed) {
        std::lock_guard lk(sh.mu);
        sh.interval_ms = ui.interval_ms;
        sh.cv.notify_all();
      }
      if ((ui.view == ProcessView::all) != sh_all) {  // sample at once for the new view
        sh_all = ui.view == ProcessView::all;
        std::lock_guard lk(sh.mu);
        sh.all_processes = sh_all;
        sh.cv.notify_all();
      }
      if (ui.quit) break;
      // The next key (Home after a re-sort, say) must see the rows as this key left them.
      ScreenInput in{snap.get(), &history, live};
      keys = render(in, ui, out.columns(), out.rows(), opt.utf8).keys;
    }
  }
  {
    std::lock_guard lk(sh.mu);
    sh.stop = true;
    sh.cv.notify_all();
  }
  out.close();
  sampler.join();
  signals.reset();
  g_wake_fd = -1;
  ::close(pipefd[0]);
  ::close(pipefd[1]);
  return 0;
}

}  // namespace trainmon::tui
