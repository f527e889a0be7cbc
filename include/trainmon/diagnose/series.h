// SPDX-License-Identifier: Apache-2.0
// RunSeries: a compact, columnar picture of one run for the detectors.
//
// Detectors must scan 24 h x 8 GPUs at 1 s in well under 2 s, so they never see Snapshots: the live
// path appends one row per tick (append_snapshot) and the store fills the same plain struct from the
// database (offline path). Conventions:
//  - time is seconds since the run started (double); every per-tick column has `t.size()` entries;
//  - per-GPU and host columns are float; NaN means "not available at that tick" (N/A, unsupported,
//    GPU lost). Use `std::isnan` or the helpers in this header;
//  - every memory column is MiB (2^20 bytes) as float (units in the names: `_mib`); power is watts,
//    clocks MHz, temperatures degrees Celsius, percentages 0..100, rates bytes per second;
//  - cumulative counters (ECC, violation time) are stored as read; detectors look at differences.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "trainmon/core/gpu_sample.h"
#include "trainmon/core/snapshot.h"
#include "trainmon/diagnose/train_series.h"

namespace trainmon::diagnose {

/// The "not available" value of every float column.
inline constexpr float kNA = std::numeric_limits<float>::quiet_NaN();
/// The "not available" value of the clock event reasons column (no valid mask has all bits set).
inline constexpr std::uint64_t kReasonsNA = ~std::uint64_t{0};

/// Whether a GPU answered at one tick (from GpuSample::responsive).
enum class GpuState : std::uint8_t {
  ok = 0,
  lost = 1,     ///< NVML_ERROR_GPU_IS_LOST / reset required
  timeout = 2,  ///< the call hung past the per-device deadline
  failed = 3,   ///< any other failure of the whole device this tick
  absent = 4,   ///< the GPU was not in this tick's snapshot
};

/// One process on one GPU at one tick (D7, D9): a compact row of a per-GPU, tick-ordered list.
struct GpuProcTick {
  std::uint32_t tick = 0;   ///< row index into RunSeries::t
  std::uint32_t pid = 0;    ///< host pid as the driver reports it
  float used_mib = kNA;     ///< GPU memory the process holds, MiB (NaN under WDDM / no permission)
  float sm_util_pct = kNA;  ///< nvmlDeviceGetProcessUtilization sm %, NaN when not sampled
  HostVisibility host = HostVisibility::unknown;  ///< how the pid looks from this host's /proc
  bool in_job = false;                            ///< the pid belongs to the watched job's process tree
};

/// A high-resolution utilisation sample (nvmlDeviceGetSamples), in its own column pair.
struct HiResColumn {
  std::vector<double> t;     ///< seconds since run start
  std::vector<float> value;  ///< percent
};

/// Every per-GPU column. All vectors except `procs` and `hires_util` have RunSeries::t.size() rows.
struct GpuSeries {
  unsigned index = 0;  ///< NVML index
  std::string name;    ///< "NVIDIA H200" (first one seen), empty if unknown
  std::vector<GpuState> state;
  std::vector<float> util_gpu_pct;  ///< utilization.gpu
  std::vector<float> util_mem_pct;  ///< utilization.memory
  std::vector<float> mem_used_mib;  ///< memory.used (v2: excludes reserved)
  std::vector<float> mem_reserved_mib;
  std::vector<float> mem_total_mib;
  std::vector<float> power_w;        ///< power.draw
  std::vector<float> power_limit_w;  ///< enforced.power.limit
  std::vector<float> temp_c;
  std::vector<float> temp_slowdown_c;  ///< NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
  std::vector<float> sm_clock_mhz;
  std::vector<float> sm_clock_max_mhz;
  std::vector<std::uint64_t> clock_reasons;  ///< clocks_event_reasons.active; kReasonsNA when N/A
  std::vector<float> viol_power_s;           ///< cumulative seconds in power-cap violation (field 74)
  std::vector<float> viol_thermal_s;         ///< cumulative seconds in thermal violation (field 75)
  std::vector<float> viol_hw_brake_s;        ///< cumulative seconds in HW power-brake slowdown (field 271)
  /// NVML's total-energy counter (nvmlDeviceGetTotalEnergyConsumption, mJ since the driver loaded) in
  /// joules, as read (cumulative; a drop is a reset). Double: a float's 24 bits would round a counter of
  /// 1e9 J to 64 J. NaN where unsupported (before Volta, MIG, vGPU) or not read.
  std::vector<double> energy_j;
  std::vector<float> ecc_uncorrected_volatile;
  std::vector<float> ecc_corrected_volatile;
  std::vector<float> retired_pages;    ///< SBE + DBE retired pages
  std::vector<float> retired_pending;  ///< 1 when a retirement waits for a reset, 0 when not
  std::vector<float> remapped_unc;     ///< rows remapped for uncorrectable errors
  std::vector<float> remapped_cor;
  std::vector<float> remapped_pending;  ///< 1 / 0
  std::vector<float> remapped_failure;  ///< 1 / 0
  std::vector<float> pcie_gen;
  std::vector<float> pcie_width;
  std::vector<float> pcie_gen_max;
  std::vector<float> pcie_width_max;
  std::vector<float> gpm_sm_pct;  ///< GPM SM utilisation (Hopper+), NaN elsewhere
  std::vector<float> gpm_tensor_pct;
  std::vector<float> gpm_dram_pct;  ///< GPM DRAM bandwidth utilisation
  HiResColumn hires_util;           ///< driver-buffered utilisation samples
  std::vector<GpuProcTick> procs;   ///< processes per tick, ordered by tick
};

/// Host-wide columns, one row per tick.
struct HostSeries {
  std::vector<float> cpu_busy_pct;  ///< whole machine
  std::vector<float> cpu_iowait_pct;
  std::vector<float> cpu_core_max_pct;  ///< busiest single core
  std::vector<float> cpu_count;         ///< online CPUs
  std::vector<float> mem_available_mib;
  std::vector<float> mem_total_mib;
  std::vector<float> mem_cached_mib;  ///< buff/cache
  std::vector<float> swap_used_mib;
  std::vector<float> psi_mem_some_avg10;  ///< percent
  std::vector<float> psi_io_some_avg10;   ///< percent
  std::vector<float> disk_read_bps;       ///< sum over disks, bytes per second
};

struct RunSeries;

/// One process of the watched job: when it was seen alive and, for a training rank's process, its CPU.
struct JobProcess {
  std::uint32_t pid = 0;
  double first_t = 0;                   ///< run clock: first tick it was seen alive (not a zombie)
  double last_t = 0;                    ///< run clock: last tick it was seen alive
  std::vector<std::uint32_t> ticks;     ///< rows with a CPU reading (training ranks' processes only)
  std::vector<float> cpu_pct;           ///< its CPU at those rows, per-core basis (100 = one core)
  std::uint32_t ppid = 0;               ///< parent pid as last seen (0 unknown)
  std::string comm;                     ///< /proc/PID/comm as last seen ("python3", "pt_data_worker")
  std::vector<std::uint32_t> rss_rows;  ///< rows with an RSS reading, ascending (D3, D20)
  std::vector<float> rss_mib;           ///< its RSS at those rows, MiB
};

/// What kind of process of the job `p` is, for D3/D20's words and advice: the job's main process (the
/// root, or a training rank's process), a DataLoader worker (a child of one of those with the same
/// program name, which is what fork()ed multiprocessing workers are, or a Python one, or one named
/// "pt_data_worker"), or another process of the tree.
enum class JobProcessKind : std::uint8_t { main = 0, worker = 1, other = 2 };
JobProcessKind job_process_kind(const RunSeries& s, const JobProcess& p);
/// "main process", "DataLoader worker", "process" (English; detectors translate with word()).
std::string_view job_process_kind_name(JobProcessKind k) noexcept;
/// The RSS of `p` at the last row <= `row` that has one (NaN when none), MiB.
float job_process_rss_at(const JobProcess& p, std::size_t row);

/// The watched job's process tree, one row per tick (NaN when no job is watched).
struct JobSeries {
  std::vector<float> rss_mib;       ///< sum over the tree
  std::vector<float> cpu_pct;       ///< sum over the tree, per-core basis (250 = 2.5 cores)
  std::vector<float> main_cpu_pct;  ///< the root (main) process
  std::vector<float> workers;       ///< processes in the tree besides the root
  std::vector<float> oom_kills;     ///< OOM kills in the job's memory cgroups since it started (cumulative:
                                    ///< memory.events oom_kill, v1 memory.oom_control); NaN: not read
  std::vector<float> memory_limit_mib;  ///< the job's tightest memory cgroup limit, MiB; NaN: none known
  std::vector<JobProcess> procs;        ///< every process of the tree ever seen, ordered by pid (D23-D25)

