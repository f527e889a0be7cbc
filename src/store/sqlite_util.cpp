// SPDX-License-Identifier: Apache-2.0
#include "store/sqlite_util.h"

#include <fmt/format.h>

namespace trainmon::store::detail {

Error sqlite_error(sqlite3* db, int rc, std::string_view what) {
  std::string detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return Error{ErrorDomain::store, rc, sqlite3_errstr(rc), fmt::format("{}: {}", what, detail)};
}

Expected<void> exec(sqlite3* db, std::string_view sql, std::string_view what) {
  std::string s(sql);
  char* msg = nullptr;
  int rc = sqlite3_exec(db, s.c_str(), nullptr, nullptr, &msg);
  if (msg) sqlite3_free(msg);
  if (rc != SQLITE_OK) return std::unexpected(sqlite_error(db, rc, what));
  return {};
}

Stmt::Stmt(sqlite3* db, std::string_view sql) {
  prepare_rc_ = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  if (prepare_rc_ != SQLITE_OK) stmt_ = nullptr;
}
Stmt::~Stmt() {
  sqlite3_finalize(stmt_);
}

Stmt& Stmt::bind(int i, std::int64_t v) {
  sqlite3_bind_int64(stmt_, i, v);
  return *this;
}
Stmt& Stmt::bind(int i, std::string_view v) {
  sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::bind_blob(int i, std::string_view v) {
  sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::bind_blob_static(int i, std::string_view v) {
  sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  return *this;
}
Stmt& Stmt::bind_f64(int i, double v) {
  sqlite3_bind_double(stmt_, i, v);
  return *this;
}
double Stmt::f64(int col) const {
  return sqlite3_column_double(stmt_, col);
}
Stmt& Stmt::bind_null(int i) {
  sqlite3_bind_null(stmt_, i);
  return *this;
}
int Stmt::step() {
  return stmt_ ? sqlite3_step(stmt_) : prepare_rc_;
}
void Stmt::reset() {
  if (stmt_ == nullptr) return;
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}
bool Stmt::is_null(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}
std::int64_t Stmt::i64(int col) const {
  return sqlite3_column_int64(stmt_, col);
}
std::optional<std::int64_t> Stmt::opt_i64(int col) const {
  if (is_null(col)) return std::nullopt;
  return i64(col);
}
std::string Stmt::text(int col) const {
  const auto* p = sqlite3_column_text(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, col)) : std::string();
}
std::string_view Stmt::blob(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  return p ? std::string_view(static_cast<const char*>(p), sqlite3_column_bytes(stmt_, col))
           : std::string_view();
}

}  // namespace trainmon::store::detail
