// SPDX-License-Identifier: Apache-2.0
// Helpers for the store tests: a temporary directory and a Snapshot-like GPU sample.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace trainmon::store::testing {

/// A fresh directory under $TMPDIR, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "trainmon-store-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace trainmon::store::testing
