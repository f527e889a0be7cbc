// SPDX-License-Identifier: Apache-2.0
// Process lists as the driver gives them: a list that fails (any error, or a size that never
// settles) leaves the GPU's processes unknown, with the reason (GpuSample::process_count), never an
// empty list; a pid listed twice (two MIG instances, twice in one list, both lists) keeps all of its
// memory and every instance; per-process utilisation the driver has not refreshed keeps its last
// value with its age. Through open_nvml_backend() into the fake driver.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "device/nvml/nvml_device.h"
#include "nvml_test_util.h"
#include "trainmon/export/processes_unknown.h"

namespace trainmon {
namespace {

using namespace std::chrono_literals;
using testing::device_scenario;
using testing::open_fake;
using testing::tick;

std::string write_scenario(const std::string& text) {
  static int n = 0;
  const auto path = std::filesystem::temp_directory_path() /
                    ("trainmon-plist-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + ".json");
  std::ofstream(path) << text;
  return path.string();
}

/// One GPU with 40 GiB used; `device_extra` goes into the device object, `rest` after "devices".
std::string one_gpu(const std::string& device_extra, const std::string& rest) {
  return write_scenario(R"({"name": "plist", "devices": [{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-p-0",
      "memory_total": 85520809984, "metrics": {"utilization_gpu": 90, "memory_used": 42949672960})" +
                        device_extra + "}], " + rest + "}");
}

TEST(NvmlProcessList, ReproFailingListIsUnknownWithItsReason) {
  // /work/shared/repro/process-list-error.json: every compute list version answers NO_PERMISSION.
  auto b = open_fake(device_scenario("process-list-error.json"), 30);
  auto t = tick(*b);
  ASSERT_EQ(t.gpus.size(), 1u);
  const GpuSample& g = t.gpus[0];
  EXPECT_EQ(g.memory_used_bytes.value, 42949672960u);
  EXPECT_EQ(g.process_count.status, ReadStatus::no_permission);
  EXPECT_EQ(g.process_count.code, 4);
  EXPECT_TRUE(t.processes.empty());
  EXPECT_EQ(exp::processes_unknown_text(g.process_count),
            "processes unknown: NVML_ERROR_NO_PERMISSION: the query needs more privileges (root)");
  EXPECT_TRUE(g.responsive.ok());  // the GPU itself answers
}

TEST(NvmlProcessList, AnyErrorOfEitherListLeavesThemUnknown) {
  for (const char* fn :
       {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v3"}) {
    for (const char* code : {"NVML_ERROR_UNKNOWN", "NVML_ERROR_NO_PERMISSION", "NVML_ERROR_MEMORY"}) {
      auto b = open_fake(one_gpu("", R"("processes": [{"pid": 1001, "gpu": 0, "used_memory": 2147483648}],
          "errors": [{"function": ")" + std::string(fn) +
                                         R"(", "return": ")" + code + "\"}]"),
                         30);
      auto t = tick(*b);
      ASSERT_EQ(t.gpus.size(), 1u);
      EXPECT_FALSE(t.gpus[0].process_count.ok()) << fn << " " << code;
      EXPECT_NE(t.gpus[0].process_count.code, 0) << fn << " " << code;
      EXPECT_NE(exp::processes_unknown_reason(t.gpus[0].process_count), "") << fn << " " << code;
      if (std::string(fn).find("Graphics") != std::string::npos) {
        // The compute list answered: its process is still shown, next to "unknown".
        ASSERT_EQ(t.processes.size(), 1u);
        EXPECT_EQ(t.processes[0].pid, 1001u);
      }
    }
  }
}

TEST(NvmlProcessList, SizeThatNeverSettlesIsUnknown) {
  // Every buffer call finds the list grown past the buffer: INSUFFICIENT_SIZE on every retry.
  auto b = open_fake(one_gpu(R"(, "process_list_growth": {"never_settles": true})",
                             R"("processes": [{"pid": 1001, "gpu": 0, "used_memory": 2147483648}])"),
                     30);
  auto t = tick(*b);
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_EQ(t.gpus[0].process_count.code, 7);  // NVML_ERROR_INSUFFICIENT_SIZE
  EXPECT_EQ(exp::processes_unknown_reason(t.gpus[0].process_count),
            "the list kept changing size while it was read (NVML_ERROR_INSUFFICIENT_SIZE on every retry)");
}

TEST(NvmlProcessList, ListsThatAnswerAreCounted) {
  auto b = open_fake(
      one_gpu(
          "",
          R"("processes": [{"pid": 1001, "gpu": 0, "used_memory": 1}, {"pid": 1002, "gpu": 0, "type": "G", "used_memory": 1}])"),
      30);
  auto t = tick(*b);
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_TRUE(t.gpus[0].process_count.ok());
  EXPECT_EQ(t.gpus[0].process_count.value, 2u);
  EXPECT_EQ(exp::processes_unknown_text(t.gpus[0].process_count), "");
  BackendOptions off;
  off.collect_processes = false;
  b.reset();  // the fake reads a scenario at its first init
  auto c = open_fake(device_scenario("process-list-error.json"), 30, off);
  auto u = tick(*c);
  EXPECT_EQ(u.gpus[0].process_count.status, ReadStatus::not_collected);  // not asked: nothing to say
}

TEST(NvmlProcessList, ReproSamePidOnTwoMigInstancesKeepsAllItsMemory) {
  // /work/shared/repro/same-pid-two-mig-instances.json: pid 3300 holds 1 GiB on GI 1 and 2 GiB on GI
  // 2; the parent handle's list names it twice.
  auto b = open_fake(device_scenario("same-pid-two-mig-instances.json"), 30);
  auto t = tick(*b);
  ASSERT_EQ(t.processes.size(), 1u);
  const GpuProcessSample& p = t.processes[0];
  EXPECT_EQ(p.pid, 3300u);
  EXPECT_EQ(p.used_memory_bytes.value, 3221225472u);
  ASSERT_EQ(p.mig_instances.size(), 2u);
  EXPECT_EQ(p.mig_instances[0], (MigInstanceRef{1, 0}));
  EXPECT_EQ(p.mig_instances[1], (MigInstanceRef{2, 0}));
  EXPECT_EQ(p.gpu_instance_id.value, 1u);
  EXPECT_EQ(t.gpus[0].process_count.value, 1u);
}

/// same-pid-two-mig-instances with the compute lists refused (every version), on the parent handle
/// only (`parent_only`) or on every handle.
std::string mig_refused(bool parent_only) {
  std::ifstream in(device_scenario("same-pid-two-mig-instances.json"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string rules;
  for (const char* fn : {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2",
                         "nvmlDeviceGetComputeRunningProcesses"})
    rules += std::string(rules.empty() ? "" : ",") + R"({"function": ")" + fn +
             R"(", "return": "NVML_ERROR_NO_PERMISSION")" + (parent_only ? R"(, "mig_handle": false})" : "}");
  const auto at = text.rfind(R"("errors": [])");
  text.replace(at, std::string(R"("errors": [])").size(), R"("errors": [)" + rules + "]");
  return write_scenario(text);
}

TEST(NvmlProcessList, MigParentListRefusedReadsEachInstancesOwnList) {
  // The parent handle's list needs privileges; each MIG device handle lists its own processes (two
  // lists naming pid 3300): all its memory, both instances.
  auto b = open_fake(mig_refused(true), 30);
  auto t = tick(*b);
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_TRUE(t.gpus[0].process_count.ok()) << exp::processes_unknown_text(t.gpus[0].process_count);
  ASSERT_EQ(t.processes.size(), 1u);
  EXPECT_EQ(t.processes[0].pid, 3300u);
  EXPECT_EQ(t.processes[0].used_memory_bytes.value, 3221225472u);
  ASSERT_EQ(t.processes[0].mig_instances.size(), 2u);
  EXPECT_EQ(t.processes[0].mig_instances[1], (MigInstanceRef{2, 0}));
  // Refused there too: unknown, with the parent's reason.
  b.reset();  // the fake reads a scenario at its first init
  auto c = open_fake(mig_refused(false), 30);
  auto u = tick(*c);
  EXPECT_EQ(u.gpus[0].process_count.code, 4);
  EXPECT_TRUE(u.processes.empty());
}

TEST(NvmlProcessList, PidTwiceInOneListAndInBothLists) {
  // Twice in the compute list (same instance: two entries, both counted), and one pid in both the
  // compute and the graphics list (one allocation seen by both: counted once, "C+G").
  auto b = open_fake(one_gpu("", R"("processes": [
      {"pid": 1001, "gpu": 0, "type": "C", "used_memory": 1073741824},
      {"pid": 1001, "gpu": 0, "type": "C", "used_memory": 536870912},
      {"pid": 1002, "gpu": 0, "type": "C+G", "used_memory": 268435456}])"),
                     30);
  auto t = tick(*b);
  ASSERT_EQ(t.processes.size(), 2u);
  EXPECT_EQ(t.processes[0].pid, 1001u);
  EXPECT_EQ(t.processes[0].used_memory_bytes.value, 1610612736u);
  EXPECT_TRUE(t.processes[0].mig_instances.empty());
  EXPECT_EQ(t.processes[1].pid, 1002u);
  EXPECT_TRUE(t.processes[1].compute_and_graphics);
  EXPECT_EQ(t.processes[1].used_memory_bytes.value, 268435456u);
  EXPECT_EQ(t.gpus[0].process_count.value, 2u);
}

TEST(NvmlProcessList, ReproUtilisationNotRefreshedKeepsTheLastValueWithItsAge) {
  // /work/shared/repro/process-util-not-refreshed.json, read faster than the driver refreshes its
  // per-process samples (1/6 s): the read in between finds none newer.
  auto b = open_fake(device_scenario("process-util-not-refreshed.json"), 30);
  // Find a tick with a fresh sample, then read again at once (before the next refresh).
  testing::Tick t1;
  for (int i = 0; i < 20; ++i) {
    t1 = tick(*b);
    if (t1.processes.size() == 2 && t1.processes[0].sm_util_pct.ok() &&
        t1.processes[0].util_age_s.value < 0.05)
      break;
    std::this_thread::sleep_for(30ms);
  }
  ASSERT_EQ(t1.processes.size(), 2u);
  ASSERT_TRUE(t1.processes[0].sm_util_pct.ok());
  EXPECT_EQ(t1.processes[0].sm_util_pct.value, 60u);
  EXPECT_EQ(t1.processes[1].sm_util_pct.value, 70u);
  for (int i = 0; i < 6; ++i) {
    auto t = tick(*b);
    ASSERT_EQ(t.processes.size(), 2u);
    for (const auto& p : t.processes) {
      ASSERT_TRUE(p.sm_util_pct.ok()) << "read " << i << " pid " << p.pid << ": N/A between refreshes";
      EXPECT_EQ(p.sm_util_pct.value, p.pid == 1001 ? 60u : 70u);
      EXPECT_EQ(p.mem_util_pct.value, 20u);
      ASSERT_TRUE(p.util_age_s.ok());
      EXPECT_GE(p.util_age_s.value, 0.0);
      EXPECT_LT(p.util_age_s.value, 0.5);
    }
    std::this_thread::sleep_for(20ms);
  }
}

TEST(NvmlProcessList, HeldUtilisationExpiresAfterTheHoldTime) {
  // A driver that refreshed once and then no more (a process gone idle: NVML lists only processes
  // with non-zero utilisation): the last value is shown with its growing age, then N/A.
  // A private copy: its sample clock starts now (the first sample is taken at load).
  auto b = open_fake(one_gpu(R"(, "process_util_period_ms": 60000)",
                             R"("processes": [{"pid": 1001, "gpu": 0, "used_memory": 1, "sm_util": 80}])"),
                     30, {}, testing::isolated_fake_copy("fake_nvml"));
  auto t = tick(*b);
  ASSERT_EQ(t.processes.size(), 1u);
  ASSERT_TRUE(t.processes[0].sm_util_pct.ok());  // the sample taken at load (the first period)
  EXPECT_EQ(t.processes[0].sm_util_pct.value, 80u);
  const double first_age = t.processes[0].util_age_s.value;
  std::this_thread::sleep_for(300ms);
  t = tick(*b);
  ASSERT_TRUE(t.processes[0].sm_util_pct.ok());
  EXPECT_GT(t.processes[0].util_age_s.value, first_age + 0.25);
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(kProcessUtilHoldS * 1000)));
  t = tick(*b);
  EXPECT_EQ(t.processes[0].sm_util_pct.status, ReadStatus::not_available);
  EXPECT_EQ(t.processes[0].util_age_s.status, ReadStatus::not_available);
}

