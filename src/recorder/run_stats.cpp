// SPDX-License-Identifier: Apache-2.0
#include "trainmon/recorder/run_stats.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/runner/oom.h"

namespace trainmon::recorder {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kMiB = 1024.0 * 1024;

template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
template <class T>
std::optional<T> get_opt(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].get<T>();
}

}  // namespace

void RunStats::add(const Snapshot& snap, std::int64_t elapsed_ms, const std::optional<JobTotals>& job,
                   const std::vector<unsigned>& job_gpus) {
  base_.duration_ms = elapsed_ms;
  ++base_.ticks;
  for (const auto& g : snap.gpus) {
    auto it = std::find_if(gpus_.begin(), gpus_.end(), [&](const Gpu& x) { return x.index == g.index; });
    if (it == gpus_.end()) {
      gpus_.push_back(Gpu{g.index});
      it = gpus_.end() - 1;
      std::sort(gpus_.begin(), gpus_.end(), [](const Gpu& a, const Gpu& b) { return a.index < b.index; });
      it = std::find_if(gpus_.begin(), gpus_.end(), [&](const Gpu& x) { return x.index == g.index; });
    }
    if (it->name.empty() && g.info && g.info->name.ok()) it->name = *g.info->name;
    if (std::find(job_gpus.begin(), job_gpus.end(), g.index) != job_gpus.end()) it->used = true;
    if (auto u = gpu_utilization(g)) {
      it->util_sum += *u;
      ++it->util_n;
      it->util_peak = std::max(it->util_peak, *u);
      for (const auto& s : g.gpu_utilization_samples) it->util_peak = std::max(it->util_peak, s.value);
    }
    if (g.memory_used_bytes.ok()) it->mem_peak = std::max(it->mem_peak.value_or(0), *g.memory_used_bytes);
    if (g.memory_total_bytes.ok()) it->mem_total = *g.memory_total_bytes;
    // Cumulative counters: a drop is a reset (driver reload), never a decrease.
    auto feed = [](ContinuedCounter& c, const auto& r) {
      if (r.ok()) c.observe(static_cast<double>(r.value));
    };
    feed(it->energy_mj, g.total_energy_mj);
    feed(it->ecc_unc, g.ecc_uncorrected_volatile);
    feed(it->ecc_cor, g.ecc_corrected_volatile);
    feed(it->viol_power, g.violation_power_ns);
    feed(it->viol_thermal, g.violation_thermal_ns);
    feed(it->pcie_replay, g.pcie_replay_count);
  }
  if (job) {
    base_.peak_job_rss_bytes = std::max(base_.peak_job_rss_bytes.value_or(0), job->rss_bytes);
    base_.last_job_rss_bytes = job->rss_bytes;
    base_.peak_job_cpu_pct = std::max(base_.peak_job_cpu_pct.value_or(0), job->cpu_pct);
    base_.peak_job_processes = std::max<std::uint64_t>(base_.peak_job_processes.value_or(0), job->processes);
    if (job->processes > 0) {
      const double t = static_cast<double>(elapsed_ms) / 3.6e6, y = static_cast<double>(job->rss_bytes);
      n_ += 1;
      st_ += t;
      sy_ += y;
      stt_ += t * t;
      sty_ += t * y;
    }
  }
  const auto& m = snap.host.memory;
  if (m.total_bytes.ok()) base_.memory_total_bytes = *m.total_bytes;
  if (m.available_bytes.ok()) {
    recent_available_.push_back(*m.available_bytes);
    if (recent_available_.size() > 10) recent_available_.pop_front();
  }
}

