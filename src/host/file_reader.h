// SPDX-License-Identifier: Apache-2.0
// FileReader: reads small /proc and /sys files with open/read/close into one reused buffer
// (no iostreams, no allocation once the buffer has grown). Not thread-safe: one per collector.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "trainmon/core/reading.h"

namespace trainmon::host_detail {

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
  std::string_view text() const noexcept { return {buf_.get(), len_}; }

 private:
  int read_fd(int fd, std::size_t max_bytes, bool single_shot) noexcept;
  std::unique_ptr<char[]> buf_;
  std::size_t cap_ = 0;
  std::size_t len_ = 0;
};

/// How an errno from reading a file maps to a Reading status: EACCES/EPERM → no_permission,
/// ENOENT/ESRCH/ENOTDIR → not_supported (the kernel or the process does not provide it), else failed.
ReadStatus status_from_errno(int err) noexcept;

}  // namespace trainmon::host_detail