  /// The process `pid`, or nullptr.
  [[nodiscard]] const JobProcess* proc(std::uint32_t pid) const noexcept;
};

/// An NVML event (Xid, ECC, ...) on the run's clock.
struct GpuEventRec {
  double t = 0;  ///< seconds since run start
  unsigned gpu = 0;
  std::uint64_t event_type = 0;  ///< nvmlEventType bit (0x8 Xid critical error)
  std::uint64_t xid = 0;         ///< Xid code for Xid events, else 0
  friend bool operator==(const GpuEventRec&, const GpuEventRec&) = default;
};

/// One event sent by the training process (python/trainmon callback). Byte fields are -1 when the
/// process did not report them (torch not importable).
struct TrainEvent {
  double t = 0;      ///< seconds since run start
  std::string kind;  ///< "epoch_end", "batch_end", "memory", ...
  int epoch = -1;    ///< 0-based epoch, -1 when unknown
  long batch = -1;
  int batch_size = -1;                ///< samples per batch on this rank
  int gpu = -1;                       ///< the rank's device index, -1 when unknown
  double torch_allocated_bytes = -1;  ///< torch.cuda.memory_allocated()
  double torch_reserved_bytes = -1;   ///< torch.cuda.memory_reserved()
  double torch_peak_bytes = -1;       ///< torch.cuda.max_memory_allocated()
  double num_alloc_retries = -1;      ///< torch.cuda.memory_stats()["num_alloc_retries"]
  double num_ooms = -1;               ///< torch.cuda.memory_stats()["num_ooms"]
  friend bool operator==(const TrainEvent&, const TrainEvent&) = default;
};

/// Python stacks a training process wrote when trainmon asked (a hang, D23).
struct TrainStackRec {
  double t = 0;               ///< run clock: when trainmon asked
  std::int64_t rank_key = 0;  ///< TrainRank::key
  std::uint32_t pid = 0;
  std::string finding;  ///< code of the finding that asked ("D23")
  std::string text;     ///< faulthandler's text (every thread)
  friend bool operator==(const TrainStackRec&, const TrainStackRec&) = default;
};

/// Facts about the job known at or after its end.
struct JobFacts {
  std::optional<int> exit_status;  ///< exit code when it exited normally
  std::optional<int> signal;       ///< terminating signal (9 = SIGKILL)
  bool oom_killed = false;         ///< the kernel OOM killer ended it (cgroup events / dmesg)
  /// The OOM kill was at the job's memory cgroup limit, not the host's RAM (runner::OomVerdict).
  bool oom_at_cgroup_limit = false;
  /// The job's effective memory cgroup limit (memory.max / memory.limit_in_bytes), MiB; unset: none.
  std::optional<double> cgroup_memory_limit_mib;
  /// OOM kills counted in the job's cgroups by its end (runner::OomWatch::kills_since_start after the
  /// command exited): a kill after the last tick (a worker killed, the job failing at once) is still
  /// one for D20. Unset: not read. Not stored (the summary keeps `oom_kills`), so offline sees only
  /// the kills of the stored ticks and the main process's kill.
  std::optional<double> oom_kills_at_end;
  std::vector<unsigned> gpus;  ///< GPU indices the job is meant to use (CUDA_VISIBLE_DEVICES,
                               ///< --device); empty = unknown, detectors infer from processes
  std::uint32_t root_pid = 0;
};

/// Everything a detector needs about one run.
struct RunSeries {
  std::vector<double> t;        ///< seconds since run start, ascending
  std::vector<GpuSeries> gpus;  ///< one per GPU ever seen, ordered by index
  HostSeries host;
  JobSeries job;
  std::vector<GpuEventRec> gpu_events;
  std::vector<TrainEvent> train_events;  ///< ordered by t
  TrainSeries train;                     ///< the training loop's step timing, per rank (train_series.h)
  std::vector<TrainStackRec> stacks;     ///< stacks asked for, ordered by t
  JobFacts facts;

