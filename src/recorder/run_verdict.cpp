// SPDX-License-Identifier: Apache-2.0
#include "trainmon/recorder/run_verdict.h"

#include <cstdio>
#include <exception>

#include "trainmon/core/i18n.h"
#include "trainmon/diagnose/train_summary.h"
#include "trainmon/store/job_gpus.h"

namespace trainmon::recorder {

RunVerdict judge_run(const RecorderSession* session, const diagnose::LiveDiagnosis& live,
                     const runner::ChildExit& exit, std::int64_t end_elapsed_ms) {
  RunVerdict v;
  if (session) {
    RunSummary& summary = v.summary;
    summary = session->summary();
    summary.duration_ms = end_elapsed_ms;
    summary.train = diagnose::summarize_train(live.series());
    runner::OomInputs& in = v.oom_in;
    in.exit = exit;
    in.oom_kills = session->oom_watch().kills_since_start();
    in.end_elapsed_ms = end_elapsed_ms;
    in.tree_rss_bytes = summary.last_job_rss_bytes;
    in.rss_growth_bytes_per_h = summary.job_rss_growth_bytes_per_h;
    in.min_available_bytes = summary.min_available_recent_bytes;
    in.memory_total_bytes = summary.memory_total_bytes;
    in.cgroup = session->oom_watch().limits();
    v.oom = runner::oom_verdict(in);
    summary.cgroup = in.cgroup;
    summary.oom_at_cgroup_limit = v.oom && v.oom->at_cgroup_limit;
    summary.oom_kills = in.oom_kills;
  }
  v.status = exit.signal ? "signaled" : "exited";
  if (v.oom && v.oom->main_process_killed) v.status = "oom_killed";
  // runner::describe_exit's words for people, in the reader's language (the summary's first line)
  v.status_line =
      exit.signal ? i18n::trf("command killed by {} (signal {}{})", runner::signal_name(*exit.signal),
                              *exit.signal, exit.core_dumped ? i18n::tr(", core dumped") : std::string_view())
                  : i18n::trf("command exit status {}", exit.code);
  return v;
}

void diagnose_run(RunVerdict& v, diagnose::LiveDiagnosis& live, const runner::ChildExit& exit,
                  const std::vector<std::pair<std::string, std::string>>& labels,
                  const std::vector<diagnose::NvmlGpuRef>& gpu_refs, std::uint32_t root_pid,
                  std::int64_t end_elapsed_ms) {
  const RunSummary& summary = v.summary;
  diagnose::JobFacts facts;
  if (exit.signal) {
    facts.signal = exit.signal;
  } else {
    facts.exit_status = runner::exit_code_for(exit);
  }
  facts.oom_killed = v.status == "oom_killed";
  facts.oom_at_cgroup_limit = summary.oom_at_cgroup_limit;
  if (summary.oom_kills) facts.oom_kills_at_end = static_cast<double>(*summary.oom_kills);
  if (summary.cgroup.memory_limit_bytes)
    facts.cgroup_memory_limit_mib = static_cast<double>(*summary.cgroup.memory_limit_bytes) / (1024.0 * 1024);
  std::vector<unsigned> used;
  for (const auto& g : summary.gpus) {
    if (g.used_by_job) used.push_back(g.index);
  }
  facts.gpus = store::job_gpus(std::move(used), labels, gpu_refs);
  facts.root_pid = root_pid;
  try {
    v.findings = live.finish(facts);
    // What to fix first: critical faults, then by what each costs (docs/diagnosis.md "Cost").
    diagnose::rank_findings(*v.findings, static_cast<double>(end_elapsed_ms) / 1e3);
  } catch (const std::exception& e) {
    std::fputs(i18n::trf("trainmon: no diagnosis: {}\n", e.what()).c_str(), stderr);
  }
}

void name_oom_kill(RunVerdict& v, std::uint32_t root_pid) {
  if (!v.oom || !v.findings) return;
  const diagnose::Finding* kill = nullptr;
  for (const auto& f : *v.findings)
    if (f.code == "D20" && f.numbers.contains("killed_pid") &&
        (!kill || (v.oom->main_process_killed ? f.numbers.at("killed_pid") == static_cast<double>(root_pid)
                                              : f.start_s > kill->start_s)))
      kill = &f;
  if (kill && kill->numbers.contains("killed_rss_mib")) {
    runner::OomInputs& in = v.oom_in;
    in.killed_pid = static_cast<std::uint32_t>(kill->numbers.at("killed_pid"));
    in.killed_rss_bytes = static_cast<std::uint64_t>(kill->numbers.at("killed_rss_mib") * 1048576.0);
    const auto k = kill->numbers.find("killed_kind");
    in.killed_kind = std::string(diagnose::job_process_kind_name(
        k == kill->numbers.end() ? diagnose::JobProcessKind::other
                                 : static_cast<diagnose::JobProcessKind>(static_cast<int>(k->second))));
    if (auto again = runner::oom_verdict(in)) v.oom->message = std::move(again->message);
  }
}

void print_run_end(const RunVerdict& v, std::int64_t run_id, const runner::JobStopReport& stopped,
                   std::chrono::nanoseconds kill_after, bool quiet, const std::string& report_path) {
  if (v.oom) std::fprintf(stderr, "trainmon: %s\n", v.oom->message.c_str());
  if (quiet) return;
  std::fputs(format_summary(v.summary, v.status_line, run_id,
                            v.findings ? std::optional<std::int64_t>(v.findings->size()) : std::nullopt)
                 .c_str(),
             stderr);
  if (const std::string line = runner::describe_stop(stopped, kill_after); !line.empty())
    std::fprintf(stderr, "%s\n", line.c_str());
  if (v.findings) {
    for (const auto& f : *v.findings) std::fprintf(stderr, "  %s\n", diagnose::to_text(f).c_str());
  }
  if (!report_path.empty()) std::fprintf(stderr, "report: %s\n", report_path.c_str());
}

}  // namespace trainmon::recorder