RunSummary RunStats::summary() const {
  RunSummary s = base_;
  for (const auto& g : gpus_) {
    GpuSummary out{g.index, g.name, g.used};
    if (g.util_n) {
      out.mean_util_pct = g.util_sum / static_cast<double>(g.util_n);
      out.peak_util_pct = g.util_peak;
    }
    out.peak_memory_used_bytes = g.mem_peak;
    out.memory_total_bytes = g.mem_total;
    if (g.energy_mj.seen()) out.energy_j = g.energy_mj.increase() / 1e3;
    if (g.ecc_unc.seen()) out.ecc_uncorrected_volatile_max = static_cast<std::uint64_t>(g.ecc_unc.highest());
    out.counter_resets = g.energy_mj.resets() + g.ecc_unc.resets() + g.ecc_cor.resets() +
                         g.viol_power.resets() + g.viol_thermal.resets() + g.pcie_replay.resets();
    s.gpus.push_back(out);
  }
  const double denom = n_ * stt_ - st_ * st_;
  if (n_ >= 3 && denom > 1e-12) s.job_rss_growth_bytes_per_h = (n_ * sty_ - st_ * sy_) / denom;
  if (!recent_available_.empty())
    s.min_available_recent_bytes = *std::min_element(recent_available_.begin(), recent_available_.end());
  return s;
}

std::string summary_to_json(const RunSummary& s) {
  nlohmann::json j;
  j["duration_s"] = static_cast<double>(s.duration_ms) / 1000.0;
  j["ticks"] = s.ticks;
  j["gpus"] = nlohmann::json::array();
  for (const auto& g : s.gpus) {
    j["gpus"].push_back({{"index", g.index},
                         {"name", g.name},
                         {"used_by_job", g.used_by_job},
                         {"mean_utilization_pct", opt(g.mean_util_pct)},
                         {"peak_utilization_pct", opt(g.peak_util_pct)},
                         {"peak_memory_used_bytes", opt(g.peak_memory_used_bytes)},
                         {"memory_total_bytes", opt(g.memory_total_bytes)},
                         {"energy_j", opt(g.energy_j)},
                         {"ecc_uncorrected_volatile_max", opt(g.ecc_uncorrected_volatile_max)},
                         {"counter_resets", g.counter_resets}});
  }
  j["peak_job_rss_bytes"] = opt(s.peak_job_rss_bytes);
  j["last_job_rss_bytes"] = opt(s.last_job_rss_bytes);
  j["job_rss_growth_bytes_per_h"] = opt(s.job_rss_growth_bytes_per_h);
  j["peak_job_cpu_pct"] = opt(s.peak_job_cpu_pct);
  j["peak_job_processes"] = opt(s.peak_job_processes);
  j["min_available_recent_bytes"] = opt(s.min_available_recent_bytes);
  j["memory_total_bytes"] = opt(s.memory_total_bytes);
  if (s.cgroup.version != 0) {
    const auto& c = s.cgroup;
    j["cgroup"] = {{"version", c.version},
                   {"path", c.path},
                   {"memory_limit_bytes", opt(c.memory_limit_bytes)},
                   {"memory_limit_file", c.memory_limit_file},
                   {"memory_limit_path", c.memory_limit_path},
                   {"memory_peak_bytes", opt(c.memory_peak_bytes)},
                   {"memory_limit_reached", c.memory_limit_reached},
                   {"memory_limit_oom", c.memory_limit_oom},
                   {"cpu_limit_cpus", opt(c.cpu_limit_cpus)},
                   {"cpu_limit_file", c.cpu_limit_file},
                   {"cpu_limit_path", c.cpu_limit_path}};
  } else {
    j["cgroup"] = nullptr;
  }
  j["oom_at_cgroup_limit"] = s.oom_at_cgroup_limit;
  if (s.oom_kills) j["oom_kills"] = *s.oom_kills;
  if (s.train) j["train"] = diagnose::train_summary_to_json(*s.train);
  if (s.train_events) {
    nlohmann::json rejected = nlohmann::json::object();
    for (const auto& [reason, n] : s.train_events->rejected) rejected[reason] = n;
    j["train_events"] = {{"received", s.train_events->received},
                         {"accepted", s.train_events->accepted},
                         {"rejected", std::move(rejected)}};
  }
  return text::json_dump(j);  // a GPU name from the driver may hold invalid UTF-8
}

