// SPDX-License-Identifier: Apache-2.0
// ConnectionHub on real loopback sockets: idle and slow clients never hold a worker, limits answer
// 408 / 431 / 503 and close, the longest-idle connection makes room for a new one.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "trainmon/serve/connection_hub.h"

using namespace trainmon::serve;
using namespace std::chrono_literals;

namespace {

/// A listening socket on 127.0.0.1 whose accepted connections go to the hub.
class Listener {
 public:
  explicit Listener(ConnectionHub& hub) : hub_(hub) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 4096), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) hub_.adopt(c);
      }
    });
  }
  ~Listener() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  int connect() const {
    const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port_));
    EXPECT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return c;
  }

 private:
  ConnectionHub& hub_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

void send_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    ASSERT_GT(n, 0);
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

/// Everything until the peer closes, or what came within `timeout`.
std::string read_some(int fd, std::chrono::milliseconds timeout, bool until_close = false) {
  std::string out;
  const auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (!until_close && out.find("\r\n\r\n") != std::string::npos) break;
  }
  return out;
}

/// A handler that consumes one head and answers "200 OK" with the request line.
bool answer(HubConnection& c) {
  std::string head;
  char ch = 0;
  while (head.find("\r\n\r\n") == std::string::npos && c.read(&ch, 1) == 1) head += ch;
  const std::string line = head.substr(0, head.find('\r'));
  const std::string reply =
      "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(line.size()) + "\r\n\r\n" + line;
  return c.write(reply.data(), reply.size()) == static_cast<long>(reply.size());
}

HubOptions small() {
  HubOptions o;
  o.workers = 2;
  o.idle_timeout = 2000ms;
  o.head_timeout = 300ms;
  o.io_timeout = 1000ms;
  o.max_head_bytes = 1024;
  return o;
}

}  // namespace

TEST(ConnectionHub, IdleConnectionsHoldNoWorker) {
  ConnectionHub hub(small(), answer);
  hub.start();
  Listener l(hub);
  std::vector<int> idle;
  for (int i = 0; i < 200; ++i) idle.push_back(l.connect());  // 100 times the workers
  const int c = l.connect();
  const auto t0 = std::chrono::steady_clock::now();
  send_all(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string r = read_some(c, 2000ms);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_NE(r.find("200 OK"), std::string::npos) << r;
  EXPECT_LT(took, 500ms);
  // Slow clients, one header byte at a time, do not hold workers either.
  std::vector<int> slow;
  for (int i = 0; i < 20; ++i) {
    slow.push_back(l.connect());
    send_all(slow.back(), "GET / HTTP/1.1\r\nX-Slow: ");
  }
  const int d = l.connect();
  send_all(d, "GET /again HTTP/1.1\r\n\r\n");
  EXPECT_NE(read_some(d, 1000ms).find("GET /again"), std::string::npos);
  for (int s : slow) EXPECT_NE(read_some(s, 2000ms).find("408"), std::string::npos) << "head_timeout";
  for (int fd : idle) ::close(fd);
  for (int fd : slow) ::close(fd);
  ::close(c);
  ::close(d);
  EXPECT_EQ(hub.stats().head_timeouts, 20u);
}

TEST(ConnectionHub, KeepAlivePipeliningAndIdleTimeout) {
  auto o = small();
  o.idle_timeout = 300ms;
  ConnectionHub hub(o, answer);
  hub.start();
  Listener l(hub);
  const int c = l.connect();
  send_all(c, "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n");
  std::string r = read_some(c, 1000ms);
  while (r.find("GET /b") == std::string::npos) {
    const std::string more = read_some(c, 1000ms);
    if (more.empty()) break;
    r += more;
  }
  EXPECT_NE(r.find("GET /a"), std::string::npos) << r;
  EXPECT_NE(r.find("GET /b"), std::string::npos) << r;
  // Quiet for longer than idle_timeout: closed (recv returns 0).
  char b = 0;
  pollfd p{c, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 2000), 1);
  EXPECT_EQ(::recv(c, &b, 1, 0), 0);
  ::close(c);
  EXPECT_GE(hub.stats().idle_closed, 1u);
}

TEST(ConnectionHub, OversizedHeadIs431) {
  ConnectionHub hub(small(), answer);
  hub.start();
  Listener l(hub);
  const int c = l.connect();
  send_all(c, "GET / HTTP/1.1\r\nX-Big: " + std::string(4000, 'a'));
  EXPECT_NE(read_some(c, 2000ms, true).find("431"), std::string::npos);
  ::close(c);
  EXPECT_EQ(hub.stats().head_too_large, 1u);
}

TEST(ConnectionHub, FullHubEvictsTheLongestIdleThenRefuses) {
  auto o = small();
  o.max_connections = 4;
  o.head_timeout = 5000ms;
  ConnectionHub hub(o, answer);
  hub.start();
  Listener l(hub);
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(l.connect());
    std::this_thread::sleep_for(20ms);
  }
  const int scraper = l.connect();
  send_all(scraper, "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_NE(read_some(scraper, 2000ms).find("200 OK"), std::string::npos) << "a newcomer always gets in";
  // The oldest idle one was closed for it.
  char b = 0;
  pollfd p{idle[0], POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 2000), 1);
  EXPECT_EQ(::recv(idle[0], &b, 1, 0), 0);
  EXPECT_EQ(hub.stats().evicted, 1u);
  // Every slot busy with a request in progress (nothing idle to close): 503 at once.
  for (int fd : idle) ::close(fd);
  ::close(scraper);
  std::this_thread::sleep_for(100ms);
  std::vector<int> busy;
  for (int i = 0; i < 4; ++i) {
    busy.push_back(l.connect());
    send_all(busy.back(), "GET / HTTP/1.1\r\nX-Partial: ");
  }
  std::this_thread::sleep_for(100ms);
  const int late = l.connect();
  EXPECT_NE(read_some(late, 2000ms, true).find("503"), std::string::npos);
  EXPECT_EQ(hub.stats().refused_full, 1u);
  for (int fd : busy) ::close(fd);
  ::close(late);
}

TEST(ConnectionHub, StopClosesEverythingAndJoins) {
  auto hub = std::make_unique<ConnectionHub>(small(), answer);
  hub->start();
  std::vector<int> fds;
  {
    Listener l(*hub);
    for (int i = 0; i < 10; ++i) fds.push_back(l.connect());
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(hub->stats().open, 10u);
  }
  hub->stop();
  EXPECT_EQ(hub->stats().open, 0u);
  for (int fd : fds) {
    char b = 0;
    EXPECT_EQ(::recv(fd, &b, 1, 0), 0);
    ::close(fd);
  }
}
