// SPDX-License-Identifier: Apache-2.0
// TrainMessage: one event sent by the training process (python/trainmon) over the events socket,
// and the pure parser that turns one message into it (docs/python.md "Protocol").
//
// Wire format (version 3; versions 1 and 2 still accepted): one UTF-8 JSON object per SOCK_SEQPACKET
// message, at most kMaxMessageBytes,
//   {"v":2,"type":"batch_end","t":1718000000.25,"mt":8123.4,"seq":17,"epoch":4,"steps":{...},...}
// Every field is validated (type, range, finite number, string length); an unknown `type` or a
// bad field rejects the whole message; unknown extra fields are ignored (forward compatibility).
//
// In diagnose (pure: core and diagnose types only), so that the store reads its stored events with
// the same parser the event server (ipc) uses, without the two including each other; the store's row
// of a message (ipc::to_store_event) is in ipc/train_channel.h.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "trainmon/core/error.h"
#include "trainmon/diagnose/series.h"

namespace trainmon::diagnose {

/// Newest protocol version this build reads (`"v"` field); every older one down to
/// kOldestProtocolVersion is read too. Version 2 added `mt`, the rank identity, `steps` and `heartbeat`;
/// version 3 the collective wait (`steps.comm_s`, `steps.total.comm_s`), the phases "collective" and
/// "optimizer" and the collective a rank is inside (`steps.coll`).
inline constexpr int kProtocolVersion = 3;
inline constexpr int kOldestProtocolVersion = 1;
/// Largest message accepted, bytes (a longer one is dropped and counted as too_large).
inline constexpr std::size_t kMaxMessageBytes = 64 * 1024;
/// Deepest JSON nesting accepted (the message is an object holding at most one nested object).
inline constexpr int kMaxDepth = 4;
/// Longest string field accepted, bytes (framework, run_id, host, gpu_uuid ...).
inline constexpr std::size_t kMaxStringBytes = 128;
/// Longest `cuda_visible_devices` accepted, bytes (a list of UUIDs).
inline constexpr std::size_t kMaxDeviceListBytes = 1024;

/// Event types of protocol version 1.
enum class EventType : std::uint8_t {
  hello,        ///< the sender started (framework, pid, rank); no training data yet
  train_start,  ///< training begins (epochs, batch_size, imgsz known)
  epoch_start,
  batch_end,  ///< a batch finished (epoch, batch, batch_size, loss, torch memory)
  epoch_end,  ///< a training epoch finished (Ultralytics on_train_epoch_end, Lightning, HF)
  val_end,    ///< validation after an epoch finished (Ultralytics on_fit_epoch_end)
  memory,     ///< a memory report only (torch allocator statistics, RSS)
  train_end,  ///< training finished (normally or not)
  heartbeat,  ///< v2: only `steps` (the last step, the phase), when nothing else was sent for 1 s
};
inline constexpr std::size_t kEventTypeCount = 9;

/// Stable name of an event type ("epoch_end").
std::string_view event_type_name(EventType type) noexcept;
/// The event type named `name`, or nullopt for an unknown name.
std::optional<EventType> event_type_from_name(std::string_view name) noexcept;

/// Why a message was not accepted (counted per reason by the EventServer).
enum class RejectReason : std::uint8_t {
  too_large,         ///< longer than kMaxMessageBytes (or truncated by the kernel)
  not_json,          ///< not valid UTF-8 JSON
  too_deep,          ///< nesting deeper than kMaxDepth
  not_object,        ///< valid JSON but not an object
  bad_version,       ///< "v" missing or not kOldestProtocolVersion .. kProtocolVersion
  unknown_type,      ///< "type" missing or not one of EventType
  bad_field,         ///< a known field with the wrong type, out of range or not finite
  wrong_run,         ///< "run_id" names another run
  wrong_user,        ///< the connecting process's uid (SO_PEERCRED) differs from ours
  rate_limited,      ///< over the token bucket's rate
  queue_full,        ///< the recorder did not drain fast enough; the oldest are kept
  too_many_clients,  ///< a connection beyond EventServerOptions::max_clients (closed at once)
};
inline constexpr std::size_t kRejectReasonCount = 12;

/// Stable name of a reject reason ("bad_field").
std::string_view reject_reason_name(RejectReason reason) noexcept;

/// PyTorch caching-allocator figures sent with an event; -1 when not reported (no CUDA).
struct TorchMemory {
  double allocated_bytes = -1;  ///< torch.cuda.memory_allocated()
  double reserved_bytes = -1;   ///< torch.cuda.memory_reserved()
  double peak_bytes = -1;       ///< torch.cuda.max_memory_allocated()
  double num_alloc_retries =
      -1;                ///< memory_stats()["num_alloc_retries"] (cudaMalloc retried after a cache flush)
  double num_ooms = -1;  ///< memory_stats()["num_ooms"] (OutOfMemoryError raised)
  friend bool operator==(const TorchMemory&, const TorchMemory&) = default;
};

/// Count, sum, min, max and percentiles of one quantity over a window's steps, seconds; NaN = not sent.
struct StepFigures {
  double sum = std::numeric_limits<double>::quiet_NaN();
  double min = std::numeric_limits<double>::quiet_NaN();
  double max = std::numeric_limits<double>::quiet_NaN();
  double p50 = std::numeric_limits<double>::quiet_NaN();
  double p90 = std::numeric_limits<double>::quiet_NaN();
  double p99 = std::numeric_limits<double>::quiet_NaN();
  bool operator==(const StepFigures& o) const noexcept;  ///< NaN equals NaN (the round trip keeps "absent")
};

/// The `steps` object of a v2/v3 message (docs/python.md "Step timing"). -1 / NaN = not sent.
struct StepsMessage {
  std::int64_t n = -1;  ///< steps in the window (required in the object)
  double samples = std::numeric_limits<double>::quiet_NaN();
  double span_s = std::numeric_limits<double>::quiet_NaN();
  StepFigures step_s;  ///< step time
  StepFigures data_s;  ///< data wait
  StepFigures comm_s;  ///< v3: collective wait (torch.distributed calls, DDP's bucket wait)
  double total_steps = std::numeric_limits<double>::quiet_NaN();
  double total_samples = std::numeric_limits<double>::quiet_NaN();
  double total_step_s = std::numeric_limits<double>::quiet_NaN();
  double total_data_s = std::numeric_limits<double>::quiet_NaN();
  double total_comm_s = std::numeric_limits<double>::quiet_NaN();  ///< v3: `total.comm_s`
  double last_step_t = std::numeric_limits<double>::quiet_NaN();   ///< time.time() of the last step end
  double last_step_mt = std::numeric_limits<double>::quiet_NaN();  ///< time.monotonic() of it
  std::string
      phase;  ///< "data", "compute", "idle", "unknown", v3 "collective", "optimizer"; empty = not sent
  double phase_mt = std::numeric_limits<double>::quiet_NaN();
  /// v3 `coll` {"op","seq","pg","bytes"}: the collective the rank is inside (phase "collective");
  /// empty op = not sent. op: printable ASCII, at most 128 bytes (required in the object); seq
  /// 0..1e15 (-1 = not sent); pg: the process group's name (printable ASCII); bytes 0..2^53 (NaN).
  std::string coll_op;
  std::int64_t coll_seq = -1;
  std::string coll_pg;
  double coll_bytes = std::numeric_limits<double>::quiet_NaN();
  /// Figures the parser lowered: data wait above the step time, collective wait above step minus
  /// data wait (sums and `total`), a collective percentile above the step max. 0 = as sent.
  int corrected = 0;
  bool operator==(const StepsMessage& o) const noexcept;  ///< NaN equals NaN
};

/// One validated message. Integer fields are -1 when the sender did not give them.
struct TrainMessage {
  int version = kProtocolVersion;  ///< "v" as sent
  EventType type = EventType::hello;
  double time_unix_s = 0;  ///< "t": when it happened in the sender, seconds since the epoch
  /// "mt" (v2): the sender's time.monotonic() (CLOCK_MONOTONIC, seconds), NaN when not sent.
  double mono_s = std::numeric_limits<double>::quiet_NaN();
  std::int64_t seq = -1;           ///< sender's sequence number (gaps = drops)
  std::int64_t pid = -1;           ///< sender's pid as it sees itself
  std::int64_t rank = -1;          ///< distributed rank (0 .. 65535)
  std::int64_t gpu = -1;           ///< CUDA device index the rank uses (0 .. 1023)
  std::int64_t local_rank = -1;    ///< v2: LOCAL_RANK (0 .. 65535)
  std::int64_t world_size = -1;    ///< v2: WORLD_SIZE (1 .. 65536)
  std::int64_t node_rank = -1;     ///< v2: GROUP_RANK / NODE_RANK (0 .. 65535)
  std::int64_t stack_signal = -1;  ///< v2 hello: signal that dumps its Python stacks (1 .. 64)
  std::optional<double> lines_s;   ///< v2 hello: it prints the resource line every this many seconds
  std::int64_t epoch = -1;         ///< 0-based epoch
  std::int64_t epochs = -1;        ///< planned number of epochs
  std::int64_t batch = -1;         ///< 0-based batch index within the epoch
  std::int64_t batches = -1;       ///< batches per epoch
  std::int64_t step = -1;          ///< global optimisation step
  std::int64_t batch_size = -1;    ///< samples per batch on this rank
  std::int64_t imgsz = -1;         ///< image size, pixels (largest side)
  std::optional<double> loss;      ///< training loss when given (finite)
  std::optional<double> lr;        ///< learning rate when given (finite, >= 0)
  TorchMemory torch;
  std::int64_t rss_bytes = -1;        ///< sender's resident set size
  std::int64_t dropped = -1;          ///< messages the sender dropped so far (recorder slow or gone)
  std::string framework;              ///< "ultralytics", "lightning", "transformers", "loop", ...
  std::string run_id;                 ///< TRAINMON_RUN_ID as the sender saw it ("" when not given)
  std::string host;                   ///< v2: the sender's host name
  std::string gpu_uuid;               ///< v2: the CUDA device's UUID
  std::string cuda_visible_devices;   ///< v2: CUDA_VISIBLE_DEVICES as the sender saw it
  std::string cuda_device_order;      ///< v2: CUDA_DEVICE_ORDER
  std::optional<StepsMessage> steps;  ///< v2: step timing since the previous message with one
  bool operator==(const TrainMessage& o) const noexcept;  ///< NaN times compare equal
};

/// Parse one message. Pure; never throws; bounded work (size and depth are checked before the
/// JSON parser runs). On failure the Error has domain `usage`, `code` = the RejectReason as int,
/// `name` = its reject_reason_name and a message naming the field.
Expected<TrainMessage> parse_train_event(std::string_view message);

/// The same, filling `out` (reset first; reusable across calls): nullopt when accepted, else the
/// Error parse_train_event would return. (Also the form the libFuzzer target uses: clang 14 cannot
/// destroy libstdc++ 12's std::expected of a non-trivial type.)
std::optional<Error> parse_train_event_into(std::string_view message, TrainMessage& out);

/// The RejectReason an Error from parse_train_event carries.
RejectReason reject_reason_of(const Error& error) noexcept;

/// Canonical JSON of a message (only the fields that were given), the form shown by
/// `trainmon export --format jsonl`. Round-trips through parse_train_event. `with_steps` false leaves
/// `steps` out (the store keeps step timing as a series, not in the event rows).
std::string to_json(const TrainMessage& message, bool with_steps = true);

/// Maps a sender's times to the run's clock (seconds since the run started). The sender's monotonic
/// times (mt) are used when the run's monotonic start is known (live, same host: one CLOCK_MONOTONIC),
/// so a wall-clock step moves nothing; otherwise its wall times (t).
struct RunClock {
  double start_unix_s = 0;                                         ///< wall time at the run start
  double start_mono_s = std::numeric_limits<double>::quiet_NaN();  ///< CLOCK_MONOTONIC then; NaN offline
  /// When the message happened on the run clock.
  [[nodiscard]] double of(const TrainMessage& m) const noexcept;
  /// A sender monotonic time on the run clock, else its wall time `unix_s` (NaN when neither).
  [[nodiscard]] double of(double mono_s, double unix_s) const noexcept;
};

/// The diagnosis engine's view of a message that happened at `run_t` on the run's clock (seconds).
diagnose::TrainEvent to_diagnose_event(const TrainMessage& message, double run_t);

/// The rank a message comes from, as far as it says (key from rank, else `sender_pid`), with the
/// kernel's `sender_pid` (SO_PEERCRED: a pid of the recorder's namespace) as pid.
diagnose::TrainRank rank_of(const TrainMessage& message, std::int64_t sender_pid);

/// The message's `steps` as one TrainWindow row on the run's clock (a heartbeat gives steps 0);
/// nullopt when the message has no `steps`.
std::optional<diagnose::TrainWindow> window_of(const TrainMessage& message, const RunClock& clock);

}  // namespace trainmon::diagnose
