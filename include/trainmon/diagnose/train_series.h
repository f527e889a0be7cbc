// SPDX-License-Identifier: Apache-2.0
// TrainSeries: the training loop's own timing, per rank, beside the GPU and host columns of a run
// (docs/python.md "Step timing", docs/diagnosis.md "Training loop").
//
// It flows events -> series -> detectors -> views like the GPU's: the training process sends
// windows of step timing (python/trainmon); the recorder folds every window a rank sent during one
// tick into one TrainWindow row (merge_windows), appends it here (live) and stores it (series kind
// train_rank); the store loads the same rows back (offline). Conventions:
//  - times are seconds on the run clock (0 = run start), doubles; durations are seconds;
//  - a figure the sender did not give is NaN (kNA); a heartbeat row has steps == 0 and NaN stats;
//  - `total_*` are the sender's cumulative figures since it started timing: exact even when windows
//    were dropped, and the source of every rate over a span (samples/s = d total_samples / d time).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainmon/diagnose/cuda_devices.h"

namespace trainmon::diagnose {

/// What the training loop was doing when it last reported (the `phase` of a window or heartbeat).
enum class TrainPhase : std::uint8_t {
  unknown = 0,
  data = 1,     ///< waiting inside the loader's next() for the next batch
  compute = 2,  ///< between the batch and the end of the step (forward, backward, all-reduce, optimizer)
  idle = 3,     ///< no step yet, or outside the training loop (evaluation, checkpointing)
  /// Protocol v3: inside a torch.distributed collective or point-to-point call (or Work.wait(), or
  /// DDP's wait for its gradient buckets); TrainWindow::coll says which.
  collective = 4,
  optimizer = 5,  ///< protocol v3: inside optimizer.step()
};
/// "unknown", "data", "compute", "idle", "collective", "optimizer".
std::string_view train_phase_name(TrainPhase p) noexcept;
/// Inverse of train_phase_name; nullopt for another name.
std::optional<TrainPhase> parse_train_phase(std::string_view name) noexcept;

/// Who one rank is, from its `hello` (and any later message). -1 / empty: not reported.
struct TrainRank {
  /// The rank's identity within the run: its global rank when known (>= 0), else -1 - pid. A rank
  /// that restarts (torchelastic) keeps its key with a new pid.
  std::int64_t key = 0;
  int rank = -1;        ///< global rank (RANK, torch.distributed.get_rank())
  int local_rank = -1;  ///< LOCAL_RANK
  int world_size = -1;  ///< WORLD_SIZE
  int node_rank = -1;   ///< GROUP_RANK / NODE_RANK / SLURM_NODEID
  std::string host;     ///< the sender's host name
  std::uint32_t pid = 0;
  int cuda_device = -1;  ///< CUDA device index as the process sees it (torch.cuda.current_device())
  std::string gpu_uuid;  ///< the CUDA device's UUID when torch told it
  std::string cuda_visible_devices;
  std::string cuda_device_order;
  int gpu = -1;  ///< NVML index, resolved by the recorder (resolve_rank_gpu); -1 = unknown
  std::string framework;
  int stack_signal = 0;  ///< signal that makes it dump its Python stacks; 0 = never signal it
  double lines_s = -1;   ///< it prints the resource line every this many seconds; < 0: it does not
  friend bool operator==(const TrainRank&, const TrainRank&) = default;
};

/// The key a rank with global rank `rank` (or -1) and pid `pid` gets (see TrainRank::key).
std::int64_t train_rank_key(int rank, std::uint32_t pid) noexcept;
/// The order ranks are kept and shown in: global ranks ascending, then pid keys by pid.
bool train_key_less(std::int64_t a, std::int64_t b) noexcept;
/// Copies into `into` every identity field `from` gives (not -1 / empty / 0); the key stays.
void update_identity(TrainRank& into, const TrainRank& from);

/// Count, sum and nearest-rank percentiles of one quantity over a window's steps (seconds). NaN when
/// the window had no step.
struct StepStats {
  float sum = std::numeric_limits<float>::quiet_NaN();
  float min = std::numeric_limits<float>::quiet_NaN();
  float max = std::numeric_limits<float>::quiet_NaN();
  float p50 = std::numeric_limits<float>::quiet_NaN();
  float p90 = std::numeric_limits<float>::quiet_NaN();
  float p99 = std::numeric_limits<float>::quiet_NaN();
  friend bool operator==(const StepStats&, const StepStats&) = default;
};

/// The collective a rank is inside (protocol v3 `steps.coll`, with phase == collective): what Flight
/// Recorder records per collective, live. Empty op = not inside one / not sent.
struct CollectiveAt {
  std::string op;  ///< torch.distributed's name: "all_reduce", "all_gather_into_tensor", "ddp_bucket", ...
  std::int64_t seq = -1;  ///< the rank's own count of collectives on that process group, from 0
  std::string group;      ///< the process group's name as torch gives it ("0" = the default group)
  double bytes = std::numeric_limits<double>::quiet_NaN();  ///< payload of the call, bytes
  friend bool operator==(const CollectiveAt&, const CollectiveAt&) = default;
};

/// One row of a rank's timing: what it reported during one recorder tick (or one message, before
/// merging). Heartbeat-only rows have steps == 0.
struct TrainWindow {
  double t = 0;             ///< run clock: when the (last) message of the row was sent
  std::uint32_t steps = 0;  ///< steps completed in the row
  double samples = std::numeric_limits<double>::quiet_NaN();  ///< samples in them
  float span_s = std::numeric_limits<float>::quiet_NaN();     ///< wall time the steps cover
  StepStats step;                                             ///< step time
  StepStats data;                                             ///< data wait per step
  /// Protocol v3: time the rank's main thread waited inside collectives per step (seconds); NaN
  /// from older senders. Compute = step - data - comm.
  StepStats comm;
  double total_steps = std::numeric_limits<double>::quiet_NaN();    ///< cumulative at `t`
  double total_samples = std::numeric_limits<double>::quiet_NaN();  ///< cumulative at `t`
  double total_step_s = std::numeric_limits<double>::quiet_NaN();   ///< cumulative step time
  double total_data_s = std::numeric_limits<double>::quiet_NaN();   ///< cumulative data wait
  double total_comm_s = std::numeric_limits<double>::quiet_NaN();   ///< v3: cumulative collective wait
  double last_step_t = std::numeric_limits<double>::quiet_NaN();    ///< run clock of the last step end
  TrainPhase phase = TrainPhase::unknown;                           ///< at `t`
  double phase_t = std::numeric_limits<double>::quiet_NaN();        ///< run clock: phase began
  CollectiveAt coll;  ///< v3: the collective the rank is inside at `t` (phase == collective)
  friend bool operator==(const TrainWindow&, const TrainWindow&) = default;
};

/// Folds `next` (later) into `into` (earlier) as if one window: counts, sums, min, max and totals are
/// exact; percentiles become the step-count-weighted percentiles of the two windows' percentiles
/// (exact when one side has no steps). Time, last step and phase come from the later one when given.
void merge_windows(TrainWindow& into, const TrainWindow& next);

/// Every window a rank sent during one tick, earliest first, folded into one (the recorder's row):
/// as merge_windows, but the p50 / p90 / p99 are the nearest-rank quantiles of the mixture of all
/// the parts' piecewise-linear CDFs at once (see train_stats), so a sketch is never re-sketched.
/// An empty span gives a default TrainWindow.
TrainWindow merge_windows(std::span<const TrainWindow> parts);

/// One rank's rows, ordered by t.
struct RankSeries {
  TrainRank id;
  std::vector<TrainWindow> rows;
};

/// Every rank that reported step timing in a run, ordered by key (ranks 0, 1, ... then pid keys).
struct TrainSeries {
  std::vector<RankSeries> ranks;

