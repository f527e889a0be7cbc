// SPDX-License-Identifier: Apache-2.0
// HostCollector: one HostSample (+ processes) per call from /proc and /sys under injectable roots.
// Every rate uses the CLOCK_BOOTTIME interval from /proc/uptime, so a fixture tree gives exact,
// repeatable rates; counters that go backwards give 0, never a negative or huge rate.
#include "trainmon/host/host_collector.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string_view>
#include <unordered_map>

#include "file_reader.h"
#include "parse_util.h"
#include "process_reader.h"
#include "trainmon/host/cpu_temperature.h"
#include "trainmon/host/parse_system.h"

namespace trainmon {

using namespace host_detail;

namespace {

template <class T>
Reading<T> fail_reading(int err) {
  return Reading<T>::fail(status_from_errno(err), err);
}

double boottime_now_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

std::string default_pod_logs_root() {
  const char* env = std::getenv("TRAINMON_POD_LOGS_ROOT");
  return env && *env ? std::string(env) : std::string(kDefaultPodLogsRoot);
}

struct HostCollector::State {
  explicit State(HostOptions o) : options(std::move(o)), procs(passwd_path_for_proc_root(options.proc_root)) {
    const long hz = ::sysconf(_SC_CLK_TCK);
    ticks_per_s = hz > 0 ? static_cast<double>(hz) : 100.0;
    const long page = ::sysconf(_SC_PAGESIZE);
    page_size = page > 0 ? static_cast<std::uint64_t>(page) : 4096;
    char self[32];
    const std::string self_link = options.proc_root + "/self";
    const ssize_t n = ::readlink(self_link.c_str(), self, sizeof self - 1);
    own_procfs = n > 0 && to_number<std::uint32_t>(std::string_view(self, static_cast<std::size_t>(n))) ==
                              static_cast<std::uint32_t>(::getpid());
    struct statfs fs {};
    proc_root_is_procfs = ::statfs(options.proc_root.c_str(), &fs) == 0 &&
                          static_cast<unsigned long>(fs.f_type) == PROC_SUPER_MAGIC;
  }

  HostOptions options;
  FileReader file;
  ProcessReader procs;
  KubeletPods pods{options.pod_logs_root};
  double ticks_per_s = 100;
  std::uint64_t page_size = 4096;
  std::string path;

  std::optional<double> prev_uptime;
  std::optional<CpuCounters> prev_total;
  std::unordered_map<unsigned, CpuCounters> prev_cores;
  struct Pair {
    std::uint64_t a = 0, b = 0;
  };
  std::unordered_map<std::string, Pair> prev_disks, prev_nets;
  struct PrevProc {
    std::uint64_t start_time_ticks = 0;
    double cpu_time_s = 0;
    double uptime_s = 0;
    Reading<std::uint64_t> read_bytes, write_bytes;
    bool touched = false;
  };
  std::unordered_map<std::uint32_t, PrevProc> prev_procs;

  // Files read on every tick, kept open (procfs / sysfs only; see KeptFile).
  KeptFile uptime_file, hostname_file, stat_file, online_file, present_file, cpuinfo_file, loadavg_file,
      temperature_file, meminfo_file, diskstats_file, net_dev_file;
  KeptFile pressure_files[3];
  std::unordered_map<unsigned, KeptFile> cpu_online_files, cpu_freq_files;
  /// proc_root is the procfs of our own PID namespace (its "self" is this process): the host name is
  /// then gethostname(2), and kill(pid, 0) tells cheaply whether a pid exists.
  bool own_procfs = false;

  bool temperature_probed = false;
  unsigned temperature_reprobe = 0;
  std::optional<TemperatureSensor> temperature_sensor;
  unsigned freq_sysfs_misses = 0;  ///< consecutive ticks where no scaling_cur_freq was readable
  std::vector<std::uint32_t> pids;
  std::vector<std::uint32_t> detail_pids;  ///< sorted
  bool proc_root_is_procfs = false;
  int proc_root_fd = -1;  ///< kept open when proc_root_is_procfs

