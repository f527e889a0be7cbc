// SPDX-License-Identifier: Apache-2.0
#include "serve/counter_continuity.h"

#include <cmath>

#include "serve/dcgm_families.h"

namespace trainmon::serve {
namespace metrics {

std::string counter_key(std::string_view name, std::string_view labels) {
  std::string k(name);
  k += '{';
  k += labels;
  return k;
}

double continued(const CounterState& counters, std::string_view name, std::string_view labels, double raw) {
  auto it = counters.series.find(counter_key(name, labels));
  return it != counters.series.end() && it->second.counter.seen() ? it->second.counter.continued() : raw;
}

}  // namespace metrics

using namespace metrics;

namespace {

/// Calls fn(name, labels, value) for every counter series render_metrics exports from `snap`.
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

}  // namespace trainmon::serve
