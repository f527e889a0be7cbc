// SPDX-License-Identifier: Apache-2.0
// The end of `trainmon run`: how the command ended (exited, signaled, OOM-killed, as the store and
// the summary say it), the OOM verdict (runner/oom.h), the final diagnosis (every detector over the
// whole run, what `trainmon diagnose` gives offline) and the summary printed on stderr.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainmon/diagnose/cuda_devices.h"
#include "trainmon/diagnose/engine.h"
#include "trainmon/diagnose/finding.h"
#include "trainmon/recorder/run_stats.h"
#include "trainmon/recorder/session.h"
#include "trainmon/runner/exit_status.h"
#include "trainmon/runner/job_stop.h"
#include "trainmon/runner/oom.h"

namespace trainmon::recorder {

struct RunVerdict {
  RunSummary summary;  ///< the session's, with the run's duration and training figures
  std::optional<runner::OomVerdict>
      oom;                   ///< set when the OOM killer ended the command or one of its processes
  runner::OomInputs oom_in;  ///< what the OOM verdict was made of
  std::string status;        ///< the store's: "exited", "signaled" or "oom_killed"
  std::string status_line;   ///< the summary's first line, in the reader's language
  std::optional<std::vector<diagnose::Finding>> findings;  ///< the final diagnosis, ranked; nullopt: none
};

/// How the command ended and the OOM verdict. `session` null (monitoring never started): only the
/// exit is known. `end_elapsed_ms`: the command's end since the run's start.
RunVerdict judge_run(const RecorderSession* session, const diagnose::LiveDiagnosis& live,
                     const runner::ChildExit& exit, std::int64_t end_elapsed_ms);

/// The final diagnosis into v.findings (said on stderr when it fails, then nullopt). `labels` the
/// run's, `gpu_refs` the GPUs as last seen, `root_pid` the command's pid.
void diagnose_run(RunVerdict& v, diagnose::LiveDiagnosis& live, const runner::ChildExit& exit,
                  const std::vector<std::pair<std::string, std::string>>& labels,
                  const std::vector<diagnose::NvmlGpuRef>& gpu_refs, std::uint32_t root_pid,
                  std::int64_t end_elapsed_ms);

/// The OOM message names the process the kill ended, with its own RSS (the job's after the kill says
/// little), as the final diagnosis found it (D20: the main process's kill, else the last kill).
void name_oom_kill(RunVerdict& v, std::uint32_t root_pid);

/// stderr at the end: the OOM message; unless quiet, the summary, how the job was stopped, the
/// findings and the report's path (`report_path` empty: none).
void print_run_end(const RunVerdict& v, std::int64_t run_id, const runner::JobStopReport& stopped,
                   std::chrono::nanoseconds kill_after, bool quiet, const std::string& report_path);

}  // namespace trainmon::recorder
