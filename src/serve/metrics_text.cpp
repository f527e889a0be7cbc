// SPDX-License-Identifier: Apache-2.0
// /metrics: the order of the families and the host, process, finding and exporter ones. The text
// writer is serve/prometheus_text.h, the dcgm-exporter GPU families serve/dcgm_families.cpp, counter
// continuity serve/counter_continuity.cpp, the training families serve/train_metrics.cpp.
#include "trainmon/serve/metrics_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include "serve/counter_continuity.h"
#include "serve/dcgm_families.h"
#include "serve/prometheus_text.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::serve {

using namespace metrics;

namespace {

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
  render_dcgm_families(w, snap, series, state.counters);
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
