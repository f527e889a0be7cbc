// SPDX-License-Identifier: Apache-2.0
#include "trainmon/alerts/spool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "trainmon/core/private_files.h"
#include "trainmon/core/text_escape.h"

namespace trainmon::alerts {

namespace fs = std::filesystem;

namespace {
std::atomic<std::uint64_t> g_seq{0};
/// A notification is a few KiB; anything far larger is not one of ours.
constexpr std::size_t kMaxSpoolFileBytes = 4 << 20;

Error os_error(int err, std::string msg) {
  return Error{ErrorDomain::os, err, strerrorname_np(err) ? strerrorname_np(err) : "", std::move(msg)};
}
}  // namespace

Spool::Spool(std::string dir) : dir_(std::move(dir)) {}

Expected<std::string> Spool::put(const Notification& n) {
  std::error_code ec;
  const fs::path parent = fs::path(dir_).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec)
    return std::unexpected(
        os_error(ec.value(), fmt::format("cannot create the alert spool {}: {}", dir_, ec.message())));
  // The spool is ours alone (0700, our uid, not a symlink): alerts may carry host and job details,
  // and a folder someone else controls could feed us files to deliver.
  if (auto ok = files::ensure_private_dir(dir_); !ok) {
    return std::unexpected(ok.error());
  }
  auto now = std::chrono::system_clock::now().time_since_epoch();
  std::string base =
      fmt::format("{:020}-{:06}-{:08}", std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(),
                  ::getpid() % 1000000, g_seq.fetch_add(1));
  std::string final_path = fmt::format("{}/{}.json", dir_, base);
  std::string tmp_path = fmt::format("{}/.{}.tmp", dir_, base);
  std::string body = text::json_dump(nlohmann::json(n)) + "\n";
  int fd = ::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return std::unexpected(
        os_error(errno, fmt::format("cannot write {}: {}", tmp_path, std::strerror(errno))));
  std::size_t off = 0;
  while (off < body.size()) {
    ssize_t w = ::write(fd, body.data() + off, body.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = errno;
      ::close(fd);
      ::unlink(tmp_path.c_str());
      return std::unexpected(os_error(e, fmt::format("cannot write {}: {}", tmp_path, std::strerror(e))));
    }
    off += static_cast<std::size_t>(w);
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp_path.c_str(), final_path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp_path.c_str());
    return std::unexpected(os_error(e, fmt::format("cannot rename {}: {}", tmp_path, std::strerror(e))));
  }
  return final_path;
}

std::vector<std::string> Spool::list() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.starts_with(".") || !name.ends_with(".json")) continue;
    out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Expected<Notification> Spool::read(const std::string& path) {
  // Never follows a link nor waits on a FIFO; only our own regular files (files::read_regular_file).
  auto body = files::read_regular_file(path, kMaxSpoolFileBytes);
  if (!body) return std::unexpected(body.error());
  try {
    return nlohmann::json::parse(*body).get<Notification>();
  } catch (const std::exception& e) {
    return std::unexpected(Error{ErrorDomain::internal, 0, "EBADMSG",
                                 fmt::format("{} is not a notification: {}", path, e.what())});
  }
}

bool Spool::remove(const std::string& path) {
  return ::unlink(path.c_str()) == 0 || errno == ENOENT;
}

void Spool::quarantine(const std::string& path) {
  ::rename(path.c_str(), (path + ".bad").c_str());
}

}  // namespace trainmon::alerts
