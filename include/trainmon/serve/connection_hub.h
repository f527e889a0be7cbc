// SPDX-License-Identifier: Apache-2.0
// ConnectionHub: who holds the HTTP connections of `trainmon serve` while they wait, so that idle or
// slow clients cost a descriptor and a few bytes, never a worker thread.
//
// cpp-httplib gives every accepted connection a worker for its whole life: with 16 workers, 160
// idle connections delayed a Prometheus scrape by 17 s, and a client sending its headers one byte
// every few seconds held a worker for minutes. Here one poller thread holds every connection that
// is not being answered and reads the request head itself, without blocking; only a connection
// whose whole head has arrived is handed to a worker, which answers it and gives it back (keep-alive)
// or closes it. Limits, each counted in stats():
//   - a fresh or keep-alive connection that sends nothing for idle_timeout is closed;
//   - a request head must arrive whole within head_timeout of its first byte (408), and be at most
//     max_head_bytes (431): slowloris and header floods end there;
//   - at most max_connections are open; a new one beyond that closes the connection idle the longest
//     (no request byte yet), else it is answered 503 at once: a scraper always gets in;
//   - a connection answered with "close" while the client may still be sending (a refused body) is
//     drained for a moment (lingering close, as nginx does) so the client reads the answer, not a reset.
// The hub knows nothing of HTTP beyond finding the end of a head; the handler does the rest.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace trainmon::serve {

struct HubOptions {
  std::size_t workers = 16;           ///< threads answering requests (only ever busy with whole heads)
  std::size_t max_connections = 512;  ///< open at once, idle ones included
  std::chrono::milliseconds idle_timeout{5000};  ///< no request byte for this long: closed
  std::chrono::milliseconds head_timeout{5000};  ///< a head's first byte to its last (408 after)
  std::chrono::milliseconds io_timeout{5000};    ///< one read or write while answering
  std::size_t max_head_bytes = 16384;            ///< request line and headers (431 beyond)
  std::chrono::milliseconds linger{500};         ///< drain time of a lingering close
  std::size_t linger_bytes = 1 << 20;            ///< at most this much is drained and dropped
};

/// Counters since start (and connections open now).
struct HubStats {
  std::uint64_t accepted = 0;        ///< connections taken in
  std::uint64_t requests = 0;        ///< heads handed to a worker
  std::uint64_t idle_closed = 0;     ///< closed after idle_timeout without a request byte
  std::uint64_t evicted = 0;         ///< idle ones closed to make room for a new connection
  std::uint64_t refused_full = 0;    ///< new connections answered 503 (every slot busy with a request)
  std::uint64_t head_timeouts = 0;   ///< heads that did not arrive in time (408)
  std::uint64_t head_too_large = 0;  ///< heads over max_head_bytes (431)
  std::size_t open = 0;              ///< open now
};

/// One connection while a worker answers it. `read` gives first the bytes the poller already read,
/// then reads the socket; both directions wait at most io_timeout per call.
class HubConnection {
 public:
  int fd() const noexcept { return fd_; }
  /// Up to `n` bytes: the buffered head first. 0: the peer closed; -1: error or time-out.
  long read(char* p, std::size_t n);
  /// All of `n` bytes (MSG_NOSIGNAL), or -1 on error or time-out.
  long write(const char* p, std::size_t n);
  /// Whether a read would return at once, waiting up to io_timeout.
  bool readable() const;
  /// Whether a write could proceed, waiting up to io_timeout.
  bool writable() const;
  /// The handler says the connection ends after this answer (e.g. a body it will not read).
  void close_after() noexcept { close_after_ = true; }
  /// The client's address ("127.0.0.1", "::1") and port; empty / -1 when unknown.
  const std::string& peer_ip() const noexcept { return peer_ip_; }
  int peer_port() const noexcept { return peer_port_; }
  /// Requests answered on this connection before this one.
  std::uint64_t served() const noexcept { return served_; }

 private:
  friend class ConnectionHub;
  int fd_ = -1;
  std::string buffer_;  ///< read from the socket, not yet consumed by the handler
  std::size_t consumed_ = 0;
  bool close_after_ = false;
  std::string peer_ip_;
  int peer_port_ = -1;
  std::uint64_t served_ = 0;
  std::chrono::milliseconds io_timeout_{5000};
  // poller state
  std::chrono::steady_clock::time_point deadline_{};
  bool head_started_ = false;
  bool lingering_ = false;
  std::size_t drained_ = 0;
  std::uint64_t order_ = 0;  ///< when it became idle (eviction picks the smallest)
};

class ConnectionHub {
 public:
  /// Answers one request whose head is in `c`; returns whether the connection may stay open.
  using Handler = std::function<bool(HubConnection& c)>;

  ConnectionHub(HubOptions options, Handler handler);
  /// stop(): closes every connection and joins the threads.
  ~ConnectionHub();
  ConnectionHub(const ConnectionHub&) = delete;
  ConnectionHub& operator=(const ConnectionHub&) = delete;

  /// Starts the poller and the workers (idempotent).
  void start();
  /// Takes an accepted socket (any thread; never blocks): it is made non-blocking and held until
  /// its request head arrives. Beyond max_connections see the file comment.
  void adopt(int fd);
  /// Stops taking connections, lets the workers finish the requests they answer (for at most a
  /// second: then their sockets are shut down, so a client that stopped reading cannot hold us),
  /// closes the rest.
  void stop();
  HubStats stats() const;

 private:
  using Conn = std::unique_ptr<HubConnection>;
  void poll_loop();
  void work_loop();
  void close_conn(HubConnection& c);
  void park(Conn c);  ///< from a worker: back to the poller
  void wake();
  bool make_room();  ///< evicts the idle connection waiting longest; false when none
  static bool head_complete(const HubConnection& c);

  const HubOptions options_;
  const Handler handler_;
  int wake_fd_ = -1;

  mutable std::mutex mu_;
  std::condition_variable ready_cv_;
  std::vector<Conn> incoming_;  ///< adopted or given back, not yet seen by the poller
  std::deque<Conn> ready_;      ///< whole heads waiting for a worker
  std::vector<int> active_;     ///< descriptors the workers answer now
  std::vector<Conn> parked_;    ///< the poller's (only the poller touches these, under mu_ for eviction)
  HubStats stats_;
  std::uint64_t order_ = 0;
  bool stopping_ = false;
  bool started_ = false;

  std::thread poller_;
  std::vector<std::thread> workers_;
};

}  // namespace trainmon::serve
