// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "trainmon/ipc/event_server.h"
#include "trainmon/ipc/snapshot_file.h"
#include "trainmon/ipc/train_channel.h"

using namespace trainmon;
using namespace trainmon::ipc;
using namespace trainmon::diagnose;  // the training-event parser (diagnose/train_message.h)

namespace {

std::string temp_parent() {
  auto p = std::filesystem::temp_directory_path() / ("trainmon-ipc-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(p);
  return p.string();
}

// A connected, non-blocking seqpacket sender, as the Python package does it.
class Sender {
 public:
  explicit Sender(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    connect_errno_ = ::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 ? 0 : errno;
  }
  ~Sender() { ::close(fd_); }
  int connect_errno() const { return connect_errno_; }
  // Returns 0 or the errno of send.
  int send(std::string_view text) {
    if (connect_errno_) return connect_errno_;
    ssize_t n = ::send(fd_, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    return n < 0 ? errno : 0;
  }

 private:
  int fd_ = -1;
  int connect_errno_ = 0;
};

std::string epoch_msg(int epoch, const char* run_id = "") {
  std::string s = R"({"v":1,"type":"epoch_end","t":)" + std::to_string(::time(nullptr)) + R"(,"epoch":)" +
                  std::to_string(epoch);
  if (*run_id) s += std::string(R"(,"run_id":")") + run_id + "\"";
  return s + "}";
}

// Waits until the server has read `n` datagrams (it reads on its own thread).
void wait_received(const EventServer& s, std::uint64_t n) {
  for (int i = 0; i < 400 && s.stats().received < n; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

std::int64_t now_unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST(IpcEventServer, PrivateDirectoryAndSocketModes) {
  auto server = EventServer::start({.parent_dir = temp_parent()});
  ASSERT_TRUE(server.has_value()) << server.error().message;
  struct stat dir {
  }, sock{};
  ASSERT_EQ(::stat((*server)->directory().c_str(), &dir), 0);
  ASSERT_EQ(::stat((*server)->socket_path().c_str(), &sock), 0);
  EXPECT_EQ(dir.st_mode & 0777, 0700u);
  EXPECT_TRUE(S_ISSOCK(sock.st_mode));
  EXPECT_EQ(sock.st_mode & 0777, 0600u);
  std::string dir_path = (*server)->directory();
  server->reset();
  EXPECT_FALSE(std::filesystem::exists(dir_path));  // removed with the server
}

TEST(IpcEventServer, ReceivesInOrderAndCountsRejects) {
  auto server = EventServer::start({.parent_dir = temp_parent()});
  ASSERT_TRUE(server.has_value());
  Sender tx((*server)->socket_path());
  for (int e = 0; e < 50; ++e) ASSERT_EQ(tx.send(epoch_msg(e)), 0);
  ASSERT_EQ(tx.send("not json"), 0);
  ASSERT_EQ(tx.send(R"({"v":1,"type":"epoch_end","t":1718000000,"epoch":-4})"), 0);
  ASSERT_EQ(tx.send(std::string(kMaxMessageBytes + 100, '{')), 0);
  wait_received(**server, 53);
  auto events = (*server)->drain();
  ASSERT_EQ(events.size(), 50u);
  for (int e = 0; e < 50; ++e) {
    EXPECT_EQ(events[static_cast<std::size_t>(e)].message.epoch, e);
    EXPECT_EQ(events[static_cast<std::size_t>(e)].sender_pid, ::getpid());  // from SO_PEERCRED
  }
  auto st = (*server)->stats();
  EXPECT_EQ(st.received, 53u);
  EXPECT_EQ(st.connections, 1u);
  EXPECT_EQ(st.accepted, 50u);
  EXPECT_EQ(st.rejected[static_cast<std::size_t>(RejectReason::not_json)], 1u);
  EXPECT_EQ(st.rejected[static_cast<std::size_t>(RejectReason::bad_field)], 1u);
  EXPECT_EQ(st.rejected[static_cast<std::size_t>(RejectReason::too_large)], 1u);
  EXPECT_TRUE((*server)->drain().empty());
}

TEST(IpcEventServer, SenderGetsAnImmediateErrorWhenTheServerIsGone) {
  auto server = EventServer::start({.parent_dir = temp_parent()});
  ASSERT_TRUE(server.has_value());
  std::string path = (*server)->socket_path();
  Sender connected(path);
  ASSERT_EQ(connected.send(epoch_msg(0)), 0);
  wait_received(**server, 1);
  server->reset();  // the recorder goes away
  auto t0 = std::chrono::steady_clock::now();
  int err = connected.send(epoch_msg(1));
  Sender late(path);
  int late_err = late.send(epoch_msg(2));
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_TRUE(err == EPIPE || err == ECONNRESET) << std::strerror(err);
  EXPECT_TRUE(late_err == ENOENT || late_err == ECONNREFUSED) << std::strerror(late_err);
  EXPECT_LT(took, std::chrono::milliseconds(100));
}

TEST(IpcEventServer, SlowReaderMeansEagainNotWaiting) {
  // The kernel behaviour the design rests on: a reader that does not read makes the sender's
  // non-blocking send fail with EAGAIN after hundreds of messages, never block.
  std::string path = temp_parent() + "/slow.sock";
  ::unlink(path.c_str());
  int listener = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(listener, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  Sender tx(path);
  ASSERT_EQ(tx.connect_errno(), 0);
  int eagain = 0;
  int sent = 0;
  for (int i = 0; i < 100000 && eagain == 0; ++i) {
    int err = tx.send(epoch_msg(i));
    if (err == EAGAIN) ++eagain;
    if (err == 0) ++sent;
  }
  EXPECT_EQ(eagain, 1);
  EXPECT_GT(sent, 50);  // far more than net.unix.max_dgram_qlen (10) datagrams would allow
  ::close(listener);
  ::unlink(path.c_str());
}

TEST(IpcEventServer, TokenBucketLimitsTheRate) {
  auto server = EventServer::start({.parent_dir = temp_parent(), .rate_per_s = 10, .burst = 5});
  ASSERT_TRUE(server.has_value());
  auto& s = **server;
  std::int64_t mono = 1'000'000'000'000'000'000;  // far after the server's own start: bucket is full
  int accepted = 0;
  for (int i = 0; i < 20; ++i) accepted += s.handle(epoch_msg(i), 1, now_unix_ns(), mono);
  EXPECT_EQ(accepted, 5);  // the burst
  mono += 500'000'000;     // half a second refills 5 tokens at 10/s
  for (int i = 0; i < 20; ++i) accepted += s.handle(epoch_msg(i), 1, now_unix_ns(), mono);
  EXPECT_EQ(accepted, 10);
  EXPECT_EQ(s.stats().rejected[static_cast<std::size_t>(RejectReason::rate_limited)], 30u);
}

TEST(IpcEventServer, BoundedQueueAndRunIdCheck) {
  auto server = EventServer::start({.parent_dir = temp_parent(), .queue_capacity = 3, .run_id = "12"});
  ASSERT_TRUE(server.has_value());
  auto& s = **server;
  std::int64_t mono = 1'000'000'000'000'000'000;
  EXPECT_TRUE(s.handle(epoch_msg(0, "12"), 1, now_unix_ns(), mono));
  EXPECT_FALSE(s.handle(epoch_msg(1, "13"), 1, now_unix_ns(), mono));
  EXPECT_TRUE(s.handle(epoch_msg(2), 1, now_unix_ns(), mono));  // no run_id: accepted
  EXPECT_TRUE(s.handle(epoch_msg(3), 1, now_unix_ns(), mono));
  EXPECT_FALSE(s.handle(epoch_msg(4), 1, now_unix_ns(), mono));
  auto st = s.stats();
  EXPECT_EQ(st.rejected[static_cast<std::size_t>(RejectReason::wrong_run)], 1u);
  EXPECT_EQ(st.rejected[static_cast<std::size_t>(RejectReason::queue_full)], 1u);
  auto events = s.drain(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].message.epoch, 0);
  EXPECT_EQ(events[1].message.epoch, 2);
  EXPECT_EQ(s.drain().size(), 1u);
}

TEST(IpcEventServer, SenderClockFarFromOursIsReplacedByArrivalTime) {
  auto server = EventServer::start({.parent_dir = temp_parent()});
  ASSERT_TRUE(server.has_value());
  std::int64_t now = now_unix_ns();
  ASSERT_TRUE(
      (*server)->handle(R"({"v":1,"type":"hello","t":1100000000})", 1, now, 1'000'000'000'000'000'000));
  auto events = (*server)->drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NEAR(events[0].message.time_unix_s, static_cast<double>(now) / 1e9, 1e-3);
}

TEST(IpcEventServer, RefusesAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to send as another uid";
  auto server = EventServer::start({.parent_dir = temp_parent()});
  ASSERT_TRUE(server.has_value());
  // Open the door (root may): the private directory and the socket are the first line of defence;
  // this checks the second, the peer credentials.
  ASSERT_EQ(::chmod((*server)->directory().c_str(), 0755), 0);
  ASSERT_EQ(::chmod((*server)->socket_path().c_str(), 0666), 0);
  pid_t child = ::fork();
  if (child == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) ::_exit(3);
    Sender tx((*server)->socket_path());
    if (tx.connect_errno()) ::_exit(2);
    tx.send(epoch_msg(7));  // may fail once the server closed us: either way nothing arrives
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  for (int i = 0; i < 400 && (*server)->stats().total_rejected() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE((*server)->drain().empty());
  EXPECT_EQ((*server)->stats().rejected[static_cast<std::size_t>(RejectReason::wrong_user)], 1u);
  EXPECT_EQ((*server)->stats().connections, 0u);
}

TEST(IpcEventServer, ManySendersAndTooManyClients) {
  auto server = EventServer::start({.parent_dir = temp_parent(), .max_clients = 4});
  ASSERT_TRUE(server.has_value());
  std::vector<std::unique_ptr<Sender>> senders;
  for (int i = 0; i < 6; ++i) senders.push_back(std::make_unique<Sender>((*server)->socket_path()));
  for (int i = 0; i < 6; ++i) senders[static_cast<std::size_t>(i)]->send(epoch_msg(i));
  for (int i = 0; i < 400 && (*server)->stats().accepted + (*server)->stats().total_rejected() < 6; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto st = (*server)->stats();
  EXPECT_EQ(st.connections, 4u);
  EXPECT_EQ(st.accepted, 4u);
  EXPECT_EQ(st.rejected[static_cast<std::size_t>(RejectReason::too_many_clients)], 2u);
}

TEST(IpcTrainChannel, EnvironmentDrainAndSnapshotWithProgress) {
  auto channel = TrainChannel::open("42", {.parent_dir = temp_parent()});
  ASSERT_TRUE(channel.has_value()) << channel.error().message;
  auto& c = **channel;
  auto env = c.child_environment();
  ASSERT_EQ(env.size(), 3u);
  EXPECT_EQ(env[0].first, "TRAINMON_EVENTS_SOCKET");
  EXPECT_EQ(env[0].second, c.socket_path());
  EXPECT_EQ(env[2].second, "42");
  EXPECT_FALSE(c.epoch_text().has_value());

  Sender tx(c.socket_path());
  ASSERT_EQ(tx.send(R"({"v":1,"type":"epoch_end","t":)" + std::to_string(::time(nullptr)) +
                    R"(,"epoch":44,"epochs":200,"run_id":"42"})"),
            0);
  for (int i = 0; i < 400 && c.stats().accepted < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto rows = c.drain();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kind, "epoch_end");
  EXPECT_NE(rows[0].json.find("\"epochs\":200"), std::string::npos);
  EXPECT_EQ(c.epoch_text(), "45/200");

  Snapshot snap;
  snap.time_unix_ns = 1718000000000000000;
  GpuSample g;
  auto info = std::make_shared<GpuStaticInfo>();
  info->name = Reading<std::string>::of("Tesla V100-SXM2-32GB");
  g.info = info;
  g.utilization_gpu_pct = Reading<unsigned>::of(94);
  g.memory_used_bytes = Reading<std::uint64_t>::of(28ull << 30);
  g.memory_total_bytes = Reading<std::uint64_t>::of(32ull << 30);
  snap.gpus.push_back(g);
  snap.host.memory.total_bytes = Reading<std::uint64_t>::of(64ull << 30);
  ASSERT_TRUE(c.publish(snap, 1000).has_value());
  std::FILE* f = std::fopen(c.snapshot_path().c_str(), "r");
  ASSERT_NE(f, nullptr);
  char buf[4096] = {};
  std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::string text(buf, n);
  EXPECT_NE(text.find("\"name\":\"Tesla V100-SXM2-32GB\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"util_pct\":94"), std::string::npos) << text;
  EXPECT_NE(text.find("\"mem_total_bytes\":34359738368"), std::string::npos) << text;
  EXPECT_NE(text.find("\"train\":{\"epoch\":44,\"epochs\":200}"), std::string::npos) << text;
  EXPECT_EQ(text.find("temp_c"), std::string::npos);  // not available: left out
}

TEST(IpcSnapshotFile, AtomicWriteReplacesAndLeavesNoTemporary) {
  auto dir = std::filesystem::path(temp_parent()) / "atomic";
  std::filesystem::create_directories(dir);
  auto path = (dir / "s.json").string();
  ASSERT_TRUE(write_file_atomic(path, "first").has_value());
  ASSERT_TRUE(write_file_atomic(path, "second").has_value());
  std::size_t files = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, 6);
  EXPECT_FALSE(write_file_atomic((dir / "missing" / "x.json").string(), "x").has_value());
}

TEST(IpcEventServer, PythonPackageRoundTrip) {
  // The real sender: python/trainmon's EventClient, through the package's session()/step() API.
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  auto channel = TrainChannel::open("9", {.parent_dir = temp_parent()});
  ASSERT_TRUE(channel.has_value());
  std::string cmd =
      std::string("TRAINMON_EVENTS_SOCKET='") + (*channel)->socket_path() +
      "' TRAINMON_RUN_ID=9 TRAINMON_NO_AGENT=1 PYTHONPATH='" TRAINMON_SOURCE_DIR
      "/python' /usr/bin/python3 -c '"
      "import trainmon, io\n"
      "with trainmon.session(interval=None, epochs=3, batch_events_per_s=0) as m:\n"
      "    for e in range(3):\n"
      "        for b in range(5): trainmon.step(epoch=e, batch_size=8, loss=1.0/(b+1), epochs=3)\n"
      "assert m.dropped == 0, m.client.last_error\n' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  for (int i = 0; i < 400 && (*channel)->stats().received < 24; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto events = (*channel)->drain_messages();
  std::vector<std::int64_t> epoch_ends;
  int batches = 0;
  for (const auto& e : events) {
    if (e.message.type == EventType::epoch_end) epoch_ends.push_back(e.message.epoch);
    if (e.message.type == EventType::batch_end) {
      ++batches;
      EXPECT_EQ(e.message.batch_size, 8);
      EXPECT_EQ(e.message.framework, "loop");
      EXPECT_EQ(e.message.run_id, "9");
    }
  }
  EXPECT_EQ(epoch_ends, (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(batches, 15);
  EXPECT_EQ(events.front().message.type, EventType::hello);
  EXPECT_EQ(events.back().message.type, EventType::train_end);
  EXPECT_EQ((*channel)->epoch_text(), "3/3");
  EXPECT_EQ((*channel)->stats().total_rejected(), 0u);
}

// An empty message (send of 0 bytes) reads as 0 bytes, like the sender's shutdown: it is a malformed
// message, counted, and what follows it on the same connection still arrives.
TEST(IpcEventServer, EmptyMessageIsNotTheEndOfTheStream) {
  auto server = EventServer::start({.parent_dir = temp_parent()});
  ASSERT_TRUE(server.has_value()) << server.error().message;
  Sender s((*server)->socket_path());
  ASSERT_EQ(s.connect_errno(), 0);
  ASSERT_EQ(s.send(epoch_msg(1)), 0);
  ASSERT_EQ(s.send(""), 0);
  ASSERT_EQ(s.send(""), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the server reads the empty ones alone
  ASSERT_EQ(s.send(epoch_msg(2)), 0);
  wait_received(**server, 4);
  auto events = (*server)->drain();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].message.epoch, 2);
  const auto st = (*server)->stats();
  EXPECT_EQ(st.rejected[static_cast<std::size_t>(RejectReason::not_json)], 2u);
  EXPECT_EQ(st.connections, 1u) << "one connection: the empty messages did not end it";
}

// Senders that connect, send and close at once (a short-lived process, a bench): the end of each
// stream is no empty message, however the close falls between the server's poll and its reads
// (it was counted as a malformed message up to 1024 times per close).
TEST(IpcEventServer, ClosedStreamsAreNoEmptyMessages) {
  auto server = EventServer::start({.parent_dir = temp_parent()});
  ASSERT_TRUE(server.has_value()) << server.error().message;
  constexpr int kSenders = 200, kEach = 5;
  for (int i = 0; i < kSenders; ++i) {
    Sender s((*server)->socket_path());
    ASSERT_EQ(s.connect_errno(), 0);
    for (int k = 0; k < kEach; ++k) ASSERT_EQ(s.send(epoch_msg(k)), 0);
    if (i % 8 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  wait_received(**server, kSenders * kEach);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // any spurious reads after the last close
  const auto st = (*server)->stats();
  EXPECT_EQ(st.rejected[static_cast<std::size_t>(RejectReason::not_json)], 0u);
  EXPECT_EQ(st.received, static_cast<std::uint64_t>(kSenders * kEach));
}

// A recorder killed with SIGKILL cannot clean up: the next one removes what it left (its socket
// folder), and only that: a live recorder's folder, another user's or a planted link stay.
TEST(IpcEventServer, NextStartRemovesWhatAKilledRecorderLeft) {
  const std::string parent = temp_parent() + "/sweep";
  std::filesystem::remove_all(parent);
  std::filesystem::create_directories(parent);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto s = EventServer::start({.parent_dir = parent});
    const std::string dir = s ? (*s)->directory() : std::string();
    [[maybe_unused]] auto n = ::write(pipe_fds[1], dir.c_str(), dir.size() + 1);
    ::pause();
    ::_exit(0);
  }
  char buf[512] = {};
  ASSERT_GT(::read(pipe_fds[0], buf, sizeof buf - 1), 0);
  const std::string dead_dir = buf;
  ASSERT_FALSE(dead_dir.empty());
  ASSERT_TRUE(std::filesystem::exists(dead_dir + "/events.sock"));
  // A live recorder next to it, and a link planted under a run folder's name.
  auto live = EventServer::start({.parent_dir = parent});
  ASSERT_TRUE(live.has_value());
  const std::string decoy = parent + "/decoy";
  std::filesystem::create_directories(decoy);
  std::ofstream(decoy + "/keep") << "x";
  std::filesystem::create_directory_symlink(decoy, parent + "/trainmon-run-AAAAAA");
  EXPECT_EQ(remove_stale_run_dirs(parent), 0u) << "the child is alive: nothing to remove";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  ASSERT_TRUE(std::filesystem::exists(dead_dir)) << "SIGKILL left its folder";
  auto next = EventServer::start({.parent_dir = parent});
  ASSERT_TRUE(next.has_value());
  EXPECT_FALSE(std::filesystem::exists(dead_dir)) << "removed by the next start";
  EXPECT_TRUE(std::filesystem::exists((*live)->socket_path())) << "a live recorder's folder stays";
  EXPECT_TRUE(std::filesystem::is_symlink(parent + "/trainmon-run-AAAAAA")) << "a link is not ours to follow";
  EXPECT_TRUE(std::filesystem::exists(decoy + "/keep"));
  live->reset();
  next->reset();
  std::filesystem::remove_all(parent);
}
