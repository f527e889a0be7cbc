// SPDX-License-Identifier: Apache-2.0
// `run`'s capture of the job's stacks when a hang opens (job_run_parts.h, docs/diagnosis.md D23).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "recorder/job_run_parts.h"
#include "trainmon/core/clock.h"
#include "trainmon/core/i18n.h"
#include "trainmon/recorder/stack_capture.h"

namespace trainmon::recorder::job_parts {

void ask_for_stacks(const JobRunOptions& o, ipc::TrainChannel* channel,
                    const std::vector<std::uint32_t>& job_pids, std::int64_t start_unix,
                    diagnose::LiveDiagnosis& live, RecorderSession* session) {
  if (!channel) return;
  std::vector<StackTarget> targets;
  for (const auto& r : channel->ranks()) {
    if (r.stack_signal <= 0 || r.pid == 0) continue;
    if (!std::binary_search(job_pids.begin(), job_pids.end(), r.pid)) continue;  // the job's only
    targets.push_back({r.key, r.pid, r.stack_signal});
  }
  if (targets.empty()) {
    if (!o.quiet)
      std::fputs(i18n::tr("trainmon: no process of the job can send its stacks\n").data(), stderr);
    return;
  }
  StackCaptureOptions sco;
  sco.proc_root = o.proc_root;
  sco.directory = channel->directory();
  const std::int64_t asked_unix = now_ns(CLOCK_REALTIME);
  const double asked_t = static_cast<double>(asked_unix - start_unix) / 1e9;
  TrainUpdate update;
  for (auto& res : capture_stacks(targets, sco)) {
    if (res.text.empty()) {
      if (!o.quiet)
        std::fprintf(stderr, "trainmon: no stacks from pid %u: %s\n", res.target.pid, res.skipped.c_str());
      continue;
    }
    live.on_train_stack({asked_t, res.target.rank_key, res.target.pid, "D23", res.text});
    update.stacks.push_back({asked_unix, res.target.rank_key, res.target.pid, "D23", std::move(res.text)});
  }
  if (update.stacks.empty()) return;
  if (session) session->add_train(std::move(update));
  live.evaluate();  // the open hang finding now names the line each rank is stuck on
  if (o.quiet) return;
  for (const auto& f : live.active()) {
    if (f.code != "D23") continue;
    for (const auto& st : f.stacks) {
      const std::string where = st.where.empty() ? std::string(i18n::tr("(no Python frame)")) : st.where;
      const std::string caller =
          st.caller.empty() ? std::string() : i18n::trf(" (called from {})", st.caller);
      std::fputs(
          (st.rank >= 0 ? i18n::trf("trainmon: rank {} pid {} is at {}{}\n", st.rank, st.pid, where, caller)
                        : i18n::trf("trainmon: process {} is at {}{}\n", st.pid, where, caller))
              .c_str(),
          stderr);
    }
    // The advice as the stacks make it (the rank that holds the job, ranks in different
    // collectives), so that someone watching a job that never ends reads it here, in their language.
    if (!f.stacks.empty())
      std::fputs(fmt::format("trainmon: D23 -> {}\n", diagnose::shown_advice(f)).c_str(), stderr);
  }
}

}  // namespace trainmon::recorder::job_parts
