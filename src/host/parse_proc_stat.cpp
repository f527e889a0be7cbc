// SPDX-License-Identifier: Apache-2.0
// /proc/stat, /proc/loadavg, /proc/uptime and kernel CPU lists.
#include <algorithm>

#include "parse_util.h"
#include "trainmon/host/parse_system.h"

namespace trainmon {

using namespace host_detail;

namespace {

std::optional<CpuCounters> parse_cpu_fields(std::string_view rest) {
  std::uint64_t f[10] = {};
  int n = 0;
  std::string_view tok;
  while (n < 10 && next_token(rest, tok)) {
    const auto v = to_number<std::uint64_t>(tok);
    if (!v) return std::nullopt;
    f[n++] = *v;
  }
  if (n < 4) return std::nullopt;
  return CpuCounters{f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9]};
}

std::uint64_t delta(std::uint64_t a, std::uint64_t b) noexcept {
  return b > a ? b - a : 0;
}

}  // namespace

ProcStat parse_proc_stat(std::string_view text) {
  ProcStat s;
  std::string_view line;
  while (next_line(text, line)) {
    std::string_view rest = line;
    std::string_view key;
    if (!next_token(rest, key)) continue;
    if (key.starts_with("cpu")) {
      const auto counters = parse_cpu_fields(rest);
      if (!counters) continue;
      if (key.size() == 3) {
        s.total = *counters;
      } else if (const auto n = to_number<unsigned>(key.substr(3))) {
        s.cores.push_back({*n, *counters});
      }
    } else if (key == "btime") {
      s.boot_time_unix_s = next_number<std::uint64_t>(rest);
    } else if (key == "processes") {
      s.processes_forked = next_number<std::uint64_t>(rest);
    } else if (key == "procs_running") {
      s.procs_running = next_number<std::uint64_t>(rest);
    } else if (key == "procs_blocked") {
      s.procs_blocked = next_number<std::uint64_t>(rest);
    }
  }
  return s;
}

CpuTimes cpu_times_between(const CpuCounters& a, const CpuCounters& b) {
  const std::uint64_t user = delta(a.user, b.user) + delta(a.nice, b.nice);
  const std::uint64_t system = delta(a.system, b.system) + delta(a.irq, b.irq) + delta(a.softirq, b.softirq);
  const std::uint64_t idle = delta(a.idle, b.idle);
  const std::uint64_t iowait = delta(a.iowait, b.iowait);
  const std::uint64_t steal = delta(a.steal, b.steal);
  const std::uint64_t total = user + system + idle + iowait + steal;
  CpuTimes t;
  if (total == 0) return t;
  const double k = 100.0 / static_cast<double>(total);
  t.user_pct = static_cast<double>(user) * k;
  t.system_pct = static_cast<double>(system) * k;
  t.idle_pct = static_cast<double>(idle) * k;
  t.iowait_pct = static_cast<double>(iowait) * k;
  t.steal_pct = static_cast<double>(steal) * k;
  t.busy_pct = std::clamp(100.0 - t.idle_pct - t.iowait_pct, 0.0, 100.0);
  return t;
}

std::optional<LoadAvg> parse_loadavg(std::string_view text) {
  LoadAvg l;
  const auto a = next_number<double>(text);
  const auto b = next_number<double>(text);
  const auto c = next_number<double>(text);
  if (!a || !b || !c) return std::nullopt;
  l.load1 = *a;
  l.load5 = *b;
  l.load15 = *c;
  std::string_view tok;
  if (next_token(text, tok)) {
    const auto slash = tok.find('/');
    if (slash != std::string_view::npos) {
      l.running = to_number<std::uint32_t>(tok.substr(0, slash)).value_or(0);
      l.total = to_number<std::uint32_t>(tok.substr(slash + 1)).value_or(0);
    }
    if (next_token(text, tok)) l.last_pid = to_number<std::uint32_t>(tok);
  }
  return l;
}

std::optional<double> parse_uptime(std::string_view text) {
  const auto v = next_number<double>(text);
  if (!v || *v < 0) return std::nullopt;
  return v;
}

std::optional<std::vector<unsigned>> parse_cpu_list(std::string_view text) {
  std::vector<unsigned> cpus;
  text = trim(text);
  while (!text.empty()) {
    const auto comma = text.find(',');
    const auto item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) continue;
    const auto dash = item.find('-');
    if (dash == std::string_view::npos) {
      const auto v = to_number<unsigned>(item);
      if (!v) return std::nullopt;
      cpus.push_back(*v);
      continue;
    }
    const auto lo = to_number<unsigned>(item.substr(0, dash));
    const auto hi = to_number<unsigned>(item.substr(dash + 1));
    if (!lo || !hi || *hi < *lo || *hi - *lo > 65536) return std::nullopt;
    for (unsigned c = *lo; c <= *hi; ++c) cpus.push_back(c);
  }
  if (cpus.size() > 65536) return std::nullopt;
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

}  // namespace trainmon
