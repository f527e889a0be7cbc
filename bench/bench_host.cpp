// SPDX-License-Identifier: Apache-2.0
// Host collection cost: one full snapshot (host metrics + every process) over a generated tree of
// 1,000 processes (tests/unit/host/synthetic_proc_tree.h), and over the live /proc.
//
// Extra modes used by bench/compare_host_psutil.sh (handled before Google Benchmark's flags):
//   bench_host --generate-tree=DIR [--processes=N] [--cpus=N]   write the tree and exit
//   bench_host --cpu-time=DIR --iterations=N                   print CPU µs per snapshot of DIR
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "trainmon/host/host_collector.h"
#include "unit/host/host_fixture_util.h"
#include "unit/host/synthetic_proc_tree.h"

using namespace trainmon;

namespace {

const std::string& tree_1000() {
  static trainmon::test::TempDir dir;
  static const bool ok = trainmon::test::write_synthetic_tree(dir.path(), {32, 1000, 0});
  if (!ok) std::fprintf(stderr, "cannot write the synthetic tree under %s\n", dir.path().c_str());
  return dir.path();
}

HostOptions tree_options(const std::string& root, bool details) {
  HostOptions o;
  o.proc_root = root + "/proc";
  o.sys_root = root + "/sys";
  o.all_processes = true;
  o.all_process_details = details;
  return o;
}

void run(benchmark::State& state, HostOptions o) {
  HostCollector c(std::move(o));
  HostSample h;
  std::vector<ProcessSample> ps;
  c.collect(h, ps, {});  // warm caches (uid names, cgroups) as in steady state
  for (auto _ : state) {
    c.collect(h, ps, {});
    benchmark::DoNotOptimize(ps.data());
  }
  state.counters["processes"] = static_cast<double>(ps.size());
}

void BM_HostSnapshot1000Processes(benchmark::State& state) { run(state, tree_options(tree_1000(), false)); }
void BM_HostSnapshot1000ProcessesWithIoAndCgroup(benchmark::State& state) {
  run(state, tree_options(tree_1000(), true));
}
void BM_HostSnapshotLiveProc(benchmark::State& state) {
  HostOptions o;
  o.all_processes = true;
  run(state, o);
}
void BM_HostSystemOnlyLiveProc(benchmark::State& state) { run(state, HostOptions{}); }

BENCHMARK(BM_HostSnapshot1000Processes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostSnapshot1000ProcessesWithIoAndCgroup)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostSnapshotLiveProc)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostSystemOnlyLiveProc)->Unit(benchmark::kMicrosecond);

double cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

std::string_view flag(int argc, char** argv, std::string_view name) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.starts_with(name) && a.size() > name.size() && a[name.size()] == '=') return a.substr(name.size() + 1);
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  if (const auto dir = flag(argc, argv, "--generate-tree"); !dir.empty()) {
    trainmon::test::SyntheticTreeOptions o;
    if (const auto n = flag(argc, argv, "--processes"); !n.empty()) o.processes = static_cast<unsigned>(std::atoi(n.data()));
    if (const auto n = flag(argc, argv, "--cpus"); !n.empty()) o.cpus = static_cast<unsigned>(std::atoi(n.data()));
    return trainmon::test::write_synthetic_tree(std::string(dir), o) ? 0 : 1;
  }
  if (const auto dir = flag(argc, argv, "--cpu-time"); !dir.empty()) {
    // Same work as the psutil script: every process with io and cgroup, plus memory and per-CPU times.
    const auto n_flag = flag(argc, argv, "--iterations");
    const int n = n_flag.empty() ? 200 : std::atoi(n_flag.data());
    HostCollector c(tree_options(std::string(dir), true));
    HostSample h;
    std::vector<ProcessSample> ps;
    c.collect(h, ps, {});
    const double t0 = cpu_seconds();
    for (int i = 0; i < n; ++i) c.collect(h, ps, {});
    const double t1 = cpu_seconds();
    std::printf("%.1f %zu\n", (t1 - t0) * 1e6 / n, ps.size());
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
