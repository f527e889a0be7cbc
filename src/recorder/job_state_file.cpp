// SPDX-License-Identifier: Apache-2.0
// `run`'s live state file for `top` and `serve` (job_run_parts.h, docs/top.md).
#include <unistd.h>

#include <cstdio>

#include "recorder/job_run_parts.h"
#include "trainmon/core/clock.h"

namespace trainmon::recorder::job_parts {

std::optional<ipc::RunStateFile> open_state_file(const JobRunOptions& o, const store::RunInfo& info,
                                                 std::int64_t run_id, std::int64_t start_unix) {
  ipc::RunStateHeader h;
  h.run_id = run_id;
  h.name = info.name;
  h.db = o.db_path;
  h.pid = static_cast<std::uint32_t>(::getpid());
  h.pid_start_ticks = ipc::process_start_ticks(h.pid).value_or(0);
  h.host = info.host;
  h.start_unix_s = static_cast<double>(start_unix) / 1e9;
  h.interval_ms = info.interval_ms;
  h.labels = info.labels;
  auto f = ipc::RunStateFile::create(std::move(h));
  if (f) return std::move(*f);
  if (!o.quiet)
    std::fprintf(stderr, "trainmon: no live state for top and serve: %s\n", o.said(f.error()).c_str());
  return std::nullopt;
}

void write_state_file(ipc::RunStateFile& file, const JobRunOptions& o, std::int64_t run_id,
                      const diagnose::LiveDiagnosis& live, std::int64_t start_mono,
                      const std::vector<diagnose::Finding>& active, bool& error_reported) {
  file.set_run_id(run_id);
  const double now_s = static_cast<double>(now_ns(CLOCK_MONOTONIC) - start_mono) / 1e9;
  if (auto w = file.write(live.series().train, now_s, active); !w && !error_reported) {
    error_reported = true;
    if (!o.quiet) std::fprintf(stderr, "trainmon: live state not written: %s\n", o.said(w.error()).c_str());
  }
}

}  // namespace trainmon::recorder::job_parts
