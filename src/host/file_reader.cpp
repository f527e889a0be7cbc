// SPDX-License-Identifier: Apache-2.0
#include "file_reader.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
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

bool FileReader::grow() noexcept {
  const std::size_t grown = cap_ * 2;
  std::unique_ptr<char[]> bigger(new (std::nothrow) char[grown]);
  if (!bigger) return false;
  std::memcpy(bigger.get(), buf_.get(), len_);
  buf_ = std::move(bigger);
  cap_ = grown;
  return true;
}

int FileReader::pread_fd(int fd, std::size_t max_bytes, bool single_shot) noexcept {
  return fill(fd, max_bytes, single_shot, true);
}

int FileReader::fill(int fd, std::size_t max_bytes, bool single_shot, bool positional) noexcept {
  // pread from offset 0, then from the end of what was read: a seq_file restarts at offset 0 and
  // continues where the previous read stopped, as with read(2).
  len_ = 0;
  int err = 0;
  while (len_ < max_bytes) {
    if (len_ == cap_ && !grow()) {
      err = ENOMEM;
      break;
    }
    std::size_t want = cap_ - len_;
    if (want > max_bytes - len_) want = max_bytes - len_;
    const ssize_t n = positional ? ::pread(fd, buf_.get() + len_, want, static_cast<off_t>(len_))
                                 : ::read(fd, buf_.get() + len_, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    if (n == 0) break;
    len_ += static_cast<std::size_t>(n);
    if (single_shot && static_cast<std::size_t>(n) < want) break;
  }
  if (err != 0) len_ = 0;
  return err;
}

int FileReader::read_fd(int fd, std::size_t max_bytes, bool single_shot) noexcept {
  const int err = fill(fd, max_bytes, single_shot, false);
  ::close(fd);
  return err;
}

int FileReader::read_at_keep(int dirfd, const char* name, std::size_t max_bytes, bool single_shot,
                             int& fd_out) noexcept {
  len_ = 0;
  fd_out = -1;
  const int fd = ::openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return errno;
  const int err = pread_fd(fd, max_bytes, single_shot);
  if (err != 0) {
    ::close(fd);
    return err;
  }
  fd_out = fd;
  return 0;
}

KeptFile& KeptFile::operator=(KeptFile&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.fd_;
    kind_ = o.kind_;
    o.fd_ = -1;
  }
  return *this;
}

void KeptFile::reset() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  kind_ = Kind::unknown;
}

int FileReader::read_kept(KeptFile& kept, const char* path, std::size_t max_bytes,
                          bool single_shot) noexcept {
  if (kept.fd_ >= 0) {
    if (pread_fd(kept.fd_, max_bytes, single_shot) == 0) return 0;
    ::close(kept.fd_);  // gone or broken: open the path again, once
    kept.fd_ = -1;
  }
  len_ = 0;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return errno;
  if (kept.kind_ == KeptFile::Kind::unknown) {
    struct statfs fs {};
    const bool generated =
        ::fstatfs(fd, &fs) == 0 && (static_cast<unsigned long>(fs.f_type) == PROC_SUPER_MAGIC ||
                                    static_cast<unsigned long>(fs.f_type) == SYSFS_MAGIC);
    kept.kind_ = generated ? KeptFile::Kind::keep : KeptFile::Kind::reopen;
  }
  int err = pread_fd(fd, max_bytes, single_shot);
  if (err == ESPIPE) {  // no positional reads on this file: read it, and open it again every time
    kept.kind_ = KeptFile::Kind::reopen;
    err = fill(fd, max_bytes, single_shot, false);
  }
  if (err == 0 && kept.kind_ == KeptFile::Kind::keep) {
    kept.fd_ = fd;
  } else {
    ::close(fd);
  }
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
