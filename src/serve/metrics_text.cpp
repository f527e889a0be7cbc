// SPDX-License-Identifier: Apache-2.0
#include "trainmon/serve/metrics_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include "trainmon/core/gpu_fields.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::serve {
namespace {

using Opt = std::optional<double>;

template <class T>
Opt val(const Reading<T>& r) {
  if (!r.ok()) return std::nullopt;
  return static_cast<double>(r.value);
}
template <class T>
Opt scaled(const Reading<T>& r, double factor) {
  if (!r.ok()) return std::nullopt;
  return static_cast<double>(r.value) * factor;
}

/// One metric family being written: # HELP, # TYPE once, then samples.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  void family(std::string_view name, std::string_view type, std::string_view help) {
    name_ = name;
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += text::prometheus_help(help);
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  /// `labels` is the already-rendered text between braces (may be empty).
  void sample(std::string_view labels, double v) {
    if (!std::isfinite(v)) return;  // NaN / Inf are readings we do not have
    out_ += name_;
    if (!labels.empty()) {
      out_ += '{';
      out_ += labels;
      out_ += '}';
    }
    out_ += ' ';
    out_ += fmt::format("{}", v);
    out_ += '\n';
  }

 private:
  std::string& out_;
  std::string name_;
};

void add_label(std::string& s, std::string_view k, std::string_view v) {
  if (!s.empty()) s += ',';
  s += k;
  s += "=\"";
  s += text::prometheus_label_value(v);
  s += '"';
}

/// dcgm-exporter's label set for one GPU. `with_model`: false for trainmon_* metrics, which leave
/// out the camelCase `modelName` (Prometheus naming lint), the driver version and the MIG labels
/// and keep the rest for joins. `mig`: a GPU instance's series (GPU_I_PROFILE, GPU_I_ID as
/// dcgm-exporter adds them). `driver_version`: the DCGM_FI_DRIVER_VERSION label of dcgm-exporter's
/// default counters (left out when empty).
std::string gpu_labels(const GpuSample& g, const std::string& hostname, bool with_model,
                       std::string_view driver_version = {}, const MigDeviceSample* mig = nullptr) {
  std::string s;
  add_label(s, "gpu", std::to_string(g.index));
  const auto* info = g.info.get();
  add_label(s, "UUID", info && info->uuid.ok() ? *info->uuid : "");
  add_label(s, "pci_bus_id", info && info->pci_bus_id.ok() ? *info->pci_bus_id : "");
  add_label(s, "device", "nvidia" + std::to_string(g.index));
  if (with_model) add_label(s, "modelName", info && info->name.ok() ? *info->name : "");
  if (mig != nullptr) {
    // The MIG device's name is "<GPU name> MIG 3g.40gb": the profile is what follows "MIG ".
    std::string profile = mig->name.ok() ? *mig->name : "";
    const auto at = profile.rfind("MIG ");
    if (at != std::string::npos) profile = profile.substr(at + 4);
    add_label(s, "GPU_I_PROFILE", profile);
    add_label(s, "GPU_I_ID", mig->gpu_instance_id.ok() ? std::to_string(*mig->gpu_instance_id) : "");
  }
  add_label(s, "Hostname", hostname);
  if (with_model && !driver_version.empty()) add_label(s, "DCGM_FI_DRIVER_VERSION", driver_version);
  return s;
}

/// The GPU instances whose series stand for a MIG-enabled GPU: its MIG devices with a readable GPU
/// instance id, the first of each id (compute instances of one GPU instance share its memory and
/// GPM values, and one label set must not be exported twice). Empty without MIG.
std::vector<const MigDeviceSample*> gpu_instances(const GpuSample& g) {
  std::vector<const MigDeviceSample*> out;
  for (const auto& m : g.mig_devices) {
    if (!m.gpu_instance_id.ok()) continue;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const MigDeviceSample* o) {
      return *o->gpu_instance_id == *m.gpu_instance_id;
    });
    if (!seen) out.push_back(&m);
  }
  return out;
}

