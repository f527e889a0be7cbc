// SPDX-License-Identifier: Apache-2.0
#include "trainmon/report/report_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

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
                                 fmt::format("cannot write {}: directory {} does not exist (create it first)",
                                             path, target.parent_path().string())});
  }
  auto text = render_report(store, run_id, options);
  if (!text) return std::unexpected(text.error());
  if (target.has_parent_path() && create_directory) {
    std::filesystem::create_directories(target.parent_path(), ec);
    if (ec) return std::unexpected(os_error(ec.value(), "cannot create " + target.parent_path().string()));
  }
  const std::string tmp = fmt::format("{}.tmp{}", path, ::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return std::unexpected(os_error(errno, "cannot write " + tmp));
  const bool ok = std::fwrite(text->data(), 1, text->size(), f) == text->size();
  const int write_err = errno;
  if (std::fclose(f) != 0 || !ok) {
    const int err = ok ? errno : write_err;
    std::remove(tmp.c_str());
    return std::unexpected(os_error(err, "cannot write " + tmp));
  }
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return std::unexpected(os_error(ec.value(), "cannot write " + path));
  }
  return {};
}

}  // namespace trainmon::report
