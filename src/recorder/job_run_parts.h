// SPDX-License-Identifier: Apache-2.0
// The parts of `run`'s hooks of the one monitoring loop (job_run.cpp wires them): the training
// processes' event channel (job_events.cpp), the stacks asked for when a hang opens (job_stacks.cpp),
// the live state file for `top` and `serve` (job_state_file.cpp), and waiting for the job while
// stop signals go on to it (job_wait.cpp). Used by job_run.cpp only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainmon/diagnose/engine.h"
#include "trainmon/ipc/run_state_file.h"
#include "trainmon/ipc/train_channel.h"
#include "trainmon/recorder/job_run.h"
#include "trainmon/recorder/monitor_loop.h"
#include "trainmon/recorder/recording.h"
#include "trainmon/recorder/run_verdict.h"
#include "trainmon/recorder/session.h"
#include "trainmon/runner/job_stop.h"
#include "trainmon/runner/launcher.h"

namespace trainmon::recorder::job_parts {

// ---- the event channel (job_events.cpp) ----

/// What the event socket took and refused, for the summary (nothing is dropped silently).
RunSummary::TrainEvents train_event_counts(const ipc::EventServerStats& st);

/// Opens the channel the training processes send their events to (python/trainmon), and adds to
/// `launch` the environment that finds it, with the Python start-up hook unless o.no_instrument.
/// nullptr when it cannot be opened (said on stderr: only the training events are lost).
std::unique_ptr<ipc::TrainChannel> open_event_channel(const JobRunOptions& o, std::int64_t run_id,
                                                      std::int64_t start_unix_ns, std::int64_t start_mono_ns,
                                                      runner::LaunchOptions& launch);

/// Everything the training processes sent since the last call: to the live diagnosis, and as store
/// rows for the session. `snap`: this tick's snapshot (its GPU processes name the ranks' GPUs), or
/// nullptr after the job ended.
TrainUpdate collect_train(ipc::TrainChannel& channel, diagnose::LiveDiagnosis& live, const Snapshot* snap);

/// Says once on stderr (unless quiet) that events from the training process are being rejected;
/// `told`: whether it was said already (set here). The counts come at the end.
void say_rejected_once(const ipc::TrainChannel& channel, bool quiet, bool& told);

// ---- the stacks of a hang (job_stacks.cpp) ----

/// A hang opened (D23): asks the job's Python processes among `job_pids` (sorted) for their stacks
/// (docs/diagnosis.md D23), hands them to the live diagnosis and the session, and prints where each
/// rank is stuck and the advice (unless o.quiet). Nothing without a channel.
void ask_for_stacks(const JobRunOptions& o, ipc::TrainChannel* channel,
                    const std::vector<std::uint32_t>& job_pids, std::int64_t start_unix_ns,
                    diagnose::LiveDiagnosis& live, RecorderSession* session);

// ---- the live state file for `top` and `serve` (job_state_file.cpp, docs/top.md) ----

/// Creates the run's state file; nullopt when it cannot (said on stderr unless o.quiet: only `top`
/// and `serve` lose the run).
std::optional<ipc::RunStateFile> open_state_file(const JobRunOptions& o, const store::RunInfo& info,
                                                 std::int64_t run_id, std::int64_t start_unix_ns);

/// Writes this tick's training series and active findings to `file`. The first failure is said on
/// stderr (unless o.quiet; `error_reported` remembers it), the later ones not.
void write_state_file(ipc::RunStateFile& file, const JobRunOptions& o, std::int64_t run_id,
                      const diagnose::LiveDiagnosis& live, std::int64_t start_mono_ns,
                      const std::vector<diagnose::Finding>& active, bool& error_reported);

// ---- waiting for the job (job_wait.cpp) ----

/// Waits until the tick at `next_mono_ns` (while `monitoring`) or the end of the job's main command
/// `child` (its exit into `exited`: Wake::stop). A stop signal goes on to the whole job through
/// `job_stop` (SIGKILL after its grace period), and the monitoring goes on while the job shuts down.
MonitorHooks::Wake wait_for_job(pid_t child, runner::JobStop& job_stop, std::int64_t next_mono_ns,
                                bool monitoring, runner::ChildExit& exited);

}  // namespace trainmon::recorder::job_parts
