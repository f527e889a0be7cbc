// SPDX-License-Identifier: Apache-2.0
#include "trainmon/runner/oom.h"

#include <fmt/format.h>
#include <signal.h>

#include <fstream>
#include <iterator>

#include "trainmon/host/cgroup.h"

namespace trainmon::runner {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::optional<std::uint64_t> read_count(const std::string& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  std::string text{std::istreambuf_iterator<char>(in), {}};
  return parse_oom_kill_count(text);
}

}  // namespace

std::string format_elapsed(std::int64_t ms) {
  if (ms < 0) ms = 0;
  std::int64_t s = ms / 1000;
  return fmt::format("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

std::optional<OomVerdict> oom_verdict(const OomInputs& in) {
  const bool sigkill = in.exit.signal && *in.exit.signal == SIGKILL;
  const bool counted = in.oom_kills && *in.oom_kills > 0;
  bool exhausted = false;
  if (in.min_available_bytes && in.memory_total_bytes && *in.memory_total_bytes > 0) {
    exhausted = static_cast<double>(*in.min_available_bytes) <=
                kExhaustedAvailableFraction * static_cast<double>(*in.memory_total_bytes);
  }
  if (!counted && !(sigkill && exhausted)) return std::nullopt;

  OomVerdict v;
  v.certain = counted;
  v.main_process_killed = sigkill;
  std::string what =
      sigkill ? fmt::format("killed by the kernel OOM killer at {}", format_elapsed(in.end_elapsed_ms))
              : fmt::format("a process of the job was killed by the kernel OOM killer (by {})",
                            format_elapsed(in.end_elapsed_ms));
  if (!counted) what = "probably " + what + " (SIGKILL while available memory was exhausted)";
  if (in.tree_rss_bytes) {
    what += fmt::format("; the job's RSS was {:.1f} GiB", static_cast<double>(*in.tree_rss_bytes) / kGiB);
    if (in.rss_growth_bytes_per_h && *in.rss_growth_bytes_per_h > 0) {
      what += fmt::format(" and had grown {:.1f} GiB/h", *in.rss_growth_bytes_per_h / kGiB);
    }
  }
  v.message = std::move(what);
  return v;
}

OomWatch::OomWatch(std::string proc_root, std::string sys_root)
    : proc_root_(std::move(proc_root)), sys_root_(std::move(sys_root)) {}

void OomWatch::observe(std::uint32_t pid) {
  std::string membership;
  {
    std::ifstream in(proc_root_ + "/" + std::to_string(pid) + "/cgroup");
    if (!in) return;
    membership.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto [it, fresh] = seen_pids_.try_emplace(pid, membership);
  if (!fresh) {
    if (it->second == membership) return;
    it->second = membership;
  }
  auto cg = read_cgroup_memory(pid, proc_root_, sys_root_);
  if (!cg || !cg->oom_kill_count.ok()) return;
  const std::string file = cg->directory + (cg->version == 2 ? "/memory.events" : "/memory.oom_control");
  baseline_.emplace(file, *cg->oom_kill_count);
}

std::optional<std::uint64_t> OomWatch::kills_since_start() const {
  std::optional<std::uint64_t> total;
  for (const auto& [file, base] : baseline_) {
    auto now = read_count(file);
    if (!now) continue;
    total = total.value_or(0) + (*now > base ? *now - base : 0);
  }
  return total;
}

}  // namespace trainmon::runner