/// One exported series of a GPU: its labels and, on a MIG GPU, the GPU instance it stands for.
struct GpuSeries {
  std::string labels;
  const MigDeviceSample* mig = nullptr;
};

/// dcgm-exporter's series for one GPU: one without GPU_I_* labels, or on a MIG-enabled GPU one per
/// GPU instance (GPU_I_PROFILE, GPU_I_ID), which is how dcgm-exporter reports every field of such a
/// GPU (the device-level ones repeat the GPU's value on each; NVIDIA/dcgm-exporter issues #317,
/// #736 show its output).
std::vector<GpuSeries> dcgm_series(const GpuSample& g, const std::string& hostname, std::string_view driver) {
  std::vector<GpuSeries> out;
  for (const MigDeviceSample* m : gpu_instances(g))
    out.push_back({gpu_labels(g, hostname, true, driver, m), m});
  if (out.empty()) out.push_back({gpu_labels(g, hostname, true, driver), nullptr});
  return out;
}

/// The dcgm-exporter families, in /metrics order: the GPU field registry's rows with a dcgm name
/// (core/gpu_fields.h has their names, types, units and help).
constexpr auto kDcgm = gpu_fields::dcgm_in_order();

/// One dcgm family's value for one series, in dcgm-exporter's unit: a GPU instance's own value
/// where the field has one (frame buffer, GPM), else the GPU's. nullopt when not read.
Opt dcgm_value(const gpu_fields::GpuField& f, const GpuSample& g, const MigDeviceSample* mig) {
  const gpu_fields::Value v = mig != nullptr && f.read_mig != nullptr ? f.read_mig(*mig) : f.read(g);
  if (!v.ok) return std::nullopt;
  return v.d * f.dcgm_factor;
}

bool is_counter(const gpu_fields::GpuField& f) {
  return f.dcgm_type == gpu_fields::MetricType::counter;
}

bool gpu_answers(const GpuSample& g) {
  return g.responsive.ok() && *g.responsive;
}

/// The key of one counter series in CounterState.
std::string counter_key(std::string_view name, std::string_view labels) {
  std::string k(name);
  k += '{';
  k += labels;
  return k;
}

/// The value to export for a counter series: its continued value when followed, else `raw`.
double continued(const CounterState& counters, std::string_view name, std::string_view labels, double raw) {
  auto it = counters.series.find(counter_key(name, labels));
  return it != counters.series.end() && it->second.counter.seen() ? it->second.counter.continued() : raw;
}

/// Calls fn(name, labels, value) for every counter series render_metrics exports from `snap`.
template <class F>
void for_each_counter(const Snapshot& snap, F&& fn);

