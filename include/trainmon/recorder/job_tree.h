// SPDX-License-Identifier: Apache-2.0
// Which host processes belong to a watched job: the root(s) and every descendant, found from the
// parent pids in /proc/*/stat. The Sampler then reads only these pids in full.
//
// A full scan costs one open + read per process on the machine (hundreds to thousands on a training
// node), so ParentTable keeps the table between ticks and scans again only when a process may have
// appeared: the "last pid" field of /proc/loadavg (the most recently created pid, proc(5)) changed,
// or a root is missing from the table. Processes that exit need no scan: they drop out of the
// snapshot by themselves.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace trainmon::recorder {

/// The parent pid in the text of a /proc/PID/stat file (the field after the `(comm)`, which may hold
/// spaces and parentheses); nullopt when the text is malformed.
std::optional<std::uint32_t> parse_stat_ppid(std::string_view stat);

/// (pid, ppid) pairs of every process under `proc_root`. Processes that vanish while reading are
/// skipped.
std::vector<std::pair<std::uint32_t, std::uint32_t>> read_parent_pids(const std::string& proc_root);

/// `roots` and all their descendants in `parents`, sorted, without `exclude` (trainmon itself, when it
/// is a root as the job's subreaper) and without duplicates.
std::vector<std::uint32_t> descendants(std::span<const std::pair<std::uint32_t, std::uint32_t>> parents,
                                       std::span<const std::uint32_t> roots, std::uint32_t exclude = 0);

/// The last pid created on the system: the fifth field of /proc/loadavg ("0.20 0.18 0.12 1/80 11206").
/// nullopt when the file is missing or malformed (then every scan request is honoured).
std::optional<std::uint32_t> read_last_pid(const std::string& proc_root);

/// The (pid, ppid) table, scanned again only when needed (see the file comment).
class ParentTable {
 public:
  /// `min_rescan_ns`: the least time between two scans caused by new processes elsewhere on the
  /// machine (0: scan at every tick where a process appeared). When a process appeared and a root is
  /// missing from the table (a new GPU process), the scan runs at once regardless, unless the last
  /// scan already missed that root (a pid this /proc cannot show).
  ParentTable(std::string proc_root, std::int64_t min_rescan_ns);
  ~ParentTable();
  ParentTable(const ParentTable&) = delete;
  ParentTable& operator=(const ParentTable&) = delete;

  /// `roots` and their descendants (see descendants()), from a table refreshed first when needed.
  /// `now_ns`: a monotonic clock.
  std::vector<std::uint32_t> descendants_of(std::span<const std::uint32_t> roots, std::uint32_t exclude,
                                            std::int64_t now_ns);
  /// Full scans so far (for tests and benchmarks).
  std::uint64_t scans() const noexcept { return scans_; }

 private:
  bool needs_scan(std::span<const std::uint32_t> roots, std::int64_t now_ns,
                  std::optional<std::uint32_t> last);
  bool in_table(std::uint32_t pid) const;
  std::optional<std::uint32_t> last_pid();

  std::string proc_root_;
  std::int64_t min_rescan_ns_;
  int loadavg_fd_ = -1;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> table_;  // sorted by pid
  std::vector<std::uint32_t> unseen_;                           // roots the last scan did not find
  std::optional<std::uint32_t> last_pid_;                       // at the last scan
  std::int64_t scanned_at_ns_ = 0;
  std::vector<std::uint32_t> memo_roots_, memo_;  // the last answer, for the same table and roots
  std::uint32_t memo_exclude_ = 0;
  std::uint64_t scans_ = 0;
};

}  // namespace trainmon::recorder
