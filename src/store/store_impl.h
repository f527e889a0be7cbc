// SPDX-License-Identifier: Apache-2.0
// Store's private state, shared by the store_*.cpp files.
#pragma once

#include <string>

#include "store/sqlite_util.h"
#include "trainmon/store/store.h"

namespace trainmon::store {

struct Store::Impl {
  detail::DbHandle db;
  std::string path;
  bool read_only = false;
};

/// Apply every migration newer than the file's user_version, in one transaction (schema.cpp).
Expected<void> migrate(sqlite3* db);

}  // namespace trainmon::store