  ~State() {
    if (proc_root_fd >= 0) ::close(proc_root_fd);
  }

  const std::string& proc(std::string_view rel) {
    path.assign(options.proc_root).append("/").append(rel);
    return path;
  }
  const std::string& sys(std::string_view rel) {
    path.assign(options.sys_root).append("/").append(rel);
    return path;
  }

  void collect_cpu(HostSample& host);
  void collect_loadavg(HostSample& host);
  void collect_temperature(HostSample& host);
  void collect_memory(HostSample& host);
  void collect_pressure(HostSample& host);
  void collect_disks(HostSample& host, double elapsed);
  void collect_nets(HostSample& host, double elapsed);
  /// all_processes: the pids in /proc, into `listed` (sorted), listed again only when needed.
  void list_processes(double uptime_s);
  std::vector<std::uint32_t> listed, vanished;
  std::optional<std::uint32_t> listed_last_pid;
  double listed_at_uptime_s = 0;
  static constexpr double kRelistEvery_s = 10;
  void collect_processes(HostSample& host, std::vector<ProcessSample>& out,
                         std::span<const std::uint32_t> requested, double elapsed);
};

// ---- CPU ---------------------------------------------------------------------------------------

void HostCollector::State::collect_cpu(HostSample& host) {
  ProcStat stat;
  if (file.read_kept(stat_file, proc("stat"), 1 << 20, true) == 0) stat = parse_proc_stat(file.text());
  if (stat.boot_time_unix_s) host.boot_time_unix_s = Reading<std::uint64_t>::of(*stat.boot_time_unix_s);
  if (stat.procs_running)
    host.procs_running = Reading<unsigned>::of(static_cast<unsigned>(*stat.procs_running));
  if (stat.procs_blocked)
    host.procs_blocked = Reading<unsigned>::of(static_cast<unsigned>(*stat.procs_blocked));
  if (stat.total) {
    if (prev_total) host.cpu_total = cpu_times_between(*prev_total, *stat.total);
    prev_total = stat.total;
  }

  // Which CPUs exist and which are online. /proc/stat lists only online CPUs; sysfs knows the rest.
  std::optional<std::vector<unsigned>> online;
  if (file.read_kept(online_file, sys("devices/system/cpu/online"), 65536, true) == 0)
    online = parse_cpu_list(file.text());
  std::optional<std::vector<unsigned>> present;
  if (file.read_kept(present_file, sys("devices/system/cpu/present"), 65536, true) == 0)
    present = parse_cpu_list(file.text());
  std::vector<unsigned> cpus = present.value_or(std::vector<unsigned>{});
  for (const auto& core : stat.cores) cpus.push_back(core.cpu);
  if (online) cpus.insert(cpus.end(), online->begin(), online->end());
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());

  std::unordered_map<unsigned, const CpuCounters*> by_cpu;
  for (const auto& core : stat.cores) by_cpu.emplace(core.cpu, &core.counters);

  host.cpus.reserve(cpus.size());
  for (const unsigned cpu : cpus) {
    CpuCoreSample c;
    c.cpu = cpu;
    if (online) {
      c.online = std::binary_search(online->begin(), online->end(), cpu);
    } else if (file.read_kept(cpu_online_files[cpu],
                              sys("devices/system/cpu/cpu" + std::to_string(cpu) + "/online"), 64,
                              true) == 0) {
      c.online = trim(file.text()) != "0";  // cpu0 usually has no "online" file: it cannot go offline
    } else {
      c.online = by_cpu.contains(cpu);
    }
    if (const auto it = by_cpu.find(cpu); it != by_cpu.end()) {
      if (const auto prev = prev_cores.find(cpu); prev != prev_cores.end()) {
        c.times = cpu_times_between(prev->second, *it->second);
      }
      prev_cores[cpu] = *it->second;
    } else {
      prev_cores.erase(cpu);  // offline: start over when it comes back
    }
    if (!c.online) c.frequency_mhz = Reading<unsigned>::fail(ReadStatus::not_available);
    host.cpus.push_back(c);
    if (c.online) ++host.cpu_count_online;
  }

