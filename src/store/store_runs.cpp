// SPDX-License-Identifier: Apache-2.0
// Runs: create, finish, list, resolve, delete.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "store/store_impl.h"
#include "trainmon/core/text_escape.h"

namespace trainmon::store {
namespace {

using detail::Stmt;

Error step_error(sqlite3* db, int rc, std::string_view what) {
  return detail::sqlite_error(db, rc, what);
}

constexpr std::string_view kRunColumns =
    "id, name, kind, command, cwd, user, host, start_ns, end_ns, status, exit_code, exit_signal, "
    "recorder_pid, interval_ms, summary, (SELECT count(*) FROM findings f WHERE f.run_id = runs.id), "
    "CASE WHEN end_ns IS NULL THEN (SELECT max(c.t1_ms) FROM series s JOIN chunks c ON c.series_id = s.id "
    "WHERE s.run_id = runs.id) END";

/// The findings of a running run still open: all but the live findings stored closed (`"open":
/// false`, Store::insert_findings); a row whose JSON does not parse counts as open (findings()
/// reports it). NULL for a finished run, whose findings are all open (finding_count): the JSON is
/// only read for the runs still running, not for every run of every listing.
constexpr std::string_view kOpenFindings =
    "CASE WHEN end_ns IS NULL THEN (SELECT count(*) FROM findings f WHERE f.run_id = runs.id AND "
    "(CASE WHEN json_valid(f.json) THEN json_extract(f.json, '$.open') END) IS NOT 0) END";

/// The run columns to select: kRunColumns, then boot_id and start_monotonic_ns (schema 3; an
/// older store read as is has neither), then the open findings.
std::string run_columns(int schema) {
  return fmt::format("{}, {}, {}", kRunColumns, schema >= 3 ? "boot_id, start_monotonic_ns" : "'', NULL",
                     kOpenFindings);
}

RunInfo read_run_row(const Stmt& q) {
  RunInfo r;
  r.id = q.i64(0);
  r.name = q.text(1);
  r.kind = q.text(2);
  auto cmd = nlohmann::json::parse(q.text(3), nullptr, false);
  if (cmd.is_array()) {
    for (const auto& a : cmd) {
      if (a.is_string()) r.command.push_back(a.get<std::string>());
    }
  }
  r.cwd = q.text(4);
  r.user = q.text(5);
  r.host = q.text(6);
  r.start_unix_ns = q.i64(7);
  r.end_unix_ns = q.opt_i64(8);
  r.status = q.text(9);
  if (auto v = q.opt_i64(10)) r.exit_code = static_cast<int>(*v);
  if (auto v = q.opt_i64(11)) r.exit_signal = static_cast<int>(*v);
  r.recorder_pid = q.i64(12);
  r.interval_ms = q.i64(13);
  r.summary_json = q.text(14);
  r.finding_count = q.i64(15);
  r.last_sample_unix_ms = q.opt_i64(16);
  r.boot_id = q.text(17);
  r.start_monotonic_ns = q.opt_i64(18);
  r.open_finding_count = q.opt_i64(19).value_or(r.finding_count);
  return r;
}

Expected<void> fill_details(sqlite3* db, int schema, RunInfo& run) {
  Stmt l(db, "SELECT key, value FROM labels WHERE run_id = ? ORDER BY key");
  l.bind(1, run.id);
  int rc;
  while ((rc = l.step()) == SQLITE_ROW) run.labels.emplace_back(l.text(0), l.text(1));
  if (rc != SQLITE_DONE) return std::unexpected(step_error(db, rc, "reading labels"));
  if (schema >= 4) {
    Stmt t(db, "SELECT name, value FROM run_thresholds WHERE run_id = ? ORDER BY name");
    t.bind(1, run.id);
    while ((rc = t.step()) == SQLITE_ROW) {
      const std::string text = t.text(1);
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      // A value that is no number (written by hand) is left out rather than guessed.
      if (!text.empty() && end == text.c_str() + text.size() && std::isfinite(v))
        run.thresholds.emplace_back(t.text(0), v);
    }
    if (rc != SQLITE_DONE) return std::unexpected(step_error(db, rc, "reading thresholds"));
  }
  Stmt g(db,
         "SELECT gpu_index, uuid, name, pci_bus_id, memory_total_bytes, power_limit_mw, used_by_job "
         "FROM gpus WHERE run_id = ? ORDER BY gpu_index");
  g.bind(1, run.id);
  while ((rc = g.step()) == SQLITE_ROW) {
    RunGpu gpu;
    gpu.index = static_cast<unsigned>(g.i64(0));
    gpu.uuid = g.text(1);
    gpu.name = g.text(2);
    gpu.pci_bus_id = g.text(3);
    gpu.memory_total_bytes = g.opt_i64(4);
    gpu.power_limit_mw = g.opt_i64(5);
    gpu.used_by_job = g.i64(6) != 0;
    run.gpus.push_back(std::move(gpu));
  }
  if (rc != SQLITE_DONE) return std::unexpected(step_error(db, rc, "reading GPUs"));
  return {};
}

std::string local_hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

}  // namespace

std::string effective_status(const RunInfo& run) {
  if (run.status != "running" || run.recorder_pid <= 0) return run.status;
  if (run.host != local_hostname()) return run.status;
  if (::kill(static_cast<pid_t>(run.recorder_pid), 0) == 0 || errno == EPERM) return run.status;
  return "lost";
}

Expected<std::int64_t> Store::create_run(const RunInfo& run) {
  sqlite3* db = impl_->db.get();
  Stmt q(db,
         "INSERT INTO runs (name, kind, command, cwd, user, host, start_ns, end_ns, status, exit_code, "
         "exit_signal, recorder_pid, interval_ms, summary, boot_id, start_monotonic_ns) "
         "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  // argv may be any bytes: invalid UTF-8 is stored as U+FFFD instead of throwing.
  q.bind(1, run.name).bind(2, run.kind).bind(3, text::json_dump(nlohmann::json(run.command)));
  q.bind(4, run.cwd).bind(5, run.user).bind(6, run.host).bind(7, run.start_unix_ns);
  q.bind(8, run.end_unix_ns).bind(9, run.status);
  q.bind(10, run.exit_code ? std::optional<std::int64_t>(*run.exit_code) : std::nullopt);
  q.bind(11, run.exit_signal ? std::optional<std::int64_t>(*run.exit_signal) : std::nullopt);
  q.bind(12, run.recorder_pid).bind(13, run.interval_ms).bind(14, run.summary_json);
  q.bind(15, run.boot_id).bind(16, run.start_monotonic_ns);
  if (int rc = q.step(); rc != SQLITE_DONE) return std::unexpected(step_error(db, rc, "creating the run"));
  const std::int64_t id = sqlite3_last_insert_rowid(db);
  Stmt l(db, "INSERT OR REPLACE INTO labels (run_id, key, value) VALUES (?,?,?)");
  for (const auto& [k, v] : run.labels) {
    l.reset();
    l.bind(1, id).bind(2, k).bind(3, v);
    if (int rc = l.step(); rc != SQLITE_DONE) return std::unexpected(step_error(db, rc, "storing labels"));
  }
  if (!run.thresholds.empty()) {
    Stmt t(db, "INSERT OR REPLACE INTO run_thresholds (run_id, name, value) VALUES (?,?,?)");
    for (const auto& [name, value] : run.thresholds) {
      t.reset();
      t.bind(1, id).bind(2, name).bind(3, fmt::format("{}", value));
      if (int rc = t.step(); rc != SQLITE_DONE)
        return std::unexpected(step_error(db, rc, "storing thresholds"));
    }
  }
  if (!run.gpus.empty()) {
    if (auto r = put_gpus(id, run.gpus); !r) return std::unexpected(r.error());
  }
  return id;
}

Expected<void> Store::put_gpus(std::int64_t run_id, const std::vector<RunGpu>& gpus) {
  sqlite3* db = impl_->db.get();
  Stmt q(db,
         "INSERT OR REPLACE INTO gpus (run_id, gpu_index, uuid, name, pci_bus_id, memory_total_bytes, "
         "power_limit_mw, used_by_job) VALUES (?,?,?,?,?,?,?,?)");
  for (const auto& g : gpus) {
    q.reset();
    q.bind(1, run_id).bind(2, static_cast<std::int64_t>(g.index)).bind(3, g.uuid).bind(4, g.name);
    q.bind(5, g.pci_bus_id).bind(6, g.memory_total_bytes).bind(7, g.power_limit_mw);
    q.bind(8, static_cast<std::int64_t>(g.used_by_job));
    if (int rc = q.step(); rc != SQLITE_DONE) return std::unexpected(step_error(db, rc, "storing GPUs"));
  }
  return {};
}

Expected<void> Store::finish_run(std::int64_t run_id, const RunEnd& end) {
  sqlite3* db = impl_->db.get();
  Stmt q(db,
         "UPDATE runs SET end_ns = ?, status = ?, exit_code = ?, exit_signal = ?, summary = ? WHERE id = ?");
  q.bind(1, end.end_unix_ns).bind(2, end.status);
  q.bind(3, end.exit_code ? std::optional<std::int64_t>(*end.exit_code) : std::nullopt);
  q.bind(4, end.exit_signal ? std::optional<std::int64_t>(*end.exit_signal) : std::nullopt);
  q.bind(5, end.summary_json).bind(6, run_id);
  if (int rc = q.step(); rc != SQLITE_DONE) return std::unexpected(step_error(db, rc, "finishing the run"));
  return {};
}

Expected<std::vector<RunInfo>> Store::list_runs() {
  sqlite3* db = impl_->db.get();
  Stmt q(db, fmt::format("SELECT {} FROM runs ORDER BY id DESC", run_columns(impl_->schema)));
  std::vector<RunInfo> out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) out.push_back(read_run_row(q));
  if (rc != SQLITE_DONE) return std::unexpected(step_error(db, rc, "listing runs"));
  for (auto& r : out) {
    if (auto d = fill_details(db, impl_->schema, r); !d) return std::unexpected(d.error());
    auto g = gaps(r.id);
    if (!g) return std::unexpected(g.error());
    r.gaps = std::move(*g);
  }
  return out;
}

Expected<RunInfo> Store::get_run(std::int64_t run_id) {
  sqlite3* db = impl_->db.get();
  Stmt q(db, fmt::format("SELECT {} FROM runs WHERE id = ?", run_columns(impl_->schema)));
  q.bind(1, run_id);
  int rc = q.step();
  if (rc == SQLITE_DONE)
    return std::unexpected(
        Error{ErrorDomain::store, 0, std::string(kErrNotFound), fmt::format("no run {}", run_id)});
  if (rc != SQLITE_ROW) return std::unexpected(step_error(db, rc, "reading the run"));
  RunInfo r = read_run_row(q);
  if (auto d = fill_details(db, impl_->schema, r); !d) return std::unexpected(d.error());
  auto g = gaps(run_id);
  if (!g) return std::unexpected(g.error());
  r.gaps = std::move(*g);
  return r;
}

Expected<std::int64_t> Store::resolve_run(std::string_view spec) {
  sqlite3* db = impl_->db.get();
  auto not_found = [&](std::string msg) {
    return std::unexpected(Error{ErrorDomain::store, 0, std::string(kErrNotFound), std::move(msg)});
  };
  if (spec == "last") {
    Stmt q(db, "SELECT max(id) FROM runs");
    if (q.step() == SQLITE_ROW && !q.is_null(0)) return q.i64(0);
    return not_found("no runs recorded yet");
  }
  std::int64_t id = 0;
  auto [p, ec] = std::from_chars(spec.data(), spec.data() + spec.size(), id);
  if (ec == std::errc() && p == spec.data() + spec.size()) {
    Stmt q(db, "SELECT id FROM runs WHERE id = ?");
    q.bind(1, id);
    if (q.step() == SQLITE_ROW) return id;
    // a numeric name is still a name: fall through
  }
  Stmt q(db, "SELECT id FROM runs WHERE name = ? ORDER BY id");
  q.bind(1, spec);
  std::vector<std::int64_t> ids;
  while (q.step() == SQLITE_ROW) ids.push_back(q.i64(0));
  if (ids.size() == 1) return ids[0];
  if (ids.empty()) return not_found(fmt::format("no run with id or name '{}' (see `trainmon runs`)", spec));
  return std::unexpected(
      Error{ErrorDomain::store, 0, std::string(kErrAmbiguous),
            fmt::format("the name '{}' matches runs {}; give the id", spec, fmt::join(ids, ", "))});
}

Expected<void> Store::delete_run(std::int64_t run_id) {
  sqlite3* db = impl_->db.get();
  if (auto r = begin(); !r) return r;
  // Children first: chunks do not reference runs directly.
  Stmt c(db, "DELETE FROM chunks WHERE series_id IN (SELECT id FROM series WHERE run_id = ?)");
  c.bind(1, run_id);
  if (int rc = c.step(); rc != SQLITE_DONE) {
    rollback();
    return std::unexpected(step_error(db, rc, "deleting samples"));
  }
  Stmt q(db, "DELETE FROM runs WHERE id = ?");
  q.bind(1, run_id);
  if (int rc = q.step(); rc != SQLITE_DONE) {
    rollback();
    return std::unexpected(step_error(db, rc, "deleting the run"));
  }
  if (sqlite3_changes(db) == 0) {
    rollback();
    return std::unexpected(
        Error{ErrorDomain::store, 0, std::string(kErrNotFound), fmt::format("no run {}", run_id)});
  }
  return commit();
}

}  // namespace trainmon::store