// ---- issue 33: driver samples are not trusted without their timestamps ----

TEST(NvmlSampleDates, WindowAndRestart) {
  const std::uint64_t now = 1'800'000'000'000'000ULL;  // µs since the epoch
  using nvml::sample_dated_in_window;
  EXPECT_TRUE(sample_dated_in_window(now - 10, now - 1'000'000, now));
  EXPECT_FALSE(sample_dated_in_window(now - 1'000'000, now - 1'000'000, now));  // not newer than asked
  EXPECT_FALSE(sample_dated_in_window(now - 5'000'000, now - 1'000'000, now));  // older than asked
  EXPECT_FALSE(sample_dated_in_window(0, 0, now));                              // undated
  EXPECT_TRUE(sample_dated_in_window(now + nvml::kSampleFutureSlackUs, now - 1, now));
  EXPECT_FALSE(sample_dated_in_window(now + 3'600'000'000ULL, now - 1, now));            // an hour ahead
  EXPECT_FALSE(sample_dated_in_window(now + 10 * 31'536'000'000'000ULL, now - 1, now));  // years
  EXPECT_FALSE(sample_dated_in_window(~0ULL, now - 1, now));
  EXPECT_EQ(nvml::sample_window_start(0, now), now - 1'000'000);
  EXPECT_EQ(nvml::sample_window_start(now - 5, now), now - 5);
  EXPECT_EQ(nvml::sample_window_start(now + 3'600'000'000ULL, now), now - 1'000'000);  // clock went back
}

TEST(NvmlProcessList, BadlyDatedUtilisationSamplesAreNeitherCurrentNorBlankTheRest) {
  // One GPU, a pid per way of dating a sample badly, and a control. Scenario time 30, then 32:
  //   1001 dated right (control)            1002 an hour ahead at 30, right from 31 on
  //   1003 years ahead (always)             1004 timestamp 0 (always)
  //   1005 right at 30, 10 s back from 31 on (the driver's clock going backwards)
  auto b = open_fake(one_gpu("", R"("processes": [
      {"pid": 1001, "gpu": 0, "used_memory": 1, "sm_util": 61},
      {"pid": 1002, "gpu": 0, "used_memory": 1, "sm_util": 62, "sample_time_offset_s": [[0, 3600], [31, 0]]},
      {"pid": 1003, "gpu": 0, "used_memory": 1, "sm_util": 63, "sample_time_offset_s": 300000000},
      {"pid": 1004, "gpu": 0, "used_memory": 1, "sm_util": 64, "sample_time_offset_s": -1e12},
      {"pid": 1005, "gpu": 0, "used_memory": 1, "sm_util": 65, "sample_time_offset_s": [[0, 0], [31, -10]]}])"),
                     30);
  auto by_pid = [](const testing::Tick& t, std::uint32_t pid) -> const GpuProcessSample& {
    for (const auto& p : t.processes)
      if (p.pid == pid) return p;
    ADD_FAILURE() << "pid " << pid << " not listed";
    static GpuProcessSample none;
    return none;
  };
  auto expect_consistent = [&](const testing::Tick& t) {
    ASSERT_EQ(t.processes.size(), 5u);
    for (const auto& p : t.processes) {
      if (p.sm_util_pct.ok()) {
        // Whatever is shown is what the pid's sample said, at most the documented hold old.
        EXPECT_EQ(p.sm_util_pct.value, 60 + p.pid - 1000) << p.pid;
        ASSERT_TRUE(p.util_age_s.ok()) << p.pid;
        EXPECT_GE(p.util_age_s.value, 0.0) << p.pid;
        EXPECT_LE(p.util_age_s.value, kProcessUtilHoldS) << p.pid;
      } else {
        EXPECT_EQ(p.sm_util_pct.status, ReadStatus::not_available) << p.pid;
        EXPECT_FALSE(p.util_age_s.ok()) << p.pid;
      }
    }
    // Never shown: a sample from the future (by an hour or years) or undated.
    EXPECT_FALSE(by_pid(t, 1003).sm_util_pct.ok());
    EXPECT_FALSE(by_pid(t, 1004).sm_util_pct.ok());
  };
  int control_shown = 0, backwards_shown = 0;
  for (int i = 0; i < 6; ++i) {
    const auto t = tick(*b);
    expect_consistent(t);
    EXPECT_FALSE(by_pid(t, 1002).sm_util_pct.ok()) << "an hour ahead is not current";
    control_shown += by_pid(t, 1001).sm_util_pct.ok();
    backwards_shown += by_pid(t, 1005).sm_util_pct.ok();
    std::this_thread::sleep_for(120ms);
  }
  EXPECT_GE(control_shown, 5);
  EXPECT_GE(backwards_shown, 5);
  // The future-dated samples did not move "last seen" ahead: later reads find the new samples, for
  // the control and for the pid whose dates became right. The pid whose dates went 10 s back keeps
  // its last right value no longer than the hold, then N/A.
  testing::ScopedEnv later("TRAINMON_FAKE_NVML_TIME_S", "32");
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int>(kProcessUtilHoldS * 1000) + 600);
  int n = 0, control_late = 0, healed_late = 0;
  testing::Tick last;
  while (std::chrono::steady_clock::now() < until) {
    last = tick(*b);
    expect_consistent(last);
    ++n;
    control_late += by_pid(last, 1001).sm_util_pct.ok();
    healed_late += by_pid(last, 1002).sm_util_pct.ok();
    std::this_thread::sleep_for(120ms);
  }
  EXPECT_GE(control_late, n - 1) << "reads blanked after a future-dated sample";
  EXPECT_GE(healed_late, n - 2);
  EXPECT_TRUE(by_pid(last, 1001).sm_util_pct.ok());
  EXPECT_TRUE(by_pid(last, 1002).sm_util_pct.ok());
  EXPECT_FALSE(by_pid(last, 1005).sm_util_pct.ok())
      << "a sample dated back held past " << kProcessUtilHoldS << " s";
}

}  // namespace
}  // namespace trainmon
