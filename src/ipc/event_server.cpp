// SPDX-License-Identifier: Apache-2.0
#include "trainmon/ipc/event_server.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <limits>

#include "trainmon/core/clock.h"
#include "trainmon/core/private_files.h"

namespace trainmon::ipc {

namespace {

Error os_error(int err, std::string message) {
  return Error{ErrorDomain::os, err, strerrorname_np(err) ? strerrorname_np(err) : "errno",
               fmt::format("{}: {}", message, std::strerror(err))};
}

bool writable_dir(const char* path) {
  return path && *path && ::access(path, W_OK | X_OK) == 0;
}

std::string pick_parent(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); writable_dir(x)) return x;
  if (const char* t = std::getenv("TMPDIR"); writable_dir(t)) return t;
  return "/tmp";
}

constexpr std::string_view kDirPrefix = "trainmon-run-";
constexpr std::string_view kNewDirPrefix = "trainmon-new-";

/// Whether a Unix socket at `path` has a listener (a live recorder of an older trainmon that holds
/// no lock on its directory).
bool socket_answers(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  const bool up =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 || errno == EAGAIN;
  ::close(fd);
  return up;
}

}  // namespace

std::size_t remove_stale_run_dirs(const std::string& parent) {
  DIR* d = ::opendir(parent.c_str());
  if (!d) return 0;
  const uid_t me = ::geteuid();
  std::size_t removed = 0;
  while (dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    const bool named = name.starts_with(kDirPrefix) && name.size() == kDirPrefix.size() + 6;
    const bool provisional = name.starts_with(kNewDirPrefix) && name.size() == kNewDirPrefix.size() + 6;
    if (!named && !provisional) continue;
    const std::string dir = parent + "/" + std::string(name);
    // Ours and a real directory (lstat: a link someone planted under this name is not followed).
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != me) continue;
    // A provisional name lives for microseconds (start() locks, then renames it): only one a minute
    // old is a crash's leftover, not a start in progress.
    if (provisional && ::time(nullptr) - st.st_mtime < 60) continue;
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) continue;
    // A live recorder holds an exclusive lock on its directory for its whole life (the kernel drops
    // it when the process dies, however it dies): a lock we can take is a dead owner's.
    const bool dead = ::flock(dfd, LOCK_EX | LOCK_NB) == 0 && !socket_answers(dir + "/events.sock");
    if (dead && files::remove_private_dir(dir)) ++removed;
    ::close(dfd);
  }
  ::closedir(d);
  return removed;
}

std::uint64_t EventServerStats::total_rejected() const noexcept {
  std::uint64_t n = 0;
  for (auto r : rejected) n += r;
  return n;
}

Expected<std::unique_ptr<EventServer>> EventServer::start(const EventServerOptions& options) {
  std::string parent = pick_parent(options.parent_dir);
  // What killed recorders left behind (their socket and snapshot): ours only, dead owners only.
  remove_stale_run_dirs(parent);
  // The directory is made under a provisional name, locked, and only then renamed to its
  // "trainmon-run-" name: a sweeper never sees one of ours unlocked (the lock is on the inode).
  std::string dir;
  int dir_fd = -1;
  for (int attempt = 0; attempt < 8 && dir.empty(); ++attempt) {
    std::string templ = parent + "/" + std::string(kNewDirPrefix) + "XXXXXX";
    // mkdtemp creates the directory 0700, owned by us, with an unpredictable name.
    if (!::mkdtemp(templ.data()))
      return std::unexpected(os_error(errno, "cannot create a directory in " + parent));
    dir_fd = ::open(templ.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir_fd < 0 || ::flock(dir_fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (dir_fd >= 0) ::close(dir_fd);
      ::rmdir(templ.c_str());
      return std::unexpected(os_error(err, "cannot lock " + templ));
    }
    const std::string final_dir = parent + "/" + std::string(kDirPrefix) + templ.substr(templ.size() - 6);
    // renameat2(RENAME_NOREPLACE): never over a directory someone else made under that name.
    if (::renameat2(AT_FDCWD, templ.c_str(), AT_FDCWD, final_dir.c_str(), RENAME_NOREPLACE) == 0) {
      dir = final_dir;
    } else {
      ::close(dir_fd);
      dir_fd = -1;
      ::rmdir(templ.c_str());
    }
  }
  if (dir.empty()) return std::unexpected(os_error(EEXIST, "cannot name a private directory in " + parent));
  std::string path = dir + "/events.sock";
  auto cleanup = [&] {
    if (dir_fd >= 0) ::close(dir_fd);
    (void)files::remove_private_dir(dir);
  };

  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    cleanup();
    return std::unexpected(Error{ErrorDomain::os, ENAMETOOLONG, "ENAMETOOLONG",
                                 fmt::format("socket path too long for a Unix socket: {}", path)});
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);

  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    int err = errno;
    cleanup();
    return std::unexpected(os_error(err, "cannot create a Unix seqpacket socket"));
  }
  // No umask games (it is process-wide and other threads create files): the directory is 0700,
  // so nobody else can reach the socket before the chmod below.
  int rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  int bind_err = errno;
  if (rc != 0) {
    ::close(fd);
    cleanup();
    return std::unexpected(os_error(bind_err, "cannot bind " + path));
  }
  ::chmod(path.c_str(), 0600);
  if (::listen(fd, 128) != 0) {
    int err = errno;
    ::close(fd);
    cleanup();
    return std::unexpected(os_error(err, "cannot listen on " + path));
  }
  int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    int err = errno;
    ::close(fd);
    cleanup();
    return std::unexpected(os_error(err, "cannot create an eventfd"));
  }
  std::unique_ptr<EventServer> server(new EventServer(options, dir, path, fd, wake));
  server->dir_fd_ = dir_fd;
  server->thread_ = std::thread([s = server.get()] { s->loop(); });
  return server;
}

