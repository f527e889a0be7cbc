// SPDX-License-Identifier: Apache-2.0
#include "report/report_processes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "trainmon/export/processes_unknown.h"
#include "trainmon/store/series_fields.h"

namespace trainmon::report {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

struct Row {
  std::uint32_t pid = 0;
  std::string comm, cmdline, user;
  bool in_job = false;
  /// "visible" (a local process), "unknown" (a GPU process in a store without the column), or for
  /// a GPU process the join never matched to a local process "not_visible" / "exited".
  std::string host_visibility = "visible";
  std::optional<double> peak_rss_mib, cpu_time_s, peak_gpu_mem_mib;
  std::set<unsigned> gpus;
};

/// The largest value of column `col` over every chunk of a series (aggregated chunks: their max
/// columns), scaled back by `scale`.
Expected<std::optional<double>> column_max(store::Store& st, std::int64_t series_id, std::size_t col,
                                           double scale) {
  std::optional<std::int64_t> best;
  auto r = st.read_series(series_id, [&](const store::Chunk& c, bool aggregated) {
    const std::size_t cols = aggregated ? c.columns / 3 : c.columns;
    const std::size_t at = aggregated ? 2 * cols + col : col;
    if (col >= cols || at >= c.columns) return;
    for (std::size_t row = 0; row < c.rows(); ++row) {
      const auto v = c.at(row, at);
      if (v != store::kNull && (!best || v > *best)) best = v;
    }
  });
  if (!r) return std::unexpected(r.error());
  if (!best) return std::optional<double>{};
  return std::optional<double>(static_cast<double>(*best) / scale);
}

/// How the join saw a GPU process series over the run: whether any row matched it to the local
/// process with its pid (visible or zombie), else whether any row found it exited. Aggregated chunks
/// keep [mean, min, max] per column: their min and max are the values looked at.
struct SeriesVisibility {
  bool joined = false;
  bool exited = false;
  bool known = false;  ///< some row had a value (stores before the column: none)
};
Expected<SeriesVisibility> series_visibility(store::Store& st, std::int64_t series_id, std::size_t col) {
  SeriesVisibility out;
  const auto look = [&](std::int64_t v) {
    if (v == store::kNull || v < 0 || v > static_cast<std::int64_t>(HostVisibility::exited)) return;
    const auto h = static_cast<HostVisibility>(v);
    if (h == HostVisibility::unknown) return;
    out.known = true;
    out.joined = out.joined || joined_to_host(h);
    out.exited = out.exited || h == HostVisibility::exited;
  };
  auto r = st.read_series(series_id, [&](const store::Chunk& c, bool aggregated) {
    const std::size_t cols = aggregated ? c.columns / 3 : c.columns;
    if (col >= cols) return;
    for (std::size_t row = 0; row < c.rows(); ++row) {
      if (aggregated) {
        look(c.at(row, cols + col));
        look(c.at(row, 2 * cols + col));
      } else {
        look(c.at(row, col));
      }
    }
  });
  if (!r) return std::unexpected(r.error());
  return out;
}

nlohmann::json opt(const std::optional<double>& v) {
  return v ? nlohmann::json(std::round(*v * 100.0) / 100.0) : nlohmann::json(nullptr);
}

}  // namespace

