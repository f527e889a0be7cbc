// SPDX-License-Identifier: Apache-2.0
// TrainChannel::collect: what the training ranks sent over the real socket during one tick, folded
// per rank on the run's clock, with identities and the GPU each rank uses.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "trainmon/ipc/train_channel.h"

using namespace trainmon;
using namespace trainmon::ipc;
using namespace trainmon::diagnose;  // the training-event parser (diagnose/train_message.h)

namespace {

double mono_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

class Sender {
 public:
  explicit Sender(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  }
  ~Sender() { ::close(fd_); }
  void send(const std::string& text) {
    EXPECT_GT(::send(fd_, text.data(), text.size(), MSG_NOSIGNAL), 0) << text;
  }

 private:
  int fd_ = -1;
};

/// A batch_end window of `n` steps of `step` s (`data` of them data wait), sent `at` s after `t0`.
std::string window(int rank, double t0_unix, double t0_mono, double at, int n, double step, double data,
                   double before) {
  return fmt::format(
      R"({{"v":2,"type":"batch_end","t":{:.6f},"mt":{:.6f},"rank":{},"steps":{{"n":{},"samples":{},)"
      R"("span_s":{},"step_s":{{"sum":{},"min":{},"max":{},"p50":{},"p90":{},"p99":{}}},)"
      R"("data_s":{{"sum":{},"min":{},"max":{},"p50":{},"p90":{},"p99":{}}},)"
      R"("total":{{"steps":{},"samples":{},"step_s":{},"data_s":{}}},"last_step_t":{:.6f},"last_step_mt":{:.6f},)"
      R"("phase":"data","phase_mt":{:.6f}}}}})",
      t0_unix + at, t0_mono + at, rank, n, 32 * n, n * step, n * step, step, step, step, step, step, n * data,
      data, data, data, data, data, before + n, 32 * (before + n), (before + n) * step, (before + n) * data,
      t0_unix + at, t0_mono + at, t0_mono + at);
}

void wait_received(const TrainChannel& ch, std::uint64_t n) {
  for (int i = 0; i < 400 && ch.stats().received < n; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

}  // namespace

TEST(TrainChannelCollect, FoldsEachRanksWindowsOfATickIntoOneRow) {
  auto parent =
      std::filesystem::temp_directory_path() / ("trainmon-channel-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(parent);
  auto ch = TrainChannel::open("7", {.parent_dir = parent.string()});
  ASSERT_TRUE(ch) << ch.error().message;
  const double t0 = static_cast<double>(::time(nullptr)), m0 = mono_now();
  (*ch)->set_clock(RunClock{t0 - 100, m0 - 10});  // the wall clock stepped 90 s since: mt wins
  Sender a((*ch)->socket_path()), b((*ch)->socket_path());
  a.send(fmt::format(R"({{"v":2,"type":"hello","t":{},"rank":0,"world_size":2,"host":"n1","gpu":0,)"
                     R"("cuda_visible_devices":"GPU-1111","stack_signal":40}})",
                     t0));
  b.send(
      fmt::format(R"({{"v":2,"type":"hello","t":{},"rank":1,"world_size":2,"host":"n1","lines":30}})", t0));
  a.send(window(0, t0, m0, 0.1, 10, 0.1, 0.03, 0));
  a.send(window(0, t0, m0, 0.2, 10, 0.1, 0.03, 10));
  b.send(window(1, t0, m0, 0.2, 5, 0.2, 0.1, 0));
  b.send(
      fmt::format(R"({{"v":2,"type":"heartbeat","t":{},"mt":{},"rank":1,"steps":{{"n":0,"phase":"compute",)"
                  R"("phase_mt":{}}}}})",
                  t0 + 0.3, m0 + 0.3, m0 + 0.25));
  a.send(
      fmt::format(R"({{"v":2,"type":"epoch_end","t":{},"mt":{},"rank":0,"epoch":0}})", t0 + 0.3, m0 + 0.3));
  wait_received(**ch, 7);
  std::vector<diagnose::NvmlGpuRef> gpus(2);
  gpus[0].index = 0;
  gpus[0].uuid = "GPU-0000";
  gpus[1].index = 1;
  gpus[1].uuid = "GPU-1111-2222";
  auto tick = (*ch)->collect(gpus);
  ASSERT_EQ(tick.windows.size(), 2u);
  const auto& [r0, w0] = tick.windows[0];
  const auto& [r1, w1] = tick.windows[1];
  EXPECT_EQ(r0.key, 0);
  EXPECT_EQ(r0.gpu, 1);  // CUDA_VISIBLE_DEVICES names GPU-1111: NVML index 1
  EXPECT_EQ(r0.host, "n1");
  EXPECT_EQ(r0.pid, static_cast<std::uint32_t>(::getpid()));  // SO_PEERCRED
  EXPECT_EQ(w0.steps, 20u);
  EXPECT_DOUBLE_EQ(w0.samples, 640);
  EXPECT_NEAR(w0.step.sum, 2.0, 1e-5);
  EXPECT_NEAR(w0.t, 10.2, 1e-3);  // on the run's monotonic clock
  EXPECT_DOUBLE_EQ(w0.total_steps, 20);
  EXPECT_EQ(r1.key, 1);
  EXPECT_EQ(r1.gpu, -1);  // nothing tells its GPU
  EXPECT_EQ(w1.steps, 5u);
  EXPECT_EQ(w1.phase, diagnose::TrainPhase::compute);  // the later heartbeat's phase
  EXPECT_NEAR(w1.t, 10.3, 1e-3);
  // Identities are sent once (new now), the heartbeat is not an event row, the epoch_end is.
  EXPECT_EQ(tick.ranks.size(), 2u);
  std::size_t stored_kinds = 0;
  for (const auto& e : tick.events) {
    EXPECT_NE(e.kind, "heartbeat");
    if (e.kind == "epoch_end") {
      ++stored_kinds;
      EXPECT_NEAR(static_cast<double>(e.time_unix_ns) / 1e9, t0 - 100 + 10.3, 1e-3);
    }
  }
  EXPECT_EQ(stored_kinds, 1u);
  EXPECT_EQ(tick.diagnose_events.size(), tick.events.size());
  EXPECT_EQ((*ch)->rank_prints_lines(), 30.0);
  // Nothing new: no rows, no identity repeated.
  auto quiet = (*ch)->collect(gpus);
  EXPECT_TRUE(quiet.windows.empty());
  EXPECT_TRUE(quiet.ranks.empty());
  std::filesystem::remove_all(parent);
}
