// SPDX-License-Identifier: Apache-2.0
// EventServer: receives the training process's events on a Unix SOCK_SEQPACKET socket
// (docs/python.md "Protocol").
//
// Why SOCK_SEQPACKET: each send is one whole message (no framing, no partial writes), like a
// datagram, but on a connection, so the kernel bounds what is in flight by the sender's socket
// buffer (hundreds of events) instead of net.unix.max_dgram_qlen (10 datagrams by default, which a
// two-core machine under load overruns whenever our thread is not scheduled). The sender connects
// once (a Unix connect never waits: a full backlog fails with EAGAIN) and sends with MSG_DONTWAIT:
// when the recorder is slow it gets EAGAIN at once and drops the event; when the recorder is gone
// it gets EPIPE / ECONNREFUSED / ENOENT at once. The training loop can never block on us.
//
// Safety: the socket lives in a fresh private directory (0700) and is itself 0600; every
// connection's peer credentials (SO_PEERCRED) are checked and another uid is disconnected. Each
// message is size-limited, rate-limited (one token bucket for all senders) and fully validated
// (parse_train_event) on the server's own thread; accepted messages go to a bounded queue that the
// recorder drains once per tick. Nothing a sender does can crash or stall the recorder: the worst
// is dropped messages, each counted by reason (stats(); `trainmon run` reports them). An empty
// message is malformed (not_json), not the end of the stream: only a peer that hung up ends it.
//
// Clean-up: the recorder holds an flock on its directory while it lives; start() first removes the
// directories of recorders that died without cleaning up (remove_stale_run_dirs).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "trainmon/core/error.h"
#include "trainmon/diagnose/train_message.h"

namespace trainmon::ipc {

struct EventServerOptions {
  /// Directory in which the private socket directory is created. Empty: $XDG_RUNTIME_DIR when set
  /// and writable, else $TMPDIR, else /tmp.
  std::string parent_dir;
  /// Accepted messages per second, sustained (token bucket refill rate).
  double rate_per_s = 2000;
  /// Bucket size: messages accepted in a burst before rate limiting starts.
  double burst = 4000;
  /// Accepted messages held for the recorder; beyond that the newest are dropped (queue_full).
  std::size_t queue_capacity = 100'000;
  /// When not empty, a message whose run_id is set and differs is refused (wrong_run).
  std::string run_id;
  /// Simultaneous connections (one per training process / rank, plus DataLoader workers that
  /// report); more are closed at once and counted as too_many_clients.
  std::size_t max_clients = 256;
};

/// One accepted message with what the server knows about its arrival.
struct ReceivedEvent {
  diagnose::TrainMessage message;
  std::int64_t received_unix_ns = 0;  ///< wall clock when the server read it
  std::int64_t sender_pid = 0;        ///< from SO_PEERCRED (the kernel's word, not the sender's)
};

/// Counters since start. `rejected` is indexed by RejectReason.
struct EventServerStats {
  std::uint64_t received = 0;     ///< messages read
  std::uint64_t connections = 0;  ///< connections accepted (same user) since start
  std::uint64_t accepted = 0;     ///< put in the queue
  std::array<std::uint64_t, diagnose::kRejectReasonCount> rejected{};
  std::uint64_t sender_dropped = 0;  ///< the largest `dropped` any sender reported
  /// Figures of accepted messages the parser lowered to the step time (StepsMessage::corrected).
  std::uint64_t corrected = 0;
  std::uint64_t total_rejected() const noexcept;
};

/// Removes the per-run directories ("trainmon-run-XXXXXX") in `parent` that recorders killed before
/// their clean-up left behind: only directories owned by our uid (lstat: never through a link),
/// only when no live process holds the directory's lock and no one listens on its socket, removed
/// entry by entry without following links (files::remove_private_dir). Returns how many it removed.
std::size_t remove_stale_run_dirs(const std::string& parent);

class EventServer {
 public:
  /// Create the private directory and socket and start the receiving thread.
  /// Errors (domain os): the directory or socket cannot be created or bound.
  static Expected<std::unique_ptr<EventServer>> start(const EventServerOptions& options = {});

  /// Stops the thread, removes the socket and the directory (and anything we put in it).
  ~EventServer();
  EventServer(const EventServer&) = delete;
  EventServer& operator=(const EventServer&) = delete;

  /// Path of the socket (for TRAINMON_EVENTS_SOCKET).
  const std::string& socket_path() const noexcept { return socket_path_; }
  /// The private directory holding the socket (0700); other per-run files may go there.
  const std::string& directory() const noexcept { return dir_; }

  /// Move out up to `max` accepted events, oldest first. Never blocks on senders.
  std::vector<ReceivedEvent> drain(std::size_t max = SIZE_MAX);
  EventServerStats stats() const;

  /// Stop receiving now (idempotent); already accepted events stay drainable.
  void stop();

  /// Handle one message as the thread does (credentials already checked): rate, parse, queue.
  /// Public for tests. Returns true when accepted.
  bool handle(std::string_view message, std::int64_t sender_pid, std::int64_t now_unix_ns,
              std::int64_t now_monotonic_ns);

 private:
  EventServer(EventServerOptions options, std::string dir, std::string socket_path, int fd, int wake_fd);
  void loop();
  void accept_clients(std::vector<std::pair<int, std::int64_t>>& clients);
  void count(diagnose::RejectReason reason);

  const EventServerOptions options_;
  const std::string dir_;
  const std::string socket_path_;
  int fd_ = -1;       ///< the listening socket
  int wake_fd_ = -1;  ///< eventfd that interrupts poll() on stop
  int dir_fd_ = -1;   ///< the private directory, flock'ed while we live (remove_stale_run_dirs)

  // token bucket (only touched by the receiving thread, or by handle() in tests)
  double tokens_ = 0;
  std::int64_t last_refill_ns_ = 0;

  mutable std::mutex mu_;
  std::deque<ReceivedEvent> queue_;
  EventServerStats stats_;

  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace trainmon::ipc
