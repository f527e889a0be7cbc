// SPDX-License-Identifier: Apache-2.0
#include "trainmon/store/series_fields.h"

#include <array>
#include <cmath>
#include <unordered_map>

#include "trainmon/core/gpu_fields.h"
#include "trainmon/store/chunk_codec.h"

namespace trainmon::store {
namespace {

template <class T>
std::int64_t v(const Reading<T>& r) {
  if (!r.ok()) return kNull;
  if constexpr (std::is_same_v<T, bool>) {
    return r.value ? 1 : 0;
  } else {
    return static_cast<std::int64_t>(r.value);
  }
}
std::int64_t scaled(const Reading<double>& r, double scale) {
  return r.ok() && std::isfinite(r.value) ? static_cast<std::int64_t>(std::llround(r.value * scale)) : kNull;
}
std::int64_t scaled(double d, double scale) {
  return std::isfinite(d) ? static_cast<std::int64_t>(std::llround(d * scale)) : kNull;
}

template <class S>
struct Field {
  FieldDef def;
  std::int64_t (*get)(const S&);
};

// ---- GPU ------------------------------------------------------------------------------------
// The gpu columns are the GPU field registry's stored rows (core/gpu_fields.h), in stored order;
// its device_state column writes the registry's codes, which the header's kDeviceState* name.
static_assert(kDeviceStateOk == gpu_fields::kDeviceStateOk &&
              kDeviceStateFailed == gpu_fields::kDeviceStateFailed &&
              kDeviceStateLost == gpu_fields::kDeviceStateLost &&
              kDeviceStateTimeout == gpu_fields::kDeviceStateTimeout &&
              kDeviceStateNoPermission == gpu_fields::kDeviceStateNoPermission);
constexpr auto kGpu = [] {
  std::array<const gpu_fields::GpuField*, gpu_fields::count_stored()> out{};
  std::size_t n = 0;
  for (const auto& f : gpu_fields::kGpuFields)
    if (!f.store.empty()) out[n++] = &f;
  return out;
}();

std::int64_t gpu_value(const gpu_fields::GpuField& f, const GpuSample& g) {
  const gpu_fields::Value v = f.read(g);
  if (!v.ok) return kNull;
  if (!v.real) return v.i;
  return std::isfinite(v.d) ? static_cast<std::int64_t>(std::llround(v.d * f.store_scale)) : kNull;
}

// ---- host -----------------------------------------------------------------------------------
std::uint64_t sum_disk(const HostSample& h, bool write) {
  double s = 0;
  for (const auto& d : h.disks) s += write ? d.write_bytes_per_s : d.read_bytes_per_s;
  return static_cast<std::uint64_t>(s);
}
std::uint64_t sum_net(const HostSample& h, bool tx) {
  double s = 0;
  for (const auto& n : h.nets) s += tx ? n.tx_bytes_per_s : n.rx_bytes_per_s;
  return static_cast<std::uint64_t>(s);
}
std::int64_t max_core_busy(const HostSample& h) {
  double m = 0;
  for (const auto& c : h.cpus) m = std::max(m, c.times.busy_pct);
  return scaled(m, 100);
}

const Field<HostSample> kHost[] = {
    {{"cpu_busy_pct", 100}, [](const HostSample& h) { return scaled(h.cpu_total.busy_pct, 100); }},
    {{"cpu_user_pct", 100}, [](const HostSample& h) { return scaled(h.cpu_total.user_pct, 100); }},
    {{"cpu_system_pct", 100}, [](const HostSample& h) { return scaled(h.cpu_total.system_pct, 100); }},
    {{"cpu_iowait_pct", 100}, [](const HostSample& h) { return scaled(h.cpu_total.iowait_pct, 100); }},
    {{"cpu_steal_pct", 100}, [](const HostSample& h) { return scaled(h.cpu_total.steal_pct, 100); }},
    {{"cpu_max_core_busy_pct", 100}, max_core_busy},
    {{"cpu_count_online"}, [](const HostSample& h) { return static_cast<std::int64_t>(h.cpu_count_online); }},
    {{"cpu_temperature_c", 10}, [](const HostSample& h) { return scaled(h.cpu_temperature_c, 10); }},
    {{"load1", 100}, [](const HostSample& h) { return scaled(h.load1, 100); }},
    {{"memory_total_bytes"}, [](const HostSample& h) { return v(h.memory.total_bytes); }},
    {{"memory_free_bytes"}, [](const HostSample& h) { return v(h.memory.free_bytes); }},
    {{"memory_available_bytes"}, [](const HostSample& h) { return v(h.memory.available_bytes); }},
    {{"memory_used_bytes"}, [](const HostSample& h) { return v(h.memory.used_bytes); }},
    {{"memory_buffers_bytes"}, [](const HostSample& h) { return v(h.memory.buffers_bytes); }},
    {{"memory_cached_bytes"}, [](const HostSample& h) { return v(h.memory.cached_bytes); }},
    {{"memory_shared_bytes"}, [](const HostSample& h) { return v(h.memory.shared_bytes); }},
    {{"memory_dirty_bytes"}, [](const HostSample& h) { return v(h.memory.dirty_bytes); }},
    {{"swap_total_bytes"}, [](const HostSample& h) { return v(h.memory.swap_total_bytes); }},
    {{"swap_used_bytes"}, [](const HostSample& h) { return v(h.memory.swap_used_bytes); }},
    {{"pressure_cpu_some_avg10_pct", 100},
     [](const HostSample& h) { return scaled(h.pressure_cpu.some_avg10_pct, 100); }},
    {{"pressure_memory_some_avg10_pct", 100},
     [](const HostSample& h) { return scaled(h.pressure_memory.some_avg10_pct, 100); }},
    {{"pressure_memory_full_avg10_pct", 100},
     [](const HostSample& h) { return scaled(h.pressure_memory.full_avg10_pct, 100); }},
    {{"pressure_io_some_avg10_pct", 100},
     [](const HostSample& h) { return scaled(h.pressure_io.some_avg10_pct, 100); }},
    {{"disk_read_bytes_per_s"},
     [](const HostSample& h) { return static_cast<std::int64_t>(sum_disk(h, false)); }},
    {{"disk_write_bytes_per_s"},
     [](const HostSample& h) { return static_cast<std::int64_t>(sum_disk(h, true)); }},
    {{"net_rx_bytes_per_s"},
     [](const HostSample& h) { return static_cast<std::int64_t>(sum_net(h, false)); }},
    {{"net_tx_bytes_per_s"}, [](const HostSample& h) { return static_cast<std::int64_t>(sum_net(h, true)); }},
    // `run` only, NULL elsewhere: the watched job's OOM kills since its start and its tightest memory
    // cgroup limit (D3's headroom, D20's kills offline as live). Not in a HostSample: the recorder
    // session fills them from runner::OomWatch (recorder/session.cpp).
    {{"job_oom_kills"}, [](const HostSample&) { return kNull; }},
    {{"job_memory_limit_bytes"}, [](const HostSample&) { return kNull; }},
};

// ---- processes ------------------------------------------------------------------------------
const Field<ProcessSample> kProcess[] = {
    {{"rss_bytes"}, [](const ProcessSample& p) { return v(p.rss_bytes); }},
    {{"vms_bytes"}, [](const ProcessSample& p) { return v(p.vms_bytes); }},
    {{"shared_bytes"}, [](const ProcessSample& p) { return v(p.shared_bytes); }},
    {{"num_threads"}, [](const ProcessSample& p) { return v(p.num_threads); }},
    {{"cpu_pct", 100}, [](const ProcessSample& p) { return scaled(p.cpu_pct, 100); }},
    {{"cpu_time_s", 1000}, [](const ProcessSample& p) { return scaled(p.cpu_time_s, 1000); }},
    {{"read_bytes"}, [](const ProcessSample& p) { return v(p.read_bytes); }},
    {{"write_bytes"}, [](const ProcessSample& p) { return v(p.write_bytes); }},
    {{"state"}, [](const ProcessSample& p) { return static_cast<std::int64_t>(p.state); }},
    {{"ppid"}, [](const ProcessSample& p) { return static_cast<std::int64_t>(p.ppid); }},
};

const Field<GpuProcessSample> kGpuProcess[] = {
    {{"used_memory_bytes"}, [](const GpuProcessSample& p) { return v(p.used_memory_bytes); }},
    {{"sm_util_pct"}, [](const GpuProcessSample& p) { return v(p.sm_util_pct); }},
    {{"mem_util_pct"}, [](const GpuProcessSample& p) { return v(p.mem_util_pct); }},
    {{"enc_util_pct"}, [](const GpuProcessSample& p) { return v(p.enc_util_pct); }},
    {{"dec_util_pct"}, [](const GpuProcessSample& p) { return v(p.dec_util_pct); }},
    // HostVisibility as an integer: 0 unknown, 1 visible, 2 not visible, 3 zombie, 4 exited (D9 offline).
    {{"host_visibility"}, [](const GpuProcessSample& p) { return static_cast<std::int64_t>(p.host); }},
};

const FieldDef kUtilHr[] = {{"utilization_gpu_pct"}};  // whole percent, as NVML reports it

// One training rank's timing row (diagnose::TrainWindow; store/train_rows.h converts). Seconds are
// stored as whole microseconds, the unit the `_us` names say, so their scale is 1 and `export`
// writes microseconds (a scale of 1e6 made it write seconds under `_us` names); times of day as
// Unix milliseconds, like every row's own time.
const FieldDef kTrainRank[] = {
    {"steps"},
    {"samples"},
    {"span_us"},
    {"step_sum_us"},
    {"step_min_us"},
    {"step_max_us"},
    {"step_p50_us"},
    {"step_p90_us"},
    {"step_p99_us"},
    {"data_sum_us"},
    {"data_min_us"},
    {"data_max_us"},
    {"data_p50_us"},
    {"data_p90_us"},
    {"data_p99_us"},
    {"total_steps"},
    {"total_samples"},
    {"total_step_us"},
    {"total_data_us"},
    {"last_step_unix_ms"},
    {"phase"},
    {"phase_unix_ms"},
    // protocol v3 (a row written before has none of these: NaN when loaded)
    {"comm_sum_us"},
    {"comm_min_us"},
    {"comm_max_us"},
    {"comm_p50_us"},
    {"comm_p90_us"},
    {"comm_p99_us"},
    {"total_comm_us"},
    {"coll_op"},  // store::collective_op_code: 0 none, 1.. the names train_rows.cpp knows
    {"coll_seq"},
    {"coll_bytes"},
};

template <class S, std::size_t N>
std::vector<FieldDef> defs(const Field<S> (&table)[N]) {
  std::vector<FieldDef> out;
  for (const auto& f : table) out.push_back(f.def);
  return out;
}

template <class S, std::size_t N>
std::vector<std::int64_t> row(const Field<S> (&table)[N], const S& s) {
  std::vector<std::int64_t> out;
  out.reserve(N);
  for (const auto& f : table) out.push_back(f.get(s));
  return out;
}

}  // namespace

std::string_view series_kind_name(SeriesKind kind) noexcept {
  switch (kind) {
    case SeriesKind::gpu: return "gpu";
    case SeriesKind::gpu_util_hr: return "gpu_util_hr";
    case SeriesKind::host: return "host";
    case SeriesKind::process: return "process";
    case SeriesKind::gpu_process: return "gpu_process";
    case SeriesKind::train_rank: return "train_rank";
  }
  return "unknown";
}

std::optional<SeriesKind> parse_series_kind(std::string_view name) noexcept {
  for (auto k : {SeriesKind::gpu, SeriesKind::gpu_util_hr, SeriesKind::host, SeriesKind::process,
                 SeriesKind::gpu_process, SeriesKind::train_rank}) {
    if (series_kind_name(k) == name) return k;
  }
  return std::nullopt;
}

std::span<const FieldDef> fields_of(SeriesKind kind) noexcept {
  static const std::vector<FieldDef> gpu = [] {
    std::vector<FieldDef> out;
    out.reserve(kGpu.size());
    for (const auto* f : kGpu) out.push_back({f->store, f->store_scale});
    return out;
  }();
  static const std::vector<FieldDef> host = defs(kHost), process = defs(kProcess),
                                     gpu_process = defs(kGpuProcess);
  switch (kind) {
    case SeriesKind::gpu: return gpu;
    case SeriesKind::gpu_util_hr: return kUtilHr;
    case SeriesKind::host: return host;
    case SeriesKind::process: return process;
    case SeriesKind::gpu_process: return gpu_process;
    case SeriesKind::train_rank: return kTrainRank;
  }
  return {};
}

std::optional<std::size_t> field_index(SeriesKind kind, std::string_view name) noexcept {
  // Called for every column of every stored row when a run is read back (load_run_series): one
  // hash lookup instead of a scan with string compares (which made a 3-day run take minutes).
  using Index = std::unordered_map<std::string_view, std::size_t>;
  static const auto indices = [] {
    std::array<Index, 7> out;  // SeriesKind values are 1..6
    for (auto k : {SeriesKind::gpu, SeriesKind::gpu_util_hr, SeriesKind::host, SeriesKind::process,
                   SeriesKind::gpu_process, SeriesKind::train_rank}) {
      auto f = fields_of(k);
      auto& m = out[static_cast<std::size_t>(k)];
      for (std::size_t i = 0; i < f.size(); ++i) m.emplace(f[i].name, i);
    }
    return out;
  }();
  const auto k = static_cast<std::size_t>(kind);
  if (k >= indices.size()) return std::nullopt;
  auto it = indices[k].find(name);
  if (it == indices[k].end()) return std::nullopt;
  return it->second;
}

std::vector<std::int64_t> gpu_row(const GpuSample& gpu) {
  std::vector<std::int64_t> out;
  out.reserve(kGpu.size());
  for (const auto* f : kGpu) out.push_back(gpu_value(*f, gpu));
  return out;
}
std::vector<std::int64_t> host_row(const HostSample& host) {
  return row(kHost, host);
}
std::vector<std::int64_t> process_row(const ProcessSample& process) {
  return row(kProcess, process);
}
std::vector<std::int64_t> gpu_process_row(const GpuProcessSample& process) {
  return row(kGpuProcess, process);
}

}  // namespace trainmon::store
