// SPDX-License-Identifier: Apache-2.0
#include "trainmon/serve/connection_hub.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace trainmon::serve {

namespace {

using Clock = std::chrono::steady_clock;

int ms_until(Clock::time_point t, Clock::time_point now) {
  if (t <= now) return 0;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1;
  return static_cast<int>(std::min<long long>(ms, 1000));
}

/// Waits up to `timeout` for `events` on fd; true when they came.
bool wait_for(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (n < 0 && errno == EINTR) continue;
    return n > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }
}

/// A short complete answer written without waiting (a fresh socket's buffer always takes it).
void say(int fd, std::string_view status, std::string_view body, std::string_view extra = {}) {
  std::string msg = "HTTP/1.1 ";
  msg += status;
  msg += "\r\nContent-Type: text/plain\r\nConnection: close\r\n";
  msg += extra;
  msg += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  msg += body;
  [[maybe_unused]] auto n = ::send(fd, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

void peer_of(int fd, std::string& ip, int& port) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return;
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
    port = ntohs(a->sin6_port);
    // An IPv4 client of a dual-stack socket: "::ffff:127.0.0.1" -> "127.0.0.1".
    if (std::string_view(buf).starts_with("::ffff:") && std::strchr(buf + 7, '.')) {
      ip = buf + 7;
      return;
    }
  }
  ip = buf;
}

}  // namespace

// ---- HubConnection: what the handler reads and writes ----------------------------------------

long HubConnection::read(char* p, std::size_t n) {
  if (n == 0) return 0;
  if (consumed_ < buffer_.size()) {
    const std::size_t k = std::min(n, buffer_.size() - consumed_);
    std::memcpy(p, buffer_.data() + consumed_, k);
    consumed_ += k;
    return static_cast<long>(k);
  }
  for (;;) {
    const ssize_t r = ::recv(fd_, p, n, MSG_DONTWAIT);
    if (r >= 0) return r;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
    if (!wait_for(fd_, POLLIN, io_timeout_)) return -1;
  }
}

long HubConnection::write(const char* p, std::size_t n) {
  const auto deadline = Clock::now() + io_timeout_;
  std::size_t done = 0;
  while (done < n) {
    const ssize_t w = ::send(fd_, p + done, n - done, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w > 0) {
      done += static_cast<std::size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return -1;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || !wait_for(fd_, POLLOUT, left)) return -1;  // a client that stopped reading
  }
  return static_cast<long>(n);
}

bool HubConnection::readable() const {
  return consumed_ < buffer_.size() || wait_for(fd_, POLLIN, io_timeout_);
}

bool HubConnection::writable() const {
  return wait_for(fd_, POLLOUT, io_timeout_);
}

// ---- ConnectionHub ---------------------------------------------------------------------------

ConnectionHub::ConnectionHub(HubOptions options, Handler handler)
    : options_(options), handler_(std::move(handler)) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

ConnectionHub::~ConnectionHub() {
  stop();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void ConnectionHub::start() {
  std::lock_guard lock(mu_);
  if (started_) return;
  started_ = true;
  poller_ = std::thread([this] { poll_loop(); });
  const std::size_t n = std::max<std::size_t>(1, options_.workers);
  for (std::size_t i = 0; i < n; ++i) workers_.emplace_back([this] { work_loop(); });
}

void ConnectionHub::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
}

void ConnectionHub::close_conn(HubConnection& c) {
  if (c.fd_ >= 0) ::close(c.fd_);
  c.fd_ = -1;
}

bool ConnectionHub::head_complete(const HubConnection& c) {
  const std::string_view rest = std::string_view(c.buffer_).substr(c.consumed_);
  return rest.find("\n\r\n") != std::string_view::npos || rest.find("\n\n") != std::string_view::npos;
}

