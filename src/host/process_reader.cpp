// SPDX-License-Identifier: Apache-2.0
#include "process_reader.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
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

/// Closes a directory descriptor at scope exit.
struct FdGuard {
  int fd = -1;
  FdGuard() = default;
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

std::size_t default_max_kept() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 1024;
  return std::min<std::size_t>(1024, static_cast<std::size_t>(rl.rlim_cur / 4));
}

}  // namespace

ProcessReader::ProcessReader(std::string passwd_path, std::size_t max_kept_stat_fds)
    : users_(std::move(passwd_path)),
      max_kept_(max_kept_stat_fds > 0 ? max_kept_stat_fds : default_max_kept()) {}

ProcessReader::~ProcessReader() {
  for (auto& [pid, e] : entries_) drop_stat_fd(e);
}

void ProcessReader::drop_stat_fd(Entry& e) noexcept {
  if (e.stat_fd < 0) return;
  ::close(e.stat_fd);
  e.stat_fd = -1;
  --kept_;
}

ProcessReadResult ProcessReader::read(std::uint32_t pid, const ProcessReadContext& ctx, ProcessSample& out) {
  char digits[16];
  *std::to_chars(digits, digits + sizeof digits - 1, pid).ptr = '\0';
  // Every file of a tick is read relative to one descriptor of /proc/PID, so all of them come from
  // the same process even if the pid is reused meanwhile (the old directory then answers ESRCH). A
  // kept stat descriptor likewise answers ESRCH once its process is gone.
  FdGuard dir;
  auto open_dir = [&]() -> int {
    if (dir.fd < 0) dir.fd = ::openat(ctx.proc_root_fd, digits, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return dir.fd < 0 ? errno : 0;
  };

  // Steady state: one pread of the kept /proc/PID/stat. The directory is opened only for the files
  // read this tick besides stat (status or the command line when their cache is due, io and cgroup
  // for details); a pid reused between that pread and this open would need the pid numbers to wrap
  // around within microseconds, and the next tick's stat (ESRCH, then a new start time) corrects it.
  auto it = entries_.find(pid);
  Entry* e = it == entries_.end() ? nullptr : &it->second;
  bool have_stat = false;
  if (e && e->stat_fd >= 0) {
    if (file_.pread_fd(e->stat_fd, 4096, true) == 0) {
      have_stat = true;
    } else {
      drop_stat_fd(*e);  // exited (ESRCH): look the pid up again below
    }
  }
  if (!have_stat) {
    if (ctx.own_procfs && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      return ProcessReadResult::gone;
    if (const int err = open_dir(); err != 0)
      return (err == ENOENT || err == ESRCH) ? ProcessReadResult::gone : ProcessReadResult::unreadable;
    // --- stat: identity, state, times, memory. Without it the process is skipped.
    int kept = -1;
    const int err = ctx.keep_stat_fds && kept_ < max_kept_
                        ? file_.read_at_keep(dir.fd, "stat", 4096, true, kept)
                        : file_.read_at(dir.fd, "stat", 4096, true);
    if (err != 0)
      return (err == ENOENT || err == ESRCH) ? ProcessReadResult::gone : ProcessReadResult::unreadable;
    if (!e) e = &entries_[pid];
    if (kept >= 0) {
      drop_stat_fd(*e);
      e->stat_fd = kept;
      ++kept_;
    }
  }
  auto stat = parse_pid_stat(file_.text());
  if (!stat) return ProcessReadResult::unreadable;  // the entry, untouched, goes at the next sweep
  if (e->start_time_ticks != stat->start_time_ticks) {
    // Another process under this pid: nothing cached holds for it (its stat descriptor, opened just
    // now, does).
    const int fd = e->stat_fd;
    *e = Entry{};
    e->stat_fd = fd;
    e->start_time_ticks = stat->start_time_ticks;
  }
  e->touched = true;

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

  // --- status: uid, NSpid, shared memory (every tick, or once per process and every kRefreshReads).
  if (ctx.status_every_tick || e->status_reads == 0 || e->status_reads >= kRefreshReads) {
    int err = open_dir();
    if (err == 0) err = file_.read_at(dir.fd, "status", 16384, true);
    if (err != 0) {
      const auto r = fail_from<std::uint64_t>(err);
      out.status_file = r.status;
      if (ctx.status_every_tick) out.shared_bytes = out.swap_bytes = r;
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
      if (ctx.status_every_tick) {
        if (st.rss_file_bytes && st.rss_shmem_bytes) {
          out.shared_bytes = Reading<std::uint64_t>::of(*st.rss_file_bytes + *st.rss_shmem_bytes);
        } else {
          out.shared_bytes =
              Reading<std::uint64_t>::fail(ReadStatus::not_supported);  // kernel threads, < 4.5
        }
        out.swap_bytes = st.vm_swap_bytes ? Reading<std::uint64_t>::of(*st.vm_swap_bytes)
                                          : Reading<std::uint64_t>::fail(ReadStatus::not_supported);
        if (st.threads) out.num_threads = Reading<unsigned>::of(*st.threads);
      }
    }
    if (!ctx.status_every_tick) {
      e->status_reads = 1;
      e->status_file = out.status_file;
      e->uid = out.uid;
      e->user = out.user;
      e->nspid = out.nspid;
    }
  } else {
    ++e->status_reads;
    out.status_file = e->status_file;
    out.uid = e->uid;
    out.user = e->user;
    out.nspid = e->nspid;
  }

  // --- cmdline (may be long; read up to 4× the display cap so the cut is ours), cached.
  // An empty one is kept only for a process without an address space (vsize 0: a kernel thread, a
  // zombie), which cannot get a command line without an exec, which changes comm.
  const bool fresh = e->cmdline_reads > 0 && e->comm == out.comm &&
                     (!e->cmdline.empty() || stat->vsize_bytes == 0) && e->cmdline_reads < kRefreshReads;
  if (fresh) {
    ++e->cmdline_reads;
    out.cmdline = e->cmdline;
    out.args = e->args;
  } else {
    if (open_dir() == 0 && file_.read_at(dir.fd, "cmdline", ctx.cmdline_max_bytes * 4 + 4) == 0) {
      out.cmdline = parse_cmdline(file_.text(), ctx.cmdline_max_bytes);
      out.args = parse_cmdline_args(file_.text(), ctx.cmdline_max_bytes);
    }
    e->comm = out.comm;
    e->cmdline = out.cmdline;
    e->args = out.args;
    e->cmdline_reads = 1;
  }

  if (!ctx.details && !ctx.attribution) return ProcessReadResult::ok;

  int err = 0;
  if (ctx.details) {
    // --- io (ptrace-checked: other users' processes give EACCES).
    err = open_dir();
    if (err == 0) err = file_.read_at(dir.fd, "io", 4096, true);
    if (err != 0) {
      out.read_bytes = out.write_bytes = fail_from<std::uint64_t>(err);
    } else {
      const PidIo io = parse_pid_io(file_.text());
      out.read_bytes = io.read_bytes ? Reading<std::uint64_t>::of(*io.read_bytes)
                                     : Reading<std::uint64_t>::fail(ReadStatus::invalid_value);
      out.write_bytes = io.write_bytes ? Reading<std::uint64_t>::of(*io.write_bytes)
                                       : Reading<std::uint64_t>::fail(ReadStatus::invalid_value);
    }
  }

  // --- cgroup and environ, cached per (pid, start time): read again after an exec and every
  // kRefreshReads reads (attribution), or until the cgroup was read once (details).
  const bool attribution_due =
      e->attribution_reads == 0 || e->attribution_comm != out.comm || e->attribution_reads >= kRefreshReads;
  if (!attribution_due) ++e->attribution_reads;
  if (attribution_due || !(e->cgroup_valid && e->cgroup.ok())) {
    e->cgroup_valid = true;
    std::vector<CgroupLine> lines;
    err = open_dir();
    if (err == 0) err = file_.read_at(dir.fd, "cgroup", 65536);
    if (err != 0) {
      e->cgroup = fail_from<std::string>(err);
      e->container_id = e->cgroup;
    } else {
      lines = parse_cgroup(file_.text());
      const auto mem = memory_cgroup_line(lines);
      e->cgroup =
          mem ? Reading<std::string>::of(mem->path) : Reading<std::string>::fail(ReadStatus::not_available);
      std::optional<std::string> id = mem ? container_id_from_cgroup(mem->path) : std::nullopt;
      for (std::size_t i = 0; !id && i < lines.size(); ++i) id = container_id_from_cgroup(lines[i].path);
      e->container_id = id ? Reading<std::string>::of(std::move(*id))
                           : Reading<std::string>::fail(ReadStatus::not_available);
    }
    if (attribution_due) {
      // environ: the owner's or root's only (EACCES otherwise: no attribution from it, no error).
      ProcessAttribution a;
      if (open_dir() == 0 && file_.read_at(dir.fd, "environ", kEnvironMaxBytes) == 0)
        parse_environ_attribution(file_.text(), a, file_.text().size() >= kEnvironMaxBytes);
      apply_cgroup_attribution(lines, a);
      e->attribution = std::move(a);
      e->attribution_comm = out.comm;
      e->attribution_reads = 1;
    }
  }
  // Names of a pod whose log directory was not listed yet are looked up again (KubeletPods lists at
  // most every few seconds).
  if (ctx.pods && !e->attribution.pod_uid.empty() && e->attribution.pod_name.empty())
    ctx.pods->apply(e->attribution);
  out.attribution = e->attribution;
  if (ctx.details) {
    out.cgroup = e->cgroup;
    out.container_id = e->container_id;
  }
  return ProcessReadResult::ok;
}

void ProcessReader::sweep() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (!it->second.touched) {
      drop_stat_fd(it->second);
      it = entries_.erase(it);
    } else {
      it->second.touched = false;
      ++it;
    }
  }
}

}  // namespace trainmon::host_detail
