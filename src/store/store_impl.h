// SPDX-License-Identifier: Apache-2.0
// Store's private state, shared by the store_*.cpp files.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "store/sqlite_util.h"
#include "trainmon/store/store.h"

namespace trainmon::store {

struct Store::Impl {
  detail::DbHandle db;
  std::string path;
  bool read_only = false;
  int schema = 0;  ///< PRAGMA user_version once opened (and migrated, for writers)
  /// Statements the writer runs at every tick, prepared once per connection (preparing them each
  /// time was a tenth of a recorder's CPU). Keyed by the address of their SQL literal; destroyed
  /// before `db` (members are destroyed in reverse order).
  std::unordered_map<const char*, std::unique_ptr<detail::Stmt>> statements;

  /// The cached statement for `sql` (a string literal), to be used through StmtUse, which resets it
  /// and clears its bindings after each use. A statement that
  /// failed to prepare is prepared again on the next call (its step() returns the error).
  detail::Stmt& cached(const char* sql) {
    auto& s = statements[sql];
    if (!s || !s->ok()) s = std::make_unique<detail::Stmt>(db.get(), sql);
    return *s;  // StmtUse resets it after each use
  }
};

/// Resets a cached statement when it goes out of scope, so that it holds no read snapshot or
/// bound blob between ticks.
class StmtUse {
 public:
  explicit StmtUse(detail::Stmt& s) : s_(s) {}
  ~StmtUse() { s_.reset(); }
  StmtUse(const StmtUse&) = delete;
  StmtUse& operator=(const StmtUse&) = delete;
  detail::Stmt* operator->() const { return &s_; }
  detail::Stmt& operator*() const { return s_; }

 private:
  detail::Stmt& s_;
};

namespace detail {
/// The attribution columns of `series` (schema 5), comma-separated, in the order the two helpers use.
std::string attribution_columns();
/// Bind / read those 16 columns from 1-based parameter / 0-based column `first` on.
void bind_series_attribution(Stmt& q, int first, const ProcessAttribution& a);
ProcessAttribution read_series_attribution(const Stmt& q, int first);
}  // namespace detail

/// Apply every migration newer than the file's user_version, in one transaction (schema.cpp).
Expected<void> migrate(sqlite3* db);

}  // namespace trainmon::store
