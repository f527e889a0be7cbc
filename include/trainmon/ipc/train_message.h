// SPDX-License-Identifier: Apache-2.0
// TrainMessage: one event sent by the training process (python/trainmon) over the events socket,
// and the pure parser that turns one message into it (docs/python.md "Protocol").
//
// Wire format (version 1): one UTF-8 JSON object per SOCK_SEQPACKET message, at most kMaxMessageBytes,
//   {"v":1,"type":"epoch_end","t":1718000000.25,"seq":17,"epoch":4,"epochs":200,...}
// Every field is validated (type, range, finite number, string length); an unknown `type` or a
// bad field rejects the whole message; unknown extra fields are ignored (forward compatibility).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trainmon/core/error.h"
#include "trainmon/diagnose/series.h"
#include "trainmon/store/run_info.h"

namespace trainmon::ipc {

/// Protocol version this build speaks (`"v"` field).
inline constexpr int kProtocolVersion = 1;
/// Largest message accepted, bytes (a longer one is dropped and counted as too_large).
inline constexpr std::size_t kMaxMessageBytes = 64 * 1024;
/// Deepest JSON nesting accepted (the message is an object holding at most one nested object).
inline constexpr int kMaxDepth = 4;
/// Longest string field accepted, bytes (framework, run_id, pid names).
inline constexpr std::size_t kMaxStringBytes = 128;

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
};
inline constexpr std::size_t kEventTypeCount = 8;

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
  bad_version,       ///< "v" missing or not kProtocolVersion
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

/// One validated message. Integer fields are -1 when the sender did not give them.
struct TrainMessage {
  EventType type = EventType::hello;
  double time_unix_s = 0;        ///< "t": when it happened in the sender, seconds since the epoch
  std::int64_t seq = -1;         ///< sender's sequence number (gaps = drops)
  std::int64_t pid = -1;         ///< sender's pid as it sees itself
  std::int64_t rank = -1;        ///< distributed rank (0 .. 65535)
  std::int64_t gpu = -1;         ///< CUDA device index the rank uses (0 .. 1023)
  std::int64_t epoch = -1;       ///< 0-based epoch
  std::int64_t epochs = -1;      ///< planned number of epochs
  std::int64_t batch = -1;       ///< 0-based batch index within the epoch
  std::int64_t batches = -1;     ///< batches per epoch
  std::int64_t step = -1;        ///< global optimisation step
  std::int64_t batch_size = -1;  ///< samples per batch on this rank
  std::int64_t imgsz = -1;       ///< image size, pixels (largest side)
  std::optional<double> loss;    ///< training loss when given (finite)
  std::optional<double> lr;      ///< learning rate when given (finite, >= 0)
  TorchMemory torch;
  std::int64_t rss_bytes = -1;  ///< sender's resident set size
  std::int64_t dropped = -1;    ///< messages the sender dropped so far (recorder slow or gone)
  std::string framework;        ///< "ultralytics", "lightning", "transformers", "loop", ...
  std::string run_id;           ///< TRAINMON_RUN_ID as the sender saw it ("" when not given)
  friend bool operator==(const TrainMessage&, const TrainMessage&) = default;
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

/// Canonical JSON of a message (only the fields that were given), the form stored in the run and
/// shown by `trainmon export --format jsonl`. Round-trips through parse_train_event.
std::string to_json(const TrainMessage& message);

/// The diagnosis engine's view of a message, on the run's clock (`run_start_unix_s`).
diagnose::TrainEvent to_diagnose_event(const TrainMessage& message, double run_start_unix_s);

/// The store's row for a message: its time (ns since the epoch), type name and canonical JSON.
store::TrainEvent to_store_event(const TrainMessage& message);

}  // namespace trainmon::ipc
