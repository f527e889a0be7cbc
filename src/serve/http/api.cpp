// SPDX-License-Identifier: Apache-2.0
#include "trainmon/serve/api.h"

#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "trainmon/core/text_escape.h"
#include "trainmon/recorder/run_report.h"
#include "trainmon/report/report.h"
#include "trainmon/serve/serve_state.h"
#include "trainmon/store/load_run_series.h"
#include "trainmon/store/store.h"

namespace trainmon::serve {
namespace {

ApiReply store_error(const Error& e) {
  int status = e.name == store::kErrNotFound ? 404 : (e.name == store::kErrMissing ? 404 : 500);
  return {status, text::json_dump(nlohmann::json{{"error", e.message}, {"name", e.name}})};
}

/// The object `trainmon runs --json` prints (one schema for the CLI and the API), plus the exact
/// start and end times in nanoseconds.
nlohmann::json run_json(const store::RunInfo& r) {
  nlohmann::json j = recorder::run_to_json(r);
  j["start_unix_ns"] = r.start_unix_ns;
  j["end_unix_ns"] = r.end_unix_ns ? nlohmann::json(*r.end_unix_ns) : nlohmann::json(nullptr);
  return j;
}

std::optional<double> parse_number(const std::string& s, bool& bad) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v) || v < 0) {
    bad = true;
    return std::nullopt;
  }
  return v;
}

nlohmann::json pick(const std::vector<float>& col, const std::vector<std::size_t>& rows) {
  auto a = nlohmann::json::array();
  for (auto i : rows) {
    float v = i < col.size() ? col[i] : std::nanf("");
    if (std::isfinite(v)) {
      a.push_back(v);
    } else {
      a.push_back(nullptr);
    }
  }
  return a;
}

}  // namespace

ApiReply api_runs(const std::string& db_path) {
  auto s = store::Store::open(db_path, store::OpenMode::read_only);
  if (!s) return store_error(s.error());
  auto runs = s->list_runs();
  if (!runs) return store_error(runs.error());
  auto a = nlohmann::json::array();
  for (const auto& r : *runs) a.push_back(run_json(r));
  return {200, text::json_dump(a)};
}

ApiReply api_run(const std::string& db_path, std::int64_t run_id) {
  auto s = store::Store::open(db_path, store::OpenMode::read_only);
  if (!s) return store_error(s.error());
  auto r = s->get_run(run_id);
  if (!r) return store_error(r.error());
  return {200, text::json_dump(run_json(*r))};
}

std::optional<SampleQuery> parse_sample_query(const std::string& from, const std::string& to,
                                              const std::string& step, std::string& error) {
  bool bad = false;
  SampleQuery q;
  q.from_s = parse_number(from, bad);
  q.to_s = parse_number(to, bad);
  q.step_s = parse_number(step, bad).value_or(0);
  if (bad) {
    error = "from, to and step are seconds since the run's start (numbers >= 0)";
    return std::nullopt;
  }
  return q;
}

ApiReply api_samples(const std::string& db_path, std::int64_t run_id, const SampleQuery& q) {
  auto s = store::Store::open(db_path, store::OpenMode::read_only);
  if (!s) return store_error(s.error());
  if (auto r = s->get_run(run_id); !r) return store_error(r.error());
  auto series = store::load_run_series(*s, run_id);
  if (!series) return store_error(series.error());
  const auto& t = series->t;
  double from = q.from_s.value_or(0);
  double to = q.to_s.value_or(t.empty() ? 0 : t.back());
  std::size_t in_range = 0;
  for (double x : t) in_range += (x >= from && x <= to) ? 1 : 0;
  double step = q.step_s;
  if (q.max_rows > 0 && in_range > q.max_rows)
    step = std::max(step, (to - from) / static_cast<double>(q.max_rows));
  std::vector<std::size_t> rows;
  double next = -1e300;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] < from || t[i] > to || t[i] < next) continue;
    rows.push_back(i);
    next = step > 0 ? t[i] + step : -1e300;
  }
  nlohmann::json j;
  auto tj = nlohmann::json::array();
  for (auto i : rows) tj.push_back(t[i]);
  j["run_id"] = run_id;
  j["t"] = std::move(tj);
  auto gpus = nlohmann::json::array();
  for (const auto& g : series->gpus) {
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"util_gpu_pct", pick(g.util_gpu_pct, rows)},
                    {"mem_used_mib", pick(g.mem_used_mib, rows)},
                    {"mem_total_mib", pick(g.mem_total_mib, rows)},
                    {"power_w", pick(g.power_w, rows)},
                    {"temp_c", pick(g.temp_c, rows)},
                    {"sm_clock_mhz", pick(g.sm_clock_mhz, rows)}});
  }
  j["gpus"] = std::move(gpus);
  j["host"] = {{"cpu_busy_pct", pick(series->host.cpu_busy_pct, rows)},
               {"mem_available_mib", pick(series->host.mem_available_mib, rows)},
               {"mem_total_mib", pick(series->host.mem_total_mib, rows)}};
  return {200, text::json_dump(j)};
}

ApiReply api_findings(const std::string& db_path, std::int64_t run_id) {
  auto s = store::Store::open(db_path, store::OpenMode::read_only);
  if (!s) return store_error(s.error());
  if (auto r = s->get_run(run_id); !r) return store_error(r.error());
  auto f = s->findings(run_id);
  if (!f) return store_error(f.error());
  return {200, text::json_dump(nlohmann::json(*f))};
}

ApiReply api_findings_l10n(const std::string& db_path, std::int64_t run_id) {
  auto s = store::Store::open(db_path, store::OpenMode::read_only);
  if (!s) return store_error(s.error());
  if (auto r = s->get_run(run_id); !r) return store_error(r.error());
  auto f = s->findings(run_id);  // with the stored l10n copy when it is in this process's language
  if (!f) return store_error(f.error());
  return {200, findings_l10n_json(*f)};
}

ApiReply api_events(const std::string& db_path, std::int64_t run_id) {
  auto s = store::Store::open(db_path, store::OpenMode::read_only);
  if (!s) return store_error(s.error());
  if (auto r = s->get_run(run_id); !r) return store_error(r.error());
  auto g = s->gpu_events(run_id);
  if (!g) return store_error(g.error());
  auto tr = s->train_events(run_id);
  if (!tr) return store_error(tr.error());
  nlohmann::json j;
  auto ga = nlohmann::json::array();
  for (const auto& e : *g) {
    ga.push_back({{"time_unix_ns", e.time_unix_ns},
                  {"gpu", e.gpu_index},
                  {"event_type", e.event_type},
                  {"xid", e.xid}});
  }
  auto ta = nlohmann::json::array();
  for (const auto& e : *tr) {
    nlohmann::json data = nlohmann::json::parse(e.json, nullptr, false);
    if (data.is_discarded()) data = e.json;
    ta.push_back({{"time_unix_ns", e.time_unix_ns}, {"kind", e.kind}, {"data", std::move(data)}});
  }
  j["gpu_events"] = std::move(ga);
  j["train_events"] = std::move(ta);
  return {200, text::json_dump(j)};
}

ApiReply api_report(const std::string& db_path, std::int64_t run_id) {
  auto s = store::Store::open(db_path, store::OpenMode::read_only);
  if (!s) return store_error(s.error());
  if (auto r = s->get_run(run_id); !r) return store_error(r.error());
  report::ReportOptions options;
  options.format = report::Format::html;
  auto html = report::render_report(*s, run_id, options);
  if (!html) return store_error(html.error());
  return {200, std::move(*html), "text/html; charset=utf-8"};
}

}  // namespace trainmon::serve
