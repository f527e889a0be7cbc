// SPDX-License-Identifier: Apache-2.0
#include "trainmon/core/private_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>

namespace trainmon::files {

namespace {

Error os_error(int err, std::string message) {
  const char* name = strerrorname_np(err);
  return Error{ErrorDomain::os, err, name ? name : "errno", std::move(message)};
}

Error os_error_at(int err, const std::string& what) {
  return os_error(err, fmt::format("{}: {}", what, std::strerror(err)));
}

/// Six random characters from [A-Za-z0-9] (getrandom; the clock and pid when it fails).
std::string random_suffix() {
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char bytes[6] = {};
  if (::getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof bytes)) {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    const auto mix =
        static_cast<unsigned long long>(ts.tv_nsec) ^ (static_cast<unsigned long long>(::getpid()) << 20);
    for (std::size_t i = 0; i < sizeof bytes; ++i) bytes[i] = static_cast<unsigned char>(mix >> (i * 8));
  }
  std::string s;
  for (unsigned char b : bytes) s += kChars[b % (sizeof kChars - 1)];
  return s;
}

Expected<void> check_dir_stat(const struct stat& st, const std::string& dir) {
  if (S_ISLNK(st.st_mode))
    return std::unexpected(os_error(EPERM, fmt::format("{} is a symbolic link; refusing to use it", dir)));
  if (!S_ISDIR(st.st_mode))
    return std::unexpected(os_error(ENOTDIR, fmt::format("{} is not a directory", dir)));
  if (st.st_uid != ::geteuid())
    return std::unexpected(os_error(
        EPERM, fmt::format("{} belongs to another user (uid {}); refusing to use it", dir, st.st_uid)));
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return std::unexpected(
        os_error(EPERM, fmt::format("{} is writable by other users (mode {:o}); refusing to use it", dir,
                                    st.st_mode & 07777)));
  return {};
}

}  // namespace

Expected<void> ensure_private_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return std::unexpected(os_error_at(errno, "cannot create " + dir));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return std::unexpected(os_error_at(errno, "cannot inspect " + dir));
  return check_dir_stat(st, dir);
}

Expected<int> open_private_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP)
      return std::unexpected(os_error(EPERM, fmt::format("{} is a symbolic link; refusing to use it", dir)));
    return std::unexpected(os_error_at(err, "cannot open " + dir));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return std::unexpected(os_error_at(err, "cannot inspect " + dir));
  }
  if (auto ok = check_dir_stat(st, dir); !ok) {
    ::close(fd);
    return std::unexpected(ok.error());
  }
  return fd;
}

Expected<std::string> read_regular_file(const std::string& path, std::size_t max_bytes, bool own) {
  return read_regular_file_at(AT_FDCWD, path, max_bytes, own);
}

Expected<std::string> read_regular_file_at(int dir_fd, const std::string& path, std::size_t max_bytes,
                                           bool own) {
  const int fd = ::openat(dir_fd, path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP)
      return std::unexpected(os_error(EPERM, fmt::format("{} is a symbolic link; not read", path)));
    return std::unexpected(os_error_at(err, "cannot read " + path));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return std::unexpected(os_error_at(err, "cannot inspect " + path));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return std::unexpected(os_error(EPERM, fmt::format("{} is not a regular file; not read", path)));
  }
  if (own && st.st_uid != ::geteuid()) {
    ::close(fd);
    return std::unexpected(
        os_error(EPERM, fmt::format("{} belongs to another user (uid {}); not read", path, st.st_uid)));
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {  // refused before a byte is read
    ::close(fd);
    return std::unexpected(
        os_error(EFBIG, fmt::format("{} is larger than {} bytes; not read", path, max_bytes)));
  }
  std::string out;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return std::unexpected(os_error_at(err, "cannot read " + path));
    }
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) {
      ::close(fd);
      return std::unexpected(
          os_error(EFBIG, fmt::format("{} is larger than {} bytes; not read", path, max_bytes)));
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

mode_t default_file_mode() {
  // umask(2) can only be read by setting it: set and restore at once (a thread creating a file in
  // between would get 077, never a laxer mode).
  const mode_t mask = ::umask(077);
  ::umask(mask);
  return static_cast<mode_t>(0666 & ~mask);
}

Expected<void> write_file_atomic(const std::string& path, std::string_view content, mode_t mode) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmp = fmt::format("{}.{}.{}", dir, base, random_suffix());
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return std::unexpected(os_error_at(errno, "cannot create a temporary file for " + path));
  auto fail = [&](int err, const std::string& what) -> Expected<void> {
    ::close(fd);
    ::unlink(tmp.c_str());
    return std::unexpected(os_error_at(err, what));
  };
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(errno, "cannot write " + tmp);
    }
    done += static_cast<std::size_t>(n);
  }
  if (mode != 0600 && ::fchmod(fd, mode) != 0) return fail(errno, "cannot set the mode of " + tmp);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return std::unexpected(os_error_at(err, "cannot write " + tmp));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return std::unexpected(os_error_at(err, "cannot rename " + tmp + " to " + path));
  }
  return {};
}

