// SPDX-License-Identifier: Apache-2.0
// `trainmon top`: a sampling thread (its own cadence, the live diagnosis, a store look-up every
// few seconds) that also draws each new snapshot, and the UI loop, which sleeps in poll() until a
// key, a resize or a signal arrives: no busy loop, one thread woken per tick, and the screen is
// redrawn only when something changed.
#include "trainmon/tui/app.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
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

// Everything both threads touch, under `mu`: the sampling settings, the screen state and the
// terminal. A frame is drawn by whichever thread has something new: the sampling thread after each
// snapshot, so that a tick wakes no other thread (on an idle virtual machine each wake-up of a
// sleeping thread costs about as much CPU as drawing the frame), and the UI thread after a key, a
// resize or a signal. The UI thread never waits for a sample: a sampling thread stuck in a /proc
// read or a slow tick leaves the keys working on the last snapshot.
struct Shared {
  std::mutex mu;
  std::condition_variable cv;  ///< the sampling thread's wait: stop, interval or view changed
  int interval_ms = 1000;
  bool all_processes = false;  ///< the table lists every process (else only the GPU processes)
  bool stop = false;
  std::atomic<bool> stopping{false};  ///< `stop`, readable without the lock (the backend's waits poll it)
  bool sampler_exited = false;        ///< set by the sampling thread as it returns
  bool cluster_failed = false;        ///< --prometheus: the last frame could not be read whole
  // The screen.
  const TopOptions* opt = nullptr;
  CursesOutput* out = nullptr;  ///< nullptr once the terminal is given back: nothing is drawn
  UiState ui;
  History history;
  std::shared_ptr<const Snapshot> snapshot;
  LiveInfo live;
  KeyContext keys;  ///< the rows as the last render listed them
};

/// Renders and draws the screen (caller holds sh.mu).
void draw_frame(Shared& sh) {
  if (sh.out == nullptr) return;
  ScreenInput in{sh.snapshot.get(), &sh.history, &sh.live};
  RenderResult r = render(in, sh.ui, sh.out->columns(), sh.out->rows(), sh.opt->utf8);
  sh.out->draw(std::move(r.canvas));
  sh.keys = std::move(r.keys);
}

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

/// How long quitting waits for the sampling thread (a tick is bounded by the device timeout, 2 s
/// by default, plus the host reads).
constexpr std::chrono::seconds kQuitWait{3};

/// `top --prometheus`: the cluster read every interval instead of a local sample.
void cluster_thread(const TopOptions& opt, Shared& sh) {
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    auto frame = cluster::read_cluster(*opt.cluster, now);
    auto snap = std::make_shared<Snapshot>(std::move(frame.snapshot));
    std::unique_lock lk(sh.mu);
    sh.cluster_failed = !frame.error.empty();
    sh.snapshot = std::move(snap);
    sh.live.findings = std::move(frame.findings);
    sh.live.runs = std::move(frame.runs);
    // A failed read shows in the GPU panel ("GPU: none, ...: <why>"); a failed alerts request, with
    // the GPUs read, as a finding.
    if (!frame.error.empty() && !sh.snapshot->gpus.empty()) {
      diagnose::Finding f;
      f.severity = diagnose::Severity::warning;
      f.title = "Prometheus alerts unavailable";
      f.evidence = frame.error;
      sh.live.findings.push_back(std::move(f));
    }
    // No history: GPU indices repeat from node to node (History keys them by index).
    draw_frame(sh);
    const auto deadline = t0 + std::chrono::milliseconds(sh.interval_ms);
    const int seen_interval = sh.interval_ms;
    sh.cv.wait_until(lk, deadline, [&] { return sh.stop || sh.interval_ms != seen_interval; });
    if (sh.stop) return;
  }
}

