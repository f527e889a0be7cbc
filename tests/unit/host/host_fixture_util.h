// SPDX-License-Identifier: Apache-2.0
// Helpers for host tests: fixture paths, a temp dir that removes itself, and lookup by pid.
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "trainmon/core/host_sample.h"
#include "trainmon/host/host_collector.h"

namespace trainmon::test {

#ifdef TRAINMON_FIXTURES_DIR  // defined for the unit tests, not for the benchmarks
inline std::string host_fixture(const std::string& name) {
  return std::string(TRAINMON_FIXTURES_DIR) + "/host/" + name;
}
#endif

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "trainmon-host-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Options that read the fixture tree under `root` (proc/, sys/), listing every process.
inline HostOptions fixture_options(const std::string& root) {
  HostOptions o;
  o.proc_root = root + "/proc";
  o.sys_root = root + "/sys";
  o.all_processes = true;
  return o;
}

/// Makes `dir`'s proc/sys/etc symlinks into fixture tree `target`, so that a test can switch a
/// collector from one tick's tree to the next.
inline void point_to(const std::string& dir, const std::string& target) {
  for (const char* sub : {"proc", "sys", "etc"}) {
    const std::string link = dir + "/" + sub;
    std::error_code ec;
    std::filesystem::remove(link, ec);
    std::filesystem::create_directory_symlink(target + "/" + sub, link);
  }
}

inline const ProcessSample* find_pid(const std::vector<ProcessSample>& ps, std::uint32_t pid) {
  const auto it = std::find_if(ps.begin(), ps.end(), [pid](const ProcessSample& p) { return p.pid == pid; });
  return it == ps.end() ? nullptr : &*it;
}

}  // namespace trainmon::test
