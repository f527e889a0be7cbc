// SPDX-License-Identifier: Apache-2.0
#include "trainmon/report/report_file.h"

#include "trainmon/core/i18n.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "trainmon/core/private_files.h"

namespace trainmon::report {

std::string default_report_path(const std::string& db_path, std::int64_t run_id) {
  std::filesystem::path dir = std::filesystem::path(db_path).parent_path();
  if (dir.empty()) dir = ".";
  // Named after the store too: stores that share a directory have their own run 1, run 2, ...
  const std::string stem = std::filesystem::path(db_path).stem().string();
  return (dir / "reports" / fmt::format("{}-run-{}.html", stem.empty() ? "trainmon" : stem, run_id)).string();
}

namespace {

Error os_error(int err, const std::string& what) {
  return Error{ErrorDomain::os, err, "", fmt::format("{}: {}", what, std::strerror(err))};
}

}  // namespace

Expected<void> write_report_file(store::Store& store, std::int64_t run_id, const std::string& path,
                                 const ReportOptions& options, bool create_directory) {
  const std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path() && !create_directory &&
      !std::filesystem::is_directory(target.parent_path(), ec)) {
    return std::unexpected(Error{ErrorDomain::os, ENOENT, "ENOENT",
                                 i18n::trf("cannot write {}: directory {} does not exist (create it first)",
                                           path, target.parent_path().string())});
  }
  auto text = render_report(store, run_id, options);
  if (!text) return std::unexpected(text.error());
  if (target.has_parent_path() && create_directory) {
    std::filesystem::create_directories(target.parent_path(), ec);
    if (ec) return std::unexpected(os_error(ec.value(), "cannot create " + target.parent_path().string()));
  }
  // A fresh temporary name (O_EXCL | O_NOFOLLOW) and rename(2): a link another user planted in the
  // reports folder is replaced, never followed; `-o /dev/stdout` or a device is written into, never
  // replaced. Reports keep the mode a plain file would get (0666 & ~umask), or the existing file's.
  if (auto w = files::write_output_file(path, *text, files::default_file_mode()); !w) {
    return std::unexpected(w.error());
  }
  return {};
}

}  // namespace trainmon::report
