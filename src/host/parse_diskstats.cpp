// SPDX-License-Identifier: Apache-2.0
// /proc/diskstats (Documentation/admin-guide/iostats.rst) and block-device name rules.
#include <cmath>

#include "parse_util.h"
#include "trainmon/host/parse_system.h"

namespace trainmon {

using namespace host_detail;

std::vector<DiskCounters> parse_diskstats(std::string_view text) {
  std::vector<DiskCounters> out;
  std::string_view line;
  while (next_line(text, line)) {
    std::string_view rest = line;
    const auto major = next_number<unsigned>(rest);
    const auto minor = next_number<unsigned>(rest);
    std::string_view name;
    if (!major || !minor || !next_token(rest, name)) continue;
    std::uint64_t f[11] = {};
    int n = 0;
    bool bad = false;
    std::string_view tok;
    while (n < 11 && next_token(rest, tok)) {
      const auto v = to_number<std::uint64_t>(tok);
      if (!v) {
        bad = true;
        break;
      }
      f[n++] = *v;
    }
    if (bad || n < 11) continue;
    DiskCounters d;
    d.major = *major;
    d.minor = *minor;
    d.name = std::string(name);
    d.reads_completed = f[0];
    d.sectors_read = f[2];
    d.writes_completed = f[4];
    d.sectors_written = f[6];
    d.io_ms = f[9];
    out.push_back(std::move(d));
  }
  return out;
}

bool is_partition_name(std::string_view name, const std::vector<std::string_view>& all_names) {
  for (const auto other : all_names) {
    if (other.size() >= name.size() || !name.starts_with(other)) continue;
    std::string_view rest = name.substr(other.size());
    if (!rest.empty() && rest.front() == 'p') rest.remove_prefix(1);
    if (rest.empty()) continue;
    bool digits = true;
    for (const char c : rest) digits = digits && c >= '0' && c <= '9';
    // "sda1" of "sda" is a partition; "nvme0n1" is not one of "nvme0" (the rest is "n1").
    if (digits) return true;
  }
  return false;
}

bool is_virtual_block_device(std::string_view name) {
  return name.starts_with("loop") || name.starts_with("ram") || name.starts_with("zram");
}

double counter_rate(std::uint64_t before, std::uint64_t after, double elapsed_s) noexcept {
  if (!(elapsed_s > 0) || !std::isfinite(elapsed_s) || after <= before) return 0;
  return static_cast<double>(after - before) / elapsed_s;
}

}  // namespace trainmon
