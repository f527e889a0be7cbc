// SPDX-License-Identifier: Apache-2.0
#include "trainmon/recorder/job_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <utility>

namespace trainmon::recorder {

std::optional<std::uint32_t> parse_stat_ppid(std::string_view stat) {
  auto close = stat.rfind(')');
  if (close == std::string_view::npos || close + 4 >= stat.size()) return std::nullopt;
  // ") S 1234 ..."
  std::string_view rest = stat.substr(close + 2);
  auto sp = rest.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  rest = rest.substr(sp + 1);
  std::uint32_t ppid = 0;
  auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), ppid);
  if (ec != std::errc() || p == rest.data()) return std::nullopt;
  return ppid;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> read_parent_pids(const std::string& proc_root) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  DIR* dir = ::opendir(proc_root.c_str());
  if (!dir) return out;
  char buf[1024];
  while (dirent* e = ::readdir(dir)) {
    std::uint32_t pid = 0;
    const char* name = e->d_name;
    auto [p, ec] = std::from_chars(name, name + std::char_traits<char>::length(name), pid);
    if (ec != std::errc() || *p != '\0') continue;
    std::string path = proc_root + "/" + name + "/stat";
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    if (n <= 0) continue;
    if (auto ppid = parse_stat_ppid(std::string_view(buf, static_cast<std::size_t>(n))))
      out.emplace_back(pid, *ppid);
  }
  ::closedir(dir);
  return out;
}

std::vector<std::uint32_t> descendants(std::span<const std::pair<std::uint32_t, std::uint32_t>> parents,
                                       std::span<const std::uint32_t> roots, std::uint32_t exclude) {
  // (ppid, pid) sorted: the children of a pid are one equal range. One allocation, no tree.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> children;
  children.reserve(parents.size());
  for (const auto& [pid, ppid] : parents) {
    if (pid != ppid) children.emplace_back(ppid, pid);
  }
  std::sort(children.begin(), children.end());
  std::vector<std::uint32_t> out(roots.begin(), roots.end());
  // Breadth-first; `out` doubles as the queue. A pid is visited once (no cycles).
  std::vector<std::uint32_t> seen(out);
  std::sort(seen.begin(), seen.end());
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto b = std::lower_bound(children.begin(), children.end(),
                              std::pair<std::uint32_t, std::uint32_t>{out[i], 0});
    for (auto it = b; it != children.end() && it->first == out[i]; ++it) {
      auto pos = std::lower_bound(seen.begin(), seen.end(), it->second);
      if (pos != seen.end() && *pos == it->second) continue;
      seen.insert(pos, it->second);
      out.push_back(it->second);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (exclude) out.erase(std::remove(out.begin(), out.end(), exclude), out.end());
  return out;
}

namespace {

std::optional<std::uint32_t> parse_last_pid(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  auto sp = text.rfind(' ');
  if (sp == std::string_view::npos || text.substr(0, sp).find('/') == std::string_view::npos)
    return std::nullopt;
  std::string_view last = text.substr(sp + 1);
  std::uint32_t pid = 0;
  auto [p, ec] = std::from_chars(last.data(), last.data() + last.size(), pid);
  if (ec != std::errc() || p != last.data() + last.size()) return std::nullopt;
  return pid;
}

std::optional<std::uint32_t> pread_last_pid(int fd) {
  char buf[128];
  ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  if (n <= 0) return std::nullopt;
  return parse_last_pid(std::string_view(buf, static_cast<std::size_t>(n)));
}

}  // namespace

std::optional<std::uint32_t> read_last_pid(const std::string& proc_root) {
  const std::string path = proc_root + "/loadavg";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  auto last = pread_last_pid(fd);
  ::close(fd);
  return last;
}

ParentTable::ParentTable(std::string proc_root, std::int64_t min_rescan_ns)
    : proc_root_(std::move(proc_root)), min_rescan_ns_(min_rescan_ns) {}

ParentTable::~ParentTable() {
  if (loadavg_fd_ >= 0) ::close(loadavg_fd_);
}

std::optional<std::uint32_t> ParentTable::last_pid() {
  // Kept open and read from offset 0 each tick: procfs makes the text again on every such read.
  if (loadavg_fd_ < 0) loadavg_fd_ = ::open((proc_root_ + "/loadavg").c_str(), O_RDONLY | O_CLOEXEC);
  if (loadavg_fd_ < 0) return std::nullopt;
  auto last = pread_last_pid(loadavg_fd_);
  if (!last) {  // replaced or unreadable: open it again next time
    ::close(loadavg_fd_);
    loadavg_fd_ = -1;
  }
  return last;
}

bool ParentTable::in_table(std::uint32_t pid) const {
  auto it = std::lower_bound(table_.begin(), table_.end(), std::pair<std::uint32_t, std::uint32_t>{pid, 0});
  return it != table_.end() && it->first == pid;
}

bool ParentTable::needs_scan(std::span<const std::uint32_t> roots, std::int64_t now_ns,
                             std::optional<std::uint32_t> last) {
  if (scans_ == 0) return true;
  // No pid created since the last scan: nothing new to find (a root missing from the table is then a
  // process this /proc cannot show, e.g. in another pid namespace, and scanning again would not help).
  const bool appeared = !last || !last_pid_ || *last != *last_pid_;
  if (!appeared) return false;
  if (now_ns - scanned_at_ns_ >= min_rescan_ns_) return true;
  for (std::uint32_t r : roots) {
    // A new root (a new GPU process): find its children now. One the last scan did not find either
    // (a process this /proc cannot show, e.g. in another pid namespace) waits for min_rescan.
    if (!std::binary_search(unseen_.begin(), unseen_.end(), r) && !in_table(r)) return true;
  }
  return false;
}

std::vector<std::uint32_t> ParentTable::descendants_of(std::span<const std::uint32_t> roots,
                                                       std::uint32_t exclude, std::int64_t now_ns) {
  // Read the last pid before scanning: a process created during the scan then shows as a change
  // next time, never as one already seen.
  auto last = last_pid();
  if (needs_scan(roots, now_ns, last)) {
    table_ = read_parent_pids(proc_root_);
    std::sort(table_.begin(), table_.end());
    last_pid_ = last;
    scanned_at_ns_ = now_ns;
    ++scans_;
    unseen_.clear();
    for (std::uint32_t r : roots) {
      if (!in_table(r)) unseen_.push_back(r);
    }
    std::sort(unseen_.begin(), unseen_.end());
  } else if (std::ranges::equal(roots, memo_roots_) && exclude == memo_exclude_) {
    return memo_;  // same table, same question
  }
  memo_roots_.assign(roots.begin(), roots.end());
  memo_exclude_ = exclude;
  memo_ = descendants(table_, roots, exclude);
  return memo_;
}

}  // namespace trainmon::recorder
