// SPDX-License-Identifier: Apache-2.0
#include "trainmon/runner/oom.h"

#include <algorithm>

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "trainmon/host/cgroup.h"

namespace trainmon::runner {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

/// A small /proc or /sys file with plain reads, empty when it cannot be read. (libstdc++'s filebuf
/// throws on a read error such as ESRCH from the file of a process that just exited, which stopped
/// monitoring for the rest of a run.)
std::string read_small(const std::string& path) {
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || text.size() > 65536) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

std::optional<std::uint64_t> read_count(const std::string& file) {
  const std::string text = read_small(file);
  if (text.empty()) return std::nullopt;
  return parse_oom_kill_count(text);
}

}  // namespace

std::string format_elapsed(std::int64_t ms) {
  if (ms < 0) ms = 0;
  std::int64_t s = ms / 1000;
  return fmt::format("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

std::string human_bytes(std::uint64_t b) {
  const double v = static_cast<double>(b);
  return v >= kGiB ? fmt::format("{:.1f} GiB", v / kGiB) : fmt::format("{:.1f} MiB", v / (1024.0 * 1024));
}

std::string describe_cgroup_limits(const JobCgroupLimits& l) {
  std::string out;
  if (l.memory_limit_bytes)
    out = fmt::format("memory {} ({} of {})", human_bytes(*l.memory_limit_bytes), l.memory_limit_file,
                      l.memory_limit_path);
  if (l.cpu_limit_cpus)
    out += fmt::format("{}CPU {:.2f} CPUs ({} of {})", out.empty() ? "" : ", ", *l.cpu_limit_cpus,
                       l.cpu_limit_file, l.cpu_limit_path);
  return out;
}

std::optional<OomVerdict> oom_verdict(const OomInputs& in) {
  const bool sigkill = in.exit.signal && *in.exit.signal == SIGKILL;
  const bool counted = in.oom_kills && *in.oom_kills > 0;
  bool exhausted = false;
  if (in.min_available_bytes && in.memory_total_bytes && *in.memory_total_bytes > 0) {
    exhausted = static_cast<double>(*in.min_available_bytes) <=
                kExhaustedAvailableFraction * static_cast<double>(*in.memory_total_bytes);
  }
  const auto& cg = in.cgroup;
  // At the cgroup's limit: the limit's own OOM count rose, or it was reached while the host still
  // had memory (a full host explains a kill as well, and the peak alone proves no OOM).
  const bool at_limit =
      cg.memory_limit_bytes && (cg.memory_limit_oom || (cg.memory_limit_reached && !exhausted));
  // Without a readable kill count, a SIGKILL at the limit or with the host exhausted is inferred.
  const bool inferred = !in.oom_kills && sigkill && (at_limit || exhausted);
  if (!counted && !inferred && !(sigkill && exhausted)) return std::nullopt;

  OomVerdict v;
  v.certain = counted;
  v.main_process_killed = sigkill;
  v.at_cgroup_limit = at_limit;
  std::string what =
      sigkill ? fmt::format("killed by the kernel OOM killer at {}", format_elapsed(in.end_elapsed_ms))
              : fmt::format("a process of the job was killed by the kernel OOM killer (by {})",
                            format_elapsed(in.end_elapsed_ms));
  if (!counted)
    what = "probably " + what +
           (at_limit ? " (SIGKILL while its memory cgroup was at its limit)"
                     : " (SIGKILL while available memory was exhausted)");
  if (at_limit) {
    what += fmt::format(
        ": the job's memory cgroup reached its limit of {} ({} of cgroup {}), not the host's memory",
        human_bytes(*cg.memory_limit_bytes), cg.memory_limit_file, cg.memory_limit_path);
  }
  // The killed process with its own RSS; the job's last RSS only while it still includes it (the main
  // process's kill: the last tick was before it; a worker's: the job's RSS after the kill says little).
  const bool killed = in.killed_pid && in.killed_rss_bytes;
  if (killed)
    what += fmt::format("; the killed process ({}pid {}) had {:.1f} GiB RSS",
                        in.killed_kind.empty() ? std::string() : in.killed_kind + ", ", *in.killed_pid,
                        static_cast<double>(*in.killed_rss_bytes) / kGiB);
  if (killed && !sigkill) {
    if (in.rss_growth_bytes_per_h && *in.rss_growth_bytes_per_h > 0)
      what += fmt::format("; the job's RSS had grown {:.1f} GiB/h", *in.rss_growth_bytes_per_h / kGiB);
  } else if (in.tree_rss_bytes) {
    what += fmt::format("; the job's RSS was {:.1f} GiB", static_cast<double>(*in.tree_rss_bytes) / kGiB);
    if (in.rss_growth_bytes_per_h && *in.rss_growth_bytes_per_h > 0) {
      what += fmt::format(" and had grown {:.1f} GiB/h", *in.rss_growth_bytes_per_h / kGiB);
    }
  }
  if (at_limit && cg.memory_peak_bytes)
    what += fmt::format("; the cgroup's peak usage was {}", human_bytes(*cg.memory_peak_bytes));
  v.message = std::move(what);
  return v;
}

OomWatch::OomWatch(std::string proc_root, std::string sys_root)
    : proc_root_(std::move(proc_root)), sys_root_(std::move(sys_root)) {}

void OomWatch::observe(std::uint32_t pid) {
  const std::string membership = read_small(proc_root_ + "/" + std::to_string(pid) + "/cgroup");
  if (membership.empty()) return;
  auto [it, fresh] = seen_pids_.try_emplace(pid, membership);
  if (!fresh) {
    if (it->second == membership) return;
    it->second = membership;
  }
  ++cgroup_reads_;
  auto cg = read_cgroup_memory(pid, proc_root_, sys_root_);
  if (cg) {
    if (version_ == 0) {
      version_ = cg->version;
      first_path_ = cg->path;
    }
    if (cg->limit_bytes.ok() && !cg->limit_directory.empty()) {
      MemoryLimit lim;
      lim.version = cg->version;
      lim.bytes = *cg->limit_bytes;
      lim.directory = cg->limit_directory;
      lim.path = cg->limit_directory.size() > cg->mount.size() ? cg->limit_directory.substr(cg->mount.size())
                                                               : std::string("/");
      if (cg->limit_hit_count.ok()) lim.hits_at_start = *cg->limit_hit_count;
      if (memory_limits_.size() < kMaxCgroups) memory_limits_.try_emplace(lim.directory, std::move(lim));
    }
    if (cg->oom_kill_count.ok()) {
      const std::string file = cg->directory + (cg->version == 2 ? "/memory.events" : "/memory.oom_control");
      if (baseline_.size() < kMaxCgroups) baseline_.emplace(file, *cg->oom_kill_count);
    }
  }
  if (auto cpu = read_cgroup_cpu(pid, proc_root_, sys_root_); cpu && cpu->limit_cpus.ok()) {
    if (!cpu_limit_ || *cpu->limit_cpus < *cpu_limit_) {
      cpu_limit_ = *cpu->limit_cpus;
      cpu_file_ = cgroup_cpu_limit_file(cpu->version);
      cpu_path_ = cpu->limit_directory.size() > cpu->mount.size()
                      ? cpu->limit_directory.substr(cpu->mount.size())
                      : std::string("/");
    }
  }
}

JobCgroupLimits OomWatch::limits() const {
  JobCgroupLimits out;
  out.version = version_;
  out.path = first_path_;
  const MemoryLimit* tightest = nullptr;
  for (const auto& [dir, lim] : memory_limits_)
    if (!tightest || lim.bytes < tightest->bytes) tightest = &lim;
  if (tightest) {
    out.memory_limit_bytes = tightest->bytes;
    out.memory_limit_file = cgroup_memory_limit_file(tightest->version);
    out.memory_limit_path = tightest->path;
    const bool v2 = tightest->version == 2;
    // Plain reads: a cgroup removed meanwhile fails a read, which an ifstream would throw on.
    auto number = [](const std::string& file) -> std::optional<std::uint64_t> {
      const std::string t = read_small(file);
      std::uint64_t n = 0;
      const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
      if (ec != std::errc() || end == t.data()) return std::nullopt;
      return n;
    };
    out.memory_peak_bytes =
        number(tightest->directory + (v2 ? "/memory.peak" : "/memory.max_usage_in_bytes"));
    std::optional<std::uint64_t> hits;
    if (v2) {
      const std::string ev = read_small(tightest->directory + "/memory.events");
      if (!ev.empty()) hits = parse_keyed_count(ev, "oom");
    } else {
      hits = number(tightest->directory + "/memory.failcnt");
    }
    const bool hit = hits && tightest->hits_at_start && *hits > *tightest->hits_at_start;
    out.memory_limit_oom = v2 && hit;
    out.memory_limit_reached =
        hit || (out.memory_peak_bytes && static_cast<double>(*out.memory_peak_bytes) >=
                                             kLimitReachedFraction * static_cast<double>(tightest->bytes));
  }
  out.cpu_limit_cpus = cpu_limit_;
  out.cpu_limit_file = cpu_file_;
  out.cpu_limit_path = cpu_path_;
  return out;
}

std::optional<std::uint64_t> OomWatch::memory_limit_bytes() const {
  std::optional<std::uint64_t> out;
  for (const auto& [dir, lim] : memory_limits_)
    if (!out || lim.bytes < *out) out = lim.bytes;
  return out;
}

void OomWatch::observe_job(std::span<const std::uint32_t> pids) {
  for (auto pid : pids) observe(pid);
  std::erase_if(seen_pids_,
                [&](const auto& e) { return !std::binary_search(pids.begin(), pids.end(), e.first); });
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