void render_host(Writer& w, const HostSample& h, const std::string& host_label,
                 const CounterState& counters) {
  const auto& m = h.memory;
  auto one = [&](std::string_view name, std::string_view type, std::string_view help, Opt v) {
    if (!v) return;
    w.family(name, type, help);
    w.sample(host_label, *v);
  };
  one("trainmon_host_cpu_busy_ratio", "gauge", "Share of all CPUs busy over the last tick (0..1).",
      h.interval_s > 0 ? Opt(h.cpu_total.busy_pct / 100.0) : Opt());
  one("trainmon_host_cpu_iowait_ratio", "gauge",
      "Share of all CPUs waiting on I/O over the last tick (0..1).",
      h.interval_s > 0 ? Opt(h.cpu_total.iowait_pct / 100.0) : Opt());
  one("trainmon_host_cpus", "gauge", "Online CPUs.", Opt(static_cast<double>(h.cpu_count_online)));
  one("trainmon_host_load1", "gauge", "1-minute load average.", val(h.load1));
  one("trainmon_host_load5", "gauge", "5-minute load average.", val(h.load5));
  one("trainmon_host_load15", "gauge", "15-minute load average.", val(h.load15));
  one("trainmon_host_cpu_temperature_celsius", "gauge", "CPU package temperature.", val(h.cpu_temperature_c));
  one("trainmon_host_memory_total_bytes", "gauge", "MemTotal.", val(m.total_bytes));
  one("trainmon_host_memory_available_bytes", "gauge", "MemAvailable.", val(m.available_bytes));
  one("trainmon_host_memory_used_bytes", "gauge", "MemTotal - MemAvailable.", val(m.used_bytes));
  one("trainmon_host_memory_cached_bytes", "gauge", "Cached + SReclaimable.", val(m.cached_bytes));
  one("trainmon_host_swap_total_bytes", "gauge", "SwapTotal.", val(m.swap_total_bytes));
  one("trainmon_host_swap_used_bytes", "gauge", "SwapTotal - SwapFree.", val(m.swap_used_bytes));
  auto psi = [&](std::string_view name, std::string_view help, const PressureSample& p) {
    one(name, "gauge", help, scaled(p.some_avg10_pct, 0.01));
  };
  psi("trainmon_host_pressure_cpu_some_ratio", "PSI cpu some avg10 (0..1).", h.pressure_cpu);
  psi("trainmon_host_pressure_memory_some_ratio", "PSI memory some avg10 (0..1).", h.pressure_memory);
  psi("trainmon_host_pressure_io_some_ratio", "PSI io some avg10 (0..1).", h.pressure_io);
  auto per_device = [&](std::string_view name, std::string_view help, const auto& items, auto get) {
    if (items.empty()) return;
    w.family(name, "counter", help);
    for (const auto& d : items) {
      std::string l = host_label;
      add_label(l, "device", d.name);
      w.sample(l, continued(counters, name, l, static_cast<double>(get(d))));
    }
  };
  per_device("trainmon_host_disk_read_bytes_total", "Bytes read from the disk.", h.disks,
             [](const DiskSample& d) { return d.read_bytes_total; });
  per_device("trainmon_host_disk_written_bytes_total", "Bytes written to the disk.", h.disks,
             [](const DiskSample& d) { return d.write_bytes_total; });
  per_device("trainmon_host_network_receive_bytes_total", "Bytes received on the interface.", h.nets,
             [](const NetSample& d) { return d.rx_bytes_total; });
  per_device("trainmon_host_network_transmit_bytes_total", "Bytes sent on the interface.", h.nets,
             [](const NetSample& d) { return d.tx_bytes_total; });
}

std::string join_numbers(const auto& v) {
  std::string s;
  for (const auto& x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s;
}

}  // namespace

