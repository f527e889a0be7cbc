// SPDX-License-Identifier: Apache-2.0
#include "trainmon/serve/serve_state.h"

#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/diagnose/detectors.h"
#include "trainmon/export/status.h"

namespace trainmon::serve {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

template <class T>
float fval(const Reading<T>& r, double factor = 1.0) {
  return r.ok() ? static_cast<float>(static_cast<double>(r.value) * factor) : kNaN;
}

nlohmann::json column(const std::vector<float>& v) {
  auto a = nlohmann::json::array();
  for (float x : v) {
    if (std::isfinite(x)) {
      a.push_back(x);
    } else {
      a.push_back(nullptr);
    }
  }
  return a;
}

bool answers(const GpuSample& g) {
  return g.responsive.ok() && *g.responsive;
}

template <class T>
nlohmann::json value_or_null(const Reading<T>& r) {
  return r.ok() ? nlohmann::json(*r) : nlohmann::json(nullptr);
}

}  // namespace

ServeState::ServeState(std::vector<std::pair<std::string, std::string>> labels, std::size_t history_rows,
                       std::string runs_dir)
    : runs_dir_(std::move(runs_dir)), history_rows_(history_rows == 0 ? 1 : history_rows) {
  state_.labels = std::move(labels);
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  state_.start_unix_s = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void ServeState::on_start(const diagnose::StartContext& ctx) {
  std::lock_guard lock(mu_);
  state_.run_id = ctx.run_id;
  db_path_ = std::string(ctx.db_path);
}

void ServeState::on_tick(const diagnose::TickContext& ctx) {
  auto snap = std::make_shared<const Snapshot>(ctx.snapshot);
  std::vector<diagnose::Finding> findings(ctx.active_findings.begin(), ctx.active_findings.end());

  HistoryRow row;
  row.time_unix_s = static_cast<double>(snap->time_unix_ns) / 1e9;
  std::vector<std::pair<unsigned, std::string>> gpus;
  for (const auto& g : snap->gpus) {
    gpus.emplace_back(g.index, g.info && g.info->name.ok() ? *g.info->name : std::string());
    bool ok = answers(g);
    row.util_gpu_pct.push_back(ok ? fval(g.utilization_gpu_pct) : kNaN);
    row.mem_used_mib.push_back(ok ? fval(g.memory_used_bytes, 1.0 / 1048576.0) : kNaN);
    row.power_w.push_back(ok ? fval(g.power_draw_mw, 1e-3) : kNaN);
    row.temp_c.push_back(ok ? fval(g.temperature_gpu_c) : kNaN);
  }
  row.cpu_busy_pct = snap->host.interval_s > 0 ? static_cast<float>(snap->host.cpu_total.busy_pct) : kNaN;
  const auto& mem = snap->host.memory;
  row.mem_used_pct = mem.used_bytes.ok() && mem.total_bytes.ok() && *mem.total_bytes > 0
                         ? static_cast<float>(100.0 * static_cast<double>(*mem.used_bytes) /
                                              static_cast<double>(*mem.total_bytes))
                         : kNaN;

  // The live runs of this user (small files, read once per tick outside the lock).
  auto runs = ipc::read_live_runs(runs_dir_);

  std::unique_lock lock(mu_);
  runs_ = std::move(runs);
  // Each rank's GPU energy since serve first saw the rank: the growth of NVML's total-energy counter
  // of its GPU (a counter that went back, after a driver reload, starts again from its new value).
  {
    std::vector<RankEnergy> kept;
    for (auto& run : runs_)
      for (auto& r : run.ranks) {
        if (r.gpu < 0) continue;
        const GpuSample* g = nullptr;
        for (const auto& x : snap->gpus)
          if (static_cast<int>(x.index) == r.gpu) g = &x;
        if (!g || !g->total_energy_mj.ok()) continue;
        const std::uint64_t now = *g->total_energy_mj;
        RankEnergy e{run.run_id, r.key, r.pid, r.gpu, now, 0};
        for (const auto& old : energy_)
          if (old.run_id == e.run_id && old.key == e.key && old.pid == e.pid && old.gpu == e.gpu) {
            e.joules = old.joules + (now >= old.last_mj ? static_cast<double>(now - old.last_mj) / 1e3 : 0.0);
            break;
          }
        r.energy_j = e.joules;
        kept.push_back(e);
      }
    energy_ = std::move(kept);
  }
  if (last_tick_monotonic_ns_ != 0) {  // the monotonic clock: a wall-clock step is no long tick
    state_.last_tick_duration_s = static_cast<double>(snap->monotonic_ns - last_tick_monotonic_ns_) / 1e9;
  }
  last_tick_monotonic_ns_ = snap->monotonic_ns;
  for (const auto& ev : snap->events) {
    if (ev.xid == 0) continue;
    bool found = false;
    for (auto& [gpu, x] : state_.last_xid) {
      if (gpu == ev.gpu_index) {
        x = ev.xid;
        found = true;
      }
    }
    if (!found) state_.last_xid.emplace_back(ev.gpu_index, ev.xid);
    bool timed = false;
    for (auto& x : last_xid_) {
      if (x.gpu == ev.gpu_index) {
        x = {ev.gpu_index, ev.xid, ev.time_unix_ns};
        timed = true;
      }
    }
    if (!timed) last_xid_.push_back({ev.gpu_index, ev.xid, ev.time_unix_ns});
    bool counted = false;
    for (auto& [gpu, n] : state_.xid_events) {
      if (gpu == ev.gpu_index) {
        ++n;
        counted = true;
      }
    }
    if (!counted) state_.xid_events.emplace_back(ev.gpu_index, 1);
  }
  ++state_.ticks_total;
  follow_counters(*snap, state_.counters);          // a counter that resets is exported as continued
  if (ctx.run_id != 0) state_.run_id = ctx.run_id;  // created late when the store was busy at start
  elapsed_s_ = ctx.elapsed_s;
  snap_ = std::move(snap);
  findings_ = std::move(findings);
  if (gpus != history_gpus_) {  // the GPU set changed: old columns no longer line up
    history_.clear();
    history_gpus_ = std::move(gpus);
  }
  history_.push_back(std::move(row));
  while (history_.size() > history_rows_) history_.pop_front();
  const bool trim = state_.ticks_total % 60 == 0;
  lock.unlock();
  // The HTTP workers build answers of a few MB at a time (/api/v1/history), each in its own malloc
  // arena, which keeps what was freed: over tens of minutes every arena grew to its largest answer
  // and RSS rose with it. Once a minute the free pages of every arena go back to the system (outside
  // the lock: a trim takes milliseconds, and the workers must not wait for it).
  if (trim) ::malloc_trim(0);
}

void ServeState::on_finish() {}

void ServeState::set_hostname_label(std::string name) {
  std::lock_guard lock(mu_);
  hostname_label_ = std::move(name);
  metrics_tick_ = ~std::uint64_t{0};
}

std::string ServeState::metrics_text() {
  std::lock_guard lock(mu_);
  if (metrics_tick_ != state_.ticks_total) {
    static const Snapshot kEmpty;
    if (hostname_label_.empty() || !snap_) {
      metrics_cache_ = render_metrics(snap_ ? *snap_ : kEmpty, findings_, state_);
    } else {  // the node's name as told (serve --hostname): a copy once per tick
      Snapshot named = *snap_;
      named.host.hostname = hostname_label_;
      metrics_cache_ = render_metrics(named, findings_, state_);
    }
    metrics_cache_ += render_train_metrics(runs_, hostname_label_);
    metrics_tick_ = state_.ticks_total;
  }
  return metrics_cache_;
}

std::string ServeState::snapshot_json() {
  std::lock_guard lock(mu_);
  if (json_tick_ != state_.ticks_total) {
    nlohmann::json j;
    j["run_id"] = state_.run_id;
    j["db"] = db_path_;
    j["elapsed_s"] = elapsed_s_;
    j["ticks"] = state_.ticks_total;
    j["findings"] = findings_;
    if (snap_) {
      std::vector<std::size_t> order(snap_->gpus.size());
      std::iota(order.begin(), order.end(), std::size_t{0});
      j["status"] = nlohmann::json::parse(exp::status_json(*snap_, order, false));
      // What the dashboard's health line needs beyond the status document (nvidia-smi's field names
      // for the ECC counts; null when not read). The Xid's meaning and severity: trainmon's Xid table.
      auto health = nlohmann::json::array();
      for (const auto& g : snap_->gpus) {
        nlohmann::json h;
        h["index"] = g.index;
        h["ecc.errors.corrected.aggregate.total"] = value_or_null(g.ecc_corrected_aggregate);
        h["ecc.errors.uncorrected.aggregate.total"] = value_or_null(g.ecc_uncorrected_aggregate);
        h["xid"] = nullptr;
        std::uint64_t events = 0;
        for (const auto& [gpu, n] : state_.xid_events)
          if (gpu == g.index) events = n;
        for (const auto& x : last_xid_) {
          if (x.gpu != g.index) continue;
          const auto& info =
              diagnose::xid_info(static_cast<unsigned>(std::min<std::uint64_t>(x.xid, 0xFFFFFFFFu)));
          const bool known = info.xid == x.xid;
          h["xid"] = {{"code", x.xid},
                      {"meaning", known ? info.meaning : std::string_view("Unknown Error")},
                      {"severity", diagnose::severity_name(info.severity)},
                      {"time_unix_ns", x.time_unix_ns},
                      {"events", events}};
        }
        health.push_back(std::move(h));
      }
      j["gpu_health"] = std::move(health);
    } else {
      j["status"] = nullptr;
      j["gpu_health"] = nlohmann::json::array();
    }
    json_cache_ = text::json_dump(j);
    json_tick_ = state_.ticks_total;
  }
  return json_cache_;
}

std::string ServeState::history_json(double seconds) {
  std::lock_guard lock(mu_);
  nlohmann::json j;
  double newest = history_.empty() ? 0 : history_.back().time_unix_s;
  std::size_t first = 0;
  while (first < history_.size() && history_[first].time_unix_s < newest - seconds) ++first;
  auto t = nlohmann::json::array();
  for (std::size_t i = first; i < history_.size(); ++i) t.push_back(history_[i].time_unix_s);
  j["t"] = std::move(t);
  auto gpus = nlohmann::json::array();
  for (std::size_t g = 0; g < history_gpus_.size(); ++g) {
    std::vector<float> util, mem, power, temp;
    for (std::size_t i = first; i < history_.size(); ++i) {
      const auto& r = history_[i];
      util.push_back(g < r.util_gpu_pct.size() ? r.util_gpu_pct[g] : kNaN);
      mem.push_back(g < r.mem_used_mib.size() ? r.mem_used_mib[g] : kNaN);
      power.push_back(g < r.power_w.size() ? r.power_w[g] : kNaN);
      temp.push_back(g < r.temp_c.size() ? r.temp_c[g] : kNaN);
    }
    gpus.push_back({{"index", history_gpus_[g].first},
                    {"name", history_gpus_[g].second},
                    {"util_gpu_pct", column(util)},
                    {"mem_used_mib", column(mem)},
                    {"power_w", column(power)},
                    {"temp_c", column(temp)}});
  }
  j["gpus"] = std::move(gpus);
  std::vector<float> cpu, mem;
  for (std::size_t i = first; i < history_.size(); ++i) {
    cpu.push_back(history_[i].cpu_busy_pct);
    mem.push_back(history_[i].mem_used_pct);
  }
  j["host"] = {{"cpu_busy_pct", column(cpu)}, {"mem_used_pct", column(mem)}};
  return text::json_dump(j);
}

std::string ServeState::train_json() {
  std::lock_guard lock(mu_);
  std::string out = "[";
  for (const auto& r : runs_) {
    if (out.size() > 1) out += ',';
    out += r.document;
  }
  return out + "]";
}

std::string ServeState::findings_json() {
  std::lock_guard lock(mu_);
  return text::json_dump(nlohmann::json(findings_));
}

std::string ServeState::findings_l10n_json() {
  std::lock_guard lock(mu_);
  return serve::findings_l10n_json(findings_);
}

std::string findings_l10n_json(const std::vector<diagnose::Finding>& findings) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : findings) {
    list.push_back({{"code", f.code},
                    {"gpus", f.gpus},
                    {"pids", f.pids},
                    {"start_s", f.start_s},
                    {"evidence", std::string(diagnose::shown_evidence(f))},
                    {"advice", std::string(diagnose::shown_advice(f))}});
  }
  const std::string_view lang = i18n::language();
  return text::json_dump(nlohmann::json{{"lang", lang.empty() ? std::string("en") : std::string(lang)},
                                        {"findings", std::move(list)}});
}

std::int64_t ServeState::run_id() {
  std::lock_guard lock(mu_);
  return state_.run_id;
}

std::string ServeState::db_path() {
  std::lock_guard lock(mu_);
  return db_path_;
}

std::uint64_t ServeState::ticks() {
  std::lock_guard lock(mu_);
  return state_.ticks_total;
}

std::string ServeState::health_problem(std::int64_t now_monotonic_ns, double max_age_s) {
  std::lock_guard lock(mu_);
  if (last_tick_monotonic_ns_ == 0) return "no sample yet";
  const double age_s = static_cast<double>(now_monotonic_ns - last_tick_monotonic_ns_) / 1e9;
  if (age_s <= max_age_s) return {};
  return fmt::format("last sample {:.0f} s ago", age_s);
}

}  // namespace trainmon::serve
