// SPDX-License-Identifier: Apache-2.0
// The usage ledger (`trainmon usage`, docs/cli.md "usage"): who held the GPUs, who used them, and who
// held them idle, from what `record`, `serve` and `run` stored.
//
// Each tick, for each GPU, the processes holding GPU memory on it (the driver's used memory > 0; a
// process whose memory the driver does not give is not a holder) share the tick (dt: the run's
// sampling interval). With k holders on the GPU, each holder p gets:
//   held_s     = dt / k                         (a shared GPU's time is split, so sums add up: the
//                                                machine's total is the time GPUs were held)
//   memory_gib_s = used_memory_p / 2^30 * dt
//   busy_s     = dt * min(sm_p, 100) / 100      when the driver gave every holder's SM utilisation
//                                                (nvmlDeviceGetProcessUtilization), else
//              = dt * utilization.gpu / 100 / k  (the GPU's utilisation split evenly); 0 when neither
//   idle_s     = dt / k                         when the GPU was idle: utilization.gpu below
//                                                idle_util_pct (diagnose::Thresholds, default 5 %,
//                                                MISSION §4 D2, the idle detectors' threshold); without
//                                                utilization.gpu, the holders' SM sum below it; else 0
//   energy_j   = E * sm_p / sum(sm)             when every holder's SM utilisation is given and the
//                                                sum is > 0, else E / k
// where E is the GPU's energy over the tick: the difference of its total energy counter
// (nvmlDeviceGetTotalEnergyConsumption, mJ) since the previous tick when that tick was at most 1.5
// intervals before, else power.draw * dt; none when neither is read. A GPU's energy while no process
// holds memory on it is in no row.
//
// The recorder adds these shares into the store's `usage` table (per gpu_process series, 10-minute
// buckets), so the ledger reads a few rows per process and hour however long the store is, and
// stays exact after retention downsampled the samples; retention's deletion removes its rows with
// the samples. Stores written before schema 5 have no usage rows (their runs are counted as
// "without usage data").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainmon/core/attribution.h"
#include "trainmon/core/error.h"
#include "trainmon/core/snapshot.h"

namespace trainmon::store {

class Store;

/// The width of a usage bucket (ms): `--since` / `--until` count whole buckets by their start.
inline constexpr std::int64_t kUsageBucketMs = 600'000;

/// One process on one GPU in one tick, as the ledger's arithmetic takes it.
struct UsageHolderTick {
  std::uint32_t pid = 0;
  std::uint64_t used_memory_bytes = 0;  ///< > 0 for a holder
  std::optional<double> sm_util_pct;    ///< the driver's per-process SM utilisation, when given
};

/// One GPU in one tick.
struct UsageGpuTick {
  unsigned gpu_index = 0;
  std::optional<double> utilization_gpu_pct;  ///< utilization.gpu
  std::optional<double> energy_j;             ///< the GPU's energy over the tick (see above)
  std::vector<UsageHolderTick> holders;       ///< processes with memory > 0 on it
};

/// One holder's share of one GPU tick (units in the names: seconds, GiB x seconds, joules).
struct UsageShare {
  unsigned gpu_index = 0;
  std::uint32_t pid = 0;
  double held_s = 0, busy_s = 0, idle_s = 0, memory_gib_s = 0, energy_j = 0;
};

/// The shares of one GPU tick of `dt_s` seconds (formulas above), one per holder in the given order;
/// empty for a GPU without holders or dt_s <= 0.
std::vector<UsageShare> usage_shares(const UsageGpuTick& gpu, double dt_s, double idle_util_pct);

/// A snapshot's GPUs as UsageGpuTick values (holders: its GPU processes with used memory > 0);
/// `energy_j[i]` is the energy of snap.gpus[i] over the tick (nullopt: unknown; shorter: unknown).
std::vector<UsageGpuTick> usage_ticks_of(const Snapshot& snap,
                                         std::span<const std::optional<double>> energy_j);

/// How the ledger groups its rows.
enum class UsageGroup : std::uint8_t { user, job, pod, gpu };

/// `user` | `job` | `pod` | `gpu`; nullopt otherwise.
std::optional<UsageGroup> parse_usage_group(std::string_view text) noexcept;
std::string_view usage_group_name(UsageGroup g) noexcept;

/// What to sum: buckets whose start lies in [since_ms, until_ms).
struct UsageQuery {
  std::int64_t since_ms = 0;
  std::int64_t until_ms = INT64_MAX;
  UsageGroup by = UsageGroup::user;
};

/// One row of the ledger. Hours are GPU-hours (held_h: a GPU held by one process for an hour is
/// 1.0); memory_gib_h is GiB x hours; energy_kwh kilowatt-hours.
struct UsageRow {
  std::string key;       ///< user name; job key (core/attribution.h job_key(), else "run:<name>" for a
                         ///< `trainmon run`, else "" for none); "namespace/pod" (or the pod UID) or "";
                         ///< the GPU index as text
  std::string gpu_uuid;  ///< --by gpu: the GPU's UUID as the newest run recorded it, else ""
  double held_h = 0, busy_h = 0, idle_h = 0, memory_gib_h = 0, energy_kwh = 0;
  std::int64_t processes = 0;              ///< distinct (run, pid) that held memory in the range
  std::int64_t first_ms = 0, last_ms = 0;  ///< first and last tick counted
};

/// The ledger over a time range, rows worst offenders first (most idle hours, then most held, then
/// key), with what the store still covers.
struct UsageLedger {
  std::vector<UsageRow> rows;
  UsageRow total;                    ///< every row summed (key "")
  std::int64_t covered_from_ms = 0;  ///< oldest usage bucket's first tick in the store (0: none)
  std::int64_t covered_to_ms = 0;    ///< newest usage bucket's last tick
  /// The oldest sample still stored at full resolution, and the span downsampled by retention
  /// (0: none): the usage rows are exact either way, other views of those runs are not.
  std::int64_t downsampled_from_ms = 0, downsampled_to_ms = 0;
  std::int64_t runs = 0;                     ///< runs with usage rows in the range
  std::int64_t runs_without_usage_data = 0;  ///< runs of the range recorded before schema 5
};

/// Sum the store's usage rows. Error: the store could not be read. A store before schema 5 gives an
/// empty ledger (runs_without_usage_data counts its runs in the range).
Expected<UsageLedger> usage_ledger(Store& store, const UsageQuery& query);

/// The job key of a process the ledger uses: attribution.job_key(), else "run:<run_name>" when the
/// process belongs to a `trainmon run` job (in_job), else "".
std::string usage_job_key(const ProcessAttribution& a, bool in_job, std::string_view run_kind,
                          std::string_view run_name);

}  // namespace trainmon::store
