// SPDX-License-Identifier: Apache-2.0
// FileReader: reads small /proc and /sys files with open/read/close into one reused buffer
// (no iostreams, no allocation once the buffer has grown). Files read on every tick can instead be
// kept open (KeptFile) and read again with pread(2) from offset 0: procfs and sysfs generate their
// text anew on such a read, so this saves the path lookup, open and close (btop and htop do the same).
// Not thread-safe: one per collector.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "trainmon/core/reading.h"

namespace trainmon::host_detail {

/// One descriptor kept open across ticks for FileReader::read_kept. Kept only when the file is on
/// procfs or sysfs (a regular file, say in a fixture tree under --proc-root, may be replaced between
/// two reads and is opened on every read). Closes its descriptor when destroyed.
class KeptFile {
 public:
  KeptFile() = default;
  ~KeptFile() { reset(); }
  KeptFile(const KeptFile&) = delete;
  KeptFile& operator=(const KeptFile&) = delete;
  KeptFile(KeptFile&& o) noexcept : fd_(o.fd_), kind_(o.kind_) { o.fd_ = -1; }
  KeptFile& operator=(KeptFile&& o) noexcept;
  /// Closes the descriptor: the next read opens the path again (a path that changed, say).
  void reset() noexcept;
  [[nodiscard]] bool is_open() const noexcept { return fd_ >= 0; }

 private:
  friend class FileReader;
  enum class Kind : std::uint8_t { unknown, keep, reopen };
  int fd_ = -1;
  Kind kind_ = Kind::unknown;  ///< whether the file system regenerates files on read (learnt at first open)
};

class FileReader {
 public:
  FileReader();
  /// Reads the whole file at `path` (at most `max_bytes`) into the buffer. Returns 0 on success, else
  /// the errno of the failed open/read. text() is empty after a failure.
  int read(const char* path, std::size_t max_bytes = 1 << 20) noexcept;
  int read(const std::string& path, std::size_t max_bytes = 1 << 20) noexcept {
    return read(path.c_str(), max_bytes);
  }
  /// Same, for `name` relative to the directory descriptor `dirfd` (openat): one path component to
  /// resolve instead of the whole path, and every file of one /proc/PID read from the same process.
  /// `single_shot`: the file is produced whole by one read (proc's single_open seq_files such as
  /// /proc/PID/stat, status, io), so a short read is EOF and the extra read(2) returning 0 is skipped.
  int read_at(int dirfd, const char* name, std::size_t max_bytes = 1 << 20,
              bool single_shot = false) noexcept;
  /// Same as read(path), through `kept`: the first read opens `path` and keeps the descriptor when
  /// the file is on procfs or sysfs; later reads pread(2) it from offset 0 (one system call). A kept
  /// descriptor that fails (a sysfs device removed, ENODEV) is closed and `path` opened once more.
  /// `single_shot` as for read_at (only for files produced by one show(): single_open proc files,
  /// sysfs attributes; never for /proc/net/dev, /proc/diskstats or /proc/cpuinfo, whose reads stop
  /// at every page of records).
  int read_kept(KeptFile& kept, const char* path, std::size_t max_bytes = 1 << 20,
                bool single_shot = false) noexcept;
  int read_kept(KeptFile& kept, const std::string& path, std::size_t max_bytes = 1 << 20,
                bool single_shot = false) noexcept {
    return read_kept(kept, path.c_str(), max_bytes, single_shot);
  }
  /// Reads the open descriptor `fd` from offset 0 (pread) without closing it; 0 or an errno.
  int pread_fd(int fd, std::size_t max_bytes, bool single_shot) noexcept;
  /// Opens `name` relative to `dirfd` and reads it like read_at, but leaves the descriptor open in
  /// `fd_out` on success (-1 on failure), for pread_fd on later ticks.
  int read_at_keep(int dirfd, const char* name, std::size_t max_bytes, bool single_shot,
                   int& fd_out) noexcept;
  std::string_view text() const noexcept { return {buf_.get(), len_}; }

 private:
  int read_fd(int fd, std::size_t max_bytes, bool single_shot) noexcept;
  int fill(int fd, std::size_t max_bytes, bool single_shot, bool positional) noexcept;
  bool grow() noexcept;
  std::unique_ptr<char[]> buf_;
  std::size_t cap_ = 0;
  std::size_t len_ = 0;
};

/// How an errno from reading a file maps to a Reading status: EACCES/EPERM → no_permission,
/// ENOENT/ESRCH/ENOTDIR → not_supported (the kernel or the process does not provide it), else failed.
ReadStatus status_from_errno(int err) noexcept;

}  // namespace trainmon::host_detail
