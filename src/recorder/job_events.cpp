// SPDX-License-Identifier: Apache-2.0
// `run`'s event channel (job_run_parts.h): the socket the training processes send their events to,
// the environment that finds it, and what it collects each tick.
#include <cstdio>
#include <cstdlib>

#include "recorder/job_run_parts.h"
#include "trainmon/core/i18n.h"
#include "trainmon/diagnose/cuda_devices.h"
#include "trainmon/runner/python_hook.h"

namespace trainmon::recorder::job_parts {

RunSummary::TrainEvents train_event_counts(const ipc::EventServerStats& st) {
  RunSummary::TrainEvents e;
  e.received = st.received;
  e.accepted = st.accepted;
  for (std::size_t r = 0; r < st.rejected.size(); ++r) {
    if (st.rejected[r] > 0)
      e.rejected.emplace_back(std::string(diagnose::reject_reason_name(static_cast<diagnose::RejectReason>(r))),
                              st.rejected[r]);
  }
  return e;
}

std::unique_ptr<ipc::TrainChannel> open_event_channel(const JobRunOptions& o, std::int64_t run_id,
                                                      std::int64_t start_unix, std::int64_t start_mono,
                                                      runner::LaunchOptions& launch) {
  std::unique_ptr<ipc::TrainChannel> channel;
  if (auto ch = ipc::TrainChannel::open(std::to_string(run_id))) {
    channel = std::move(*ch);
    channel->set_clock(
        diagnose::RunClock{static_cast<double>(start_unix) / 1e9, static_cast<double>(start_mono) / 1e9});
    for (auto& kv : channel->child_environment()) {
      if (kv.first != ipc::kEnvRunId) launch.extra_env.push_back(std::move(kv));
    }
    // Zero code changes: Python finds our sitecustomize.py first and times PyTorch by itself.
    if (!o.no_instrument) {
      if (auto py = runner::write_python_hook(channel->directory())) {
        const char* current = std::getenv("PYTHONPATH");
        for (auto& kv : runner::python_hook_environment(*py, current ? current : ""))
          launch.extra_env.push_back(std::move(kv));
      } else if (!o.quiet) {
        std::fprintf(stderr, "trainmon: Python not instrumented: %s\n", o.said(py.error()).c_str());
      }
    }
  } else {
    std::fprintf(stderr, "trainmon: no training events: %s; monitoring goes on\n",
                 o.said(ch.error()).c_str());
  }
  return channel;
}

TrainUpdate collect_train(ipc::TrainChannel& channel, diagnose::LiveDiagnosis& live, const Snapshot* snap) {
  std::vector<diagnose::NvmlGpuRef> gpus;
  if (snap) gpus = diagnose::nvml_gpu_refs(*snap);  // only pids that are this namespace's
  auto tick = channel.collect(gpus);
  for (auto& e : tick.diagnose_events) live.on_train_event(std::move(e));
  for (const auto& [rank, w] : tick.windows) live.on_train_window(rank, w);
  TrainUpdate update;
  update.events = std::move(tick.events);
  update.windows = std::move(tick.windows);
  update.ranks = std::move(tick.ranks);
  return update;
}

void say_rejected_once(const ipc::TrainChannel& channel, bool quiet, bool& told) {
  if (told || quiet) return;
  if (const auto st = channel.stats(); st.total_rejected() > 0) {
    told = true;
    std::fputs(i18n::trf("trainmon: events from the training process are being rejected ({}); counts "
                         "at the end\n",
                         format_train_events(train_event_counts(st)))
                   .c_str(),
               stderr);
  }
}

}  // namespace trainmon::recorder::job_parts
