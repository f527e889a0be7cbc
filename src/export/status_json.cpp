// SPDX-License-Identifier: Apache-2.0
// The status JSON document: gpustat's `--json` keys and units (MIT, gpustat/core.py jsonify) plus
// our additions; `null` for a missing value with the reason in the object's "na_reasons".
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include "trainmon/core/gpu_fields.h"
#include "trainmon/core/text_escape.h"

#include <cmath>
#include <sstream>

#include "trainmon/core/units.h"
#include "trainmon/export/attribution.h"
#include "trainmon/export/processes_unknown.h"
#include "trainmon/export/status.h"

namespace trainmon::exp {

namespace {

using Json = nlohmann::ordered_json;

/// Set obj[key] to the converted value, or null and na_reasons[key] to the status name.
template <class T, class F>
void put(Json& obj, Json& reasons, const char* key, const Reading<T>& r, F convert) {
  if (r.ok()) {
    obj[key] = convert(*r);
  } else {
    obj[key] = nullptr;
    reasons[key] = std::string(read_status_name(r.status));
  }
}
template <class T>
void put(Json& obj, Json& reasons, const char* key, const Reading<T>& r) {
  put(obj, reasons, key, r, [](const T& v) { return v; });
}

/// The nvidia-smi name of the GPU field registry row (core/gpu_fields.h) that reads GpuSample member
/// M: the key status --json gives it (gpustat's keys are nvidia-smi's). A member without a row or
/// without an nvidia-smi name does not compile. The registry's names are literals: data() ends
/// with a NUL.
template <auto M>
#if defined(__SANITIZE_ADDRESS__)
// The sanitizer pass: GCC 12 under -fsanitize=address,undefined does not fold a comparison of
// function addresses in a constant expression, so there the lookup runs when called (the release
// build keeps the compile-time check).
constexpr
#else
consteval
#endif
    const char*
    nvsmi_key() {
  for (const auto& f : gpu_fields::kGpuFields) {
    if (f.read != &gpu_fields::member<M>) continue;
    if (f.nvsmi.empty()) throw "this GPU field has no nvidia-smi name";
    return f.nvsmi.data();
  }
  throw "not a GPU field registry row";
}

/// put() for GpuSample member M under its nvidia-smi name.
template <auto M, class... F>
void put_field(Json& obj, Json& reasons, const GpuSample& g, F... convert) {
  put(obj, reasons, nvsmi_key<M>(), g.*M, convert...);
}

/// argv of a host process: as read (ProcessSample::args, an argument with a blank stays one); a
/// snapshot without it (an older capture, a test's) falls back to the display line cut at blanks.
std::vector<std::string> args_of(const ProcessSample& p) {
  if (!p.args.empty()) return p.args;
  std::vector<std::string> out;
  std::istringstream in(p.cmdline);
  for (std::string a; in >> a;) out.push_back(a);
  return out;
}

Json process_json(const Snapshot& snap, const GpuProcessSample& p) {
  Json o;
  Json reasons = Json::object();
  // The local process the join matched (never one that merely has the same number).
  const ProcessSample* hp = host_process_of(snap, p);
  // Why the host fields are null: the GPU process's visibility ("not_visible", "exited"), or
  // "not_visible" for a matched process whose owner could not be read.
  const std::string why = joined_to_host(p.host) || p.host == HostVisibility::unknown
                              ? std::string("not_visible")
                              : std::string(host_visibility_name(p.host));
  // gpustat keys first, same order as gpustat's get_process_info().
  if (hp && !hp->user.empty()) {
    o["username"] = hp->user;
  } else {
    o["username"] = nullptr;
    reasons["username"] = why;
  }
  std::vector<std::string> args = hp ? args_of(*hp) : std::vector<std::string>{};
  if (!args.empty()) {
    o["command"] = std::string(path_basename(args.front()));
    o["full_command"] = args;
  } else if (hp && !hp->comm.empty()) {
    o["command"] = hp->comm;
    o["full_command"] = std::vector<std::string>{hp->comm};
  } else if (p.process_name.ok()) {
    o["command"] = std::string(path_basename(*p.process_name));
    o["full_command"] = std::vector<std::string>{*p.process_name};
  } else {
    o["command"] = "?";  // gpustat's placeholder for a process without a command line
    o["full_command"] = std::vector<std::string>{"?"};
  }
  put(o, reasons, "gpu_memory_usage", p.used_memory_bytes, [](std::uint64_t b) { return bytes_to_mib(b); });
  if (hp) {
    put(o, reasons, "cpu_percent", hp->cpu_pct);
    put(o, reasons, "cpu_memory_usage", hp->rss_bytes);
  } else {
    o["cpu_percent"] = nullptr;
    o["cpu_memory_usage"] = nullptr;
    reasons["cpu_percent"] = reasons["cpu_memory_usage"] = why;
  }
  o["pid"] = p.pid;
  // trainmon additions.
  o["type"] = std::string(1, p.type);
  put(o, reasons, "process_name", p.process_name);
  put(o, reasons, "gpu_memory_usage_bytes", p.used_memory_bytes);
  put(o, reasons, "sm_util", p.sm_util_pct);
  put(o, reasons, "mem_util", p.mem_util_pct);
  put(o, reasons, "enc_util", p.enc_util_pct);
  put(o, reasons, "dec_util", p.dec_util_pct);
  // Utilisation the driver has not refreshed since the last read is the last sample, this old.
  put(o, reasons, "util_age_s", p.util_age_s, [](double s) { return std::round(s * 1000) / 1000; });
  if (p.gpu_instance_id.ok()) o["gpu_instance_id"] = *p.gpu_instance_id;
  if (p.compute_instance_id.ok()) o["compute_instance_id"] = *p.compute_instance_id;
  if (!p.mig_instances.empty()) {
    Json inst = Json::array();
    for (const auto& m : p.mig_instances)
      inst.push_back(
          Json{{"gpu_instance_id", m.gpu_instance_id}, {"compute_instance_id", m.compute_instance_id}});
    o["mig_instances"] = inst;  // every instance the pid is on; gpu_memory_usage is their sum
  }
  o["host_visibility"] = std::string(host_visibility_name(p.host));
  if (hp) {
    o["host_rss_bytes"] = hp->rss_bytes.ok() ? Json(*hp->rss_bytes) : Json(nullptr);
    o["host_state"] = std::string(1, hp->state);
    o["host_num_threads"] = hp->num_threads.ok() ? Json(*hp->num_threads) : Json(nullptr);
    // Slurm job, pod, container, rank: only when something is known (docs/status-json.md).
    if (Json a = attribution_json(hp->attribution); !a.empty()) o["attribution"] = std::move(a);
  }
  o["na_reasons"] = reasons;
  return o;
}

Json reason_names(std::uint64_t mask) {
  static const std::pair<std::uint64_t, const char*> names[] = {
      {clock_event::gpu_idle, "gpu_idle"},
      {clock_event::applications_clocks_setting, "applications_clocks_setting"},
      {clock_event::sw_power_cap, "sw_power_cap"},
      {clock_event::hw_slowdown, "hw_slowdown"},
      {clock_event::sync_boost, "sync_boost"},
      {clock_event::sw_thermal_slowdown, "sw_thermal_slowdown"},
      {clock_event::hw_thermal_slowdown, "hw_thermal_slowdown"},
      {clock_event::hw_power_brake_slowdown, "hw_power_brake_slowdown"},
      {clock_event::display_clock_setting, "display_clock_setting"},
  };
  Json arr = Json::array();
  for (const auto& [bit, name] : names)
    if (mask & bit) arr.push_back(name);
  return arr;
}

Json gpu_json(const Snapshot& snap, const GpuSample& g) {
  static const GpuStaticInfo empty_info;
  const GpuStaticInfo& info = g.info ? *g.info : empty_info;
  Json o;
  Json r = Json::object();
  const auto mib = [](std::uint64_t b) { return bytes_to_mib(b); };
  const auto watts = [](unsigned mw) { return mw / 1000; };
  // gpustat keys, gpustat units (MiB, whole W, %, °C).
  o["index"] = g.index;
  put(o, r, "uuid", info.uuid);
  put(o, r, "name", info.name);
  put_field<&GpuSample::temperature_gpu_c>(o, r, g);
  put_field<&GpuSample::fan_speed_pct>(o, r, g);
  put_field<&GpuSample::utilization_gpu_pct>(o, r, g);
  put(o, r, "utilization.enc", g.utilization_encoder_pct);
  put(o, r, "utilization.dec", g.utilization_decoder_pct);
  put_field<&GpuSample::power_draw_mw>(o, r, g, watts);
  put_field<&GpuSample::enforced_power_limit_mw>(o, r, g, watts);
  put_field<&GpuSample::memory_used_bytes>(o, r, g, mib);
  put(o, r, "memory.total", g.memory_total_bytes.ok() ? g.memory_total_bytes : info.memory_total_bytes, mib);
  Json procs = Json::array();
  for (const auto& p : snap.gpu_processes)
    if (p.gpu_index == g.index) procs.push_back(process_json(snap, p));
  // Lists that failed: null, as gpustat does, never [] next to the memory they hold; the reason in
  // "processes_unknown" (and the entries of a list that did answer in "processes_listed").
  if (const std::string why = processes_unknown_reason(g.process_count); !why.empty()) {
    o["processes"] = nullptr;
    r["processes"] = std::string(read_status_name(g.process_count.status));
    o["processes_unknown"] = why;
    if (!procs.empty()) o["processes_listed"] = procs;
  } else {
    o["processes"] = procs;
  }
  // trainmon additions (nvidia-smi --query-gpu names where one exists: put_field takes the
  // registry's).
  o["responsive"] = g.responsive.ok() || g.responsive.status == ReadStatus::not_collected
                        ? std::string("ok")
                        : std::string(read_status_name(g.responsive.status));
  put(o, r, "pci.bus_id", info.pci_bus_id);
  put_field<&GpuSample::pstate>(o, r, g, [](unsigned p) { return fmt::format("P{}", p); });
  put_field<&GpuSample::memory_free_bytes>(o, r, g, mib);
  put_field<&GpuSample::memory_reserved_bytes>(o, r, g, mib);
  put(o, r, "memory.used_bytes", g.memory_used_bytes);
  put(o, r, "memory.total_bytes", g.memory_total_bytes.ok() ? g.memory_total_bytes : info.memory_total_bytes);
  put_field<&GpuSample::utilization_memory_pct>(o, r, g);
  put_field<&GpuSample::temperature_memory_c>(o, r, g);
  put(o, r, "power.draw_mw", g.power_draw_mw);
  put(o, r, "enforced.power.limit_mw", g.enforced_power_limit_mw);
  put_field<&GpuSample::clocks_graphics_mhz>(o, r, g);
  put_field<&GpuSample::clocks_sm_mhz>(o, r, g);
  put_field<&GpuSample::clocks_memory_mhz>(o, r, g);
  put(o, r, "clocks.max.sm", info.clocks_max_sm_mhz);
  put_field<&GpuSample::clocks_event_reasons_active>(o, r, g);
  o["clocks_event_reasons.active_names"] =
      g.clocks_event_reasons_active.ok() ? reason_names(*g.clocks_event_reasons_active) : Json(nullptr);
  put_field<&GpuSample::ecc_mode_current>(o, r, g);
  put_field<&GpuSample::ecc_corrected_volatile>(o, r, g);
  put_field<&GpuSample::ecc_uncorrected_volatile>(o, r, g);
  put_field<&GpuSample::pcie_link_gen_current>(o, r, g);
  put_field<&GpuSample::pcie_link_width_current>(o, r, g);
  put(o, r, "pcie.rx_kib_s", g.pcie_rx_kib_s);
  put(o, r, "pcie.tx_kib_s", g.pcie_tx_kib_s);
  put_field<&GpuSample::mig_mode_current>(o, r, g, [](unsigned m) { return m != 0; });
  Json migs = Json::array();
  for (const auto& m : g.mig_devices) {
    Json mo;
    Json mr = Json::object();
    mo["index"] = m.index;
    put(mo, mr, "gpu_instance_id", m.gpu_instance_id);
    put(mo, mr, "compute_instance_id", m.compute_instance_id);
    put(mo, mr, "uuid", m.uuid);
    put(mo, mr, "memory.used", m.memory_used_bytes, mib);
    put(mo, mr, "memory.total", m.memory_total_bytes, mib);
    mo["na_reasons"] = mr;
    migs.push_back(mo);
  }
  o["mig_devices"] = migs;
  o["na_reasons"] = r;
  return o;
}

Json host_json(const HostSample& h) {
  Json o;
  Json r = Json::object();
  Json mem;
  put(mem, r, "total_bytes", h.memory.total_bytes);
  put(mem, r, "available_bytes", h.memory.available_bytes);
  put(mem, r, "used_bytes", h.memory.used_bytes);
  put(mem, r, "free_bytes", h.memory.free_bytes);
  put(mem, r, "buffers_bytes", h.memory.buffers_bytes);
  put(mem, r, "cached_bytes", h.memory.cached_bytes);
  put(mem, r, "swap_total_bytes", h.memory.swap_total_bytes);
  put(mem, r, "swap_used_bytes", h.memory.swap_used_bytes);
  o["memory"] = mem;
  o["cpu"] = {{"count_online", h.cpu_count_online},
              {"busy_pct", h.cpu_total.busy_pct},
              {"user_pct", h.cpu_total.user_pct},
              {"system_pct", h.cpu_total.system_pct},
              {"iowait_pct", h.cpu_total.iowait_pct}};
  put(o, r, "load1", h.load1);
  put(o, r, "load5", h.load5);
  put(o, r, "load15", h.load15);
  put(o, r, "cpu_temperature_c", h.cpu_temperature_c);
  o["na_reasons"] = r;
  return o;
}

}  // namespace

std::string status_json(const Snapshot& snap, std::span<const std::size_t> order, bool all_processes,
                        int indent) {
  Json doc;
  doc["hostname"] = snap.host.hostname;
  doc["driver_version"] = snap.driver.driver_version.ok() ? Json(*snap.driver.driver_version) : Json(nullptr);
  doc["query_time"] = iso_local_time(snap.time_unix_ns);
  Json gpus = Json::array();
  for (std::size_t pos : order) gpus.push_back(gpu_json(snap, snap.gpus.at(pos)));
  doc["gpus"] = gpus;
  doc["schema_version"] = kStatusSchemaVersion;
  doc["query_time_unix_ns"] = snap.time_unix_ns;
  doc["nvml"] = {
      {"loaded", snap.driver.loaded},
      {"library_path", snap.driver.library_path},
      {"error", snap.driver.error.empty() ? Json(nullptr) : Json(snap.driver.error)},
      {"nvml_version", snap.driver.nvml_version.ok() ? Json(*snap.driver.nvml_version) : Json(nullptr)},
      {"cuda_driver_version",
       snap.driver.cuda_driver_version.ok() ? Json(*snap.driver.cuda_driver_version) : Json(nullptr)}};
  doc["host"] = host_json(snap.host);
  if (all_processes) {
    Json hp = Json::array();
    for (const auto& p : snap.processes) {
      Json o;
      Json r = Json::object();
      o["pid"] = p.pid;
      o["ppid"] = p.ppid;
      o["username"] = p.user;
      o["command"] = p.comm;
      o["full_command"] = args_of(p);
      o["state"] = std::string(1, p.state);
      put(o, r, "cpu_percent", p.cpu_pct);
      put(o, r, "cpu_memory_usage", p.rss_bytes);
      put(o, r, "mem_pct", p.mem_pct);
      if (Json a = attribution_json(p.attribution); !a.empty()) o["attribution"] = std::move(a);
      o["na_reasons"] = r;
      hp.push_back(o);
    }
    doc["host_processes"] = hp;
  }
  // error_handler::replace: invalid UTF-8 in a command line never aborts the output.
  return text::json_dump(doc, indent) + '\n';
}

}  // namespace trainmon::exp