namespace {

template <class F>
void for_each_counter(const Snapshot& snap, F&& fn) {
  const std::string& hostname = snap.host.hostname;
  // The labels render_metrics exports, DCGM_FI_DRIVER_VERSION included: a driver reload that keeps
  // the version continues the same series; a new version is a new label set, so a new series that
  // starts from its own reading (as dcgm-exporter's would).
  const std::string driver = snap.driver.driver_version.ok() ? *snap.driver.driver_version : "";
  for (const auto& g : snap.gpus) {
    if (!gpu_answers(g)) continue;
    const std::vector<GpuSeries> series = dcgm_series(g, hostname, driver);
    for (const auto* m : kDcgm) {
      if (!is_counter(*m)) continue;
      for (const GpuSeries& ser : series) {
        auto v = dcgm_value(*m, g, ser.mig);
        if (v && std::isfinite(*v)) fn(m->dcgm, ser.labels, *v);
      }
    }
  }
  std::string host_label;
  add_label(host_label, "Hostname", hostname);
  auto per_device = [&](std::string_view name, const auto& items, auto get) {
    for (const auto& d : items) {
      std::string l = host_label;
      add_label(l, "device", d.name);
      fn(name, l, static_cast<double>(get(d)));
    }
  };
  per_device("trainmon_host_disk_read_bytes_total", snap.host.disks,
             [](const DiskSample& d) { return d.read_bytes_total; });
  per_device("trainmon_host_disk_written_bytes_total", snap.host.disks,
             [](const DiskSample& d) { return d.write_bytes_total; });
  per_device("trainmon_host_network_receive_bytes_total", snap.host.nets,
             [](const NetSample& d) { return d.rx_bytes_total; });
  per_device("trainmon_host_network_transmit_bytes_total", snap.host.nets,
             [](const NetSample& d) { return d.tx_bytes_total; });
}

/// The labels that identify one GPU process's series: gpu, UUID, pid, Hostname (the join keys of
/// trainmon_gpu_process_info with its gauges and, through gpu / UUID / Hostname, with the GPU's
/// DCGM_FI_* series).
std::string gpu_process_key(const Snapshot& snap, const GpuProcessSample& p, const std::string& hostname) {
  std::string l;
  add_label(l, "gpu", std::to_string(p.gpu_index));
  const GpuStaticInfo* info = nullptr;
  for (const auto& g : snap.gpus)
    if (g.index == p.gpu_index) info = g.info.get();
  add_label(l, "UUID", info && info->uuid.ok() ? *info->uuid : "");
  add_label(l, "pid", std::to_string(p.pid));
  add_label(l, "Hostname", hostname);
  return l;
}

/// Who each GPU process works for, one info series per (GPU, pid), and its memory and SM
/// utilisation keyed the same way: the job, pod and user are joined in PromQL (docs/cluster.md),
/// never stamped on the GPU's DCGM_FI_* series. Every info series has the same label names; an
/// unknown value is empty (Prometheus stores an empty label as absent). The process is the one the
/// GPU join linked (host_process_of: same pid and start time); a process not visible from here
/// keeps its series with only what the driver gave.
void render_gpu_processes(Writer& w, const Snapshot& snap, const std::string& hostname) {
  if (snap.gpu_processes.empty()) return;
  std::vector<std::string> keys;
  keys.reserve(snap.gpu_processes.size());
  for (const auto& p : snap.gpu_processes) keys.push_back(gpu_process_key(snap, p, hostname));
  w.family("trainmon_gpu_process_info", "gauge",
           "Always 1; who a GPU process works for: its Unix user, Slurm job and step, Kubernetes pod, "
           "namespace and container, container id and training rank, read from the host (empty: not "
           "known).");
  std::set<std::string> seen;  // one series per label set (the driver may list a pid twice)
  for (std::size_t i = 0; i < snap.gpu_processes.size(); ++i) {
    const auto& gp = snap.gpu_processes[i];
    const ProcessSample* hp = host_process_of(snap, gp);
    static const ProcessAttribution kNone;
    const ProcessAttribution& a = hp != nullptr ? hp->attribution : kNone;
    std::string l = keys[i];
    add_label(l, "comm", gp.process_name.ok() ? *gp.process_name : "");
    add_label(l, "user", hp == nullptr ? std::string_view() : !hp->user.empty() ? hp->user : a.slurm_user);
    add_label(l, "job_id", a.slurm_job_id);
    add_label(l, "step", a.slurm_step);
    add_label(l, "partition", a.slurm_partition);
    add_label(l, "account", a.slurm_account);
    add_label(l, "namespace", a.pod_namespace);
    add_label(l, "pod", a.pod_name);
    add_label(l, "pod_uid", a.pod_uid);
    add_label(l, "container", a.container_name);
    add_label(l, "container_id", a.container_id);
    add_label(l, "rank", a.rank ? std::to_string(*a.rank) : "");
    if (seen.insert(l).second) w.sample(l, 1);
  }
  const auto gauge = [&](std::string_view name, std::string_view help, auto get) {
    bool any = false;
    seen.clear();
    for (std::size_t i = 0; i < snap.gpu_processes.size(); ++i) {
      const Opt v = get(snap.gpu_processes[i]);
      if (!v || !std::isfinite(*v) || !seen.insert(keys[i]).second) continue;
      if (!any) w.family(name, "gauge", help);
      any = true;
      w.sample(keys[i], *v);
    }
  };
  gauge("trainmon_gpu_process_memory_used_bytes", "GPU memory the process holds on this GPU (NVML).",
        [](const GpuProcessSample& p) { return val(p.used_memory_bytes); });
  gauge("trainmon_gpu_process_sm_utilization_ratio",
        "Share of the GPU's SM time the process used over the driver's last sample period, about 1 s "
        "(0..1, NVML process utilization).",
        [](const GpuProcessSample& p) { return scaled(p.sm_util_pct, 0.01); });
}

}  // namespace

