// SPDX-License-Identifier: Apache-2.0
// Which host processes belong to a watched job: the root(s) and every descendant, found each tick
// from the parent pids in /proc/*/stat (cheap: one small read per process). The Sampler then reads
// only these pids in full.
#pragma once

#include <cstdint>
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

}  // namespace trainmon::recorder
