// SPDX-License-Identifier: Apache-2.0
// The drawing thread of `trainmon top`, one frame at a time: render() of the 200x50 screen (8 fake
// GPUs, 64 GPU processes from tests/scenarios/bench-8gpu-64proc.json) and CursesOutput::draw() of
// it through ncurses (TERM=screen-256color, what tmux sets) into /dev/null. The frames differ as live
// ones do: utilisation, temperature, power and the processes' SM % move a little every frame, the
// sparklines shift, the clock ticks. bench/compare_top_btop.sh measures the whole program.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "trainmon/sampler/sampler.h"
#include "trainmon/tui/screen.h"
#include "tui/curses_output.h"

using namespace trainmon;

namespace {

constexpr int kWidth = 200;
constexpr int kHeight = 50;
constexpr int kFrames = 120;

/// kFrames snapshots: one sampled from the fake driver, then varied deterministically.
const std::vector<Snapshot>& frames() {
  static const std::vector<Snapshot> all = [] {
    setenv("TRAINMON_FAKE_NVML_SCENARIO", TRAINMON_SCENARIOS_DIR "/bench-8gpu-64proc.json", 1);
    setenv("TRAINMON_FAKE_NVML_TIME_S", "30", 1);
    SamplerOptions so;
    so.backend.library_path = TRAINMON_FAKE_NVML_PATH;
    so.backend.watch_events = false;
    Sampler sampler(so);
    sampler.sample();
    const Snapshot base = sampler.sample();
    std::vector<Snapshot> out;
    unsigned seed = 7;
    auto jitter = [&](int span) {
      seed = seed * 1103515245u + 12345u;
      return static_cast<int>((seed >> 16) % static_cast<unsigned>(2 * span + 1)) - span;
    };
    for (int f = 0; f < kFrames; ++f) {
      Snapshot s = base;
      s.time_unix_ns += static_cast<std::int64_t>(f) * 1000000000;
      for (auto& g : s.gpus) {
        if (g.utilization_gpu_pct) g.utilization_gpu_pct.value = static_cast<unsigned>(93 + jitter(3));
        if (g.temperature_gpu_c) g.temperature_gpu_c.value = static_cast<unsigned>(64 + jitter(1));
        if (g.power_draw_mw) g.power_draw_mw.value = static_cast<unsigned>(560000 + jitter(15) * 1000);
      }
      for (auto& p : s.gpu_processes)
        if (p.sm_util_pct) p.sm_util_pct.value = static_cast<unsigned>(46 + jitter(2));
      s.host.cpu_total.busy_pct = 20 + jitter(10);
      for (auto& c : s.host.cpus) c.times.busy_pct = 20 + jitter(10);
      out.push_back(std::move(s));
    }
    return out;
  }();
  return all;
}

/// History with `n` frames already added (the sparklines' state after n seconds).
tui::History history_after(int n) {
  tui::History h;
  for (int i = 0; i < n; ++i) h.add(frames()[static_cast<std::size_t>(i % kFrames)]);
  return h;
}

void BM_TopRender(benchmark::State& state) {
  const auto& fs = frames();
  tui::History hist = history_after(60);
  tui::UiState ui;
  int f = 0;
  for (auto _ : state) {
    const Snapshot& s = fs[static_cast<std::size_t>(f++ % kFrames)];
    hist.add(s);
    tui::ScreenInput in{&s, &hist, nullptr};
    auto r = tui::render(in, ui, kWidth, kHeight, true);
    benchmark::DoNotOptimize(r.canvas.row_chars(0).data());
  }
}
BENCHMARK(BM_TopRender);

/// ncurses on /dev/null as the terminal, 200x50 (LINES / COLUMNS), screen-256color.
struct DevNullTerminal {
  int saved_stdout = -1;
  tui::CursesOutput out;
  bool ok = false;
  DevNullTerminal() {
    setenv("TERM", "screen-256color", 1);
    setenv("LINES", "50", 1);
    setenv("COLUMNS", "200", 1);
    setenv("LC_ALL", "C.UTF-8", 1);
    std::fflush(stdout);
    saved_stdout = ::dup(STDOUT_FILENO);
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    ::dup2(null, STDOUT_FILENO);
    ::close(null);
    std::string err;
    ok = out.open(true, err);
  }
  ~DevNullTerminal() {
    out.close();
    std::fflush(stdout);
    ::dup2(saved_stdout, STDOUT_FILENO);
    ::close(saved_stdout);
  }
};

void BM_TopRenderAndDraw(benchmark::State& state) {
  const auto& fs = frames();
  tui::History hist = history_after(static_cast<int>(state.range(0)));
  tui::UiState ui;
  DevNullTerminal term;
  if (!term.ok) {
    state.SkipWithError("ncurses could not open screen-256color on /dev/null");
    return;
  }
  int f = 0;
  for (auto _ : state) {
    const Snapshot& s = fs[static_cast<std::size_t>(f++ % kFrames)];
    hist.add(s);
    tui::ScreenInput in{&s, &hist, nullptr};
    auto r = tui::render(in, ui, term.out.columns(), term.out.rows(), true);
    term.out.draw(std::move(r.canvas));
  }
  state.counters["cols"] = term.out.columns();
  state.counters["rows"] = term.out.rows();
}
// Sparklines 30 values long (the bench's first minute), and full (after 300 s).
BENCHMARK(BM_TopRenderAndDraw)->Arg(30)->Arg(300);

}  // namespace

BENCHMARK_MAIN();
