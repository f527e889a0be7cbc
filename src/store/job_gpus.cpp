// SPDX-License-Identifier: Apache-2.0
#include "trainmon/store/job_gpus.h"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace trainmon::store {

std::vector<unsigned> job_gpus(std::vector<unsigned> used,
                               const std::vector<std::pair<std::string, std::string>>& labels) {
  // CUDA_VISIBLE_DEVICES states the intent (D7: the job may run elsewhere): it wins when it lists indices.
  {
    std::vector<unsigned> visible;
    bool ok = false;
    for (const auto& [k, v] : labels) {
      if (k != "CUDA_VISIBLE_DEVICES") continue;
      std::string_view rest = v;
      while (!rest.empty()) {
        const auto comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        unsigned idx = 0;
        auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), idx);
        ok = ec == std::errc{} && p == item.data() + item.size();  // UUIDs, MIG names: unknown
        if (!ok) break;
        visible.push_back(idx);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    }
    if (ok && !visible.empty()) used = std::move(visible);
  }
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  return used;
}

std::vector<unsigned> job_gpus(const RunInfo& run) {
  std::vector<unsigned> used;
  for (const auto& g : run.gpus) {
    if (g.used_by_job) used.push_back(g.index);
  }
  return job_gpus(std::move(used), run.labels);
}

}  // namespace trainmon::store
