// SPDX-License-Identifier: Apache-2.0
#include "trainmon/recorder/job_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <map>

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
  std::multimap<std::uint32_t, std::uint32_t> children;
  for (const auto& [pid, ppid] : parents) {
    if (pid != ppid) children.emplace(ppid, pid);
  }
  std::vector<std::uint32_t> out(roots.begin(), roots.end());
  // Breadth-first; `out` doubles as the queue. A pid is visited once (no cycles).
  std::vector<std::uint32_t> seen(out);
  std::sort(seen.begin(), seen.end());
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto [b, e] = children.equal_range(out[i]);
    for (auto it = b; it != e; ++it) {
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

}  // namespace trainmon::recorder
