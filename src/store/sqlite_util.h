// SPDX-License-Identifier: Apache-2.0
// Thin RAII helpers over the SQLite C API, private to src/store/. Every failure becomes an Error
// whose name is SQLite's own (sqlite3_errstr) and whose message says what we were doing.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "trainmon/core/error.h"

namespace trainmon::store::detail {

struct DbCloser {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
using DbHandle = std::unique_ptr<sqlite3, DbCloser>;

/// An Error for SQLite result `rc` on `db` while doing `what`.
Error sqlite_error(sqlite3* db, int rc, std::string_view what);

/// Run SQL without results (may hold several statements).
Expected<void> exec(sqlite3* db, std::string_view sql, std::string_view what);

/// A prepared statement; bind with 1-based indexes, step until done.
class Stmt {
 public:
  Stmt(sqlite3* db, std::string_view sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const noexcept { return stmt_ != nullptr; }
  int prepare_rc() const noexcept { return prepare_rc_; }
  Stmt& bind(int i, std::int64_t v);
  Stmt& bind(int i, std::string_view v);
  Stmt& bind_blob(int i, std::string_view v);
  /// Binds without copying: `v` must stay alive and unchanged until the statement is reset.
  Stmt& bind_blob_static(int i, std::string_view v);
  Stmt& bind_null(int i);
  Stmt& bind_f64(int i, double v);
  Stmt& bind(int i, std::optional<std::int64_t> v) { return v ? bind(i, *v) : bind_null(i); }
  /// SQLITE_ROW, SQLITE_DONE or an error code.
  int step();
  void reset();
  bool is_null(int col) const;
  std::int64_t i64(int col) const;
  std::optional<std::int64_t> opt_i64(int col) const;
  double f64(int col) const;
  std::string text(int col) const;
  std::string_view blob(int col) const;
  sqlite3_stmt* get() const noexcept { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int prepare_rc_ = SQLITE_OK;
};

}  // namespace trainmon::store::detail
