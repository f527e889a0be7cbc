// SPDX-License-Identifier: Apache-2.0
// The Prometheus text exposition (format 0.0.4) of one Snapshot, as `trainmon serve` answers on
// /metrics (docs/serve.md has the full list with units).
//
// GPU metrics keep dcgm-exporter's names, types, units and labels (NVIDIA/dcgm-exporter
// etc/default-counters.csv and dcp-metrics-included.csv) so its Grafana dashboards work unchanged:
// FB in MiB, power in W, energy in mJ, clocks in MHz, violation time in us, DCGM_FI_PROF_* as
// ratios 0..1 (GPM, Hopper+), labels gpu, UUID, pci_bus_id, device ("nvidia<index>"), modelName,
// Hostname. Our own metrics are `trainmon_*` in base units (bytes, seconds, ratios 0..1).
// A reading that is not available (N/A, unsupported, GPU lost) produces no sample at all, never 0.
// Series of processes that left the snapshot are simply not rendered (no stale series).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trainmon/core/counter.h"
#include "trainmon/core/snapshot.h"
#include "trainmon/diagnose/finding.h"
#include "trainmon/ipc/run_state_file.h"

namespace trainmon::serve {

/// Every exported counter's continued value (core/counter.h), keyed by metric name and label set:
/// a counter that resets underneath (volatile ECC counts or energy after a driver reload, PCIe
/// replays, violation times, a re-created network interface) is exported as if it had not, so that
/// a Prometheus counter from one `serve` never goes down. Series unseen for `forget_after_ticks`
/// ticks are forgotten (bounded memory when interfaces come and go).
struct CounterState {
  struct Entry {
    ContinuedCounter counter;
    std::uint64_t last_tick = 0;
  };
  std::unordered_map<std::string, Entry> series;
  std::uint64_t tick = 0;
  std::uint64_t forget_after_ticks = 600;
};

/// Feed the counters of `snap` into `state` (once per tick, before the snapshot is rendered).
void follow_counters(const Snapshot& snap, CounterState& state);

/// State that outlives one snapshot (kept by the observer, passed to the renderer).
struct ExporterState {
  std::int64_t run_id = 0;           ///< the serve run in the store; 0 when not recording
  std::uint64_t ticks_total = 0;     ///< ticks seen since start
  double last_tick_duration_s = -1;  ///< time between the two last ticks (CLOCK_MONOTONIC); < 0 before two
  double start_unix_s = 0;           ///< when serve started
  /// Last Xid seen per GPU index (DCGM_FI_DEV_XID_ERRORS's meaning: value of the last Xid); 0 = none.
  std::vector<std::pair<unsigned, std::uint64_t>> last_xid;
  /// Xid events seen per GPU index since serve started (trainmon_gpu_xid_errors_total): a repeat of
  /// the same Xid leaves last_xid as it was but counts here.
  std::vector<std::pair<unsigned, std::uint64_t>> xid_events;
  /// Run labels (--label and SLURM_* / launcher variables), exported on trainmon_labels_info.
  std::vector<std::pair<std::string, std::string>> labels;
  /// Continued counters; a counter family renders its continued value when followed here, else the
  /// reading as is.
  CounterState counters;
};

// Label values, HELP text and label names are escaped by text::prometheus_label_value,
// text::prometheus_help and text::prometheus_label_name (trainmon/core/text_escape.h).

/// What the HTTP server refused and holds, for its own metrics (server.h fills it).
struct HttpCounters {
  std::size_t connections_open = 0;
  std::uint64_t connections_total = 0;
  std::uint64_t requests_total = 0;
  /// Closed or refused connections and requests by reason: "idle_timeout", "evicted", "full",
  /// "head_timeout", "head_too_large", "bad_host", "body", "unauthorized", "throttled".
  std::vector<std::pair<std::string, std::uint64_t>> refused;
};

/// The server's own families (appended to render_metrics' text at each scrape):
/// trainmon_http_connections_open (gauge), trainmon_http_connections_total,
/// trainmon_http_requests_total and trainmon_http_refused_total{reason} (counters), each with the
/// Hostname label of the other trainmon_* metrics.
std::string render_http_metrics(const HttpCounters& c, std::string_view hostname);

/// The whole exposition text for `snap`, each family with # HELP and # TYPE, ending in '\n'.
std::string render_metrics(const Snapshot& snap, std::span<const diagnose::Finding> active_findings,
                           const ExporterState& state);

/// The training loop of the live runs `runs` (their live state files, docs/serve.md "Training"): per
/// rank trainmon_train_steps_total, _samples_total, _data_wait_seconds_total (counters from the
/// sender's cumulative totals), trainmon_train_step_seconds (a summary: quantiles 0.5 / 0.9 / 0.99 over
/// the recent window ipc::kRunStateRecentS, _sum and _count the exact totals) and
/// trainmon_train_last_step_timestamp_seconds, labelled Hostname (the rank's host, else the run's),
/// run_id, run, rank, local_rank, node_rank, gpu (NVML index, when known) and the run's labels (lower
/// case, as trainmon_labels_info; names we use ourselves win). A figure not known has no sample.
/// trainmon_train_collective_wait_seconds_total (protocol v3 senders' collective wait) and
/// trainmon_train_energy_joules_total (LiveRankState::energy_j, which serve fills) beside them.
/// Empty when no run has step timing.
/// `hostname`: when not empty, the Hostname label of every rank (serve --hostname), else the host
/// each rank reported (its run's host when it reported none).
std::string render_train_metrics(std::span<const ipc::LiveRunState> runs, std::string_view hostname = {});

}  // namespace trainmon::serve
