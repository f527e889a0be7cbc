// SPDX-License-Identifier: Apache-2.0
// /proc/net/dev (proc(5)).
#include "parse_util.h"
#include "trainmon/host/parse_system.h"

namespace trainmon {

using namespace host_detail;

std::vector<NetCounters> parse_net_dev(std::string_view text) {
  std::vector<NetCounters> out;
  std::string_view line;
  while (next_line(text, line)) {
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const auto name = trim(line.substr(0, colon));
    if (name.empty() || name.find('|') != std::string_view::npos) continue;
    std::string_view rest = line.substr(colon + 1);
    std::uint64_t f[16] = {};
    int n = 0;
    bool bad = false;
    std::string_view tok;
    while (n < 16 && next_token(rest, tok)) {
      const auto v = to_number<std::uint64_t>(tok);
      if (!v) {
        bad = true;
        break;
      }
      f[n++] = *v;
    }
    if (bad || n < 16) continue;
    NetCounters c;
    c.name = std::string(name);
    c.rx_bytes = f[0];
    c.rx_packets = f[1];
    c.rx_errors = f[2];
    c.rx_dropped = f[3];
    c.tx_bytes = f[8];
    c.tx_packets = f[9];
    c.tx_errors = f[10];
    c.tx_dropped = f[11];
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace trainmon
