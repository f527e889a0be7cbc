// SPDX-License-Identifier: Apache-2.0
// /proc/meminfo, /proc/zoneinfo and the MemAvailable estimate for old kernels.
#include <algorithm>

#include "parse_util.h"
#include "trainmon/host/parse_system.h"

namespace trainmon {

using namespace host_detail;

MeminfoValues parse_meminfo(std::string_view text) {
  MeminfoValues m;
  std::string_view line;
  while (next_line(text, line)) {
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const auto key = line.substr(0, colon);
    std::string_view rest = line.substr(colon + 1);
    const auto value = next_number<std::uint64_t>(rest);
    if (!value) continue;
    std::string_view unit;
    const bool kib = next_token(rest, unit) && unit == "kB";
    const std::uint64_t bytes = kib ? *value * 1024 : *value;
    std::optional<std::uint64_t>* slot = nullptr;
    if (key == "MemTotal")
      slot = &m.mem_total;
    else if (key == "MemFree")
      slot = &m.mem_free;
    else if (key == "MemAvailable")
      slot = &m.mem_available;
    else if (key == "Buffers")
      slot = &m.buffers;
    else if (key == "Cached")
      slot = &m.cached;
    else if (key == "SwapCached")
      slot = &m.swap_cached;
    else if (key == "Active(file)")
      slot = &m.active_file;
    else if (key == "Inactive(file)")
      slot = &m.inactive_file;
    else if (key == "Shmem")
      slot = &m.shmem;
    else if (key == "SReclaimable")
      slot = &m.sreclaimable;
    else if (key == "KReclaimable")
      slot = &m.kreclaimable;
    else if (key == "Dirty")
      slot = &m.dirty;
    else if (key == "SwapTotal")
      slot = &m.swap_total;
    else if (key == "SwapFree")
      slot = &m.swap_free;
    if (slot) *slot = bytes;
  }
  return m;
}

std::optional<std::uint64_t> parse_zoneinfo_low_pages(std::string_view text) {
  std::optional<std::uint64_t> sum;
  std::string_view line;
  while (next_line(text, line)) {
    std::string_view rest = line;
    std::string_view tok;
    if (!next_token(rest, tok) || tok != "low") continue;
    if (const auto v = next_number<std::uint64_t>(rest)) sum = sum.value_or(0) + *v;
  }
  return sum;
}

std::optional<std::uint64_t> estimate_mem_available(const MeminfoValues& m, std::uint64_t wmark_low_bytes) {
  if (!m.mem_free) return std::nullopt;
  if (!m.active_file || !m.inactive_file || !m.sreclaimable) return *m.mem_free + m.cached.value_or(0);
  // Signed arithmetic as in the kernel: the intermediate sum may go below zero.
  const auto wmark = static_cast<long double>(wmark_low_bytes);
  long double available = static_cast<long double>(*m.mem_free) - wmark;
  long double pagecache =
      static_cast<long double>(*m.active_file) + static_cast<long double>(*m.inactive_file);
  pagecache -= std::min(pagecache / 2, wmark);
  available += pagecache;
  const auto slab = static_cast<long double>(*m.sreclaimable);
  available += slab - std::min(slab / 2, wmark);
  if (available < 0) available = 0;
  return static_cast<std::uint64_t>(available);
}

}  // namespace trainmon