  /// Number of ticks.
  [[nodiscard]] std::size_t size() const noexcept { return t.size(); }
  /// The GPU with NVML index `index`, or nullptr.
  [[nodiscard]] const GpuSeries* gpu(unsigned index) const noexcept;
};

/// What append_snapshot needs to know about the watched job.
struct JobContext {
  std::int64_t run_start_unix_ns = 0;      ///< t = 0 of the run
  std::uint32_t root_pid = 0;              ///< main process; 0 = no job watched
  std::vector<std::uint32_t> pids;         ///< the job's pids; empty = the root's tree from snapshot ppids
  std::optional<double> cgroup_oom_kills;  ///< current cgroup oom_kill count, if the caller reads it
  /// CLOCK_MONOTONIC at t = 0. When set, a row's t is the snapshot's monotonic_ns since then and
  /// wall-clock times (NVML events, driver samples) are placed by the snapshot's own offset, kept
  /// within the tick: a step of the wall clock moves no time (core/timeline.h). nullopt: t comes
  /// from the snapshots' wall clock (time_unix_ns - run_start_unix_ns).
  std::optional<std::int64_t> run_start_monotonic_ns;
  /// The job's tightest memory cgroup limit, MiB (`run`: runner::OomWatch), if the caller reads it.
  std::optional<double> memory_limit_mib;
};

/// Appends one row built from `snap` (its time, GPUs, GPU processes, host, the job's processes) and
/// converts its NVML events. GPUs first seen now get NaN-filled history; GPUs missing from `snap`
/// get a NaN row with state `absent`. Rows must be appended in time order.
void append_snapshot(RunSeries& series, const Snapshot& snap, const JobContext& ctx);

/// Appends one training-process event, keeping train_events ordered by time.
void append_train_event(RunSeries& series, TrainEvent ev);

/// Appends stacks a training process wrote, keeping `stacks` ordered by time.
void append_train_stack(RunSeries& series, TrainStackRec rec);

/// Makes impossible readings of rows row0..row1 (inclusive) N/A, so that no finding rests on them: memory
/// used, reserved or their sum above total; a process holding more than its GPU's total; a temperature at or
/// above kImpossibleGpuTempC; a utilisation above 100 %. append_snapshot and the store's load_run_series both
/// call it (the same rule live and offline; a store written by an older trainmon may hold such values).
void drop_impossible(RunSeries& series, std::size_t row0, std::size_t row1);
/// No GPU reads this hot while it runs (GPUs shut down at 90-105 °C); the NVML backend's bound for
/// invalid_value (nvml::kGpuTemperatureImpossibleC) is the same number.
inline constexpr float kImpossibleGpuTempC = 150.f;

/// A copy of the rows with t0 <= t <= t1 (events and hi-res samples filtered by the same range,
/// facts copied). Used by the live engine's sliding window and by tests.
RunSeries slice(const RunSeries& series, double t0, double t1);

/// Adds `n` rows at times `times` filled with NaN / defaults for every GPU, host and job column.
/// Building block for tests, the store loader and synthetic series.
void append_empty_rows(RunSeries& series, const std::vector<double>& times);

/// Adds a GPU column set filled with NaN for the existing rows (if `index` is not there already)
/// and returns it.
GpuSeries& ensure_gpu(RunSeries& series, unsigned index);

}  // namespace trainmon::diagnose