EventServer::EventServer(EventServerOptions options, std::string dir, std::string socket_path, int fd,
                         int wake_fd)
    : options_(std::move(options)),
      dir_(std::move(dir)),
      socket_path_(std::move(socket_path)),
      fd_(fd),
      wake_fd_(wake_fd),
      tokens_(options_.burst),
      last_refill_ns_(now_ns(CLOCK_MONOTONIC)) {}

EventServer::~EventServer() {
  stop();
  if (fd_ >= 0) ::close(fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  (void)files::remove_private_dir(dir_);
  if (dir_fd_ >= 0) ::close(dir_fd_);  // the lock goes last: nobody sweeps a folder still in use
}

void EventServer::stop() {
  if (stopping_.exchange(true)) {
    if (thread_.joinable()) thread_.join();
    return;
  }
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

void EventServer::count(diagnose::RejectReason reason) {
  std::lock_guard lock(mu_);
  ++stats_.rejected[static_cast<std::size_t>(reason)];
}

bool EventServer::handle(std::string_view message, std::int64_t sender_pid, std::int64_t now_unix_ns,
                         std::int64_t now_monotonic_ns) {
  // Token bucket: refill by elapsed time, spend one token per message.
  double elapsed_s = static_cast<double>(now_monotonic_ns - last_refill_ns_) / 1e9;
  if (elapsed_s > 0) {
    tokens_ = std::min(options_.burst, tokens_ + elapsed_s * options_.rate_per_s);
    last_refill_ns_ = now_monotonic_ns;
  }
  if (tokens_ < 1) {
    count(diagnose::RejectReason::rate_limited);
    return false;
  }
  tokens_ -= 1;

  auto parsed = diagnose::parse_train_event(message);
  if (!parsed) {
    count(diagnose::reject_reason_of(parsed.error()));
    return false;
  }
  if (!options_.run_id.empty() && !parsed->run_id.empty() && parsed->run_id != options_.run_id) {
    count(diagnose::RejectReason::wrong_run);
    return false;
  }
  // The sender's clock is trusted within 10 minutes of ours (same host); otherwise the arrival
  // time is recorded instead, so a bogus "t" cannot move an event across the run.
  double now_s = static_cast<double>(now_unix_ns) / 1e9;
  if (std::fabs(parsed->time_unix_s - now_s) > 600) parsed->time_unix_s = now_s;
  // The same for the monotonic times (one CLOCK_MONOTONIC per host): a sender whose "mt" is not
  // ours (another namespace's clock, a bogus value) is placed by its wall times instead.
  const double mono_s = static_cast<double>(now_monotonic_ns) / 1e9;
  if (std::isfinite(parsed->mono_s) && std::fabs(parsed->mono_s - mono_s) > 600) {
    parsed->mono_s = std::numeric_limits<double>::quiet_NaN();
    if (parsed->steps) {
      parsed->steps->last_step_mt = std::numeric_limits<double>::quiet_NaN();
      parsed->steps->phase_mt = std::numeric_limits<double>::quiet_NaN();
    }
  }

  std::lock_guard lock(mu_);
  if (queue_.size() >= options_.queue_capacity) {
    ++stats_.rejected[static_cast<std::size_t>(diagnose::RejectReason::queue_full)];
    return false;
  }
  if (parsed->dropped > 0) {
    stats_.sender_dropped = std::max(stats_.sender_dropped, static_cast<std::uint64_t>(parsed->dropped));
  }
  if (parsed->steps) stats_.corrected += static_cast<std::uint64_t>(parsed->steps->corrected);
  ++stats_.accepted;
  queue_.push_back(ReceivedEvent{std::move(*parsed), now_unix_ns, sender_pid});
  return true;
}

void EventServer::accept_clients(std::vector<std::pair<int, std::int64_t>>& clients) {
  const uid_t me = ::geteuid();
  for (;;) {
    int c = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) return;  // EAGAIN: no more pending
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != me) {
      ::close(c);
      count(diagnose::RejectReason::wrong_user);
      continue;
    }
    if (clients.size() >= options_.max_clients) {
      ::close(c);
      count(diagnose::RejectReason::too_many_clients);
      continue;
    }
    clients.emplace_back(c, cred.pid);
    std::lock_guard lock(mu_);
    ++stats_.connections;
  }
}