RunSummary summary_from_json(const std::string& text) {
  RunSummary s;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return s;
  try {
    s.duration_ms = static_cast<std::int64_t>(j.value("duration_s", 0.0) * 1000.0 + 0.5);
    s.ticks = j.value("ticks", std::uint64_t{0});
    for (const auto& g : j.value("gpus", nlohmann::json::array())) {
      GpuSummary out;
      out.index = g.value("index", 0u);
      out.name = g.value("name", std::string());
      out.used_by_job = g.value("used_by_job", false);
      out.mean_util_pct = get_opt<double>(g, "mean_utilization_pct");
      out.peak_util_pct = get_opt<double>(g, "peak_utilization_pct");
      out.peak_memory_used_bytes = get_opt<std::uint64_t>(g, "peak_memory_used_bytes");
      out.memory_total_bytes = get_opt<std::uint64_t>(g, "memory_total_bytes");
      out.energy_j = get_opt<double>(g, "energy_j");
      out.ecc_uncorrected_volatile_max = get_opt<std::uint64_t>(g, "ecc_uncorrected_volatile_max");
      out.counter_resets = g.value("counter_resets", std::uint64_t{0});
      s.gpus.push_back(out);
    }
    s.peak_job_rss_bytes = get_opt<std::uint64_t>(j, "peak_job_rss_bytes");
    s.last_job_rss_bytes = get_opt<std::uint64_t>(j, "last_job_rss_bytes");
    s.job_rss_growth_bytes_per_h = get_opt<double>(j, "job_rss_growth_bytes_per_h");
    s.peak_job_cpu_pct = get_opt<double>(j, "peak_job_cpu_pct");
    s.peak_job_processes = get_opt<std::uint64_t>(j, "peak_job_processes");
    s.min_available_recent_bytes = get_opt<std::uint64_t>(j, "min_available_recent_bytes");
    s.memory_total_bytes = get_opt<std::uint64_t>(j, "memory_total_bytes");
    if (const auto c = j.find("cgroup"); c != j.end() && c->is_object()) {
      auto& o = s.cgroup;
      o.version = c->value("version", 0);
      o.path = c->value("path", std::string());
      o.memory_limit_bytes = get_opt<std::uint64_t>(*c, "memory_limit_bytes");
      o.memory_limit_file = c->value("memory_limit_file", std::string());
      o.memory_limit_path = c->value("memory_limit_path", std::string());
      o.memory_peak_bytes = get_opt<std::uint64_t>(*c, "memory_peak_bytes");
      o.memory_limit_reached = c->value("memory_limit_reached", false);
      o.memory_limit_oom = c->value("memory_limit_oom", false);
      o.cpu_limit_cpus = get_opt<double>(*c, "cpu_limit_cpus");
      o.cpu_limit_file = c->value("cpu_limit_file", std::string());
      o.cpu_limit_path = c->value("cpu_limit_path", std::string());
    }
    s.oom_at_cgroup_limit = j.value("oom_at_cgroup_limit", false);
    s.oom_kills = get_opt<std::uint64_t>(j, "oom_kills");
    if (const auto t = j.find("train"); t != j.end()) s.train = diagnose::train_summary_from_json(*t);
    if (const auto t = j.find("train_events"); t != j.end() && t->is_object()) {
      RunSummary::TrainEvents e;
      e.received = t->value("received", std::uint64_t{0});
      e.accepted = t->value("accepted", std::uint64_t{0});
      const nlohmann::json rejected = t->value("rejected", nlohmann::json::object());
      for (const auto& [reason, n] : rejected.items()) {
        if (n.is_number_unsigned()) e.rejected.emplace_back(reason, n.get<std::uint64_t>());
      }
      s.train_events = std::move(e);
    }
  } catch (const nlohmann::json::exception&) {
    return RunSummary{};
  }
  return s;
}

std::string format_train_events(const RunSummary::TrainEvents& e) {
  using i18n::trf;
  if (e.received == 0) return {};
  std::uint64_t rejected = 0;
  std::string reasons;
  for (const auto& [reason, n] : e.rejected) {
    rejected += n;
    // the reasons are the events' machine words (as --json gives them), listed as they are
    reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", text::terminal(reason), n);
  }
  std::string out = trf("training events: {} received, {} accepted", e.received, e.accepted);
  if (rejected > 0) out += trf(", {} rejected ({})", rejected, reasons);
  return out;
}