Expected<void> write_output_file(const std::string& path, std::string_view content, mode_t mode) {
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0) {
    if (errno != ENOENT) return std::unexpected(os_error_at(errno, "cannot write " + path));
    return write_file_atomic(path, content, mode);
  }
  std::string target = path;
  struct stat st = link;
  if (S_ISLNK(link.st_mode)) {
    // Another user's link is replaced, never followed (it may point at any file of ours).
    if (link.st_uid != ::geteuid() && link.st_uid != 0) return write_file_atomic(path, content, mode);
    if (::stat(path.c_str(), &st) != 0) {
      if (errno != ENOENT) return std::unexpected(os_error_at(errno, "cannot write " + path));
      return std::unexpected(os_error_at(ENOENT, "cannot write " + path + ": it is a link to nothing"));
    }
    if (S_ISREG(st.st_mode)) {
      std::error_code ec;
      target = std::filesystem::canonical(path, ec).string();
      if (ec) return std::unexpected(os_error_at(ec.value(), "cannot resolve " + path));
    }
  }
  if (S_ISREG(st.st_mode)) return write_file_atomic(target, content, st.st_mode & 0777);  // no set-id bits
  if (S_ISDIR(st.st_mode)) return std::unexpected(os_error_at(EISDIR, "cannot write " + path));
  // A device, FIFO or socket: written into as it is, never replaced.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::unexpected(os_error_at(errno, "cannot write " + path));
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);  // a reader is there: wait for it as a pipe does
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return std::unexpected(os_error_at(err, "cannot write " + path));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 && errno != EINTR) return std::unexpected(os_error_at(errno, "cannot write " + path));
  return {};
}

namespace {

/// Removes every entry of the directory open at `dfd` (which it closes), going into subdirectories
/// of ours opened with O_NOFOLLOW (a link is removed as a link), at most `depth` levels down. False
/// when something stayed.
bool empty_dir(int dfd, int depth) {
  DIR* d = ::fdopendir(dfd);
  if (!d) {
    ::close(dfd);
    return false;
  }
  bool ok = true;
  std::vector<std::string> subdirs;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    if (::unlinkat(::dirfd(d), e->d_name, 0) == 0) continue;
    if (errno == EISDIR) {
      subdirs.emplace_back(e->d_name);
    } else if (errno != ENOENT) {
      ok = false;
    }
  }
  for (const auto& name : subdirs) {
    const int sub =
        depth > 0 ? ::openat(::dirfd(d), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    struct stat st {};
    if (sub < 0 || ::fstat(sub, &st) != 0 || st.st_uid != ::geteuid()) {
      if (sub >= 0) ::close(sub);
      ok = false;
      continue;
    }
    if (!empty_dir(sub, depth - 1)) ok = false;
    if (::unlinkat(::dirfd(d), name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) ok = false;
  }
  ::closedir(d);  // closes dfd
  return ok;
}

}  // namespace

Expected<void> remove_private_dir(const std::string& dir) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) {
    if (errno == ENOENT) return {};
    return std::unexpected(os_error_at(errno, "cannot open " + dir));
  }
  struct stat st {};
  if (::fstat(dfd, &st) != 0 || st.st_uid != ::geteuid()) {
    ::close(dfd);
    return std::unexpected(os_error(EPERM, fmt::format("{} is not ours; not removed", dir)));
  }
  (void)empty_dir(dfd, 8);  // closes dfd; what stayed makes the rmdir below fail
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT)
    return std::unexpected(os_error_at(errno, "cannot remove " + dir));
  return {};
}

}  // namespace trainmon::files
