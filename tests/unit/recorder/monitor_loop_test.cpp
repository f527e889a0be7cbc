// SPDX-License-Identifier: Apache-2.0
// The one monitoring loop (recorder/monitor_loop.h): the order of the hooks in a tick, what a
// failed tick and a failed observer do, the end of the loop, and a loop whose set-up failed.
#include "trainmon/recorder/monitor_loop.h"

#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainmon::recorder {
namespace {

std::int64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// Records every hook called; ends after `ticks` waits; throws in watch_pids at tick `fail_at`.
class Recorded final : public MonitorHooks {
 public:
  std::vector<std::string> calls;
  int ticks = 2;
  int fail_at = -1;
  bool go_on_after_failure = true;
  bool active_wanted = false;
  std::vector<bool> monitoring_seen;
  int waits = 0;

  std::vector<std::uint32_t> watch_pids(std::int64_t) override {
    calls.push_back("watch");
    if (waits == fail_at) throw std::runtime_error("boom");
    return {static_cast<std::uint32_t>(::getpid())};
  }
  void on_sample(const Snapshot& snap, TrainUpdate&, std::optional<std::string>&) override {
    calls.push_back(snap.monotonic_ns > 0 ? "sample" : "sample without time");
  }
  void on_stored(RecorderSession&) override { calls.push_back("stored"); }
  diagnose::JobContext job_context(const std::vector<std::uint32_t>& watched) override {
    calls.push_back(watched.size() == 1 ? "context" : "context without the watched pid");
    return {};
  }
  void on_diagnosed(const std::vector<std::uint32_t>&) override { calls.push_back("diagnosed"); }
  bool wants_active() const override { return active_wanted; }
  void on_findings(const std::vector<diagnose::Finding>&, double) override { calls.push_back("findings"); }
  bool tick_failed(const std::exception& e) override {
    calls.push_back(std::string("failed: ") + e.what());
    return go_on_after_failure;
  }
  void observer_failed(const std::exception& e) override {
    calls.push_back(std::string("observer: ") + e.what());
  }
  Wake wait_until(std::int64_t, bool monitoring) override {
    calls.push_back("wait");
    monitoring_seen.push_back(monitoring);
    return ++waits >= ticks ? Wake::stop : Wake::tick;
  }
};

class Counting final : public diagnose::TickObserver {
 public:
  int starts = 0, ticks = 0, finishes = 0;
  bool throw_on_tick = false;
  void on_start(const diagnose::StartContext&) override { ++starts; }
  void on_tick(const diagnose::TickContext& ctx) override {
    ++ticks;
    EXPECT_GE(ctx.elapsed_s, 0.0);
    if (throw_on_tick) throw std::runtime_error("observer boom");
  }
  void on_finish() override { ++finishes; }
};

struct Fixture {
  Fixture() : sampler(host_only()), session(session_options(), nullptr) {}
  static SamplerOptions host_only() {
    SamplerOptions so;
    so.collect_gpus = false;  // no NVML: the host and the watched pids only
    return so;
  }
  static SessionOptions session_options() {
    SessionOptions so;
    so.self_pid = static_cast<std::uint32_t>(::getpid());
    so.print_every_ms = 0;
    so.quiet = true;
    so.start_monotonic_ns = mono_ns();
    return so;
  }
  MonitorLoopOptions options() const {
    MonitorLoopOptions o;
    o.interval_ns = 100'000'000;
    o.start_mono_ns = mono_ns();
    return o;
  }
  Sampler sampler;
  RecorderSession session;
  diagnose::LiveDiagnosis live;
};

TEST(MonitorLoop, OneTickCallsTheHooksInOrder) {
  Fixture f;
  Recorded hooks;
  hooks.active_wanted = true;
  Counting obs;
  diagnose::TickObserver* const observers[] = {&obs};
  MonitorLoop loop(f.options(), &f.sampler, &f.session, &f.live, observers, hooks);
  loop.start_observers(diagnose::StartContext{"run", 0, "t", "", 0});
  loop.run();
  loop.finish_observers();
  const std::vector<std::string> one{"watch", "sample", "stored", "context", "diagnosed", "findings"};
  std::vector<std::string> want = one;
  want.push_back("wait");
  want.insert(want.end(), one.begin(), one.end());
  want.push_back("wait");
  EXPECT_EQ(hooks.calls, want);
  EXPECT_EQ(obs.starts, 1);
  EXPECT_EQ(obs.ticks, 2);
  EXPECT_EQ(obs.finishes, 1);
  EXPECT_EQ(hooks.monitoring_seen, (std::vector<bool>{true, true}));
}

TEST(MonitorLoop, NoDiagnosisNoDiagnosisHooks) {
  Fixture f;
  Recorded hooks;
  hooks.ticks = 1;
  MonitorLoop loop(f.options(), &f.sampler, &f.session, nullptr, {}, hooks);
  loop.run();
  EXPECT_EQ(hooks.calls, (std::vector<std::string>{"watch", "sample", "stored", "wait"}));
}

TEST(MonitorLoop, AFailedTickGoesOnOrStopsMonitoringAsTheHookSays) {
  {
    Fixture f;
    Recorded hooks;  // record / serve: the next tick goes on
    hooks.ticks = 2;
    hooks.fail_at = 0;
    MonitorLoop loop(f.options(), &f.sampler, &f.session, &f.live, {}, hooks);
    loop.run();
    ASSERT_GE(hooks.calls.size(), 3u);
    EXPECT_EQ(hooks.calls[1], "failed: boom");
    EXPECT_EQ(hooks.monitoring_seen, (std::vector<bool>{true, true}));
  }
  {
    Fixture f;
    Recorded hooks;  // run: monitoring stops, the loop only waits for the end
    hooks.ticks = 3;
    hooks.fail_at = 0;
    hooks.go_on_after_failure = false;
    MonitorLoop loop(f.options(), &f.sampler, &f.session, &f.live, {}, hooks);
    loop.run();
    EXPECT_EQ(hooks.calls, (std::vector<std::string>{"watch", "failed: boom", "wait", "wait", "wait"}));
    EXPECT_EQ(hooks.monitoring_seen, (std::vector<bool>{false, false, false}));
  }
}

TEST(MonitorLoop, AnObserverThatThrowsIsSaidOnceAndLeftOut) {
  Fixture f;
  Recorded hooks;
  hooks.ticks = 3;
  Counting bad, good;
  bad.throw_on_tick = true;
  diagnose::TickObserver* const observers[] = {&bad, &good};
  MonitorLoop loop(f.options(), &f.sampler, &f.session, &f.live, observers, hooks);
  loop.run();
  loop.finish_observers();
  EXPECT_EQ(std::count(hooks.calls.begin(), hooks.calls.end(), "observer: observer boom"), 1);
  EXPECT_EQ(bad.ticks, 1);
  EXPECT_EQ(bad.finishes, 0);
  EXPECT_EQ(good.ticks, 3);
  EXPECT_EQ(good.finishes, 1);
}

TEST(MonitorLoop, WithoutSamplerOrSessionItOnlyWaits) {
  Recorded hooks;
  hooks.ticks = 2;
  Fixture f;
  MonitorLoop loop(f.options(), nullptr, &f.session, &f.live, {}, hooks);
  loop.run();
  EXPECT_EQ(hooks.calls, (std::vector<std::string>{"wait", "wait"}));
  EXPECT_EQ(hooks.monitoring_seen, (std::vector<bool>{false, false}));
}

}  // namespace
}  // namespace trainmon::recorder
