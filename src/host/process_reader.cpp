// SPDX-License-Identifier: Apache-2.0
#include "process_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "trainmon/host/parse_process.h"

namespace trainmon::host_detail {

namespace {

/// Per-process files: a missing file means the process exited between two reads.
template <class T>
Reading<T> fail_from(int err) {
  const ReadStatus s = status_from_errno(err);
  return Reading<T>::fail(s == ReadStatus::not_supported ? ReadStatus::not_available : s, err);
}

}  // namespace

ProcessReader::ProcessReader(std::string passwd_path) : users_(std::move(passwd_path)) {}

namespace {
/// Closes a directory descriptor at scope exit.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};
}  // namespace

ProcessReadResult ProcessReader::read(std::uint32_t pid, const ProcessReadContext& ctx, ProcessSample& out) {
  // One descriptor for /proc/PID: every file below is read relative to it, so all of them come from
  // the same process even if the pid is reused meanwhile (the old directory then answers ESRCH).
  char digits[16];
  *std::to_chars(digits, digits + sizeof digits - 1, pid).ptr = '\0';
  const int dir = ::openat(ctx.proc_root_fd, digits, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    return (errno == ENOENT || errno == ESRCH) ? ProcessReadResult::gone : ProcessReadResult::unreadable;
  }
  const FdGuard guard{dir};
  // --- stat: identity, state, times, memory. Without it the process is skipped.
  if (const int err = file_.read_at(dir, "stat", 4096, true); err != 0) {
    return (err == ENOENT || err == ESRCH) ? ProcessReadResult::gone : ProcessReadResult::unreadable;
  }
  auto stat = parse_pid_stat(file_.text());
  if (!stat) return ProcessReadResult::unreadable;
  out = ProcessSample{};
  out.pid = pid;
  out.ppid = stat->ppid;
  out.state = stat->state;
  out.comm = sanitize_utf8(stat->comm);
  out.start_time_ticks = stat->start_time_ticks;
  out.start_time_boot_s = static_cast<double>(stat->start_time_ticks) / ctx.ticks_per_s;
  if (ctx.boot_time_unix_s)
    out.start_time_unix_s = static_cast<double>(*ctx.boot_time_unix_s) + out.start_time_boot_s;
  out.cpu_time_s = static_cast<double>(stat->utime_ticks + stat->stime_ticks) / ctx.ticks_per_s;
  out.rss_bytes = Reading<std::uint64_t>::of(stat->rss_pages * ctx.page_size);
  out.vms_bytes = Reading<std::uint64_t>::of(stat->vsize_bytes);
  if (stat->num_threads > 0)
    out.num_threads = Reading<unsigned>::of(static_cast<unsigned>(stat->num_threads));
  if (ctx.mem_total_bytes && *ctx.mem_total_bytes > 0) {
    out.mem_pct = Reading<double>::of(static_cast<double>(*out.rss_bytes) * 100.0 /
                                      static_cast<double>(*ctx.mem_total_bytes));
  }
  if (ctx.uptime_s) {
    const double elapsed = *ctx.uptime_s - out.start_time_boot_s;
    out.cpu_pct_lifetime = elapsed > 0 ? Reading<double>::of(out.cpu_time_s * 100.0 / elapsed)
                                       : Reading<double>::fail(ReadStatus::not_available);
  }

  // --- status: uid, NSpid, shared memory.
  if (const int err = file_.read_at(dir, "status", 16384, true); err != 0) {
    const auto r = fail_from<std::uint64_t>(err);
    out.status_file = r.status;
    out.shared_bytes = r;
    out.swap_bytes = r;
  } else {
    const PidStatus st = parse_pid_status(file_.text());
    out.status_file = ReadStatus::ok;
    if (st.uid_real) {
      out.uid = *st.uid_real;
      out.user = users_.name(out.uid);
    } else {
      out.status_file = ReadStatus::invalid_value;
    }
    out.nspid = st.nspid;
    if (st.rss_file_bytes && st.rss_shmem_bytes) {
      out.shared_bytes = Reading<std::uint64_t>::of(*st.rss_file_bytes + *st.rss_shmem_bytes);
    } else {
      out.shared_bytes = Reading<std::uint64_t>::fail(ReadStatus::not_supported);  // kernel threads, < 4.5
    }
    out.swap_bytes = st.vm_swap_bytes ? Reading<std::uint64_t>::of(*st.vm_swap_bytes)
                                      : Reading<std::uint64_t>::fail(ReadStatus::not_supported);
    if (st.threads) out.num_threads = Reading<unsigned>::of(*st.threads);
  }

  // --- cmdline (may be long; read up to 4× the display cap so the cut is ours), cached.
  auto& cmd = cmdlines_[pid];
  cmd.touched = true;
  const bool fresh = cmd.reads > 0 && cmd.start_time_ticks == out.start_time_ticks && cmd.comm == out.comm &&
                     !cmd.cmdline.empty() && cmd.reads < kCmdlineRefreshReads;
  if (fresh) {
    ++cmd.reads;
    out.cmdline = cmd.cmdline;
  } else {
    if (file_.read_at(dir, "cmdline", ctx.cmdline_max_bytes * 4 + 4) == 0) {
      out.cmdline = parse_cmdline(file_.text(), ctx.cmdline_max_bytes);
    }
    cmd.start_time_ticks = out.start_time_ticks;
    cmd.comm = out.comm;
    cmd.cmdline = out.cmdline;
    cmd.reads = 1;
  }

  if (!ctx.details) return ProcessReadResult::ok;

  // --- io (ptrace-checked: other users' processes give EACCES).
  if (const int err = file_.read_at(dir, "io", 4096, true); err != 0) {
    out.read_bytes = out.write_bytes = fail_from<std::uint64_t>(err);
  } else {
    const PidIo io = parse_pid_io(file_.text());
    out.read_bytes = io.read_bytes ? Reading<std::uint64_t>::of(*io.read_bytes)
                                   : Reading<std::uint64_t>::fail(ReadStatus::invalid_value);
    out.write_bytes = io.write_bytes ? Reading<std::uint64_t>::of(*io.write_bytes)
                                     : Reading<std::uint64_t>::fail(ReadStatus::invalid_value);
  }

  // --- cgroup, cached per (pid, start time).
  auto& entry = cgroups_[pid];
  entry.touched = true;
  if (entry.valid && entry.start_time_ticks == out.start_time_ticks && entry.cgroup.ok()) {
    out.cgroup = entry.cgroup;
    out.container_id = entry.container_id;
    return ProcessReadResult::ok;
  }
  entry = CgroupEntry{};
  entry.valid = true;
  entry.touched = true;
  entry.start_time_ticks = out.start_time_ticks;
  if (const int err = file_.read_at(dir, "cgroup", 65536); err != 0) {
    entry.cgroup = fail_from<std::string>(err);
    entry.container_id = entry.cgroup;
  } else {
    const auto lines = parse_cgroup(file_.text());
    const auto mem = memory_cgroup_line(lines);
    entry.cgroup =
        mem ? Reading<std::string>::of(mem->path) : Reading<std::string>::fail(ReadStatus::not_available);
    std::optional<std::string> id = mem ? container_id_from_cgroup(mem->path) : std::nullopt;
    for (std::size_t i = 0; !id && i < lines.size(); ++i) id = container_id_from_cgroup(lines[i].path);
    entry.container_id =
        id ? Reading<std::string>::of(std::move(*id)) : Reading<std::string>::fail(ReadStatus::not_available);
  }
  out.cgroup = entry.cgroup;
  out.container_id = entry.container_id;
  return ProcessReadResult::ok;
}

namespace {
template <class Map>
void sweep_untouched(Map& map) {
  for (auto it = map.begin(); it != map.end();) {
    if (!it->second.touched) {
      it = map.erase(it);
    } else {
      it->second.touched = false;
      ++it;
    }
  }
}
}  // namespace

void ProcessReader::sweep() {
  sweep_untouched(cgroups_);
  sweep_untouched(cmdlines_);
}

}  // namespace trainmon::host_detail
