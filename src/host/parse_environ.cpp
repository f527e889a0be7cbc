// SPDX-License-Identifier: Apache-2.0
// /proc/PID/environ: the Slurm and launcher variables that say which job and rank a process is.
#include <array>

#include "parse_util.h"
#include "trainmon/host/attribution.h"

namespace trainmon {

using namespace host_detail;

namespace {

enum class Field : unsigned char {
  job_id,
  step,
  user,
  partition,
  account,
  array_job,
  array_task,
  rank,
  local_rank,
  count
};

struct Key {
  std::string_view name;
  Field field;
  unsigned char priority;  ///< lower wins when several keys give the same field
};

// The keys we read, with the order in which they give a field (SLURM_JOB_ID is the current name,
// SLURM_JOBID the old one; RANK is torchrun's, the others are Open MPI's, MPICH/PMI's and srun's).
constexpr std::array kKeys{
    Key{"SLURM_JOB_ID", Field::job_id, 0},
    Key{"SLURM_JOBID", Field::job_id, 1},
    Key{"SLURM_STEP_ID", Field::step, 0},
    Key{"SLURM_STEPID", Field::step, 1},
    Key{"SLURM_JOB_USER", Field::user, 0},
    Key{"SLURM_JOB_PARTITION", Field::partition, 0},
    Key{"SLURM_JOB_ACCOUNT", Field::account, 0},
    Key{"SLURM_ARRAY_JOB_ID", Field::array_job, 0},
    Key{"SLURM_ARRAY_TASK_ID", Field::array_task, 0},
    Key{"RANK", Field::rank, 0},
    Key{"OMPI_COMM_WORLD_RANK", Field::rank, 1},
    Key{"PMI_RANK", Field::rank, 2},
    Key{"SLURM_PROCID", Field::rank, 3},
    Key{"LOCAL_RANK", Field::local_rank, 0},
    Key{"OMPI_COMM_WORLD_LOCAL_RANK", Field::local_rank, 1},
    Key{"SLURM_LOCALID", Field::local_rank, 2},
};

std::optional<int> parse_rank(std::string_view v) {
  if (v.empty() || v.size() > 9) return std::nullopt;  // at most 999,999,999: no overflow
  for (const char c : v)
    if (c < '0' || c > '9') return std::nullopt;
  return to_number<int>(v);
}

}  // namespace

bool parse_environ_attribution(std::string_view raw, ProcessAttribution& out, bool truncated) {
  constexpr auto kCount = static_cast<std::size_t>(Field::count);
  std::array<std::string_view, kCount> value{};
  std::array<unsigned char, kCount> best{};
  best.fill(255);
  while (!raw.empty()) {
    const auto nul = raw.find('\0');
    if (nul == std::string_view::npos && truncated) break;  // cut by the read cap
    const std::string_view entry = raw.substr(0, nul);
    raw = nul == std::string_view::npos ? std::string_view{} : raw.substr(nul + 1);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    const std::string_view name = entry.substr(0, eq);
    const std::string_view v = entry.substr(eq + 1);
    if (v.empty() || v.size() > kAttributionValueMaxBytes) continue;
    for (const Key& k : kKeys) {
      if (k.name != name) continue;
      const auto f = static_cast<std::size_t>(k.field);
      if (k.field == Field::rank || k.field == Field::local_rank) {
        if (!parse_rank(v)) break;  // a non-numeric rank is not a rank
      }
      if (k.priority < best[f]) {
        best[f] = k.priority;
        value[f] = v;
      }
      break;
    }
  }
  bool any = false;
  auto set = [&](Field f, std::string& dst) {
    const auto i = static_cast<std::size_t>(f);
    if (best[i] == 255) return;
    dst = sanitize_utf8(value[i]);
    any = true;
  };
  set(Field::job_id, out.slurm_job_id);
  set(Field::step, out.slurm_step);
  set(Field::user, out.slurm_user);
  set(Field::partition, out.slurm_partition);
  set(Field::account, out.slurm_account);
  set(Field::array_job, out.slurm_array_job_id);
  set(Field::array_task, out.slurm_array_task_id);
  if (const auto i = static_cast<std::size_t>(Field::rank); best[i] != 255) {
    out.rank = parse_rank(value[i]);
    any = true;
  }
  if (const auto i = static_cast<std::size_t>(Field::local_rank); best[i] != 255) {
    out.local_rank = parse_rank(value[i]);
    any = true;
  }
  if (any) out.sources |= kAttributionEnviron;
  return any;
}

}  // namespace trainmon