void EventServer::loop() {
  // One byte more than the limit so that an oversized message is seen as such (MSG_TRUNC also
  // reports the real length).
  std::vector<char> buf(diagnose::kMaxMessageBytes + 1);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 16)];
  std::vector<std::pair<int, std::int64_t>> clients;  // fd, peer pid
  std::vector<pollfd> fds;

  while (!stopping_.load(std::memory_order_relaxed)) {
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({fd_, POLLIN, 0});
    for (const auto& [c, pid] : clients) fds.push_back({c, POLLIN | POLLRDHUP, 0});
    int n = ::poll(fds.data(), fds.size(), 1000);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    if (fds[0].revents) break;
    if (fds[1].revents & POLLIN) accept_clients(clients);

    std::vector<int> closed;
    for (std::size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      const int c = fds[i].fd;
      const std::int64_t pid = clients[i - 2].second;
      bool gone = false;
      // Read what this client has queued (bounded, so one busy sender cannot starve the others).
      for (int k = 0; k < 1024; ++k) {
        iovec iov{buf.data(), buf.size()};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        ssize_t len = ::recvmsg(c, &msg, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
        if (len < 0) {
          if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) gone = true;
          break;
        }
        if (len == 0) {
          // A zero-length read is either the sender's orderly shutdown or an empty message (SOCK_SEQPACKET
          // has both). Only a hung-up peer ends the stream, and then only when nothing follows.
          // The poll's answer is stale when the peer closed after it, while its messages were read:
          // ask again, or every later read of the closed stream counts as one more empty message.
          pollfd again{c, POLLIN | POLLRDHUP, 0};
          const bool hung_up = (fds[i].revents & (POLLHUP | POLLRDHUP)) != 0 ||
                               (::poll(&again, 1, 0) > 0 && (again.revents & (POLLHUP | POLLRDHUP)) != 0);
          if (hung_up) {
            char probe = 0;
            const ssize_t more = ::recv(c, &probe, 1, MSG_DONTWAIT | MSG_PEEK);
            if (more <= 0) {
              gone = true;
              break;
            }
          }
          {
            std::lock_guard lock(mu_);
            ++stats_.received;
          }
          count(diagnose::RejectReason::not_json);  // an empty message is malformed, and counted as such
          continue;
        }
        // A sender passed file descriptors (SCM_RIGHTS): close them, they are never used.
        for (cmsghdr* h = CMSG_FIRSTHDR(&msg); h; h = CMSG_NXTHDR(&msg, h)) {
          if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
          std::size_t count = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
          for (std::size_t j = 0; j < count; ++j) {
            int passed = -1;
            std::memcpy(&passed, CMSG_DATA(h) + j * sizeof(int), sizeof(int));
            if (passed >= 0) ::close(passed);
          }
        }
        {
          std::lock_guard lock(mu_);
          ++stats_.received;
        }
        if (static_cast<std::size_t>(len) > diagnose::kMaxMessageBytes || (msg.msg_flags & MSG_TRUNC)) {
          count(diagnose::RejectReason::too_large);
          continue;
        }
        handle(std::string_view(buf.data(), static_cast<std::size_t>(len)), pid, now_ns(CLOCK_REALTIME),
               now_ns(CLOCK_MONOTONIC));
      }
      // A hung-up peer's queued messages are read first: recvmsg returns 0 only once they are.
      if (gone || (fds[i].revents & POLLNVAL)) closed.push_back(c);
    }
    for (int c : closed) {
      ::close(c);
      std::erase_if(clients, [c](const auto& e) { return e.first == c; });
    }
  }
  for (const auto& [c, pid] : clients) ::close(c);
}

std::vector<ReceivedEvent> EventServer::drain(std::size_t max) {
  std::vector<ReceivedEvent> out;
  std::lock_guard lock(mu_);
  std::size_t n = std::min(max, queue_.size());
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return out;
}

EventServerStats EventServer::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace trainmon::ipc