  // Frequencies: cpufreq's scaling_cur_freq (kHz), else /proc/cpuinfo "cpu MHz" (re-probe sysfs
  // every 60 ticks once it has failed, so a 256-CPU VM does not pay 256 failed opens per tick).
  if (!options.cpu_frequency) return collect_loadavg(host);
  bool any_sysfs = false;
  if (freq_sysfs_misses == 0 || freq_sysfs_misses % 60 == 0) {
    for (auto& c : host.cpus) {
      if (!c.online) continue;
      const int err = file.read_kept(
          cpu_freq_files[c.cpu],
          sys("devices/system/cpu/cpu" + std::to_string(c.cpu) + "/cpufreq/scaling_cur_freq"), 64, true);
      if (err != 0) {
        c.frequency_mhz = fail_reading<unsigned>(err);
        continue;
      }
      if (const auto khz = to_number<std::uint64_t>(file.text())) {
        c.frequency_mhz = Reading<unsigned>::of(static_cast<unsigned>((*khz + 500) / 1000));
        any_sysfs = true;
      } else {
        c.frequency_mhz = Reading<unsigned>::fail(ReadStatus::invalid_value);
      }
    }
  }
  freq_sysfs_misses = any_sysfs ? 0 : freq_sysfs_misses + 1;
  if (any_sysfs) cpuinfo_file.reset();
  if (!any_sysfs && file.read_kept(cpuinfo_file, proc("cpuinfo"), 4 << 20) == 0) {
    std::string_view text = file.text();
    std::string_view line;
    std::optional<unsigned> processor;
    while (next_line(text, line)) {
      const auto colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      const auto key = trim(line.substr(0, colon));
      if (key == "processor") {
        processor = to_number<unsigned>(line.substr(colon + 1));
      } else if (key == "cpu MHz" && processor) {
        const auto mhz = to_double(line.substr(colon + 1));
        const auto it = std::lower_bound(host.cpus.begin(), host.cpus.end(), *processor,
                                         [](const CpuCoreSample& c, unsigned n) { return c.cpu < n; });
        if (mhz && *mhz >= 0 && it != host.cpus.end() && it->cpu == *processor && it->online) {
          it->frequency_mhz = Reading<unsigned>::of(static_cast<unsigned>(*mhz + 0.5));
        }
      }
    }
  }