void sampling_thread(const TopOptions& opt, Shared& sh) {
  if (opt.cluster) return cluster_thread(opt, sh);
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
  // A wait for a hung GPU or driver ends as soon as the user quits.
  so.backend.stop_requested = [&sh] { return g_stop.load() || sh.stopping.load(); };
  Sampler sampler(so);
  HostOptions all_opts = so.host;
  all_opts.all_processes = true;
  std::unique_ptr<HostCollector> all_collector;
  diagnose::LiveDiagnosis diag(diagnose::Thresholds{}, diagnose::LiveOptions{.retain_s = 3600});
  std::int64_t start_ns = 0;
  std::int64_t start_mono_ns = 0;
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
      // Only the processes: the host-wide values (and the uptime their rates use) are this tick's.
      std::vector<ProcessSample> all;
      snap->host.processes_unreadable = 0;  // counted again over every process
      all_collector->collect_processes(snap->host, all, {});
      snap->processes = std::move(all);
    }
    if (start_ns == 0) {
      start_ns = snap->time_unix_ns;
      start_mono_ns = snap->monotonic_ns;  // the diagnosis's windows from the monotonic clock
    }
    // The open findings change only when the diagnosis evaluates (every LiveOptions::every_s).
    std::optional<std::vector<diagnose::Finding>> findings;
    if (opt.diagnose) {
      const double evaluated_s = diag.last_evaluation_s();
      diag.on_snapshot(*snap, diagnose::JobContext{start_ns, 0, {}, std::nullopt, start_mono_ns});
      if (diag.last_evaluation_s() != evaluated_s) findings = diag.active();
    }
    if (t0 - last_store >= std::chrono::seconds(5)) {
      active_run = describe_active_run(opt.db_path);
      last_store = t0;
    }
    // The training loop of every run of this user going on now (docs/top.md "Live state files").
    auto runs = ipc::read_live_runs();
    std::unique_lock lk(sh.mu);
    sh.snapshot = std::move(snap);
    if (findings) sh.live.findings = std::move(*findings);
    sh.live.active_run = active_run;
    sh.live.runs = std::move(runs);
    sh.history.add(*sh.snapshot);
    draw_frame(sh);
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
  sh.opt = &opt;
  sh.out = &out;
  sh.ui.interval_ms = opt.interval_ms;
  sh.live.diagnosis_enabled = opt.diagnose;
  // The signals go to this thread only (the sampling thread and the NVML workers it starts inherit
  // the blocked set): its poll() must wake for a resize (ncurses turns SIGWINCH into KEY_RESIZE),
  // Ctrl-C, Ctrl-Z and SIGCONT, and nothing else wakes it between keys.
  sigset_t ui_signals, old_mask;
  sigemptyset(&ui_signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCONT, SIGTSTP, SIGWINCH}) sigaddset(&ui_signals, sig);
  pthread_sigmask(SIG_BLOCK, &ui_signals, &old_mask);
  std::thread sampler([&] {
    sampling_thread(opt, sh);
    std::lock_guard lk(sh.mu);
    sh.sampler_exited = true;
    sh.cv.notify_all();
  });
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);

  {
    std::lock_guard lk(sh.mu);
    draw_frame(sh);  // "sampling..." until the first snapshot
  }
  bool quit = false;
  while (!quit && !g_stop) {
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {pipefd[0], POLLIN, 0}};
    const int n = ::poll(fds, 2, -1);
    if (n < 0 && errno != EINTR) break;
    if (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) break;  // the terminal went away
    if (fds[1].revents & POLLIN) {
      char buf[64];
      [[maybe_unused]] auto rd = ::read(pipefd[0], buf, sizeof buf);
    }
    std::lock_guard lk(sh.mu);
    bool dirty = false;
    if (g_suspend.exchange(false)) {
      suspend_self(out);
      dirty = true;
    }
    if (g_continued.exchange(false)) {
      out.invalidate();
      dirty = true;
    }
    // Keys (also after EINTR: ncurses turns SIGWINCH into KEY_RESIZE).
    while (auto key = out.read_key()) {
      if (*key == kKeyResize) out.invalidate();
      const KeyResult res = handle_key(sh.ui, *key, sh.keys);
      dirty = true;
      if (res.kind == KeyResult::send_signal) {
        // Only the process the dialog was opened for: (pid, start time), never a later holder of
        // the pid (signal_target.h).
        if (!res.start_time_ticks) {
          signal_not_sent(sh.ui, "process " + std::to_string(res.pid) +
                                     " has no /proc entry here (another PID namespace?): nothing sent");
        } else {
          const SignalOutcome o =
              send_signal_checked(opt.sampler.host.proc_root, res.pid, *res.start_time_ticks, res.signal);
          if (o.check == TargetCheck::same)
            signal_result(sh.ui, res.signal, o.err);
          else
            signal_not_sent(sh.ui, describe_not_sent(res.pid, o.check));
        }
      } else if (res.kind == KeyResult::interval_changed) {
        sh.interval_ms = sh.ui.interval_ms;
        sh.cv.notify_all();
      }
      if ((sh.ui.view == ProcessView::all) != sh.all_processes) {  // sample at once for the new view
        sh.all_processes = sh.ui.view == ProcessView::all;
        sh.cv.notify_all();
      }
      if (sh.ui.quit) {
        quit = true;
        break;
      }
      // The next key (Home after a re-sort, say) must see the rows as this key left them.
      ScreenInput in{sh.snapshot.get(), &sh.history, &sh.live};
      sh.keys = render(in, sh.ui, out.columns(), out.rows(), opt.utf8).keys;
    }
    if (dirty && !quit) draw_frame(sh);
  }
  {
    std::lock_guard lk(sh.mu);
    sh.stop = true;
    sh.stopping = true;
    out.close();
    sh.out = nullptr;  // the sampling thread draws no more
  }
  sh.cv.notify_all();
  // The sampling thread finishes its tick first (the NVML workers bound it by device_timeout), but
  // it can be stuck where no timeout reaches: in the driver while NVML starts (nvmlInit, the event
  // set up), before any worker exists. The terminal is already given back: the user asked to quit,
  // so quit, leaving that thread inside the driver (nothing is lost: top records nothing).
  {
    std::unique_lock lk(sh.mu);
    if (!sh.cv.wait_for(lk, kQuitWait, [&] { return sh.sampler_exited; })) {
      lk.unlock();
      std::fprintf(
          stderr,
          opt.cluster
              ? "trainmon top: Prometheus has not answered for %lld s: quitting without waiting for it\n"
              : "trainmon top: the GPU driver has not answered for %lld s (NVML start-up): "
                "quitting without waiting for it\n",
          static_cast<long long>(kQuitWait.count()));
      std::fflush(nullptr);
      std::_Exit(0);
    }
  }
  sampler.join();
  signals.reset();
  g_wake_fd = -1;
  ::close(pipefd[0]);
  ::close(pipefd[1]);
  return sh.cluster_failed ? 1 : 0;
}

}  // namespace trainmon::tui
