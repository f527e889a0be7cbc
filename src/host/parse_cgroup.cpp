// SPDX-License-Identifier: Apache-2.0
// /proc/PID/cgroup lines and container ids found in cgroup paths.
#include "parse_util.h"
#include "trainmon/host/parse_process.h"

namespace trainmon {

using namespace host_detail;

std::vector<CgroupLine> parse_cgroup(std::string_view text) {
  std::vector<CgroupLine> out;
  std::string_view line;
  while (next_line(text, line)) {
    const auto c1 = line.find(':');
    if (c1 == std::string_view::npos) continue;
    const auto c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    const auto id = to_number<unsigned>(line.substr(0, c1));
    const auto path = line.substr(c2 + 1);
    if (!id || path.empty() || path.front() != '/') continue;
    out.push_back({*id, std::string(line.substr(c1 + 1, c2 - c1 - 1)), std::string(path)});
  }
  return out;
}

std::optional<CgroupLine> memory_cgroup_line(const std::vector<CgroupLine>& lines) {
  return controller_cgroup_line(lines, "memory");
}

std::optional<CgroupLine> controller_cgroup_line(const std::vector<CgroupLine>& lines,
                                                 std::string_view controller) {
  const CgroupLine* v2 = nullptr;
  for (const auto& l : lines) {
    if (l.hierarchy_id == 0 && l.controllers.empty()) {
      v2 = &l;
      continue;
    }
    std::string_view rest = l.controllers;
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      if (rest.substr(0, comma) == controller) return l;
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  }
  if (v2) return *v2;
  return std::nullopt;
}

std::optional<std::string> container_id_from_cgroup(std::string_view path) {
  auto is_hex = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  };
  std::optional<std::string> found;
  std::size_t i = 0;
  while (i < path.size()) {
    if (!is_hex(path[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < path.size() && is_hex(path[j])) ++j;
    if (j - i == 64) found = std::string(path.substr(i, 64));
    i = j;
  }
  return found;
}

}  // namespace trainmon
