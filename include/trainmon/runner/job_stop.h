// SPDX-License-Identifier: Apache-2.0
// Stopping a wrapped job as a whole, as torchrun's agent and systemd's control-group kill mode do:
// the stop signal goes to every process of the job (the command, its children, and the orphans
// trainmon adopted as their child subreaper, even those that setsid() or double-forked away), and
// what still runs when the grace period is over gets SIGKILL. trainmon does not exit while a process
// of the job still runs, except one that even SIGKILL does not end within kKillWait (then it is
// named). docs/recording.md "Stopping".
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace trainmon::runner {

/// One process as /proc/PID/stat shows it: what stopping needs.
struct ProcStat {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgid = 0;
  char state = '?';               ///< R, S, D, T, Z ... (proc(5))
  std::uint64_t start_ticks = 0;  ///< field 22, clock ticks after boot: with the pid, the process's identity
  std::string comm;               ///< as the kernel keeps it (15 bytes at most)
};

/// Parses the text of /proc/PID/stat. The name may hold blanks and parentheses (the last ')' ends
/// it). nullopt for text that is not such a line.
std::optional<ProcStat> parse_proc_stat(std::string_view text);

/// The processes of `all` below `root` (children, grandchildren ...; not `root`), parents before
/// children, leaving out the subtrees of the pids in `skip`. A child counts only when it started no
/// earlier than its parent (a stale ppid never adopts an older process). Zombies are listed.
std::vector<ProcStat> descendants_in(std::span<const ProcStat> all, pid_t root, std::span<const pid_t> skip);

/// The living processes of this process's job: its descendants in the real /proc, without zombies,
/// without the children another part of trainmon owns (spawn_owned_child: alert commands) and their
/// subtrees. Empty when /proc cannot be read.
std::vector<ProcStat> job_processes();

/// Sends `sig` to `p` if the pid still names the process listed (same start time; through a pidfd,
/// so a pid reused in between is never hit). 0, or the errno: ESRCH when it is gone, EPERM.
int signal_process(const ProcStat& p, int sig);

/// "12, 13, 14 … (+5)": at most `max` pids, then how many more.
std::string pid_list(std::span<const ProcStat> ps, std::size_t max = 8);

/// How long a stop waits after SIGKILL for the processes to go (one in an uninterruptible kernel
/// call, a GPU driver's, ends only when the call returns) before trainmon names them and exits.
inline constexpr std::chrono::seconds kKillWait{10};

/// The grace period by default: torchrun's agent gives its workers 30 s between SIGTERM and SIGKILL,
/// as Kubernetes does (terminationGracePeriodSeconds); shorter than systemd's 90 s (TimeoutStopSec),
/// so a unit stopped with the default timeout sees trainmon end its job and exit by itself.
inline constexpr std::chrono::seconds kDefaultGrace{30};

/// The grace period for what a monitor's own helpers (alert commands, `record` and `serve`) left
/// running when the monitor stops: each helper had its own timeout already.
inline constexpr std::chrono::seconds kHelperGrace{5};

/// How long processes the ended command left behind get to end by themselves before SIGTERM: helpers
/// that end when their parent does (Python multiprocessing's resource tracker reads its parent's pipe
/// to EOF; a DataLoader worker polls its parent's liveness) are then not reported as left running.
inline constexpr std::chrono::milliseconds kLeftoverSettle{1500};

struct JobStopOptions {
  std::string tool = "run";                        ///< message prefix: "trainmon run: ..."
  std::chrono::nanoseconds grace = kDefaultGrace;  ///< stop signal to SIGKILL; 0: SIGKILL at once
  bool quiet = false;  ///< no progress lines (what could not be ended is always said)
};

/// What a stop did, for the summary.
struct JobStopReport {
  int signal = 0;                   ///< the stop signal passed on (0: none; SIGTERM for leftovers)
  bool leftovers = false;           ///< the command had ended and left processes behind
  std::size_t signalled = 0;        ///< processes the stop signal was sent to (or reached: from_terminal)
  bool from_terminal = false;       ///< Ctrl-C: the terminal sent it to the foreground group itself
  std::size_t killed = 0;           ///< processes sent SIGKILL
  bool escalated = false;           ///< SIGKILL because the stop signal came again (not the grace period)
  std::vector<ProcStat> not_ended;  ///< still running when trainmon gave up waiting
};

/// One line for the summary ("job stop: SIGTERM to 5 processes; 2 got SIGKILL after 30 s"), empty
/// when nothing was stopped.
std::string describe_stop(const JobStopReport& report, std::chrono::nanoseconds grace);

/// The stop of one job (`run`), or of the helpers a monitor started (`record`, `serve`: main 0).
/// Call on_signal() for every stop signal, tick() whenever deadline_ns() has passed, and finish()
/// once the main command was reaped. Times are CLOCK_MONOTONIC nanoseconds.
class JobStop {
 public:
  JobStop(pid_t main, JobStopOptions options) : main_(main), o_(std::move(options)) {}

  /// A stop signal for trainmon. The first is passed on to every job process it did not reach yet
  /// (`from_terminal`: Ctrl-C already reached trainmon's foreground process group; others get it),
  /// stopped processes get SIGCONT, and the grace period starts. A second one: SIGKILL at once.
  void on_signal(int sig, bool from_terminal, std::int64_t now_ns);
  /// SIGKILL to what is left once the grace period is over; nothing before.
  void tick(std::int64_t now_ns);
  /// When tick() has something to do; nullopt when nothing is pending.
  std::optional<std::int64_t> deadline_ns() const;
  /// After the main command ended (was reaped): what is left of the job after kLeftoverSettle gets
  /// SIGTERM (unless a stop signal was passed on already) and the grace period, then SIGKILL; waits, reaping
  /// orphans and taking further signals (a second stop signal: SIGKILL at once; one after SIGKILL: stop
  /// waiting), until no job process is left or kKillWait after SIGKILL. Returns the report.
  const JobStopReport& finish();

  const JobStopReport& report() const { return report_; }
  bool stopping() const { return report_.signal != 0; }

 private:
  void kill_all(std::int64_t now_ns, bool escalated);
  void say(const std::string& line) const;

  pid_t main_;
  JobStopOptions o_;
  JobStopReport report_;
  std::int64_t grace_end_ns_ = -1;  ///< when what is left gets SIGKILL (-1: no stop yet)
  std::int64_t killed_at_ns_ = -1;  ///< when SIGKILL went out
};

}  // namespace trainmon::runner
