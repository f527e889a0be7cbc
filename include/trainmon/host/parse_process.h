// SPDX-License-Identifier: Apache-2.0
// Pure parsers for the per-process files of /proc/PID (proc(5)): stat, status, io, cmdline, cgroup.
// They take the file's text (untrusted bytes) and never throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainmon {

/// The fields of /proc/PID/stat we use (field numbers as in proc(5)).
struct PidStat {
  std::uint32_t pid = 0;               ///< (1)
  std::string comm;                    ///< (2) without the parentheses; may hold spaces and ')'
  char state = '?';                    ///< (3) R S D Z T t X I ...
  std::uint32_t ppid = 0;              ///< (4)
  std::uint64_t utime_ticks = 0;       ///< (14) clock ticks (USER_HZ)
  std::uint64_t stime_ticks = 0;       ///< (15)
  std::int64_t num_threads = 0;        ///< (20)
  std::uint64_t start_time_ticks = 0;  ///< (22) clock ticks after boot
  std::uint64_t vsize_bytes = 0;       ///< (23)
  std::uint64_t rss_pages = 0;         ///< (24) resident pages (negative values read as 0)
  std::optional<unsigned> processor;   ///< (39) CPU last run on (absent before 2.2.8)
};
/// Parses /proc/PID/stat. The comm is found between the first '(' and the LAST ')' because it may
/// itself contain ") ". nullopt when the line is too short (fewer than 24 fields) or malformed.
std::optional<PidStat> parse_pid_stat(std::string_view text);

/// The fields of /proc/PID/status we use. Missing keys stay nullopt / empty (kernel threads have no
/// Vm* lines; NSpid exists since Linux 4.1).
struct PidStatus {
  std::optional<std::uint32_t> uid_real, uid_effective;  ///< "Uid:" first two fields
  std::optional<std::uint32_t> ppid;
  std::optional<char> state;
  std::optional<std::uint32_t> threads;
  std::optional<std::uint64_t> vm_rss_bytes, vm_size_bytes, rss_file_bytes, rss_shmem_bytes,
      vm_swap_bytes;                 ///< "kB" values × 1024
  std::vector<std::uint32_t> nspid;  ///< "NSpid:", outermost namespace first
};
/// Parses /proc/PID/status. Keys are matched exactly; unknown keys are ignored.
PidStatus parse_pid_status(std::string_view text);

/// /proc/PID/io (needs ptrace access: other users' processes give EACCES).
struct PidIo {
  std::optional<std::uint64_t> rchar, wchar, syscr, syscw;
  std::optional<std::uint64_t> read_bytes, write_bytes, cancelled_write_bytes;  ///< storage layer
};
PidIo parse_pid_io(std::string_view text);

/// Default cap on a displayed command line, bytes of UTF-8.
inline constexpr std::size_t kCmdlineMaxBytes = 4096;

/// Turns the raw bytes of /proc/PID/cmdline (arguments separated and terminated by NUL) into one
/// display line: trailing NUL padding trimmed, inner NULs and control bytes become spaces (a process
/// that rewrote its argv with spaces is shown as it wrote it), invalid UTF-8 bytes become U+FFFD,
/// and the result is cut at `max_bytes` on a character boundary. Empty for kernel threads and zombies.
std::string parse_cmdline(std::string_view raw, std::size_t max_bytes = kCmdlineMaxBytes);

/// The raw cmdline split into arguments (trailing NUL padding trimmed, each argument made valid
/// UTF-8). No cap: meant for short command lines (tests, matching a watched command).
std::vector<std::string> split_cmdline(std::string_view raw);

/// argv from the raw bytes of /proc/PID/cmdline, as psutil's Process.cmdline() gives it (what
/// gpustat shows): split at NULs, so an argument holding blanks or newlines stays one element. A
/// process that rewrote its argv as one text (setproctitle: no NUL terminator, or a single
/// NUL-terminated argument holding blanks) is split at blanks instead, as psutil does. Each argument
/// is made valid UTF-8 (U+FFFD); the arguments' bytes together are cut at `max_bytes` on a character
/// boundary (the rest dropped). Empty for kernel threads and zombies.
std::vector<std::string> parse_cmdline_args(std::string_view raw, std::size_t max_bytes = kCmdlineMaxBytes);

/// Replaces every invalid UTF-8 sequence of `bytes` with U+FFFD (one per maximal invalid subpart).
std::string sanitize_utf8(std::string_view bytes);

/// One line of /proc/PID/cgroup: "hierarchy-ID:controller-list:cgroup-path".
struct CgroupLine {
  unsigned hierarchy_id = 0;  ///< 0 for the cgroup v2 unified hierarchy
  std::string controllers;    ///< "memory", "cpu,cpuacct", "name=systemd"; empty for v2
  std::string path;           ///< "/system.slice/docker-<id>.scope"
};
/// Parses /proc/PID/cgroup; malformed lines are skipped.
std::vector<CgroupLine> parse_cgroup(std::string_view text);

/// The path a process is accounted under for `controller` ("memory", "cpu"): the v1 line whose
/// controller list holds it when present (v1 or hybrid), else the v2 "0::" line. nullopt when neither
/// is present.
std::optional<CgroupLine> controller_cgroup_line(const std::vector<CgroupLine>& lines,
                                                 std::string_view controller);
/// controller_cgroup_line(lines, "memory").
std::optional<CgroupLine> memory_cgroup_line(const std::vector<CgroupLine>& lines);

/// The container id in a cgroup path: the last run of exactly 64 hex digits bounded by non-hex
/// characters, as Docker ("/docker/<id>", "docker-<id>.scope"), containerd ("cri-containerd-<id>"),
/// CRI-O ("crio-<id>"), Podman ("libpod-<id>") and Kubernetes ("/kubepods/.../<id>") write it.
/// nullopt when the path holds no such id.
std::optional<std::string> container_id_from_cgroup(std::string_view path);

}  // namespace trainmon
