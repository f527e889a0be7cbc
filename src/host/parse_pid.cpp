// SPDX-License-Identifier: Apache-2.0
// /proc/PID/stat, /proc/PID/status and /proc/PID/io (proc(5)).
#include "parse_util.h"
#include "trainmon/host/parse_process.h"

namespace trainmon {

using namespace host_detail;

std::optional<PidStat> parse_pid_stat(std::string_view text) {
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  PidStat s;
  const auto pid = to_number<std::uint32_t>(text.substr(0, open));
  if (!pid) return std::nullopt;
  s.pid = *pid;
  s.comm = std::string(text.substr(open + 1, close - open - 1));
  std::string_view rest = text.substr(close + 1);
  // Fields 3.. after the comm; index 0 here is field 3.
  std::string_view tok;
  int field = 3;
  while (field <= 39 && next_token(rest, tok)) {
    switch (field) {
      case 3:
        if (tok.size() != 1) return std::nullopt;
        s.state = tok[0];
        break;
      case 4: {
        const auto v = to_number<std::uint32_t>(tok);
        if (!v) return std::nullopt;
        s.ppid = *v;
        break;
      }
      case 14: s.utime_ticks = to_number<std::uint64_t>(tok).value_or(0); break;
      case 15: s.stime_ticks = to_number<std::uint64_t>(tok).value_or(0); break;
      case 20: s.num_threads = to_number<std::int64_t>(tok).value_or(0); break;
      case 22: {
        const auto v = to_number<std::uint64_t>(tok);
        if (!v) return std::nullopt;
        s.start_time_ticks = *v;
        break;
      }
      case 23: s.vsize_bytes = to_number<std::uint64_t>(tok).value_or(0); break;
      case 24: {
        const auto v = to_number<std::int64_t>(tok).value_or(0);
        s.rss_pages = v > 0 ? static_cast<std::uint64_t>(v) : 0;
        break;
      }
      case 39: s.processor = to_number<unsigned>(tok); break;
      default: break;
    }
    ++field;
  }
  if (field <= 24) return std::nullopt;
  return s;
}

PidStatus parse_pid_status(std::string_view text) {
  PidStatus s;
  std::string_view line;
  while (next_line(text, line)) {
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const auto key = line.substr(0, colon);
    std::string_view rest = line.substr(colon + 1);
    auto kib = [&rest]() -> std::optional<std::uint64_t> {
      const auto v = next_number<std::uint64_t>(rest);
      if (!v) return std::nullopt;
      return *v * 1024;
    };
    switch (key.size() > 0 ? key[0] : '\0') {
      case 'U':
        if (key == "Uid") {
          s.uid_real = next_number<std::uint32_t>(rest);
          s.uid_effective = next_number<std::uint32_t>(rest);
        }
        break;
      case 'P':
        if (key == "PPid") s.ppid = next_number<std::uint32_t>(rest);
        break;
      case 'S':
        if (key == "State") {
          std::string_view tok;
          if (next_token(rest, tok) && tok.size() == 1) s.state = tok[0];
        }
        break;
      case 'T':
        if (key == "Threads") s.threads = next_number<std::uint32_t>(rest);
        break;
      case 'V':
        if (key == "VmRSS")
          s.vm_rss_bytes = kib();
        else if (key == "VmSize")
          s.vm_size_bytes = kib();
        else if (key == "VmSwap")
          s.vm_swap_bytes = kib();
        break;
      case 'R':
        if (key == "RssFile")
          s.rss_file_bytes = kib();
        else if (key == "RssShmem")
          s.rss_shmem_bytes = kib();
        break;
      case 'N':
        if (key == "NSpid") {
          std::string_view tok;
          while (next_token(rest, tok)) {
            const auto v = to_number<std::uint32_t>(tok);
            if (!v) {
              s.nspid.clear();
              break;
            }
            s.nspid.push_back(*v);
          }
        }
        break;
      default: break;
    }
  }
  return s;
}

PidIo parse_pid_io(std::string_view text) {
  PidIo io;
  std::string_view line;
  while (next_line(text, line)) {
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const auto key = line.substr(0, colon);
    const auto v = to_number<std::uint64_t>(line.substr(colon + 1));
    if (!v) continue;
    if (key == "rchar")
      io.rchar = v;
    else if (key == "wchar")
      io.wchar = v;
    else if (key == "syscr")
      io.syscr = v;
    else if (key == "syscw")
      io.syscw = v;
    else if (key == "read_bytes")
      io.read_bytes = v;
    else if (key == "write_bytes")
      io.write_bytes = v;
    else if (key == "cancelled_write_bytes")
      io.cancelled_write_bytes = v;
  }
  return io;
}

}  // namespace trainmon
