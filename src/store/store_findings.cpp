// SPDX-License-Identifier: Apache-2.0
// The findings table: what the diagnosis found in a run (docs/diagnosis.md), one JSON per row.
#include <cmath>

#include "store/store_impl.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"

namespace trainmon::store {

using detail::Stmt;

Expected<void> Store::insert_findings(std::int64_t run_id, const std::vector<diagnose::Finding>& findings,
                                      const std::vector<bool>& open) {
  sqlite3* db = impl_->db.get();
  std::int64_t start_ns = 0;
  {
    Stmt q(db, "SELECT start_ns FROM runs WHERE id = ?");
    q.bind(1, run_id);
    const int rc = q.step();
    if (rc != SQLITE_ROW) return std::unexpected(detail::sqlite_error(db, rc, "writing findings"));
    start_ns = q.i64(0);
  }
  if (auto r = detail::exec(db, "SAVEPOINT findings", "writing findings"); !r) return r;
  auto fail = [&](Error e) -> Expected<void> {
    (void)detail::exec(db, "ROLLBACK TO findings", "rollback");
    (void)detail::exec(db, "RELEASE findings", "rollback");
    return std::unexpected(std::move(e));
  };
  {
    Stmt del(db, "DELETE FROM findings WHERE run_id = ?");
    del.bind(1, run_id);
    if (int rc = del.step(); rc != SQLITE_DONE) return fail(detail::sqlite_error(db, rc, "writing findings"));
  }
  Stmt q(db, "INSERT INTO findings (run_id, code, severity, t0_ns, t1_ns, json) VALUES (?,?,?,?,?,?)");
  auto ns = [start_ns](double s) { return start_ns + static_cast<std::int64_t>(std::llround(s * 1e9)); };
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const auto& f = findings[i];
    q.reset();
    nlohmann::json j = f;
    if (i < open.size() && !open[i]) j["open"] = false;  // a live finding that closed (runs counts the open)
    // The text in the recorder's language too, for the views of a reader in that language (the
    // report); what JSON readers get (to_json) stays English.
    if (!f.evidence_local.empty() || !f.advice_local.empty())
      j["l10n"] = {{"lang", i18n::language()}, {"evidence", f.evidence_local}, {"advice", f.advice_local}};
    q.bind(1, run_id).bind(2, f.code).bind(3, diagnose::severity_name(f.severity));
    q.bind(4, ns(f.start_s)).bind(5, ns(f.end_s)).bind(6, text::json_dump(j));
    if (int rc = q.step(); rc != SQLITE_DONE) return fail(detail::sqlite_error(db, rc, "writing findings"));
  }
  return detail::exec(db, "RELEASE findings", "writing findings");
}

Expected<std::vector<diagnose::Finding>> Store::findings(std::int64_t run_id) {
  sqlite3* db = impl_->db.get();
  Stmt q(db, "SELECT json FROM findings WHERE run_id = ? ORDER BY id");
  q.bind(1, run_id);
  std::vector<diagnose::Finding> out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    try {
      const auto j = nlohmann::json::parse(q.text(0));
      auto& f = out.emplace_back(j.get<diagnose::Finding>());
      if (const auto l = j.find("l10n"); l != j.end() && l->is_object() && !i18n::language().empty() &&
                                         l->value("lang", std::string()) == i18n::language()) {
        f.evidence_local = l->value("evidence", std::string());
        f.advice_local = l->value("advice", std::string());
      }
    } catch (const nlohmann::json::exception& e) {
      return std::unexpected(Error{ErrorDomain::store, 0, std::string(kErrDamaged),
                                   std::string("a stored finding is not valid: ") + e.what()});
    }
  }
  if (rc != SQLITE_DONE) return std::unexpected(detail::sqlite_error(db, rc, "reading findings"));
  return out;
}

}  // namespace trainmon::store