  collect_loadavg(host);
}

void HostCollector::State::collect_loadavg(HostSample& host) {
  if (file.read_kept(loadavg_file, proc("loadavg"), 4096, true) == 0) {
    if (const auto l = parse_loadavg(file.text())) {
      host.load1 = Reading<double>::of(l->load1);
      host.load5 = Reading<double>::of(l->load5);
      host.load15 = Reading<double>::of(l->load15);
    } else {
      host.load1 = host.load5 = host.load15 = Reading<double>::fail(ReadStatus::invalid_value);
    }
  } else {
    host.load1 = host.load5 = host.load15 = Reading<double>::fail(ReadStatus::not_supported);
  }
}

void HostCollector::State::collect_temperature(HostSample& host) {
  // Discovery walks directories: do it once, and again only after the sensor failed (every 30 ticks).
  if (!temperature_probed || (!temperature_sensor && ++temperature_reprobe % 30 == 0)) {
    temperature_probed = true;
    temperature_sensor = find_cpu_temperature_sensor(options.sys_root);
    temperature_file.reset();
  }
  if (!temperature_sensor) {
    host.cpu_temperature_c = Reading<double>::fail(ReadStatus::not_supported);
    return;
  }
  if (const int err = file.read_kept(temperature_file, temperature_sensor->input_path, 64, true); err != 0) {
    host.cpu_temperature_c = fail_reading<double>(err);
    temperature_sensor.reset();
    return;
  }
  if (const auto milli = to_number<std::int64_t>(file.text())) {
    host.cpu_temperature_c = Reading<double>::of(static_cast<double>(*milli) / 1000.0);
  } else {
    host.cpu_temperature_c = Reading<double>::fail(ReadStatus::invalid_value);
  }
}

// ---- memory ------------------------------------------------------------------------------------

void HostCollector::State::collect_memory(HostSample& host) {
  MemorySample& mem = host.memory;
  const int err = file.read_kept(meminfo_file, proc("meminfo"), 65536, true);
  if (err != 0) {
    const auto f = fail_reading<std::uint64_t>(err);
    mem.total_bytes = mem.free_bytes = mem.available_bytes = mem.buffers_bytes = mem.cached_bytes = f;
    mem.shared_bytes = mem.dirty_bytes = mem.used_bytes = mem.swap_total_bytes = mem.swap_used_bytes = f;
    return;
  }
  const MeminfoValues m = parse_meminfo(file.text());
  auto set = [](Reading<std::uint64_t>& r, const std::optional<std::uint64_t>& v) {
    r = v ? Reading<std::uint64_t>::of(*v) : Reading<std::uint64_t>::fail(ReadStatus::not_supported);
  };
  set(mem.total_bytes, m.mem_total);
  set(mem.free_bytes, m.mem_free);
  set(mem.buffers_bytes, m.buffers);
  set(mem.shared_bytes, m.shmem);
  set(mem.dirty_bytes, m.dirty);
  set(mem.swap_total_bytes, m.swap_total);
  if (m.cached)
    set(mem.cached_bytes, *m.cached + m.sreclaimable.value_or(0));
  else
    set(mem.cached_bytes, std::nullopt);
  if (m.swap_total && m.swap_free)
    set(mem.swap_used_bytes, *m.swap_total > *m.swap_free ? *m.swap_total - *m.swap_free : 0);
  else
    set(mem.swap_used_bytes, std::nullopt);

  if (m.mem_available) {
    set(mem.available_bytes, m.mem_available);
  } else {
    // Kernel < 3.14: estimate as the kernel does (see estimate_mem_available), with the zones' low
    // watermarks from /proc/zoneinfo, else min_free_kbytes × 5/4, else 0.
    std::uint64_t wmark_low = 0;
    if (file.read(proc("zoneinfo"), 8 << 20) == 0 && parse_zoneinfo_low_pages(file.text())) {
      wmark_low = *parse_zoneinfo_low_pages(file.text()) * page_size;
    } else if (file.read(proc("sys/vm/min_free_kbytes"), 64) == 0) {
      wmark_low = to_number<std::uint64_t>(file.text()).value_or(0) * 1024 * 5 / 4;
    }
    set(mem.available_bytes, estimate_mem_available(m, wmark_low));
    mem.available_estimated = mem.available_bytes.ok();
  }
  if (mem.total_bytes && mem.available_bytes) {
    set(mem.used_bytes,
        *mem.total_bytes > *mem.available_bytes ? *mem.total_bytes - *mem.available_bytes : 0);
  } else {
    set(mem.used_bytes, std::nullopt);
  }
}

void HostCollector::State::collect_pressure(HostSample& host) {
  const std::pair<const char*, PressureSample*> files[] = {{"pressure/cpu", &host.pressure_cpu},
                                                           {"pressure/memory", &host.pressure_memory},
                                                           {"pressure/io", &host.pressure_io}};
  for (std::size_t i = 0; i < std::size(files); ++i) {
    const auto& [name, sample] = files[i];
    // ENOENT: kernel without CONFIG_PSI; EOPNOTSUPP: psi=0 on the command line.
    if (const int err = file.read_kept(pressure_files[i], proc(name), 4096, true); err != 0) {
      const auto f = Reading<double>::fail(
          err == EACCES || err == EPERM ? ReadStatus::no_permission : ReadStatus::not_supported, err);
      sample->some_avg10_pct = sample->some_avg60_pct = sample->full_avg10_pct = sample->full_avg60_pct = f;
      continue;
    }
    const PressureValues p = parse_pressure(file.text());
    const auto missing = Reading<double>::fail(ReadStatus::not_supported);
    sample->some_avg10_pct = p.some ? Reading<double>::of(p.some->avg10) : missing;
    sample->some_avg60_pct = p.some ? Reading<double>::of(p.some->avg60) : missing;
    sample->full_avg10_pct = p.full ? Reading<double>::of(p.full->avg10) : missing;
    sample->full_avg60_pct = p.full ? Reading<double>::of(p.full->avg60) : missing;
  }
}

// ---- disks and network -------------------------------------------------------------------------

void HostCollector::State::collect_disks(HostSample& host, double elapsed) {
  if (file.read_kept(diskstats_file, proc("diskstats"), 4 << 20) != 0) return;
  const auto rows = parse_diskstats(file.text());
  std::vector<std::string_view> names;
  names.reserve(rows.size());
  for (const auto& r : rows) names.push_back(r.name);
  std::unordered_map<std::string, Pair> next;
  for (const auto& r : rows) {
    if (!options.disks_include_virtual && is_virtual_block_device(r.name)) continue;
    if (!options.disks_include_partitions && is_partition_name(r.name, names)) continue;
    DiskSample d;
    d.name = r.name;
    d.read_bytes_total = r.sectors_read * 512;
    d.write_bytes_total = r.sectors_written * 512;
    if (const auto it = prev_disks.find(r.name); it != prev_disks.end()) {
      d.read_bytes_per_s = counter_rate(it->second.a, d.read_bytes_total, elapsed);
      d.write_bytes_per_s = counter_rate(it->second.b, d.write_bytes_total, elapsed);
    }
    next[r.name] = {d.read_bytes_total, d.write_bytes_total};
    host.disks.push_back(std::move(d));
  }
  prev_disks = std::move(next);
}

void HostCollector::State::collect_nets(HostSample& host, double elapsed) {
  if (file.read_kept(net_dev_file, proc("net/dev"), 4 << 20) != 0) return;
  std::unordered_map<std::string, Pair> next;
  for (const auto& r : parse_net_dev(file.text())) {
    NetSample n;
    n.name = r.name;
    n.rx_bytes_total = r.rx_bytes;
    n.tx_bytes_total = r.tx_bytes;
    if (const auto it = prev_nets.find(r.name); it != prev_nets.end()) {
      n.rx_bytes_per_s = counter_rate(it->second.a, r.rx_bytes, elapsed);
      n.tx_bytes_per_s = counter_rate(it->second.b, r.tx_bytes, elapsed);
    }
    next[r.name] = {r.rx_bytes, r.tx_bytes};
    host.nets.push_back(std::move(n));
  }
  prev_nets = std::move(next);
}

// ---- processes ---------------------------------------------------------------------------------

void HostCollector::State::collect_processes(HostSample& host, std::vector<ProcessSample>& out,
                                             std::span<const std::uint32_t> requested, double /*elapsed*/) {
  pids.assign(requested.begin(), requested.end());
  detail_pids.assign(requested.begin(), requested.end());
  std::sort(detail_pids.begin(), detail_pids.end());
  if (options.all_processes) {
    list_processes(host.uptime_s.value_or(0));
    pids.insert(pids.end(), listed.begin(), listed.end());
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  if (options.all_processes) host.process_count = static_cast<unsigned>(pids.size());

  // procfs' root is kept open (it cannot be replaced); a fixture tree is opened on every tick.
  if (proc_root_fd < 0) proc_root_fd = ::open(options.proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int root_fd = proc_root_fd;
  if (root_fd < 0) return;
  struct Close {
    int& fd;
    bool keep;
    ~Close() {
      if (keep) return;
      ::close(fd);
      fd = -1;
    }
  } const close_root{proc_root_fd, proc_root_is_procfs};
  ProcessReadContext ctx;
  ctx.proc_root = options.proc_root;
  ctx.proc_root_fd = root_fd;
  ctx.ticks_per_s = ticks_per_s;
  ctx.page_size = page_size;
  if (host.boot_time_unix_s) ctx.boot_time_unix_s = *host.boot_time_unix_s;
  if (host.memory.total_bytes) ctx.mem_total_bytes = *host.memory.total_bytes;
  if (host.uptime_s) ctx.uptime_s = *host.uptime_s;
  ctx.cmdline_max_bytes = options.cmdline_max_bytes;
  ctx.status_every_tick = options.process_status_every_tick;
  ctx.keep_stat_fds = proc_root_is_procfs;
  ctx.own_procfs = own_procfs;
  ctx.pods = &pods;
  const double now = host.uptime_s.value_or(0);

  out.reserve(pids.size());
  for (const std::uint32_t pid : pids) {
    const bool requested = std::binary_search(detail_pids.begin(), detail_pids.end(), pid);
    ctx.details = options.all_process_details || (options.requested_process_details && requested);
    ctx.attribution = options.requested_process_attribution && requested;
    ProcessSample& p = out.emplace_back();
    const ProcessReadResult r = procs.read(pid, ctx, p);
    if (r != ProcessReadResult::ok) {
      if (r == ProcessReadResult::gone) vanished.push_back(pid);
      out.pop_back();
      if (r == ProcessReadResult::unreadable) ++host.processes_unreadable;
      continue;
    }
    // Rates against the previous reading of the same (pid, start time).
    const auto [slot, inserted] = prev_procs.try_emplace(pid);
    PrevProc& prev = slot->second;
    const bool same = !inserted && prev.start_time_ticks == p.start_time_ticks;
    const double dt = now - prev.uptime_s;
    if (same && host.uptime_s && dt > 0) {
      p.cpu_pct = Reading<double>::of(std::max(0.0, p.cpu_time_s - prev.cpu_time_s) * 100.0 / dt);
      if (p.read_bytes && prev.read_bytes)
        p.read_bytes_per_s = Reading<double>::of(counter_rate(*prev.read_bytes, *p.read_bytes, dt));
      if (p.write_bytes && prev.write_bytes)
        p.write_bytes_per_s = Reading<double>::of(counter_rate(*prev.write_bytes, *p.write_bytes, dt));
    } else {
      p.cpu_pct = Reading<double>::fail(ReadStatus::not_available);  // first sight of this process
    }
    if (!p.read_bytes_per_s.ok() && p.read_bytes.status != ReadStatus::not_collected) {
      p.read_bytes_per_s = p.write_bytes_per_s =
          Reading<double>::fail(p.read_bytes.ok() ? ReadStatus::not_available : p.read_bytes.status);
    }
    prev.start_time_ticks = p.start_time_ticks;
    prev.cpu_time_s = p.cpu_time_s;
    prev.uptime_s = now;
    prev.read_bytes = p.read_bytes;
    prev.write_bytes = p.write_bytes;
    prev.touched = true;
  }
  for (auto it = prev_procs.begin(); it != prev_procs.end();) {
    if (!it->second.touched) {
      it = prev_procs.erase(it);
    } else {
      it->second.touched = false;
      ++it;
    }
  }
  procs.sweep();
  // Exited since the listing: not listed again until the next one.
  for (const std::uint32_t pid : vanished) {
    if (auto it = std::lower_bound(listed.begin(), listed.end(), pid); it != listed.end() && *it == pid)
      listed.erase(it);
  }
  vanished.clear();
}

void HostCollector::State::list_processes(double uptime_s) {
  // Listing /proc (getdents fills a dentry per process) was a fifth of `top`'s all-processes view.
  // Nothing new can be listed unless a pid was handed out since, which moves /proc/loadavg's last
  // pid; exits are seen when the process's stat is gone. That field is of the reader's PID namespace:
  // trusted only for our own procfs, and the listing is redone every kRelistEvery_s in any case.
  std::optional<std::uint32_t> last_pid;
  if (own_procfs && file.read_kept(loadavg_file, proc("loadavg"), 4096, true) == 0) {
    if (const auto l = parse_loadavg(file.text())) last_pid = l->last_pid;
  }
  const bool fresh = last_pid && listed_last_pid == last_pid && uptime_s >= listed_at_uptime_s &&
                     uptime_s - listed_at_uptime_s < kRelistEvery_s;
  if (fresh) return;
  listed.clear();
  if (DIR* d = ::opendir(options.proc_root.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (const auto pid = to_number<std::uint32_t>(e->d_name); pid && *pid > 0) listed.push_back(*pid);
    }
    ::closedir(d);
  }
  std::sort(listed.begin(), listed.end());
  listed_last_pid = last_pid;  // read before the listing: a process created during it lists again
  listed_at_uptime_s = uptime_s;
}

// ---- the collector -----------------------------------------------------------------------------

HostCollector::HostCollector(HostOptions options) : state_(std::make_unique<State>(std::move(options))) {}
HostCollector::~HostCollector() = default;

const HostOptions& HostCollector::options() const noexcept {
  return state_->options;
}

void HostCollector::collect(HostSample& host, std::vector<ProcessSample>& processes,
                            std::span<const std::uint32_t> pids) {
  collect_system(host);
  collect_processes(host, processes, pids);
}

void HostCollector::collect_system(HostSample& host) {
  State& s = *state_;
  host = HostSample{};
  try {
    // The time base of every rate: /proc/uptime (CLOCK_BOOTTIME), else the clock itself.
    if (const int err = s.file.read_kept(s.uptime_file, s.proc("uptime"), 256, true);
        err == 0 && parse_uptime(s.file.text())) {
      host.uptime_s = Reading<double>::of(*parse_uptime(s.file.text()));
    } else {
      host.uptime_s = err ? fail_reading<double>(err) : Reading<double>::fail(ReadStatus::invalid_value);
    }
    const double now = host.uptime_s.ok() ? *host.uptime_s : boottime_now_s();
    const double elapsed = s.prev_uptime && now > *s.prev_uptime ? now - *s.prev_uptime : 0.0;
    host.interval_s = elapsed;
    s.prev_uptime = now;

    // Our own procfs shows our UTS namespace's name, which gethostname(2) gives without a file.
    if (!s.own_procfs && s.file.read_kept(s.hostname_file, s.proc("sys/kernel/hostname"), 256, true) == 0) {
      host.hostname = std::string(trim(s.file.text()));
    } else if (s.own_procfs || s.options.proc_root == "/proc") {
      char name[256] = {};
      if (::gethostname(name, sizeof name - 1) == 0) host.hostname = name;
    }
    s.collect_cpu(host);
    s.collect_temperature(host);
    s.collect_memory(host);
    s.collect_pressure(host);
    if (s.options.disks) s.collect_disks(host, elapsed);
    if (s.options.nets) s.collect_nets(host, elapsed);
  } catch (...) {
    // Only allocation failure can get here; keep what was collected.
  }
}

void HostCollector::collect_processes(HostSample& host, std::vector<ProcessSample>& processes,
                                      std::span<const std::uint32_t> pids) {
  processes.clear();
  try {
    // Process rates use their own per-pid uptime stamps (host.uptime_s), not the host interval.
    state_->collect_processes(host, processes, pids, host.interval_s);
  } catch (...) {
    // Only allocation failure can get here; keep what was collected.
  }
}

}  // namespace trainmon
