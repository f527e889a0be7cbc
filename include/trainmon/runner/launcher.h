// SPDX-License-Identifier: Apache-2.0
// Launcher: starts the user's command the way `time` and `nice` do: same terminal, stdin and
// environment, in trainmon's own (foreground) process group so that Ctrl-C reaches it directly.
// trainmon becomes a child subreaper, so orphans of the job (double-forked workers) stay in its tree.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainmon/core/error.h"
#include "trainmon/runner/exit_status.h"

namespace trainmon::runner {

/// Blocks SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGCHLD in the calling thread (call it first in
/// main's thread, before any other thread exists, so every thread inherits the mask), and makes
/// this process a child subreaper. wait_for_event() then receives those signals synchronously.
void prepare_signals();

/// True when SIGINT, SIGTERM, SIGHUP or SIGQUIT is pending: blocked by prepare_signals() and not yet
/// taken by wait_for_event(). For BackendOptions::stop_requested: a wait for a hung GPU ends as soon
/// as the user asks to stop, and the next wait_for_event() takes the signal.
bool stop_signal_pending();

struct LaunchOptions {
  std::vector<std::string> argv;                               ///< argv[0] is looked up in PATH
  std::vector<std::pair<std::string, std::string>> extra_env;  ///< added to the inherited environment
};

/// Start the command. Error (domain os) when fork fails or the program cannot be executed
/// (ENOENT: exit status 127 as a shell; EACCES: 126), with the child already reaped.
Expected<pid_t> launch(const LaunchOptions& options);

/// What wait_for_event() saw.
struct Event {
  enum Kind { timeout, child_exited, signal } kind = timeout;
  ChildExit exit;              ///< child_exited: how the main child ended
  int signal_number = 0;       ///< signal: which
  bool from_terminal = false;  ///< signal: sent by the terminal (si_code SI_KERNEL: Ctrl-C, Ctrl-\, hangup),
                               ///< so it reached trainmon's whole foreground process group
};

/// Wait up to `timeout` for the main child `child` to end or a signal to arrive. A SIGINT, SIGTERM,
/// SIGHUP or SIGQUIT is returned, not passed on: JobStop (job_stop.h) passes it on to the whole job.
/// Orphans reparented to trainmon are reaped silently. `child` <= 0 (no command: `record`) only
/// waits for signals and reaps. The timeout is kept to the nanosecond: a caller sleeping until its next
/// tick must not get a 0 ms timeout for the last fraction of a millisecond and spin.
Event wait_for_event(pid_t child, std::chrono::nanoseconds timeout);

/// Children that another part of trainmon waits for itself (the alert command sink): wait_for_event()
/// never reaps them, so their owner's waitpid() gets their status. `spawn` runs with the registry
/// locked (the reaper cannot take the child between its start and its registration) and returns the
/// pid, or <= 0 when nothing started (then nothing is registered). Thread-safe.
pid_t spawn_owned_child(const std::function<pid_t()>& spawn);
/// The owner has reaped `pid` (or given up on it): forget it.
void release_owned_child(pid_t pid);
/// The children owned now (for JobStop, which leaves them and their subtrees to their owner).
std::vector<pid_t> owned_children();

/// For a command that cannot start: 127 when not found, 126 when not executable (as a shell).
int exit_code_for_launch_error(const Error& error) noexcept;

}  // namespace trainmon::runner