  [[nodiscard]] bool empty() const noexcept { return ranks.empty(); }
  /// The rank with `key`, or nullptr.
  [[nodiscard]] const RankSeries* find(std::int64_t key) const noexcept;
  /// The rank with `id.key`, created when missing (kept ordered); identity fields that `id` gives
  /// (not -1 / empty / 0) replace the stored ones.
  RankSeries& upsert(const TrainRank& id);
};

/// Appends `w` to the rank `id.key` (created when missing; identity updated as by upsert). Rows must
/// come in time order per rank; an out-of-order row is inserted in place.
void append_train_window(TrainSeries& series, const TrainRank& id, const TrainWindow& w);

/// The rows of every rank with t0 <= t <= t1 (identities kept, also of ranks left without rows).
TrainSeries slice(const TrainSeries& series, double t0, double t1);

// ---- figures over a span, for every view (summary, show, runs, report, top, serve) --------------

/// One rank's figures over [t0, t1] (run clock). NaN when not computable from what was sent.
struct RankTrainStats {
  std::int64_t key = 0;
  std::uint32_t steps = 0;                                          ///< steps that ended in the span
  double samples = std::numeric_limits<double>::quiet_NaN();        ///< samples in them
  double samples_per_s = std::numeric_limits<double>::quiet_NaN();  ///< samples / step time
  double steps_per_s = std::numeric_limits<double>::quiet_NaN();    ///< steps / step time
  /// Step-time quantiles over the span, seconds, nearest rank. Each row is a piecewise-linear CDF
  /// through its points (min at rank 1, p50 / p90 / p99 at rank ceil(q n), max at rank n; steps
  /// between two known ranks spread evenly in value), and the quantile of the rows' mixture is
  /// found by bisection on the value (1e-9 relative). Bound: the estimate lies within the true
  /// values of the ranks next to it in the rows' known points (a step between two known points of
  /// a row is only known to lie between them). A row whose points claim more time than its exact
  /// sum (written by a recorder before the single merge per tick) has its impossible points
  /// lowered first (Cdf::respect_sum in train_series.cpp). NaN without steps.
  double step_median_s = std::numeric_limits<double>::quiet_NaN();
  double step_p90_s = std::numeric_limits<double>::quiet_NaN();   ///< as step_median_s
  double step_p99_s = std::numeric_limits<double>::quiet_NaN();   ///< as step_median_s
  double step_mean_s = std::numeric_limits<double>::quiet_NaN();  ///< step time / steps
  double data_share = std::numeric_limits<double>::quiet_NaN();   ///< data wait / step time, 0..1
  /// Collective wait / step time, 0..1; NaN when the sender measured none (protocol < 3).
  double comm_share = std::numeric_limits<double>::quiet_NaN();
  /// (step - data - comm) / steps, seconds: what tells ranks apart in a synchronous job (NVIDIA's
  /// resiliency extension scores ranks on it). NaN without data and comm figures.
  double compute_mean_s = std::numeric_limits<double>::quiet_NaN();
  double last_step_t = std::numeric_limits<double>::quiet_NaN();  ///< latest step end seen (run clock)
  TrainPhase phase = TrainPhase::unknown;                         ///< at the last row
};

/// The job's figures over the span: per rank, and for the whole job.
struct TrainStats {
  std::vector<RankTrainStats> ranks;  ///< same order as TrainSeries::ranks (ranks without steps too)
  std::uint64_t steps = 0;            ///< steps of the rank that did the most (a step is collective)
  double samples = std::numeric_limits<double>::quiet_NaN();        ///< sum over ranks
  double samples_per_s = std::numeric_limits<double>::quiet_NaN();  ///< sum over ranks
  double steps_per_s = std::numeric_limits<double>::quiet_NaN();    ///< of the slowest rank
  double step_median_s = std::numeric_limits<double>::quiet_NaN();  ///< the slowest rank's median
  double data_share = std::numeric_limits<double>::quiet_NaN();     ///< over every rank's step time
  double comm_share = std::numeric_limits<double>::quiet_NaN();     ///< over every rank's step time
  [[nodiscard]] bool empty() const noexcept { return steps == 0; }
};

/// Figures over rows with t0 <= t <= t1 of every rank. Sums of the rows in the span (the first row's
/// steps are those that ended after the previous row). Empty (steps 0) when no step was reported.
TrainStats train_stats(const TrainSeries& series, double t0 = -std::numeric_limits<double>::infinity(),
                       double t1 = std::numeric_limits<double>::infinity());

// ---- which GPU a rank uses ------------------------------------------------------------------------

/// The NVML index of the GPU rank `id` uses, from the strongest evidence available:
///  1. its pid in a GPU's process list (what the driver sees); on several GPUs (a DDP rank also opens
///     a small context on GPU 0 when it touches it), the one where it holds the most memory;
///  2. `gpu_uuid` equal to a GPU's (or one of its MIG devices') UUID;
///  3. CUDA_VISIBLE_DEVICES entry number `cuda_device` (0 when not given and the list has one entry)
///     when it is a UUID (GPU-... / MIG-..., prefixes accepted as CUDA does), or an integer and
///     CUDA_DEVICE_ORDER=PCI_BUS_ID (CUDA's default order is fastest first, which NVML does not know):
///     cuda_visible_entries and nvml_index_of_cuda_entry (cuda_devices.h, shared with store::job_gpus);
///  4. `cuda_device` itself without CUDA_VISIBLE_DEVICES, when CUDA_DEVICE_ORDER=PCI_BUS_ID or the
///     machine has one GPU.
/// nullopt when none applies: never a guess from an integer alone.
std::optional<unsigned> resolve_rank_gpu(const TrainRank& id, std::span<const NvmlGpuRef> gpus);

}  // namespace trainmon::diagnose