void follow_counters(const Snapshot& snap, CounterState& state) {
  ++state.tick;
  for_each_counter(snap, [&](std::string_view name, const std::string& labels, double v) {
    auto& e = state.series[counter_key(name, labels)];
    e.counter.observe(v);
    e.last_tick = state.tick;
  });
  if (state.tick % 64 == 0) {
    std::erase_if(state.series, [&](const auto& kv) {
      return state.tick - kv.second.last_tick > state.forget_after_ticks;
    });
  }
}

std::string render_metrics(const Snapshot& snap, std::span<const diagnose::Finding> active_findings,
                           const ExporterState& state) {
  std::string out;
  out.reserve(16384 + snap.gpus.size() * 6000 + snap.gpu_processes.size() * 300);
  Writer w(out);
  const std::string& hostname = snap.host.hostname;

  // ---- dcgm-exporter compatible GPU metrics ----
  std::vector<std::vector<GpuSeries>> series;  // dcgm-exporter's, per GPU (per GPU instance on MIG)
  std::vector<std::string> own;                // trainmon_*: without modelName
  series.reserve(snap.gpus.size());
  own.reserve(snap.gpus.size());
  const std::string driver = snap.driver.driver_version.ok() ? *snap.driver.driver_version : "";
  for (const auto& g : snap.gpus) {
    series.push_back(dcgm_series(g, hostname, driver));
    own.push_back(gpu_labels(g, hostname, false));
  }
  for (const auto* m : kDcgm) {
    bool any = false;
    for (std::size_t i = 0; i < snap.gpus.size(); ++i) {
      const auto& g = snap.gpus[i];
      if (!gpu_answers(g)) continue;
      for (const GpuSeries& ser : series[i]) {
        auto v = dcgm_value(*m, g, ser.mig);
        if (!v || !std::isfinite(*v)) continue;
        if (!any) w.family(m->dcgm, gpu_fields::metric_type_name(m->dcgm_type), m->dcgm_help);
        any = true;
        w.sample(ser.labels, is_counter(*m) ? continued(state.counters, m->dcgm, ser.labels, *v) : *v);
      }
    }
  }
  if (!snap.gpus.empty()) {
    // dcgm-exporter adds err_code (the Xid) and err_msg (its meaning) to this series; the meanings
    // are trainmon's Xid table (diagnose::xid_info), "No Error" for 0, "Unknown Error" otherwise.
    w.family("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.");
    for (std::size_t i = 0; i < snap.gpus.size(); ++i) {
      std::uint64_t xid = 0;
      for (const auto& [gpu, x] : state.last_xid) {
        if (gpu == snap.gpus[i].index) xid = x;
      }
      const auto& info = diagnose::xid_info(static_cast<unsigned>(std::min<std::uint64_t>(xid, 0xFFFFFFFFu)));
      for (const GpuSeries& ser : series[i]) {
        std::string l = ser.labels;
        add_label(l, "err_code", std::to_string(xid));
        add_label(l, "err_msg",
                  xid == 0          ? std::string_view("No Error")
                  : info.xid == xid ? info.meaning
                                    : std::string_view("Unknown Error"));
        w.sample(l, static_cast<double>(xid));
      }
    }
  }
  if (!snap.gpus.empty()) {
    // A counter beside DCGM's gauge: the gauge keeps the last Xid for ever and does not move when the
    // same Xid comes again; the rules' Xid alert fires on an increase here (docs/cluster.md).
    w.family("trainmon_gpu_xid_errors_total", "counter",
             "Xid errors reported by the driver since serve started.");
    for (std::size_t i = 0; i < snap.gpus.size(); ++i) {
      std::uint64_t n = 0;
      for (const auto& [gpu, c] : state.xid_events) {
        if (gpu == snap.gpus[i].index) n = c;
      }
      w.sample(own[i], static_cast<double>(n));
    }
  }

  // ---- trainmon_* : GPUs in base units, and their health ----
  std::string host_label;
  add_label(host_label, "Hostname", hostname);
  if (!snap.gpus.empty()) {
    w.family("trainmon_gpu_up", "gauge", "1 when the GPU answered this tick, 0 when lost, hung or failing.");
    for (std::size_t i = 0; i < snap.gpus.size(); ++i) w.sample(own[i], gpu_answers(snap.gpus[i]) ? 1 : 0);
    bool any = false;
    for (std::size_t i = 0; i < snap.gpus.size(); ++i) {
      const auto& g = snap.gpus[i];
      if (!gpu_answers(g) || !g.memory_used_bytes.ok()) continue;
      if (!any) w.family("trainmon_gpu_memory_used_bytes", "gauge", "GPU framebuffer memory used.");
      any = true;
      w.sample(own[i], static_cast<double>(*g.memory_used_bytes));
    }
    any = false;
    for (std::size_t i = 0; i < snap.gpus.size(); ++i) {
      const auto& g = snap.gpus[i];
      if (!gpu_answers(g) || !g.memory_total_bytes.ok()) continue;
      if (!any) w.family("trainmon_gpu_memory_total_bytes", "gauge", "GPU framebuffer memory total.");
      any = true;
      w.sample(own[i], static_cast<double>(*g.memory_total_bytes));
    }
  }

  // ---- per-process GPU memory (stale pids vanish with the snapshot) ----
  bool any_proc = false;
  for (const auto& p : snap.gpu_processes) {
    if (!p.used_memory_bytes.ok()) continue;
    if (!any_proc) {
      w.family("trainmon_process_gpu_memory_bytes", "gauge", "GPU memory held by a process on one GPU.");
      any_proc = true;
    }
    std::string l;
    add_label(l, "gpu", std::to_string(p.gpu_index));
    add_label(l, "pid", std::to_string(p.pid));
    add_label(l, "comm", p.process_name.ok() ? *p.process_name : "");
    add_label(l, "Hostname", hostname);
    w.sample(l, static_cast<double>(*p.used_memory_bytes));
  }
  render_gpu_processes(w, snap, hostname);

  // ---- host ----
  render_host(w, snap.host, host_label, state.counters);

  // ---- active findings ----
  w.family("trainmon_findings_active", "gauge", "Findings of the live diagnosis open now, by severity.");
  for (auto sev : {diagnose::Severity::info, diagnose::Severity::warning, diagnose::Severity::critical}) {
    std::string l = host_label;
    add_label(l, "severity", diagnose::severity_name(sev));
    double n = 0;
    for (const auto& f : active_findings) n += f.severity == sev ? 1 : 0;
    w.sample(l, n);
  }
  if (!active_findings.empty()) {
    w.family("trainmon_finding_active", "gauge", "1 for each open finding of the live diagnosis.");
    std::set<std::string> seen;  // one series per label set (a detector may repeat a code)
    for (const auto& f : active_findings) {
      std::string l = host_label;
      add_label(l, "code", f.code);
      add_label(l, "slug", f.slug);
      add_label(l, "severity", diagnose::severity_name(f.severity));
      add_label(l, "gpus", join_numbers(f.gpus));
      add_label(l, "pids", join_numbers(f.pids));
      if (seen.insert(l).second) w.sample(l, 1);
    }
  }

  // ---- run labels (Slurm job id ...) as an info metric for group_left joins ----
  {
    w.family("trainmon_labels_info", "gauge",
             "Always 1; the run's labels (--label, SLURM_* ...) as lower-case label names.");
    std::string l = host_label;
    std::set<std::string> names{"hostname"};
    for (const auto& [k, v] : state.labels) {
      auto name = text::prometheus_label_name(k);
      if (!names.insert(name).second) continue;
      add_label(l, name, v);
    }
    w.sample(l, 1);
  }

  // ---- the exporter itself ----
  w.family("trainmon_exporter_ticks_total", "counter", "Sampling ticks since serve started.");
  w.sample(host_label, static_cast<double>(state.ticks_total));
  w.family("trainmon_exporter_last_tick_timestamp_seconds", "gauge", "Wall clock of the newest snapshot.");
  w.sample(host_label, static_cast<double>(snap.time_unix_ns) / 1e9);
  if (state.last_tick_duration_s >= 0) {
    w.family("trainmon_exporter_tick_interval_seconds", "gauge", "Wall time between the two newest ticks.");
    w.sample(host_label, state.last_tick_duration_s);
  }
  w.family("trainmon_exporter_start_time_seconds", "gauge", "When serve started (Unix time).");
  w.sample(host_label, state.start_unix_s);
  w.family("trainmon_exporter_nvml_up", "gauge", "1 when the NVML library is loaded and initialised.");
  w.sample(host_label, snap.driver.loaded ? 1 : 0);
  w.family("trainmon_exporter_recording", "gauge", "1 when serve records into the run store.");
  w.sample(host_label, state.run_id > 0 ? 1 : 0);
  return out;
}

