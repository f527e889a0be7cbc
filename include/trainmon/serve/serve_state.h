// SPDX-License-Identifier: Apache-2.0
// ServeState: the record loop's observer inside `trainmon serve`. Keeps the newest Snapshot, the
// live diagnosis's open findings and a ring of recent history (for the dashboard's charts) under a
// mutex; renders /metrics and the snapshot JSON lazily, at most once per tick, for any number of
// HTTP threads. on_tick only swaps pointers and appends one history row (it runs on the sampling
// thread and must be quick).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "trainmon/diagnose/finding.h"
#include "trainmon/diagnose/tick_observer.h"
#include "trainmon/ipc/run_state_file.h"
#include "trainmon/serve/metrics_text.h"

namespace trainmon::serve {

/// One tick of the dashboard's history: per GPU (by position in `gpus`) and host values; NaN = N/A.
struct HistoryRow {
  double time_unix_s = 0;
  std::vector<float> util_gpu_pct;
  std::vector<float> mem_used_mib;
  std::vector<float> power_w;
  std::vector<float> temp_c;
  float cpu_busy_pct = 0;
  float mem_used_pct = 0;  ///< host memory used / total, percent
};

/// The findings' text for people in this process's language (core/i18n.h), for the dashboard (its
/// page shows it when it reads that language, docs/language.md): {"lang": "zh_CN" or "en",
/// "findings": [{"code", "gpus", "pids", "start_s", "evidence", "advice"}]} in the findings' order;
/// the evidence as the detector translated it (else the English), the advice diagnose::shown_advice.
/// The findings' own JSON (the API, the store) stays English.
std::string findings_l10n_json(const std::vector<diagnose::Finding>& findings);

class ServeState : public diagnose::TickObserver {
 public:
  /// `history_rows`: ticks kept for /api/v1/history (900 = 15 min at 1 s). `runs_dir`: where the live
  /// state files of this user's runs are (ipc::run_state_dir() when empty), read once per tick.
  explicit ServeState(std::vector<std::pair<std::string, std::string>> labels, std::size_t history_rows = 900,
                      std::string runs_dir = {});

  void on_start(const diagnose::StartContext& ctx) override;
  void on_tick(const diagnose::TickContext& ctx) override;
  void on_finish() override;

  /// /metrics body (with the live runs' training metrics, render_train_metrics); before the first
  /// tick, only the exporter's own metrics.
  std::string metrics_text();
  /// /api/v1/train body: the live state documents (docs/top.md "Live state files") of this user's runs
  /// going on at the last tick, oldest first (a JSON array; [] when none).
  std::string train_json();
  /// /api/v1/snapshot body: {"run_id", "db", "elapsed_s", "status" (docs/status-json.md),
  /// "findings" (the open ones), "gpu_health" (per GPU what the status document lacks: aggregate ECC
  /// counts, the last Xid since serve started; docs/serve.md)}; {"status": null} before the first tick.
  std::string snapshot_json();
  /// /api/v1/history body: the last `seconds` of history as columns ({"t": [...], "gpus": [{"index",
  /// "name", "util_gpu_pct": [...], ...}], "host": {...}}); null for N/A.
  std::string history_json(double seconds);
  /// /api/v1/findings body: the live diagnosis's open findings (JSON array).
  std::string findings_json();
  /// /api/v1/findings/l10n body: the same findings' evidence and advice in serve's language
  /// (findings_l10n_json); what scripts read (/api/v1/findings, the snapshot) stays English.
  std::string findings_l10n_json();

  /// The Hostname label of every exported series (serve --hostname); empty: the machine's name.
  /// Call before the first tick.
  void set_hostname_label(std::string name);

  std::int64_t run_id();
  std::string db_path();
  std::uint64_t ticks();
  /// /health: empty when the last tick is at most `max_age_s` seconds older than `now_monotonic_ns`
  /// (CLOCK_MONOTONIC, ns: a wall-clock step changes nothing); else why not ("no sample yet",
  /// "last sample 42 s ago").
  std::string health_problem(std::int64_t now_monotonic_ns, double max_age_s);

 private:
  std::mutex mu_;
  ExporterState state_;
  std::string db_path_;
  double elapsed_s_ = 0;
  std::shared_ptr<const Snapshot> snap_;
  std::vector<diagnose::Finding> findings_;
  std::string runs_dir_;
  std::string hostname_label_;
  std::vector<ipc::LiveRunState> runs_;  ///< live runs at the last tick
  /// Per rank of a live run (run id, rank key, pid): its GPU's energy counter when last read (mJ)
  /// and the joules it grew by since serve first saw the rank (LiveRankState::energy_j).
  struct RankEnergy {
    std::int64_t run_id = 0, key = 0;
    std::uint32_t pid = 0;
    int gpu = -1;
    std::uint64_t last_mj = 0;
    double joules = 0;
  };
  std::vector<RankEnergy> energy_;
  /// The last Xid event per GPU since serve started (the dashboard's health line).
  struct LastXid {
    unsigned gpu = 0;
    std::uint64_t xid = 0;
    std::int64_t time_unix_ns = 0;
  };
  std::vector<LastXid> last_xid_;
  std::deque<HistoryRow> history_;
  std::vector<std::pair<unsigned, std::string>> history_gpus_;  ///< index, name of each column
  std::size_t history_rows_;
  std::int64_t last_tick_monotonic_ns_ = 0;
  std::uint64_t metrics_tick_ = ~std::uint64_t{0};
  std::string metrics_cache_;
  std::uint64_t json_tick_ = ~std::uint64_t{0};
  std::string json_cache_;
};

}  // namespace trainmon::serve
