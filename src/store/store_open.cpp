// SPDX-License-Identifier: Apache-2.0
// Opening the store: damage detection before anything is written, pragmas, migrations.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "store/store_impl.h"

namespace trainmon::store {
namespace {

namespace fs = std::filesystem;

Error store_error(std::string_view name, std::string message, int code = 0) {
  return Error{ErrorDomain::store, code, std::string(name), std::move(message)};
}

// The 16-byte magic every SQLite 3 database file starts with.
bool has_sqlite_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[16] = {};
  in.read(head, sizeof head);
  return in.gcount() == 16 && std::memcmp(head, "SQLite format 3\0", 16) == 0;
}

/// SQLite result codes that say "you may not" rather than "this file is broken".
bool access_error(int rc) {
  return rc == SQLITE_READONLY || rc == SQLITE_CANTOPEN || rc == SQLITE_PERM || rc == SQLITE_AUTH;
}

Expected<void> check_integrity(sqlite3* db, const std::string& path) {
  detail::Stmt q(db, "PRAGMA quick_check");
  int rc = q.step();
  if (rc == SQLITE_ROW && q.text(0) == "ok") return {};
  std::string why = rc == SQLITE_ROW ? q.text(0) : std::string(sqlite3_errstr(rc));
  if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
    return std::unexpected(detail::sqlite_error(db, rc, fmt::format("checking the run store {}", path)));
  }
  if (access_error(rc)) {
    // A WAL store needs its -shm file even to read; another user's store in a directory we cannot
    // write has none for us. Not damage: say what is missing.
    return std::unexpected(store_error(
        kErrCannotCreate,
        fmt::format("cannot read the run store {} ({}): reading a WAL database needs write access to "
                    "its directory or existing {}-shm / -wal files; read it as its owner, or copy it",
                    path, why, path),
        rc));
  }
  return std::unexpected(store_error(
      kErrDamaged,
      fmt::format("the run store {} is damaged (PRAGMA quick_check: {}); it was left untouched: move it "
                  "aside or pass another --db",
                  path, why),
      rc));
}

/// Whether the SQLite file `db` is a trainmon run store, may become one, or belongs to someone else.
/// trainmon's schema is recognised by PRAGMA user_version > 0 (set by migrate) together with its
/// `runs` table, and application_id 0 (trainmon never sets one; another program that does is not
/// us). A file with user_version 0 and no table (an empty SQLite file) may become a store; one with
/// tables of its own (another program's database) is refused before anything is written, for readers
/// and writers alike. A reader of a table-less file gets kErrMissing: nothing is recorded there yet.
Expected<void> check_identity(sqlite3* db, const std::string& path, OpenMode mode) {
  auto one = [&](const char* sql) -> std::optional<std::int64_t> {
    detail::Stmt q(db, sql);
    if (q.step() != SQLITE_ROW) return std::nullopt;
    return q.i64(0);
  };
  const auto app_id = one("PRAGMA application_id");
  const auto version = one("PRAGMA user_version");
  const auto tables = one("SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view')");
  const auto runs = one("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'runs'");
  if (!app_id || !version || !tables || !runs) {
    return std::unexpected(
        detail::sqlite_error(db, SQLITE_ERROR, fmt::format("reading the run store {}", path)));
  }
  const bool foreign = *app_id != 0 || (*version > 0 && *runs == 0) || (*version == 0 && *tables > 0);
  if (foreign) {
    return std::unexpected(store_error(
        kErrDamaged,
        fmt::format("{} is not a trainmon run store (a SQLite database with {}); it was left "
                    "untouched: move it aside or pass another --db",
                    path, *tables > 0 ? "tables of another program" : "another program's application_id")));
  }
  if (*version == 0 && mode == OpenMode::read_only) {
    return std::unexpected(store_error(
        kErrMissing,
        fmt::format("no runs in {} yet (an empty database; `trainmon run --db {} -- CMD` records one)", path,
                    path)));
  }
  return {};
}

/// True when a writer may be using the store (a non-empty -wal file): then the main file alone is
/// not a consistent picture and must not be read as immutable.
bool wal_in_use(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path + "-wal", ec);
  return !ec && size > 0;
}

/// "file:" URI for `path` with `query` (sqlite3_open_v2 with SQLITE_OPEN_URI): %, ? and # escaped.
std::string file_uri(const std::string& path, std::string_view query) {
  std::string uri = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      uri += c;
    }
  }
  uri += '?';
  uri += query;
  return uri;
}

}  // namespace

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

const std::string& Store::path() const noexcept {
  return impl_->path;
}

