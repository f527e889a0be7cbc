// SPDX-License-Identifier: Apache-2.0
// D25 data-wait-measured (warning): the training loop's own timing says the steps wait for data:
// data wait / step time over the trailing window_s, for the typical rank (the lower median over
// ranks: a single slow loader in a multi-rank job is D24's straggler, not this), stays at or above
// data_wait_share_pct for data_wait_for_s. The measured share is the evidence and the cost
// ("41 % of each step waits for data: fixing it gives up to 1.7x samples/s"); the CPU side (workers,
// the ranks' main processes, the job's CPU against the cores, iowait and disk reads) names the
// cause. Where the loop's timing exists D4 (the GPU-side inference), D18 and D19 stand back
// (timed_rows), so one problem gives one finding; D4's GPU-side figures are added here.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "diagnose/detectors/train_common.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_data_wait(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  const auto& ranks = s.train.ranks;
  if (ranks.empty()) return out;
  // Judged at the ranks' own report times (every row with steps of every rank), trailing window_s;
  // the rows read as compact columns (train_columns.h), shared with D23, D24, D26.
  const auto cols = train_columns(s);
  const std::vector<double>& grid = cols->step_times;
  if (grid.empty()) return out;
  const std::size_t n = grid.size(), R = ranks.size();
  // The condition: the typical rank's share (the lower median over the ranks with a share) at or above
  // data_wait_share_pct. The lower median of m shares is the ((m - 1) / 2)-th smallest, so it is at or
  // above the threshold exactly when at most (m - 1) / 2 shares are below it: counted, not selected.
  std::vector<std::uint8_t> cond(n, 0);
  // Running sums per rank over the trailing window (two pointers per rank).
  struct Run {
    std::size_t lo = 0, hi = 0;
    double step = 0, data = 0;
    bool known = false;
  };
  std::vector<Run> run(R);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t with_share = 0, below = 0;
    for (std::size_t k = 0; k < R; ++k) {
      auto& rr = run[k];
      const auto& c = cols->ranks[k];
      while (rr.hi < c.size() && c.t[rr.hi] <= grid[i] + 1e-9) {
        const std::size_t j = rr.hi++;
        if (!na(c.step_sum[j])) rr.step += c.step_sum[j];
        if (!na(c.data_sum[j])) {
          rr.data += c.data_sum[j];
          rr.known = true;
        }
      }
      while (rr.lo < rr.hi && c.t[rr.lo] <= grid[i] - th.window_s) {
        const std::size_t j = rr.lo++;
        if (!na(c.step_sum[j])) rr.step -= c.step_sum[j];
        if (!na(c.data_sum[j])) rr.data -= c.data_sum[j];
      }
      if (!rr.known || rr.step <= 1e-12) continue;
      ++with_share;
      below += !(100.0 * std::clamp(rr.data / rr.step, 0.0, 1.0) >= th.data_wait_share_pct);
    }
    cond[i] = with_share > 0 && below <= (with_share - 1) / 2;
  }

  const auto tg = train_gpus(s, th);  // the GPUs the job is known to use, never inferred
  for (const auto& ep : episodes(grid, cond, th.data_wait_for_s, th.clear_s)) {
    const double t0 = std::max(grid.front(), grid[ep.i0] - th.window_s), t1 = grid[ep.i1];
    Finding f = make_finding("D25", Severity::warning, t0, t1);
    // The episode's share: every rank's data wait over its step time in the episode (exact sums).
    std::vector<double> rank_share(R, NAN);
    std::vector<double> sorted;
    double all_steps = 0, all_step_s = 0, all_data_s = 0;
    Phrase each;
    std::set<unsigned> gpus;
    std::set<std::uint32_t> pids;
    for (std::size_t k = 0; k < R; ++k) {
      const auto w = rank_window(cols->ranks[k], t0, t1);
      if (!w.data_known || w.step_s <= 0) continue;
      rank_share[k] = std::clamp(w.data_s / w.step_s, 0.0, 1.0);
      all_steps += w.steps;
      all_step_s += w.step_s;
      all_data_s += w.data_s;
      sorted.push_back(rank_share[k]);
      const auto& id = ranks[k].id;
      if (id.gpu >= 0) gpus.insert(static_cast<unsigned>(id.gpu));
      if (id.pid) pids.insert(id.pid);
      if (R > 1) add_listed(each, phrase("{} {} %", rank_short(id), num(100 * rank_share[k])));
      put(f.numbers,
          id.rank >= 0 ? fmt::format("rank{}_data_share_pct", id.rank)
                       : fmt::format("pid{}_data_share_pct", id.pid),
          100 * rank_share[k]);
    }
    if (sorted.empty()) continue;
    std::sort(sorted.begin(), sorted.end());
    const double sh = sorted[(sorted.size() - 1) / 2];
    f.gpus.assign(gpus.begin(), gpus.end());
    if (f.gpus.empty()) f.gpus = tg.gpus;
    f.pids.assign(pids.begin(), pids.end());
    put(f.numbers, "data_share_pct", 100 * sh);
    if (all_steps > 0) {
      put(f.numbers, "step_mean_s", all_step_s / all_steps);
      put(f.numbers, "data_mean_s", all_data_s / all_steps);
    }
    say(f, "{} % of each step waits for data over {}{}", num(100 * sh), dur(t1 - t0),
        each.empty() ? Phrase{} : phrase(" ({})", each));
    // The CPU side: workers, the ranks' main processes, the job against the cores, the disks.
    const std::size_t r0 = row_at(s, t0), r1 = s.size() ? std::min(row_at(s, t1), s.size() - 1) : 0;
    const bool rows_ok = s.size() > 0 && r0 <= r1;
    double workers = rows_ok ? max_of(s.job.workers, r0, r1) : NAN;
    // The ranks' own processes are no loader workers: under torch.multiprocessing or a launcher they
    // are the root's children too (2 ranks with num_workers=0 read "2 worker processes").
    if (!na(workers)) {
      double rank_procs = 0;
      for (const auto& r : ranks) {
        if (r.id.pid == 0 || r.id.pid == s.facts.root_pid) continue;
        const auto p = std::lower_bound(s.job.procs.begin(), s.job.procs.end(), r.id.pid,
                                        [](const JobProcess& j, std::uint32_t pid) { return j.pid < pid; });
        if (p != s.job.procs.end() && p->pid == r.id.pid && p->first_t <= t1 && p->last_t >= t0) ++rank_procs;
      }
      workers = std::max(0.0, workers - rank_procs);
    }
    const double cores = rows_ok ? last_of(s.host.cpu_count, r0, r1) : NAN;
    const double job_cpu = rows_ok ? mean(s.job.cpu_pct, r0, r1) : NAN;
    double main_cpu = NAN;
    for (const auto& r : ranks)
      if (r.id.pid && rows_ok) {
        const double c = proc_cpu(s, r.id.pid, r0, r1);
        if (!na(c)) main_cpu = na(main_cpu) ? c : std::max(main_cpu, c);
      }
    if (na(main_cpu) && rows_ok && ranks.size() == 1) main_cpu = mean(s.job.main_cpu_pct, r0, r1);
    const double iowait = rows_ok ? mean(s.host.cpu_iowait_pct, r0, r1) : NAN;
    const double psi_io = rows_ok ? mean(s.host.psi_io_some_avg10, r0, r1) : NAN;
    const double reads = rows_ok ? mean(s.host.disk_read_bps, r0, r1) : NAN;
    put(f.numbers, "workers", workers);
    put(f.numbers, "cpu_count", cores);
    put(f.numbers, "job_cpu_pct", job_cpu);
    put(f.numbers, "main_cpu_pct", main_cpu);
    put(f.numbers, "iowait_pct", iowait);
    put(f.numbers, "disk_read_bps", reads);
    if (!na(workers)) {
      if (workers == 1)
        say(f, "; {} worker process", num(workers));
      else
        say(f, "; {} worker processes", num(workers));
    }
    if (!na(main_cpu)) say(f, ", main process at {} % CPU", num(main_cpu));
    if (!na(job_cpu) && !na(cores) && cores > 0)
      say(f, "; the job uses {} of {} cores", num(job_cpu / 100.0, 1), num(cores));
    const bool pinned = !na(main_cpu) && main_cpu >= th.main_pinned_pct;
    const bool cores_full =
        !na(job_cpu) && !na(cores) && cores > 0 && job_cpu / cores >= th.cpu_saturated_pct;
    const bool io = (!na(iowait) && iowait >= th.iowait_pct) || (!na(psi_io) && psi_io >= th.psi_io_some_pct);
    if (io) say(f, "; iowait {} %, disk reads {} MiB/s", num(iowait), num(reads / 1048576.0));
    // D4's GPU-side figures, for the same stretch.
    double util = 0;
    int ug = 0;
    for (auto gi : f.gpus) {
      const auto* g = s.gpu(gi);
      if (!g || !rows_ok) continue;
      const double m = mean(g->util_gpu_pct, r0, r1);
      if (!na(m)) {
        util += m;
        ++ug;
      }
    }
    if (ug > 0) {
      put(f.numbers, "gpu_mean_util_pct", util / ug);
      say(f, "; GPU utilisation {} %", num(util / ug));
    }
    f.advice =
        io ? N_("The loader waits for the disk: copy the dataset to a local NVMe disk, cache it in RAM "
                "(`cache: ram`), "
                "or use fewer workers on a slow network disk.")
        : cores_full ? N_("Every core is busy preparing data: lighten augmentation, decode on the GPU "
                          "(DALI), pre-resize or "
                          "cache the dataset; more workers will not help.")
        : pinned || (!na(workers) && workers == 0)
            ? N_("The main process prepares the batches itself: raise DataLoader num_workers (cores are "
                 "free), use "
                 "persistent_workers=True and pin_memory=True, and move preprocessing into the Dataset.")
            : N_("Raise DataLoader num_workers and prefetch_factor while cores are free, use "
                 "persistent_workers=True "
                 "and pin_memory=True, and cache the dataset in RAM or on a local SSD.");
    set_cost(f, sh, "measured");
    f.thresholds = {{"data_wait_share_pct", th.data_wait_share_pct},
                    {"data_wait_for_s", th.data_wait_for_s},
                    {"window_s", th.window_s}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