std::string format_summary(const RunSummary& s, const std::string& status_line, std::int64_t run_id,
                           std::optional<std::int64_t> findings) {
  using i18n::tr;
  using i18n::trf;
  // For people, in the reader's language (core/i18n.h): the words translated, numbers and units as
  // they are ("GPU0 ...: 利用率 平均 93.1% 峰值 99.0%").
  std::string out = trf("trainmon: {} after {}\n", status_line, runner::format_elapsed(s.duration_ms));
  for (const auto& g : s.gpus) {
    std::string mem = g.peak_memory_used_bytes
                          ? fmt::format("{:.0f} MiB", static_cast<double>(*g.peak_memory_used_bytes) / kMiB)
                          : "N/A";
    if (g.peak_memory_used_bytes && g.memory_total_bytes)
      mem += trf(" of {:.0f} MiB", static_cast<double>(*g.memory_total_bytes) / kMiB);
    std::string extra;
    if (g.energy_j && *g.energy_j > 0) {
      extra += *g.energy_j >= 3.6e5 ? trf(", energy {:.2f} kWh", *g.energy_j / 3.6e6)
                                    : trf(", energy {:.1f} kJ", *g.energy_j / 1e3);
    }
    if (g.counter_resets > 0)
      extra +=
          g.counter_resets == 1
              ? trf(" (counters reset {} time during the run: driver reload or GPU reset)", g.counter_resets)
              : trf(" (counters reset {} times during the run: driver reload or GPU reset)",
                    g.counter_resets);
    out += fmt::format("  GPU{}{}{}{}{}\n", g.index,
                       g.name.empty() ? std::string() : fmt::format(" {}", text::terminal(g.name)),
                       g.used_by_job ? tr(" (used by the job)") : std::string_view(),
                       trf(": utilisation mean {} peak {}, peak memory {}",
                           g.mean_util_pct ? fmt::format("{:.1f}%", *g.mean_util_pct) : "N/A",
                           g.peak_util_pct ? fmt::format("{:.1f}%", *g.peak_util_pct) : "N/A", mem),
                       extra);
  }
  if (s.gpus.empty()) out += std::string("  ") + std::string(tr("no GPU seen")) + "\n";
  if (s.peak_job_rss_bytes) {
    const auto procs = s.peak_job_processes.value_or(0);
    const double rss = static_cast<double>(*s.peak_job_rss_bytes) / kGiB,
                 cpu = s.peak_job_cpu_pct.value_or(0);
    out += "  " + std::string(tr("job: ")) +
           (procs == 1 ? trf("peak RSS {:.2f} GiB, peak CPU {:.1f}%, up to {} process\n", rss, cpu, procs)
                       : trf("peak RSS {:.2f} GiB, peak CPU {:.1f}%, up to {} processes\n", rss, cpu, procs));
  }
  if (const auto limits = runner::describe_cgroup_limits(s.cgroup); !limits.empty()) {
    out += "  " + trf("cgroup limits: {}", text::terminal(limits));
    if (s.cgroup.memory_peak_bytes)
      out += trf("; memory peak {:.1f} MiB", static_cast<double>(*s.cgroup.memory_peak_bytes) / kMiB);
    out += '\n';
  }
  if (s.train) out += diagnose::format_train_summary(*s.train, "  ");
  if (s.train_events) {
    if (auto line = format_train_events(*s.train_events); !line.empty()) out += "  " + line + "\n";
  }
  out += "  " + std::string(tr("findings: ")) +
         (findings ? std::to_string(*findings)
                   : std::string(tr("not analysed yet (`trainmon diagnose` comes later)"))) +
         "\n";
  if (run_id > 0) out += "  " + trf("run id: {} (trainmon show {})", run_id, run_id) + "\n";
  return out;
}

}  // namespace trainmon::recorder