Expected<Store> Store::open(const std::string& path, OpenMode mode, std::chrono::milliseconds busy_timeout) {
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  const bool non_empty = exists && fs::file_size(path, ec) > 0 && !ec;
  if (exists && fs::is_directory(path, ec)) {
    return std::unexpected(
        store_error(kErrCannotCreate, fmt::format("the run store path {} is a directory", path)));
  }
  if (non_empty && !has_sqlite_header(path)) {
    return std::unexpected(store_error(
        kErrDamaged, fmt::format("{} is not a trainmon run store (not a SQLite database); it was left "
                                 "untouched: move it aside or pass another --db",
                                 path)));
  }
  if (!exists && mode == OpenMode::read_only) {
    return std::unexpected(store_error(
        kErrMissing,
        fmt::format("no run store at {} (nothing recorded yet? `trainmon run -- CMD` records one)", path)));
  }
  if (!exists) {
    fs::path dir = fs::path(path).parent_path();
    if (!dir.empty()) {
      fs::create_directories(dir, ec);
      if (ec) {
        return std::unexpected(store_error(
            kErrCannotCreate,
            fmt::format("cannot create the run store directory {}: {}", dir.string(), ec.message()),
            ec.value()));
      }
    }
    // Probe write access to the directory ourselves: SQLite's own message ("unable to open
    // database file") does not say why.
    const std::string d = dir.empty() ? "." : dir.string();
    if (::faccessat(AT_FDCWD, d.c_str(), W_OK, AT_EACCESS) != 0) {
      int err = errno;
      return std::unexpected(
          store_error(kErrCannotCreate,
                      fmt::format("cannot create the run store {}: directory {} is not writable ({})", path,
                                  d, std::strerror(err)),
                      err));
    }
  }

  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->read_only = mode == OpenMode::read_only;
  sqlite3* raw = nullptr;
  int flags =
      mode == OpenMode::read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  impl->db.reset(raw);
  if (rc != SQLITE_OK) {
    auto e = detail::sqlite_error(raw, rc, fmt::format("cannot open the run store {}", path));
    if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT) e.name = kErrDamaged;
    if (rc == SQLITE_CANTOPEN || rc == SQLITE_READONLY || rc == SQLITE_PERM) e.name = kErrCannotCreate;
    return std::unexpected(e);
  }
  sqlite3_busy_timeout(raw, static_cast<int>(busy_timeout.count()));
  sqlite3_extended_result_codes(raw, 0);

  if (non_empty) {
    auto r = check_integrity(raw, path);
    if (!r && mode == OpenMode::read_only && r.error().name == kErrCannotCreate && !wal_in_use(path)) {
      // No writer (no WAL content) and no -shm we could create: the main file is the whole store,
      // so read it as immutable (SQLite then needs neither -shm nor locks).
      sqlite3* ro = nullptr;
      const std::string uri = file_uri(path, "immutable=1");
      if (sqlite3_open_v2(uri.c_str(), &ro, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                          nullptr) == SQLITE_OK) {
        impl->db.reset(ro);
        raw = ro;
        sqlite3_busy_timeout(raw, static_cast<int>(busy_timeout.count()));
        sqlite3_extended_result_codes(raw, 0);
        r = check_integrity(raw, path);
      } else {
        sqlite3_close(ro);
      }
    }
    if (!r) return std::unexpected(r.error());
  }
  if (auto r = check_identity(raw, path, mode); !r) return std::unexpected(r.error());
  if (mode == OpenMode::read_write) {
    if (!non_empty) {
      // 16 KiB pages: a GPU chunk (~2.4 KB) leaves little slack per page, where 4 KiB pages would hold
      // only one and waste ~40 % (bench/bench_store.cpp). Must precede the first table and WAL.
      if (auto r = detail::exec(raw, "PRAGMA page_size=16384", "setting the page size"); !r)
        return std::unexpected(r.error());
    }
    {
      detail::Stmt wal(raw, "PRAGMA journal_mode=WAL");
      int src = wal.step();
      if (src != SQLITE_ROW) {
        auto e = detail::sqlite_error(raw, src, fmt::format("cannot write to the run store {}", path));
        if (src == SQLITE_READONLY || src == SQLITE_CANTOPEN || src == SQLITE_PERM) e.name = kErrCannotCreate;
        return std::unexpected(e);
      }
    }
    if (auto r = detail::exec(raw, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON", "setting pragmas");
        !r)
      return std::unexpected(r.error());
    if (auto r = migrate(raw); !r) return std::unexpected(r.error());
  }
  {
    detail::Stmt v(raw, "PRAGMA user_version");
    if (v.step() == SQLITE_ROW) impl->schema = static_cast<int>(v.i64(0));
  }
  return Store(std::move(impl));
}

Expected<int> Store::schema_version() {
  detail::Stmt q(impl_->db.get(), "PRAGMA user_version");
  if (q.step() != SQLITE_ROW)
    return std::unexpected(detail::sqlite_error(impl_->db.get(), SQLITE_ERROR, "user_version"));
  return static_cast<int>(q.i64(0));
}

Expected<void> Store::begin() {
  StmtUse q(impl_->cached("BEGIN IMMEDIATE"));
  if (int rc = q->step(); rc != SQLITE_DONE)
    return std::unexpected(detail::sqlite_error(impl_->db.get(), rc, "starting a write"));
  return {};
}
Expected<void> Store::commit() {
  StmtUse q(impl_->cached("COMMIT"));
  if (int rc = q->step(); rc != SQLITE_DONE)
    return std::unexpected(detail::sqlite_error(impl_->db.get(), rc, "committing samples"));
  return {};
}
void Store::set_busy_timeout(std::chrono::milliseconds timeout) noexcept {
  sqlite3_busy_timeout(impl_->db.get(), static_cast<int>(timeout.count()));
}

Expected<void> Store::set_synchronous_full(bool full) {
  return detail::exec(impl_->db.get(), full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL",
                      "setting the sync mode");
}

void Store::rollback() noexcept {
  if (!sqlite3_get_autocommit(impl_->db.get())) (void)detail::exec(impl_->db.get(), "ROLLBACK", "rollback");
}

Expected<std::int64_t> Store::size_bytes() {
  detail::Stmt q(impl_->db.get(),
                 "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()");
  if (q.step() != SQLITE_ROW)
    return std::unexpected(detail::sqlite_error(impl_->db.get(), SQLITE_ERROR, "size"));
  return q.i64(0);
}

}  // namespace trainmon::store