Expected<nlohmann::json> process_table(store::Store& st, std::int64_t run_id, std::size_t limit) {
  auto series = st.list_series(run_id);
  if (!series) return std::unexpected(series.error());
  using store::SeriesKind;
  const auto rss = *store::field_index(SeriesKind::process, "rss_bytes");
  const auto cpu = *store::field_index(SeriesKind::process, "cpu_time_s");
  const auto gmem = *store::field_index(SeriesKind::gpu_process, "used_memory_bytes");
  const auto gvis = *store::field_index(SeriesKind::gpu_process, "host_visibility");
  const double cpu_scale = store::fields_of(SeriesKind::process)[cpu].scale;

  std::vector<Row> rows;
  std::multimap<std::uint32_t, std::size_t> by_pid;
  std::map<std::uint32_t, std::size_t> unmatched;  ///< GPU processes without a local process: their row
  for (const auto& s : *series) {
    if (s.kind != SeriesKind::process || !s.pid) continue;
    Row r;
    r.pid = *s.pid;
    r.comm = s.comm;
    r.cmdline = s.cmdline;
    r.user = s.user;
    r.in_job = s.in_job;
    auto m = column_max(st, s.id, rss, kMiB);
    if (!m) return std::unexpected(m.error());
    r.peak_rss_mib = *m;
    auto c = column_max(st, s.id, cpu, cpu_scale);
    if (!c) return std::unexpected(c.error());
    r.cpu_time_s = *c;
    by_pid.emplace(r.pid, rows.size());
    rows.push_back(std::move(r));
  }
  for (const auto& s : *series) {
    if (s.kind != SeriesKind::gpu_process || !s.pid) continue;
    auto m = column_max(st, s.id, gmem, kMiB);
    if (!m) return std::unexpected(m.error());
    auto vis = series_visibility(st, s.id, gvis);
    if (!vis) return std::unexpected(vis.error());
    // Only a GPU process the join matched to the local process is that process's row: a number of
    // another PID namespace (or of an exited process) is never given the local user, command or RSS.
    const bool joined = vis->joined || !vis->known;
    auto [lo, hi] = joined ? by_pid.equal_range(*s.pid) : std::pair{by_pid.end(), by_pid.end()};
    if (!joined) {
      const auto [at, fresh] = unmatched.try_emplace(*s.pid, rows.size());  // once per pid (several GPUs)
      if (fresh) {
        Row row;
        row.pid = *s.pid;
        row.comm = s.comm;
        row.host_visibility = "not_visible";
        rows.push_back(std::move(row));
      }
      Row* r = &rows[at->second];
      if (vis->exited) r->host_visibility = "exited";
      if (s.gpu_index) r->gpus.insert(*s.gpu_index);
      if (*m && (!r->peak_gpu_mem_mib || **m > *r->peak_gpu_mem_mib)) r->peak_gpu_mem_mib = *m;
      continue;
    }
    if (lo == hi) {  // on a GPU, never seen as a process of the job (another user's, a ghost)
      Row r;
      r.pid = *s.pid;
      r.host_visibility = vis->known ? "visible" : "unknown";
      r.comm = s.comm;
      r.cmdline = s.cmdline;
      r.user = s.user;
      r.in_job = s.in_job;
      lo = by_pid.emplace(r.pid, rows.size());
      hi = std::next(lo);
      rows.push_back(std::move(r));
    }
    for (auto it = lo; it != hi; ++it) {
      Row& r = rows[it->second];
      if (s.gpu_index) r.gpus.insert(*s.gpu_index);
      if (*m && (!r.peak_gpu_mem_mib || **m > *r.peak_gpu_mem_mib)) r.peak_gpu_mem_mib = *m;
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.in_job != b.in_job) return a.in_job;
    const double ga = a.peak_gpu_mem_mib.value_or(-1), gb = b.peak_gpu_mem_mib.value_or(-1);
    if (ga != gb) return ga > gb;
    return a.peak_rss_mib.value_or(-1) > b.peak_rss_mib.value_or(-1);
  });
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < rows.size() && i < limit; ++i) {
    const Row& r = rows[i];
    out.push_back({{"pid", r.pid},
                   {"host_visibility", r.host_visibility},
                   {"comm", r.comm},
                   {"cmdline", r.cmdline},
                   {"user", r.user},
                   {"in_job", r.in_job},
                   {"peak_rss_mib", opt(r.peak_rss_mib)},
                   {"cpu_time_s", opt(r.cpu_time_s)},
                   {"peak_gpu_mem_mib", opt(r.peak_gpu_mem_mib)},
                   {"gpus", r.gpus}});
  }
  return out;
}

Expected<nlohmann::json> processes_unknown(store::Store& st, std::int64_t run_id) {
  auto series = st.list_series(run_id);
  if (!series) return std::unexpected(series.error());
  using store::SeriesKind;
  const auto col = store::field_index(SeriesKind::gpu, "processes_unknown_nvml_code");
  std::map<unsigned, std::tuple<std::int64_t, std::int64_t, std::int64_t>> by_gpu;  // unknown, all, last code
  for (const auto& s : *series) {
    if (s.kind != SeriesKind::gpu || !s.gpu_index || !col) continue;
    auto& [unknown, all, last] = by_gpu[*s.gpu_index];
    auto r = st.read_series(s.id, [&](const store::Chunk& c, bool aggregated) {
      const std::size_t cols = aggregated ? c.columns / 3 : c.columns;
      const std::size_t at = aggregated ? 2 * cols + *col : *col;  // aggregated: the max column
      for (std::size_t row = 0; row < c.rows(); ++row) {
        ++all;
        if (*col >= cols || at >= c.columns) continue;  // written before the column existed
        const auto v = c.at(row, at);
        if (v == store::kNull) continue;
        ++unknown;
        last = v;
      }
    });
    if (!r) return std::unexpected(r.error());
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [gpu, t] : by_gpu) {
    const auto& [unknown, all, last] = t;
    if (unknown == 0) continue;
    const int code = static_cast<int>(last);
    const std::string why = exp::processes_unknown_reason(Reading<unsigned>::fail(ReadStatus::failed, code));
    out.push_back({{"gpu", gpu}, {"samples_unknown", unknown}, {"samples", all}, {"reason", why}});
  }
  return out;
}

}  // namespace trainmon::report
