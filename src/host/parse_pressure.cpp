// SPDX-License-Identifier: Apache-2.0
// /proc/pressure/{cpu,memory,io} (Documentation/accounting/psi.rst).
#include "parse_util.h"
#include "trainmon/host/parse_system.h"

namespace trainmon {

using namespace host_detail;

PressureValues parse_pressure(std::string_view text) {
  PressureValues p;
  std::string_view line;
  while (next_line(text, line)) {
    std::string_view rest = line;
    std::string_view kind;
    if (!next_token(rest, kind) || (kind != "some" && kind != "full")) continue;
    PressureLine pl;
    int seen = 0;
    std::string_view tok;
    bool bad = false;
    while (next_token(rest, tok)) {
      const auto eq = tok.find('=');
      if (eq == std::string_view::npos) continue;
      const auto key = tok.substr(0, eq);
      const auto val = tok.substr(eq + 1);
      if (key == "total") {
        const auto v = to_number<std::uint64_t>(val);
        if (!v)
          bad = true;
        else
          pl.total_us = *v, ++seen;
        continue;
      }
      const auto v = to_double(val);
      if (!v) {
        bad = true;
        continue;
      }
      if (key == "avg10")
        pl.avg10 = *v, ++seen;
      else if (key == "avg60")
        pl.avg60 = *v, ++seen;
      else if (key == "avg300")
        pl.avg300 = *v, ++seen;
    }
    if (bad || seen < 3) continue;
    (kind == "some" ? p.some : p.full) = pl;
  }
  return p;
}

}  // namespace trainmon
