// SPDX-License-Identifier: Apache-2.0
#include "trainmon/diagnose/train_summary.h"

#include <fmt/format.h>

#include <cmath>

#include "trainmon/core/i18n.h"
#include "trainmon/core/units.h"
#include "trainmon/diagnose/train_energy.h"

namespace trainmon::diagnose {
namespace {

using nlohmann::json;

std::optional<double> known(double v) {
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

json opt(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

json int_or_null(int v) {
  return v >= 0 ? json(v) : json(nullptr);
}

std::optional<double> get_number(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

int get_int(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return -1;
  const auto v = it->get<std::int64_t>();
  return v >= 0 && v <= 1'000'000 ? static_cast<int>(v) : -1;
}

bool get_flag(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

std::uint64_t get_count(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return 0;
  const double v = it->get<double>();
  return std::isfinite(v) && v >= 0 && v < 1.8e19 ? static_cast<std::uint64_t>(v) : 0;
}

}  // namespace

std::optional<TrainSummary> summarize_train(const diagnose::TrainSeries& series, double t0, double t1) {
  const auto stats = diagnose::train_stats(series, t0, t1);
  if (stats.empty()) return std::nullopt;
  TrainSummary s;
  s.steps = stats.steps;
  s.samples = known(stats.samples);
  s.samples_per_s = known(stats.samples_per_s);
  s.steps_per_s = known(stats.steps_per_s);
  s.step_median_s = known(stats.step_median_s);
  s.data_share = known(stats.data_share);
  s.comm_share = known(stats.comm_share);
  for (std::size_t i = 0; i < stats.ranks.size() && i < series.ranks.size(); ++i) {
    const auto& st = stats.ranks[i];
    if (st.steps == 0) continue;
    const auto& id = series.ranks[i].id;
    TrainRankSummary r;
    r.key = id.key;
    r.rank = id.rank;
    r.local_rank = id.local_rank;
    r.node_rank = id.node_rank;
    r.world_size = id.world_size;
    r.host = id.host;
    r.gpu = id.gpu;
    r.steps = st.steps;
    r.samples = known(st.samples);
    r.samples_per_s = known(st.samples_per_s);
    r.steps_per_s = known(st.steps_per_s);
    r.step_median_s = known(st.step_median_s);
    r.step_p90_s = known(st.step_p90_s);
    r.data_share = known(st.data_share);
    r.comm_share = known(st.comm_share);
    r.compute_mean_s = known(st.compute_mean_s);
    s.ranks.push_back(std::move(r));
  }
  return s;
}

std::optional<TrainSummary> summarize_train(const diagnose::RunSeries& run) {
  auto s = summarize_train(run.train);
  if (!s) return s;
  // ---- energy: each rank's GPU over its steps; the job's when every rank has its own ----
  bool all = !s->ranks.empty();
  double job_j = 0, job_samples = 0, job_j_per_step = 0;
  std::size_t epochs = 0;
  for (auto& r : s->ranks) {
    const diagnose::RankSeries* rs = run.train.find(r.key);
    const auto e = rs ? diagnose::rank_energy(run, *rs) : std::nullopt;
    if (!e) {
      all = false;
      continue;
    }
    r.energy_j = e->energy_j;
    r.energy_shared = e->shared;
    r.j_per_step = known(e->j_per_step());
    r.j_per_sample = known(e->j_per_sample());
    r.wh_per_epoch = known(e->wh_per_epoch());
    s->energy_shared = s->energy_shared || e->shared;
    job_j += e->energy_j;
    job_samples += e->samples;  // NaN when a rank sent none
    job_j_per_step += e->j_per_step();
    epochs = e->epochs;
  }
  if (all && !s->energy_shared) {
    s->energy_j = job_j;
    s->j_per_step = known(job_j_per_step);
    s->j_per_sample = job_samples > 0 ? known(job_j / job_samples) : std::nullopt;
    if (epochs > 0) s->wh_per_epoch = job_j / 3600.0 / static_cast<double>(epochs);
  }
  return s;
}

json train_summary_to_json(const TrainSummary& s) {
  json ranks = json::array();
  for (const auto& r : s.ranks) {
    ranks.push_back({{"key", r.key},
                     {"rank", int_or_null(r.rank)},
                     {"local_rank", int_or_null(r.local_rank)},
                     {"node_rank", int_or_null(r.node_rank)},
                     {"world_size", int_or_null(r.world_size)},
                     {"host", r.host.empty() ? json(nullptr) : json(r.host)},
                     {"gpu", int_or_null(r.gpu)},
                     {"steps", r.steps},
                     {"samples", opt(r.samples)},
                     {"samples_per_s", opt(r.samples_per_s)},
                     {"steps_per_s", opt(r.steps_per_s)},
                     {"step_median_s", opt(r.step_median_s)},
                     {"step_p90_s", opt(r.step_p90_s)},
                     {"data_share", opt(r.data_share)},
                     {"comm_share", opt(r.comm_share)},
                     {"compute_mean_s", opt(r.compute_mean_s)},
                     {"energy_j", opt(r.energy_j)},
                     {"energy_wh", r.energy_j ? json(*r.energy_j / 3600.0) : json(nullptr)},
                     {"energy_shared", r.energy_shared},
                     {"j_per_step", opt(r.j_per_step)},
                     {"j_per_sample", opt(r.j_per_sample)},
                     {"wh_per_epoch", opt(r.wh_per_epoch)}});
  }
  return {{"steps", s.steps},
          {"samples", opt(s.samples)},
          {"samples_per_s", opt(s.samples_per_s)},
          {"steps_per_s", opt(s.steps_per_s)},
          {"step_median_s", opt(s.step_median_s)},
          {"data_share", opt(s.data_share)},
          {"comm_share", opt(s.comm_share)},
          {"energy_j", opt(s.energy_j)},
          {"energy_wh", s.energy_j ? json(*s.energy_j / 3600.0) : json(nullptr)},
          {"energy_shared", s.energy_shared},
          {"j_per_step", opt(s.j_per_step)},
          {"j_per_sample", opt(s.j_per_sample)},
          {"wh_per_epoch", opt(s.wh_per_epoch)},
          {"ranks", std::move(ranks)}};
}

std::optional<TrainSummary> train_summary_from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  TrainSummary s;
  s.steps = get_count(j, "steps");
  if (s.steps == 0) return std::nullopt;
  s.samples = get_number(j, "samples");
  s.samples_per_s = get_number(j, "samples_per_s");
  s.steps_per_s = get_number(j, "steps_per_s");
  s.step_median_s = get_number(j, "step_median_s");
  s.data_share = get_number(j, "data_share");
  s.comm_share = get_number(j, "comm_share");
  s.energy_j = get_number(j, "energy_j");
  s.energy_shared = get_flag(j, "energy_shared");
  s.j_per_step = get_number(j, "j_per_step");
  s.j_per_sample = get_number(j, "j_per_sample");
  s.wh_per_epoch = get_number(j, "wh_per_epoch");
  if (const auto it = j.find("ranks"); it != j.end() && it->is_array()) {
    for (const auto& x : *it) {
      if (!x.is_object()) continue;
      TrainRankSummary r;
      if (const auto k = x.find("key"); k != x.end() && k->is_number_integer())
        r.key = k->get<std::int64_t>();
      r.rank = get_int(x, "rank");
      r.local_rank = get_int(x, "local_rank");
      r.node_rank = get_int(x, "node_rank");
      r.world_size = get_int(x, "world_size");
      if (const auto h = x.find("host"); h != x.end() && h->is_string()) r.host = h->get<std::string>();
      r.gpu = get_int(x, "gpu");
      r.steps = get_count(x, "steps");
      r.samples = get_number(x, "samples");
      r.samples_per_s = get_number(x, "samples_per_s");
      r.steps_per_s = get_number(x, "steps_per_s");
      r.step_median_s = get_number(x, "step_median_s");
      r.step_p90_s = get_number(x, "step_p90_s");
      r.data_share = get_number(x, "data_share");
      r.comm_share = get_number(x, "comm_share");
      r.compute_mean_s = get_number(x, "compute_mean_s");
      r.energy_j = get_number(x, "energy_j");
      r.energy_shared = get_flag(x, "energy_shared");
      r.j_per_step = get_number(x, "j_per_step");
      r.j_per_sample = get_number(x, "j_per_sample");
      r.wh_per_epoch = get_number(x, "wh_per_epoch");
      s.ranks.push_back(std::move(r));
    }
  }
  return s;
}

std::string format_samples_per_s(double v) {
  if (!std::isfinite(v) || v < 0) return {};
  return v < 1e5 ? fmt::format("{:.1f}", v) : fmt::format("{:.0f}", v);
}

std::string format_step_s(double s) {
  if (!std::isfinite(s) || s < 0) return {};
  if (s < 0.00095) return fmt::format("{:.0f}us", s * 1e6);  // a tiny step read "0.0ms"
  if (s < 0.01) return fmt::format("{:.1f}ms", s * 1e3);
  if (s < 10) return fmt::format("{:.3f}s", s);
  if (s < 100) return fmt::format("{:.2f}s", s);
  if (s < 1000) return fmt::format("{:.1f}s", s);
  return fmt::format("{:.0f}s", s);
}

std::string format_share_pct(double share) {
  if (!std::isfinite(share)) return {};
  return fmt::format("{:.1f}%", 100.0 * share);
}

std::string format_joules(double j) {
  if (!std::isfinite(j) || j < 0) return {};
  if (j < 1) return fmt::format("{:.3f} J", j);
  if (j < 100) return fmt::format("{:.1f} J", j);
  if (j < 1e4) return fmt::format("{:.0f} J", j);
  if (j < 1e6) return fmt::format("{:.1f} kJ", j / 1e3);
  return fmt::format("{:.2f} MJ", j / 1e6);
}

std::string format_wh(double j) {
  if (!std::isfinite(j) || j < 0) return {};
  const double wh = j / 3600.0;
  if (wh < 1) return fmt::format("{:.3f} Wh", wh);
  if (wh < 10) return fmt::format("{:.2f} Wh", wh);
  if (wh < 1000) return fmt::format("{:.1f} Wh", wh);
  return fmt::format("{:.2f} kWh", wh / 1000.0);
}

std::string format_energy_figures(const TrainRankSummary& r) {
  using i18n::trf;
  if (r.energy_shared)
    return r.energy_j ? trf("GPU shared ({} for the whole GPU)", format_joules(*r.energy_j))
                      : std::string(i18n::tr("GPU shared"));
  if (!r.energy_j) return {};
  std::vector<std::string> parts;
  if (r.j_per_step) parts.push_back(trf("{}/step", format_joules(*r.j_per_step)));
  if (r.j_per_sample) parts.push_back(trf("{}/sample", format_joules(*r.j_per_sample)));
  std::string wh = format_wh(*r.energy_j);
  if (r.wh_per_epoch) wh += trf(" ({}/epoch)", format_wh(*r.wh_per_epoch * 3600.0));
  parts.push_back(std::move(wh));
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? std::string() : std::string(i18n::tr(", "))) + p;
  return out;
}

std::string describe_rank(const TrainRankSummary& r) {
  using i18n::trf;
  std::string out = r.rank >= 0 ? trf("rank {}", r.rank) : trf("pid {}", r.key < 0 ? -1 - r.key : r.key);
  std::string where = terminal_text(r.host);  // from the sender or a stored summary
  if (r.gpu >= 0)
    where += (where.empty() ? std::string() : std::string(i18n::tr(", "))) + fmt::format("GPU {}", r.gpu);
  if (!where.empty()) out += trf(" ({})", where);
  return out;
}

std::string format_train_figures(const TrainRankSummary& r) {
  using i18n::trf;
  // The words in the reader's language; numbers, units, `samples/s`, `step` and `p90` stay.
  std::vector<std::string> parts;
  if (r.samples_per_s) parts.push_back(trf("{} samples/s", format_samples_per_s(*r.samples_per_s)));
  if (r.step_median_s) {
    std::string step = trf("step {} median", format_step_s(*r.step_median_s));
    if (r.step_p90_s) step += trf(" (p90 {})", format_step_s(*r.step_p90_s));
    parts.push_back(std::move(step));
  }
  if (r.data_share) parts.push_back(trf("data wait {}", format_share_pct(*r.data_share)));
  if (r.comm_share) parts.push_back(trf("collective wait {}", format_share_pct(*r.comm_share)));
  parts.push_back(r.steps == 1 ? trf("{} step", r.steps) : trf("{} steps", r.steps));
  if (auto e = format_energy_figures(r); !e.empty()) parts.push_back(trf("energy {}", e));
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? std::string() : std::string(i18n::tr(", "))) + p;
  return out;
}

std::string format_train_summary(const TrainSummary& s, std::string_view indent) {
  return format_train_summary(s, indent, i18n::tr("training: "));
}

std::string format_train_summary(const TrainSummary& s, std::string_view indent, std::string_view label) {
  TrainRankSummary job;
  job.steps = s.steps;
  job.samples_per_s = s.samples_per_s;
  job.step_median_s = s.step_median_s;
  job.data_share = s.data_share;
  job.comm_share = s.comm_share;
  job.energy_j = s.energy_j;
  job.energy_shared = s.energy_shared;
  job.j_per_step = s.j_per_step;
  job.j_per_sample = s.j_per_sample;
  job.wh_per_epoch = s.wh_per_epoch;
  std::string out = fmt::format("{}{}{}\n", indent, label, format_train_figures(job));
  if (s.ranks.size() > 1) {
    for (const auto& r : s.ranks)
      out += fmt::format("{}  {}\n", indent, i18n::trf("{}: {}", describe_rank(r), format_train_figures(r)));
  }
  return out;
}

}  // namespace trainmon::diagnose