bool ConnectionHub::make_room() {
  // Called with mu_ held. The victim is marked (its descriptor may be in the poller's poll() now)
  // and closed by the poller.
  HubConnection* victim = nullptr;
  for (auto& c : parked_) {
    if (c->fd_ < 0 || c->head_started_ || c->lingering_ || c->order_ == 0) continue;
    if (!victim || c->order_ < victim->order_) victim = c.get();
  }
  if (!victim) return false;
  victim->order_ = 0;  // 0: evicted, the poller closes it
  victim->deadline_ = Clock::time_point{};
  ++stats_.evicted;
  return true;
}

void ConnectionHub::adopt(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int yes = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  auto c = std::make_unique<HubConnection>();
  c->fd_ = fd;
  c->io_timeout_ = options_.io_timeout;
  peer_of(fd, c->peer_ip_, c->peer_port_);
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    // stats_.open counts evicted ones until the poller closes them: room is made once per newcomer.
    const std::size_t evicting = static_cast<std::size_t>(std::count_if(
        parked_.begin(), parked_.end(), [](const Conn& p) { return p->order_ == 0 && !p->lingering_; }));
    if (stats_.open - std::min(stats_.open, evicting) >= options_.max_connections && !make_room()) {
      ++stats_.refused_full;
      say(fd, "503 Service Unavailable", "too many connections; try again\n", "Retry-After: 1\r\n");
      ::close(fd);
      return;
    }
    ++stats_.accepted;
    ++stats_.open;
    c->order_ = ++order_;
    c->deadline_ = Clock::now() + options_.idle_timeout;
    incoming_.push_back(std::move(c));
  }
  wake();
}

void ConnectionHub::park(Conn c) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      close_conn(*c);
      --stats_.open;
      return;
    }
    incoming_.push_back(std::move(c));
  }
  wake();
}

void ConnectionHub::poll_loop() {
  std::vector<pollfd> fds;
  std::vector<char> scratch(16384);
  for (;;) {
    Clock::time_point next = Clock::now() + std::chrono::seconds(1);
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
      for (auto& c : incoming_) parked_.push_back(std::move(c));
      incoming_.clear();
      fds.clear();
      fds.push_back({wake_fd_, POLLIN, 0});
      for (const auto& c : parked_) {
        fds.push_back({c->fd_, POLLIN, 0});
        next = std::min(next, c->deadline_);
      }
    }
    const int n = ::poll(fds.data(), fds.size(), ms_until(next, Clock::now()));
    if (n < 0 && errno != EINTR) break;
    if (fds[0].revents) {
      std::uint64_t v = 0;
      [[maybe_unused]] auto r = ::read(wake_fd_, &v, sizeof v);
    }
    const auto now = Clock::now();
    std::lock_guard lock(mu_);
    // parked_[i] is fds[i + 1]: only this thread adds to or removes from parked_.
    for (std::size_t i = 0; i < parked_.size(); ++i) {
      HubConnection& c = *parked_[i];
      bool done = false;                     // closed, or handed to a worker
      if (c.order_ == 0 && !c.lingering_) {  // evicted by adopt()
        done = true;
      } else if (i + 1 < fds.size() && (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) {
        for (;;) {
          const ssize_t r = ::recv(c.fd_, scratch.data(), scratch.size(), MSG_DONTWAIT);
          if (r < 0 && errno == EINTR) continue;
          if (r < 0) {
            done = errno != EAGAIN && errno != EWOULDBLOCK;
            break;
          }
          if (r == 0) {  // the client closed
            done = true;
            break;
          }
          if (c.lingering_) {
            c.drained_ += static_cast<std::size_t>(r);
            if (c.drained_ > options_.linger_bytes) {
              done = true;
              break;
            }
            continue;
          }
          c.buffer_.append(scratch.data(), static_cast<std::size_t>(r));
          if (!c.head_started_) {
            c.head_started_ = true;
            c.deadline_ = now + options_.head_timeout;
          }
          if (c.buffer_.size() - c.consumed_ > options_.max_head_bytes) break;
        }
        if (!done && !c.lingering_) {
          if (head_complete(c)) {
            ++stats_.requests;
            ready_.push_back(std::move(parked_[i]));
            ready_cv_.notify_one();
            continue;  // parked_[i] is empty now; removed below
          }
          if (c.buffer_.size() - c.consumed_ > options_.max_head_bytes) {
            ++stats_.head_too_large;
            say(c.fd_, "431 Request Header Fields Too Large", "request head too large\n");
            done = true;
          }
        }
      }
      if (!done && now >= c.deadline_) {
        if (c.lingering_) {
          // drained long enough
        } else if (c.head_started_) {
          ++stats_.head_timeouts;
          say(c.fd_, "408 Request Timeout", "the request head did not arrive in time\n");
        } else {
          ++stats_.idle_closed;
        }
        done = true;
      }
      if (done) {
        close_conn(c);
        --stats_.open;
      }
    }
    std::erase_if(parked_, [](const Conn& c) { return !c || c->fd_ < 0; });
  }
  std::lock_guard lock(mu_);
  for (auto& c : parked_) close_conn(*c);
  for (auto& c : incoming_) close_conn(*c);
  stats_.open -= std::min(stats_.open, parked_.size() + incoming_.size());
  parked_.clear();
  incoming_.clear();
}

