// SPDX-License-Identifier: Apache-2.0
// The one stop-signal mechanism of every command: how SIGINT, SIGTERM and SIGHUP end trainmon.
// Two ways to take them, one question to ask:
//  - blocked (run, record, serve: commands that start or wait for processes): prepare_signals()
//    (launcher.h) blocks them first, before option set-up and before any thread exists, so that a
//    SIGTERM during a slow start is a clean stop; runner::wait_for_event() then returns each one,
//    and JobStop (job_stop.h) passes `run`'s on to the job and escalates on the second Ctrl-C.
//  - caught (the views that loop: query -l, status -l, top's text and cluster views, dmon, pmon,
//    agent): catch_stop_signals() installs a handler that only sets a flag; the loop polls it.
// stop_requested() answers for both: for the loops, and for BackendOptions::stop_requested (a wait
// for a hung GPU ends as soon as the user asks to stop). `top`'s full-screen view (tui/app.cpp) has
// its own handlers: it also wakes its UI thread and handles SIGTSTP / SIGCONT.
// A reader that closed the pipe (SIGPIPE) is another matter: cli/output.h ends quietly on EPIPE.
#pragma once

namespace trainmon::runner {

/// Installs the flag-setting handler for SIGINT and SIGTERM, and SIGHUP too when `hangup` (a daemon
/// that outlives its terminal otherwise dies by the default action). `restart`: interrupted system
/// calls restart (SA_RESTART, as std::signal); false: they fail with EINTR, so that a blocking read
/// ends at once. Idempotent; call it before the first wait that stop_requested() should end.
void catch_stop_signals(bool hangup = false, bool restart = true);

/// True once a caught stop signal arrived, or while a blocked one (prepare_signals) is pending and
/// not yet taken by wait_for_event(). Async-signal-safe reads only; cheap enough for every poll.
bool stop_requested() noexcept;

}  // namespace trainmon::runner
