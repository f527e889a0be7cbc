// SPDX-License-Identifier: Apache-2.0
#include "file_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace trainmon::host_detail {

FileReader::FileReader() : buf_(new char[16384]), cap_(16384) {}

int FileReader::read(const char* path, std::size_t max_bytes) noexcept {
  len_ = 0;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return errno;
  return read_fd(fd, max_bytes, false);
}

int FileReader::read_at(int dirfd, const char* name, std::size_t max_bytes, bool single_shot) noexcept {
  len_ = 0;
  const int fd = ::openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return errno;
  return read_fd(fd, max_bytes, single_shot);
}

int FileReader::read_fd(int fd, std::size_t max_bytes, bool single_shot) noexcept {
  int err = 0;
  while (len_ < max_bytes) {
    if (len_ == cap_) {
      const std::size_t grown = cap_ * 2;
      std::unique_ptr<char[]> bigger(new (std::nothrow) char[grown]);
      if (!bigger) {
        err = ENOMEM;
        break;
      }
      std::memcpy(bigger.get(), buf_.get(), len_);
      buf_ = std::move(bigger);
      cap_ = grown;
    }
    std::size_t want = cap_ - len_;
    if (want > max_bytes - len_) want = max_bytes - len_;
    const ssize_t n = ::read(fd, buf_.get() + len_, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    if (n == 0) break;
    len_ += static_cast<std::size_t>(n);
    if (single_shot && static_cast<std::size_t>(n) < want) break;
  }
  ::close(fd);
  if (err != 0) len_ = 0;
  return err;
}

ReadStatus status_from_errno(int err) noexcept {
  switch (err) {
    case 0: return ReadStatus::ok;
    case EACCES:
    case EPERM: return ReadStatus::no_permission;
    case ENOENT:
    case ESRCH:
    case ENOTDIR: return ReadStatus::not_supported;
    default: return ReadStatus::failed;
  }
}

}  // namespace trainmon::host_detail