void ConnectionHub::work_loop() {
  for (;;) {
    Conn c;
    {
      std::unique_lock lock(mu_);
      ready_cv_.wait(lock, [this] { return stopping_ || !ready_.empty(); });
      if (ready_.empty()) return;  // stopping
      c = std::move(ready_.front());
      ready_.pop_front();
      active_.push_back(c->fd_);
    }
    bool keep = false;
    try {
      keep = handler_(*c);
    } catch (...) {
      keep = false;
    }
    if (c->close_after_) keep = false;  // the handler ended it (a refused body may still be coming)
    {
      std::lock_guard lock(mu_);
      std::erase(active_, c->fd_);
    }
    ++c->served_;
    // Bytes of a pipelined next request stay; what the handler consumed goes.
    c->buffer_.erase(0, c->consumed_);
    c->consumed_ = 0;
    c->head_started_ = !c->buffer_.empty();
    const auto now = Clock::now();
    if (!keep && c->close_after_) {
      // Lingering close: stop sending, read and drop what the client still sends for a moment, so
      // that it reads our answer instead of a reset.
      ::shutdown(c->fd_, SHUT_WR);
      c->lingering_ = true;
      c->buffer_.clear();
      c->deadline_ = now + options_.linger;
      park(std::move(c));
      continue;
    }
    if (!keep) {
      close_conn(*c);
      std::lock_guard lock(mu_);
      --stats_.open;
      continue;
    }
    c->close_after_ = false;
    if (head_complete(*c)) {
      std::lock_guard lock(mu_);
      ++stats_.requests;
      ready_.push_back(std::move(c));
      ready_cv_.notify_one();
      continue;
    }
    c->deadline_ = now + (c->head_started_ ? options_.head_timeout : options_.idle_timeout);
    {
      std::lock_guard lock(mu_);
      c->order_ = ++order_;
    }
    park(std::move(c));
  }
}

void ConnectionHub::stop() {
  {
    std::lock_guard lock(mu_);
    if (!started_ || stopping_) {
      stopping_ = true;
      if (!started_) return;
    }
    stopping_ = true;
  }
  wake();
  ready_cv_.notify_all();
  if (poller_.joinable()) poller_.join();
  // Requests in flight get a second to finish; a client that stopped reading then loses its socket.
  for (int i = 0; i < 100; ++i) {
    {
      std::lock_guard lock(mu_);
      if (active_.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  {
    std::lock_guard lock(mu_);
    for (int fd : active_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
  std::lock_guard lock(mu_);
  for (auto& c : ready_) close_conn(*c);
  stats_.open -= std::min(stats_.open, ready_.size());
  ready_.clear();
}

HubStats ConnectionHub::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace trainmon::serve