std::string render_train_metrics(std::span<const ipc::LiveRunState> runs, std::string_view hostname) {
  struct Series {
    std::string labels;
    const ipc::LiveRankState* rank;
  };
  std::vector<Series> series;
  for (const auto& run : runs) {
    if (!run.train) continue;
    for (const auto& r : run.ranks) {
      std::string l;
      add_label(l, "Hostname",
                !hostname.empty() ? std::string(hostname)
                : r.host.empty()  ? run.host
                                  : r.host);
      add_label(l, "run_id", std::to_string(run.run_id));
      add_label(l, "run", run.name);
      add_label(l, "rank", r.rank >= 0 ? std::to_string(r.rank) : "");
      add_label(l, "local_rank", r.local_rank >= 0 ? std::to_string(r.local_rank) : "");
      if (r.node_rank >= 0) add_label(l, "node_rank", std::to_string(r.node_rank));
      if (r.rank < 0) add_label(l, "pid", std::to_string(r.pid));  // no RANK: the process tells them apart
      if (r.gpu >= 0) add_label(l, "gpu", std::to_string(r.gpu));
      // The job's labels (Slurm job id, --label ...) so that Prometheus joins the ranks of one job
      // across nodes; our own label names win.
      std::set<std::string> names{"hostname", "run_id", "run",      "rank", "local_rank", "node_rank",
                                  "pid",      "gpu",    "quantile", "le",   "phase"};
      for (const auto& [k, v] : run.labels) {
        auto name = text::prometheus_label_name(k);
        if (!names.insert(name).second) continue;
        add_label(l, name, v);
      }
      series.push_back({std::move(l), &r});
    }
  }
  std::string out;
  if (series.empty()) return out;
  Writer w(out);
  auto family = [&](std::string_view name, std::string_view type, std::string_view help, auto get) {
    bool any = false;
    for (const auto& s : series) {
      const double v = get(*s.rank);
      if (!std::isfinite(v)) continue;
      if (!any) w.family(name, type, help);
      any = true;
      w.sample(s.labels, v);
    }
  };
  family("trainmon_train_steps_total", "counter", "Optimisation steps the rank completed (its own count).",
         [](const ipc::LiveRankState& r) { return r.total_steps; });
  family("trainmon_train_samples_total", "counter", "Samples the rank trained on.",
         [](const ipc::LiveRankState& r) { return r.total_samples; });
  family("trainmon_train_data_wait_seconds_total", "counter",
         "Time the rank's steps waited for the next batch (inside the data loader's next()).",
         [](const ipc::LiveRankState& r) { return r.total_data_s; });
  family("trainmon_train_collective_wait_seconds_total", "counter",
         "Time the rank's main thread waited inside torch.distributed collectives and point-to-point calls "
         "(DDP's gradient buckets included); from protocol v3 senders only.",
         [](const ipc::LiveRankState& r) { return r.total_comm_s; });
  family("trainmon_train_energy_joules_total", "counter",
         "Energy the rank's GPU used while serve watched the rank (NVML total energy counter). A GPU shared "
         "with other ranks or programs counts whole: the GPU's energy, not the rank's share.",
         [](const ipc::LiveRankState& r) { return r.energy_j; });
  family("trainmon_train_last_step_timestamp_seconds", "gauge", "Unix time the rank's last step ended.",
         [](const ipc::LiveRankState& r) { return r.last_step_unix_s; });
  // Where the rank is (the package's phases: data, compute, or idle outside the training loop:
  // evaluation, checkpointing, epoch end): a state set, 1 on the current phase; the rules keep the
  // hang and straggler alerts quiet while a job's rank is idle (docs/cluster.md).
  bool any_phase = false;
  for (const auto& s : series) {
    const auto& ph = s.rank->phase;
    if (ph != "data" && ph != "compute" && ph != "idle") continue;
    if (!any_phase)
      w.family(
          "trainmon_train_phase", "gauge",
          "1 on the rank's current phase of the training loop: data, compute, or idle (outside the loop: "
          "evaluation, checkpointing).");
    any_phase = true;
    for (const char* p : {"data", "compute", "idle"}) {
      std::string l = s.labels;
      add_label(l, "phase", p);
      w.sample(l, ph == p ? 1 : 0);
    }
  }
  family("trainmon_train_phase_since_timestamp_seconds", "gauge", "Unix time the rank's current phase began.",
         [](const ipc::LiveRankState& r) {
           return r.phase == "data" || r.phase == "compute" || r.phase == "idle"
                      ? r.phase_since_unix_s
                      : std::numeric_limits<double>::quiet_NaN();
         });
  // A summary: quantiles over the recent window, _sum and _count the exact totals since the rank
  // started timing (rate(_sum) / rate(_count) is the mean step time over any range).
  bool any = false;
  for (const auto& s : series) {
    const auto& r = *s.rank;
    if (!std::isfinite(r.total_step_s) || !std::isfinite(r.total_steps)) continue;
    if (!any)
      w.family(
          "trainmon_train_step_seconds", "summary",
          fmt::format("Wall time of the rank's steps (end of one step to the end of the next); quantiles "
                      "over the last {:g} s.",
                      ipc::kRunStateRecentS));
    any = true;
    const std::pair<const char*, double> q[] = {
        {"0.5", r.step_p50_s}, {"0.9", r.step_p90_s}, {"0.99", r.step_p99_s}};
    for (const auto& [name, v] : q) {
      std::string l = s.labels;
      add_label(l, "quantile", name);
      w.sample(l, v);
    }
    out += fmt::format("trainmon_train_step_seconds_sum{{{}}} {}\n", s.labels, r.total_step_s);
    out += fmt::format("trainmon_train_step_seconds_count{{{}}} {}\n", s.labels, r.total_steps);
  }
  return out;
}

std::string render_http_metrics(const HttpCounters& c, std::string_view hostname) {
  std::string out;
  Writer w(out);
  std::string host_label;
  add_label(host_label, "Hostname", hostname);
  w.family("trainmon_http_connections_open", "gauge", "HTTP connections open now, idle ones included.");
  w.sample(host_label, static_cast<double>(c.connections_open));
  w.family("trainmon_http_connections_total", "counter", "HTTP connections accepted since start.");
  w.sample(host_label, static_cast<double>(c.connections_total));
  w.family("trainmon_http_requests_total", "counter", "HTTP requests answered since start.");
  w.sample(host_label, static_cast<double>(c.requests_total));
  w.family("trainmon_http_refused_total", "counter",
           "HTTP connections closed or requests refused since start, by reason (idle_timeout, evicted, "
           "full, head_timeout, head_too_large, bad_host, body, unauthorized, throttled).");
  for (const auto& [reason, n] : c.refused) {
    std::string l = host_label;
    add_label(l, "reason", reason);
    w.sample(l, static_cast<double>(n));
  }
  return out;
}

}  // namespace trainmon::serve
