// SPDX-License-Identifier: Apache-2.0
// `trainmon rules`: the local detectors' cross-node findings as Prometheus rules. Job identity: the
// recording rule trainmon:job_node:info gives each node (trainmon_labels_info) a `job_id` label from
// the first of train_job, slurm_job_id, torchelastic_run_id, pbs_jobid, lsb_jobid, job_id that is set
// (the run labels serve and run read, include/trainmon/recorder/labels.h); the ranks' series get it
// the same way from their own run labels. `job` itself is Prometheus' scrape job.
#include "trainmon/diagnose/prom_rules.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "diagnose/advice.h"
#include "trainmon/core/gpu_fields.h"
#include "trainmon/core/gpu_sample.h"
#include "trainmon/diagnose/detectors.h"
#include "trainmon/diagnose/finding.h"

namespace trainmon::diagnose {
namespace {

// Label sources of job_id, lowest precedence first (each label_replace overrides the previous one).
constexpr std::string_view kJobSources[] = {"job_id",       "lsb_jobid", "pbs_jobid", "torchelastic_run_id",
                                            "slurm_job_id", "train_job"};

/// `e` with a job_id label from the first job label that is set. torchrun's TORCHELASTIC_RUN_ID is
/// "none" when no --rdzv-id was given: that is no job id.
std::string with_job_id(const std::string& e) {
  std::string out = e;
  for (auto src : kJobSources) {
    if (src == "job_id") continue;  // already the label itself
    out = fmt::format(R"x(label_replace({}, "job_id", "$1", "{}", "(.+)"))x", out, src);
    if (src == "torchelastic_run_id")
      out = fmt::format(R"x(label_replace({}, "job_id", "", "job_id", "none"))x", out);
  }
  return out;
}

/// The bit test `reasons & mask != 0` for a mask of one or two bits, in PromQL arithmetic (no bitwise
/// operators): floor(r / bit) % 2 per bit, summed and capped at 1.
std::string bit_test(std::string_view reasons, std::uint64_t mask) {
  std::string sum;
  for (std::uint64_t bit = 1; bit != 0 && bit <= mask; bit <<= 1) {
    if (!(mask & bit)) continue;
    if (!sum.empty()) sum += " + ";
    sum += bit == 1 ? fmt::format("{} % 2", reasons) : fmt::format("floor({} / {}) % 2", reasons, bit);
  }
  return fmt::format("clamp_max({}, 1)", sum);
}

/// The optional join with the node's job: `e` labelled with job_id where the node is in a job, `e`
/// unchanged elsewhere. `on` lists the labels that identify a series of `e`. `per_gpu`: `e` is a GPU's
/// series (labels Hostname, gpu); on a node in no job a GPU takes the job attributed to its processes
/// (trainmon:gpu_job_attributed_single:info).
std::string job_optional(const std::string& e, std::string_view on, bool per_gpu = false) {
  if (per_gpu)
    return fmt::format(
        "({0}) * on (Hostname) group_left (job_id) trainmon:job_node_single:info or on ({1}) ({0}) * on "
        "(Hostname, gpu) group_left (job_id) trainmon:gpu_job_attributed_single:info or on ({1}) ({0})",
        e, on);
  return fmt::format(
      "({0}) * on (Hostname) group_left (job_id) trainmon:job_node_single:info or on ({1}) ({0})", e, on);
}

/// `x` (a GPU's series) labelled with the job of its node or, on a node in no job, the job attributed
/// to the GPU's processes.
std::string with_gpu_job(const std::string& x) {
  return fmt::format(
      "{0} * on (Hostname) group_left (job_id) trainmon:job_node_single:info or on (Hostname, gpu) {0} * on "
      "(Hostname, gpu) group_left (job_id) trainmon:gpu_job_attributed_single:info",
      x);
}

std::string th_list(std::initializer_list<std::pair<std::string_view, double>> items) {
  std::string s;
  for (const auto& [k, v] : items) s += fmt::format("{}{}={}", s.empty() ? "" : ", ", k, prom_number(v));
  return s;
}

PromRule alert(std::string name, std::string_view code, Severity sev, std::string expr, double for_s,
               std::string summary, std::string_view advice_text, std::string thresholds) {
  PromRule r;
  r.alert = std::move(name);
  r.expr = std::move(expr);
  if (for_s > 0) r.for_duration = prom_duration(for_s);
  const auto* kind = find_kind(code);
  r.labels["severity"] = std::string(severity_name(sev));
  r.labels["code"] = std::string(code);
  r.labels["slug"] = kind ? std::string(kind->slug) : std::string();
  r.annotations["summary"] = std::move(summary);
  r.annotations["description"] = std::string(advice_text);
  r.annotations["code"] = std::string(code);
  r.annotations["title"] = kind ? std::string(kind->title) : std::string();
  if (!thresholds.empty()) r.annotations["thresholds"] = std::move(thresholds);
  return r;
}

PromRule record(std::string name, std::string expr) {
  PromRule r;
  r.record = std::move(name);
  r.expr = std::move(expr);
  return r;
}

std::string yaml_quoted(std::string_view s) {
  // JSON string escapes are YAML double-quoted escapes; ensure_ascii keeps the file plain ASCII,
  // replace turns invalid UTF-8 into U+FFFD instead of throwing.
  return nlohmann::json(std::string(s)).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string prom_number(double v) {
  if (!std::isfinite(v)) return "0";
  return fmt::format("{}", v);  // shortest round-trip form; PromQL reads 1e-05 and 1e+20 too
}

std::string prom_duration(double seconds) {
  constexpr double kMaxS = 10.0 * 365 * 86400;
  if (!std::isfinite(seconds) || seconds <= 0) return "1ms";
  const auto ms = static_cast<long long>(std::llround(std::min(seconds, kMaxS) * 1000.0));
  if (ms < 1) return "1ms";
  if (ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
  return fmt::format("{}ms", ms);
}

namespace {
/// The dcgm-exporter name of a GPU field registry row (a key without one does not compile).
consteval std::string_view dcgm(std::string_view key) {
  const std::size_t i = gpu_fields::key_index(key);
  if (i == gpu_fields::kGpuFieldCount || gpu_fields::kGpuFields[i].dcgm.empty())
    throw "no dcgm name for this GPU field";
  return gpu_fields::kGpuFields[i].dcgm;
}
}  // namespace

std::vector<PromRuleGroup> prometheus_rule_groups(const Thresholds& th) {
  const auto n = [](double v) { return prom_number(v); };
  const auto d = [](double s) { return prom_duration(s); };
  const std::string W = d(th.window_s);
  // serve's GPU series, by their GPU field registry rows (core/gpu_fields.h).
  constexpr std::string_view R = dcgm("clocks_event_reasons_active");
  constexpr std::string_view kUtil = dcgm("utilization_gpu_pct");
  constexpr std::string_view kSmClock = dcgm("clocks_sm_mhz");
  constexpr std::string_view kFbUsed = dcgm("memory_used_bytes");
  constexpr std::string_view kFbFree = dcgm("memory_free_bytes");
  constexpr std::string_view kFbReserved = dcgm("memory_reserved_bytes");
  constexpr std::string_view kEccDbe = dcgm("ecc_uncorrected_volatile");
  constexpr std::string_view kGpu = "Hostname, gpu";

  PromRuleGroup rec{"trainmon-recording", {}};
  auto& rr = rec.rules;
  // --- job identity --------------------------------------------------------------------------
  rr.push_back(record("trainmon:job_node:info",
                      fmt::format("max by (Hostname, job_id) ({})", with_job_id("trainmon_labels_info"))));
  // The nodes in exactly one job: a GPU there is that job's. A node that two jobs share (each with
  // its own serve) cannot tell from these series which GPU is whose: its GPUs join no job (their
  // alerts come without job_id, the job rules leave them out) instead of a many-to-many error that
  // would stop every rule joined with the job.
  rr.push_back(record("trainmon:job_node_single:info",
                      "trainmon:job_node:info{job_id!=\"\"} and on (Hostname) "
                      "(count by (Hostname) (trainmon:job_node:info{job_id!=\"\"}) == 1)"));
  // The job of a GPU from its processes' attribution (serve's trainmon_gpu_process_info, read from
  // the host: docs/cluster.md section 10), for nodes where serve runs as a service, in no job: the
  // Slurm job id, else the pod as "namespace/pod" (its uid when the names are unknown). A GPU whose
  // attributed processes belong to two jobs belongs to neither.
  rr.push_back(record(
      "trainmon:gpu_job_attributed:info",
      "max by (Hostname, gpu, UUID, job_id) (trainmon_gpu_process_info{job_id!=\"\"}) or max by (Hostname, "
      "gpu, UUID, job_id) (label_join(trainmon_gpu_process_info{job_id=\"\",pod!=\"\"}, \"job_id\", \"/\", "
      "\"namespace\", \"pod\")) or max by (Hostname, gpu, UUID, job_id) "
      "(label_replace(trainmon_gpu_process_info{job_id=\"\",pod=\"\",pod_uid!=\"\"}, \"job_id\", \"$1\", "
      "\"pod_uid\", \"(.+)\"))"));
  rr.push_back(record("trainmon:gpu_job_attributed_single:info",
                      "trainmon:gpu_job_attributed:info and on (Hostname, gpu) (count by (Hostname, gpu) "
                      "(trainmon:gpu_job_attributed:info) == 1)"));
  // --- GPUs ---------------------------------------------------------------------------------
  rr.push_back(record("trainmon:gpu_util:avg", fmt::format("avg_over_time({}[{}])", kUtil, W)));
  rr.push_back(record("trainmon:gpu_sm_clock:avg", fmt::format("avg_over_time({}[{}])", kSmClock, W)));
  // The job's GPUs: those of a node in a job that hold at least job_gpu_min_mib (D2's "job GPUs").
  rr.push_back(record("trainmon:job_gpu_util:avg",
                      fmt::format("max by (job_id, Hostname, gpu, UUID, modelName) ({})",
                                  with_gpu_job(fmt::format("(trainmon:gpu_util:avg and on ({}) {} >= {})",
                                                           kGpu, kFbUsed, n(th.job_gpu_min_mib))))));
  rr.push_back(record("trainmon:job_gpu_sm_clock:avg",
                      fmt::format("max by (job_id, Hostname, gpu, UUID, modelName) ({})",
                                  with_gpu_job("trainmon:gpu_sm_clock:avg"))));
  rr.push_back(record("trainmon:job:gpu_util_max", "max by (job_id) (trainmon:job_gpu_util:avg)"));
  rr.push_back(record("trainmon:job:gpu_util_min", "min by (job_id) (trainmon:job_gpu_util:avg)"));
  rr.push_back(record("trainmon:gpu_clock_event_idle:bool", bit_test(R, clock_event::gpu_idle)));
  rr.push_back(record("trainmon:gpu_clock_event_power_cap:bool", bit_test(R, clock_event::sw_power_cap)));
  rr.push_back(record("trainmon:gpu_clock_event_thermal:bool",
                      bit_test(R, clock_event::sw_thermal_slowdown | clock_event::hw_thermal_slowdown)));
  rr.push_back(record("trainmon:gpu_clock_event_hw_slowdown:bool",
                      bit_test(R, clock_event::hw_slowdown | clock_event::hw_power_brake_slowdown)));
  // --- ranks (the training loop's own timing) --------------------------------------------------
  rr.push_back(record(
      "trainmon:rank_step:mean_seconds",
      with_job_id(fmt::format(
          "(rate(trainmon_train_step_seconds_sum[{0}]) / rate(trainmon_train_step_seconds_count[{0}])) and "
          "increase(trainmon_train_step_seconds_count[{0}]) >= {1}",
          d(th.straggler_window_s), n(th.straggler_min_steps)))));
  rr.push_back(record("trainmon:job:rank_step_min_seconds",
                      "min by (job_id) (trainmon:rank_step:mean_seconds{job_id!=\"\"})"));
  rr.push_back(record("trainmon:rank_straggler:score",
                      "trainmon:job:rank_step_min_seconds / on (job_id) group_right () "
                      "trainmon:rank_step:mean_seconds{job_id!=\"\"}"));
  rr.push_back(
      record("trainmon:rank_step_p90:max_seconds",
             fmt::format("max without (quantile) (max_over_time(trainmon_train_step_seconds{{quantile="
                         "\"0.9\"}}[{}]))",
                         d(th.hang_p90_window_s))));
  // Where each rank is in the loop (serve's trainmon_train_phase: data, compute, idle). A job with
  // a rank idle (evaluation, checkpointing, epoch end) is outside training: its hang, straggler,
  // imbalance and idle-GPU alerts stay quiet, as the local D23 ignores phase idle.
  rr.push_back(
      record("trainmon:rank_outside_loop:bool", with_job_id("trainmon_train_phase{phase=\"idle\"} == 1")));
  rr.push_back(record(
      "trainmon:job_outside_loop_recent:bool",
      fmt::format("max by (job_id) ({}) == 1",
                  with_job_id(fmt::format("max_over_time(trainmon_train_phase{{phase=\"idle\"}}[{}])", W)))));
  rr.push_back(record("trainmon:rank_hang_after:seconds",
                      fmt::format("clamp_min({0} * (trainmon:rank_step_p90:max_seconds > 0), {1}) or (0 * "
                                  "trainmon_train_last_step_timestamp_seconds + {1})",
                                  n(th.hang_p90_factor), n(th.hang_floor_s))));
  // D24's data-wait score: 1 - (this rank's data wait per step - the job's lowest) / its mean step.
  // In a job that synchronises every step all ranks' steps last as long as the slowest one's, so
  // the step-time score cannot tell the rank whose loader is slow; its data wait can. The reference
  // is the job's lowest data wait (the local D24: the lower median over ranks; the same for 2 ranks).
  rr.push_back(record("trainmon:rank_data_wait:mean_seconds",
                      with_job_id(fmt::format("(rate(trainmon_train_data_wait_seconds_total[{0}]) / "
                                              "rate(trainmon_train_step_seconds_count[{0}])) "
                                              "and increase(trainmon_train_step_seconds_count[{0}]) >= {1}",
                                              d(th.straggler_window_s), n(th.straggler_min_steps)))));
  rr.push_back(record("trainmon:job:rank_data_wait_min_seconds",
                      "min by (job_id) (trainmon:rank_data_wait:mean_seconds{job_id!=\"\"})"));
  rr.push_back(
      record("trainmon:rank_straggler_data:score",
             "1 - (trainmon:rank_data_wait:mean_seconds{job_id!=\"\"} - on (job_id) group_left () "
             "trainmon:job:rank_data_wait_min_seconds) / trainmon:rank_step:mean_seconds{job_id!=\"\"}"));
  // Protocol v3 senders' collective wait: D24 on compute per step (step - data wait - collective wait)
  // and D27's share of the step in collectives, per rank and for the job's lowest rank.
  rr.push_back(
      record("trainmon:rank_compute:mean_seconds",
             with_job_id(fmt::format("((rate(trainmon_train_step_seconds_sum[{0}]) - "
                                     "rate(trainmon_train_data_wait_seconds_total[{0}]) - "
                                     "rate(trainmon_train_collective_wait_seconds_total[{0}])) / "
                                     "rate(trainmon_train_step_seconds_count[{0}]) "
                                     "> 0) and increase(trainmon_train_step_seconds_count[{0}]) >= {1}",
                                     d(th.straggler_window_s), n(th.straggler_min_steps)))));
  rr.push_back(record("trainmon:job:rank_compute_min_seconds",
                      "min by (job_id) (trainmon:rank_compute:mean_seconds{job_id!=\"\"})"));
  rr.push_back(record("trainmon:rank_straggler_compute:score",
                      "trainmon:job:rank_compute_min_seconds / on (job_id) group_right () "
                      "trainmon:rank_compute:mean_seconds{job_id!=\"\"}"));
  rr.push_back(record("trainmon:rank_comm:share",
                      with_job_id(fmt::format("rate(trainmon_train_collective_wait_seconds_total[{0}]) / "
                                              "(rate(trainmon_train_step_seconds_sum[{0}]) > 0) and "
                                              "increase(trainmon_train_step_seconds_count[{0}]) >= {1}",
                                              W, n(th.straggler_min_steps)))));
  rr.push_back(
      record("trainmon:job:rank_comm_share_min", "min by (job_id) (trainmon:rank_comm:share{job_id!=\"\"})"));
  // D2's straggler (the job's busiest GPU, throttled or clocked below the job's fastest GPU of its
  // model, while the job's spread exceeds imbalance_spread_pct); jobs with rank timing are D24's.
  const std::string slow = fmt::format(
      "avg_over_time(trainmon:gpu_clock_event_thermal:bool[{0}]) >= 0.5 or on ({1}) "
      "avg_over_time(trainmon:gpu_clock_event_hw_slowdown:bool[{0}]) >= 0.5 or on ({1}) "
      "trainmon:job_gpu_sm_clock:avg < on (job_id, modelName) group_left () ({2} * max by (job_id, "
      "modelName) "
      "(trainmon:job_gpu_sm_clock:avg))",
      W, kGpu, n(th.throttle_clock_frac));
  rr.push_back(record(
      "trainmon:job_gpu_straggler:util_avg",
      fmt::format("trainmon:job_gpu_util:avg >= on (job_id) group_left () trainmon:job:gpu_util_max and "
                  "trainmon:job_gpu_util:avg >= {0} and on (job_id) (trainmon:job:gpu_util_max - "
                  "trainmon:job:gpu_util_min > {1}) and on ({2}) ({3}) unless on (job_id) "
                  "trainmon:rank_step:mean_seconds",
                  n(th.imbalance_high_pct), n(th.imbalance_spread_pct), kGpu, slow)));

  PromRuleGroup al{"trainmon-alerts", {}};
  auto& ar = al.rules;
  const std::string where = "GPU {{ $labels.gpu }} on {{ $labels.Hostname }}";
  const std::string job = "{{ with $labels.job_id }} (job {{ . }}){{ end }}";
  // D7: a job GPU held but idle while another GPU of the job is busy.
  ar.push_back(alert(
      "TrainmonGpuIdleInJob", "D7", Severity::warning,
      fmt::format(
          "trainmon:job_gpu_util:avg <= {} and on (job_id) (count by (job_id) (trainmon:job_gpu_util:avg "
          ">= {}) > 0) unless on (job_id) trainmon:job_outside_loop_recent:bool",
          n(th.idle_util_pct), n(th.busy_util_pct)),
      th.held_unused_for_s,
      where + job + " is held by the job but idle ({{ $value | humanize }} % over " + W +
          ") while another GPU of the job is busy",
      advice::kD7HeldUnused,
      th_list({{"idle_util_pct", th.idle_util_pct},
               {"busy_util_pct", th.busy_util_pct},
               {"job_gpu_min_mib", th.job_gpu_min_mib},
               {"window_s", th.window_s},
               {"held_unused_for_s", th.held_unused_for_s}})));
  // D2 straggler and D2 imbalance.
  ar.push_back(
      alert("TrainmonGpuStraggler", "D2", Severity::warning,
            "trainmon:job_gpu_straggler:util_avg unless on (job_id) trainmon:job_outside_loop_recent:bool",
            th.imbalance_for_s,
            where + job +
                " is the job's straggler: the busiest GPU ({{ $value | humanize }} %) because it is "
                "throttled or clocked below the job's other GPUs, and the others wait for it",
            fmt::format(fmt::runtime(advice::kD2Straggler), "{{ $labels.gpu }} on {{ $labels.Hostname }}"),
            th_list({{"imbalance_spread_pct", th.imbalance_spread_pct},
                     {"imbalance_high_pct", th.imbalance_high_pct},
                     {"throttle_clock_frac", th.throttle_clock_frac},
                     {"window_s", th.window_s},
                     {"imbalance_for_s", th.imbalance_for_s}})));
  ar.push_back(alert(
      "TrainmonJobImbalance", "D2", Severity::warning,
      fmt::format(
          "trainmon:job_gpu_util:avg <= on (job_id) group_left () trainmon:job:gpu_util_min and on (job_id) "
          "(trainmon:job:gpu_util_max >= {}) and on (job_id) (trainmon:job:gpu_util_max - "
          "trainmon:job:gpu_util_min > {}) unless on (job_id) trainmon:job_gpu_straggler:util_avg unless on "
          "(job_id) trainmon:rank_step:mean_seconds unless on (job_id) trainmon:job_outside_loop_recent:bool",
          n(th.imbalance_high_pct), n(th.imbalance_spread_pct)),
      th.imbalance_for_s,
      where + job +
          " is the job's least busy GPU ({{ $value | humanize }} %): its GPUs differ by more than " +
          n(th.imbalance_spread_pct) + " points",
      advice::kD2Imbalance,
      th_list({{"imbalance_spread_pct", th.imbalance_spread_pct},
               {"imbalance_high_pct", th.imbalance_high_pct},
               {"window_s", th.window_s},
               {"imbalance_for_s", th.imbalance_for_s}})));
  // D12 throttling under load (thermal, hardware slowdown); the power cap at full clocks is healthy.
  const auto throttle = [&](std::string name, std::string_view rec_name, std::string_view what,
                            std::string_view adv) {
    ar.push_back(alert(
        std::move(name), "D12", Severity::warning,
        job_optional(fmt::format("{} == 1 and on ({}) trainmon:gpu_clock_event_idle:bool == 0 and on ({}) "
                                 "{} >= {}",
                                 rec_name, kGpu, kGpu, kUtil, n(th.busy_util_pct)),
                     kGpu, true),
        th.throttle_for_s, where + job + " is throttled under load (" + std::string(what) + ")", adv,
        th_list({{"busy_util_pct", th.busy_util_pct}, {"throttle_for_s", th.throttle_for_s}})));
  };
  throttle("TrainmonGpuThermalThrottle", "trainmon:gpu_clock_event_thermal:bool", "thermal slowdown",
           advice::kD12Thermal);
  throttle("TrainmonGpuHardwareSlowdown", "trainmon:gpu_clock_event_hw_slowdown:bool",
           "hardware slowdown / power brake", advice::kD12Hardware);
  // D10 uncorrectable ECC errors since the driver loaded.
  ar.push_back(alert("TrainmonEccUncorrectable", "D10", Severity::critical,
                     job_optional(fmt::format("{} > 0", kEccDbe), kGpu, true), 0,
                     where + job + " reports {{ $value }} uncorrectable (double-bit) ECC errors",
                     advice::kD10Ecc, ""));
  // D13 Xid: one rule per Xid of the table (its severity and advice), then every other code. The
  // gauge DCGM_FI_DEV_XID_ERRORS holds the last Xid for ever: the alert fires while a new Xid came
  // within xid_window_s (serve's counter trainmon_gpu_xid_errors_total grew, which also sees the same
  // Xid again, or the gauge changed, for a dcgm-exporter node) and resolves after it.
  const std::string xid_new = fmt::format(
      "and on ({1}) (increase(trainmon_gpu_xid_errors_total[{0}]) > 0 or on ({1}) "
      "changes(DCGM_FI_DEV_XID_ERRORS[{0}]) > 0)",
      d(th.xid_window_s), kGpu);
  const std::string xid_th = th_list({{"xid_window_s", th.xid_window_s}});
  std::string known;
  for (const auto& x : xid_table()) {
    if (x.xid == 0) continue;
    known += fmt::format(" != {}", x.xid);
    auto r = alert("TrainmonXidError", "D13", x.severity,
                   job_optional(fmt::format("DCGM_FI_DEV_XID_ERRORS == {} {}", x.xid, xid_new), kGpu, true),
                   0, fmt::format("{}{}: Xid {}: {}", where, job, x.xid, x.meaning), x.advice, xid_th);
    r.labels["xid"] = std::to_string(x.xid);
    ar.push_back(std::move(r));
  }
  {
    const auto& x = xid_info(0);
    ar.push_back(alert("TrainmonXidError", "D13", x.severity,
                       job_optional("DCGM_FI_DEV_XID_ERRORS > 0" + known + " " + xid_new, kGpu, true), 0,
                       where + job + ": Xid {{ $value }}: " + std::string(x.meaning), x.advice, xid_th));
  }
  // D14 GPU lost.
  ar.push_back(alert("TrainmonGpuLost", "D14", Severity::critical,
                     job_optional("trainmon_gpu_up == 0", kGpu, true), 0,
                     where + job + " stopped answering (lost, hung or failing)", advice::kD14Lost, ""));
  // D21 GPU memory near full: (used + reserved) / total, as the detector.
  ar.push_back(alert(
      "TrainmonGpuMemoryNearFull", "D21", Severity::warning,
      job_optional(fmt::format("100 * (1 - {0} / ({0} + {1} + ({2} or 0 * {1}))) >= {3}", kFbFree, kFbUsed,
                               kFbReserved, n(th.near_full_pct)),
                   kGpu, true),
      th.near_full_for_s, where + job + " memory is {{ $value | humanize }} % full", advice::kD21NearFull,
      th_list({{"near_full_pct", th.near_full_pct}, {"near_full_for_s", th.near_full_for_s}})));
  // D3 host memory leak: the least-squares slope of used host memory (deriv) over leak_min_span_s;
  // critical when available memory runs out within leak_critical_eta_s (predict_linear).
  const std::string span = d(th.leak_min_span_s);
  // `offset span`: a sample leak_min_span_s ago exists, so the fit covers the whole span (a slope
  // over the first minutes of data would extrapolate noise to MiB/h).
  const std::string slope = fmt::format(
      "deriv(trainmon_host_memory_used_bytes[{0}]) * 3600 / 1048576 >= {1} and on (Hostname) "
      "trainmon_host_memory_used_bytes offset {0}",
      span, n(th.leak_min_slope_mib_h));
  const std::string runs_out = fmt::format(
      "predict_linear(trainmon_host_memory_available_bytes[{}], {}) <= 0", span, n(th.leak_critical_eta_s));
  const std::string leak_thr = th_list({{"leak_min_slope_mib_h", th.leak_min_slope_mib_h},
                                        {"leak_min_span_s", th.leak_min_span_s},
                                        {"leak_critical_eta_s", th.leak_critical_eta_s}});
  const std::string leak_sum = "host memory on {{ $labels.Hostname }}" + job +
                               " grows by {{ $value | humanize }} MiB/h (least squares over " + span + ")";
  ar.push_back(alert("TrainmonHostMemoryLeak", "D3", Severity::critical,
                     job_optional(fmt::format("{} and on (Hostname) {}", slope, runs_out), "Hostname"), 0,
                     leak_sum + "; available memory runs out within " + d(th.leak_critical_eta_s),
                     advice::kD3Leak, leak_thr));
  ar.push_back(alert("TrainmonHostMemoryLeak", "D3", Severity::warning,
                     job_optional(fmt::format("{} unless on (Hostname) {}", slope, runs_out), "Hostname"), 0,
                     leak_sum, advice::kD3Leak, leak_thr));
  // D23 training hang: no step ended for max(hang_p90_factor x p90, hang_floor_s). One alert per
  // job (ranks that hang together are one finding, as the local D23), or per run on a node for
  // ranks without a job label; the stuck ranks, longest stall first, are in the annotation `ranks`.
  const std::string rank =
      "rank {{ $labels.rank }} on {{ $labels.Hostname }}{{ with $labels.gpu }} (GPU {{ . }}){{ end }}";
  // The selector of this alert's ranks in trainmon:rank_stalled:seconds.
  const std::string sel =
      "{{ $sel := printf \"job_id=%q\" $labels.job_id }}{{ if not $labels.job_id }}{{ $sel = printf "
      "\"job_id=\\\"\\\",Hostname=%q,run_id=%q\" $labels.Hostname $labels.run_id }}{{ end }}";
  const std::string ranks_list =
      sel +
      "{{ range $i, $r := query (printf \"sort_desc(trainmon:rank_stalled:seconds{%s})\" $sel) }}{{ if $i "
      "}}, "
      "{{ end }}rank {{ $r.Labels.rank }} on {{ $r.Labels.Hostname }}{{ with $r.Labels.gpu }} (GPU {{ . "
      "}}){{ end }} for {{ $r.Value | humanizeDuration }}{{ end }}";
  const std::string count_ranks =
      sel +
      "{{ with query (printf \"count(trainmon:rank_stalled:seconds{%s})\" $sel) "
      "}}{{ $n := . | first | value }}{{ $n }} rank{{ if ne $n 1.0 }}s{{ end }}{{ end }}";
  // In the alerts' group, just before the hang alert, so that the alert and its annotations (which
  // query it) read the same evaluation: rules of one group run in order, groups side by side.
  // The stall counts from the rank's last step, or from its return to the loop when its current
  // phase began later (after an evaluation, as the local D23; within a step the compute phase
  // starts after the batch arrived, so a hang there counts from then).
  ar.push_back(
      record("trainmon:rank_progress:timestamp_seconds",
             "trainmon_train_phase_since_timestamp_seconds > trainmon_train_last_step_timestamp_seconds "
             "or trainmon_train_last_step_timestamp_seconds"));
  ar.push_back(record("trainmon:rank_stalled:seconds",
                      with_job_id("(time() - trainmon:rank_progress:timestamp_seconds > "
                                  "trainmon:rank_hang_after:seconds) unless ignoring (phase) "
                                  "trainmon_train_phase{phase=\"idle\"} == 1")));
  {
    auto r = alert("TrainmonTrainingHang", "D23", Severity::critical,
                   "max by (job_id) (trainmon:rank_stalled:seconds{job_id!=\"\"}) unless on (job_id) "
                   "trainmon:rank_outside_loop:bool or max by (Hostname, run_id) "
                   "(trainmon:rank_stalled:seconds{job_id=\"\"}) "
                   "unless on (Hostname, run_id) trainmon:rank_outside_loop:bool{job_id=\"\"}",
                   0,
                   "{{ with $labels.job_id }}job {{ . }}{{ else }}run {{ $labels.run_id }} on {{ "
                   "$labels.Hostname }}{{ end "
                   "}}: " +
                       count_ranks + " stuck, no step ended for {{ $value | humanizeDuration }}",
                   advice::kD23Hang,
                   th_list({{"hang_p90_factor", th.hang_p90_factor},
                            {"hang_floor_s", th.hang_floor_s},
                            {"hang_p90_window_s", th.hang_p90_window_s}}));
    r.annotations["ranks"] = ranks_list;
    ar.push_back(std::move(r));
  }
  // D24 straggler rank: the job's fastest rank's mean step time / this rank's; or, when every rank's
  // step is as long as the slowest one's, the data-wait score (label cause="data-wait").
  const std::string outside_straggler =
      fmt::format("unless on (job_id) (max by (job_id) ({}) == 1)",
                  with_job_id(fmt::format("max_over_time(trainmon_train_phase{{phase=\"idle\"}}[{}])",
                                          d(th.straggler_window_s))));
  const std::string straggler_th = th_list({{"straggler_score_frac", th.straggler_score_frac},
                                            {"straggler_window_s", th.straggler_window_s},
                                            {"straggler_min_steps", th.straggler_min_steps},
                                            {"straggler_for_s", th.straggler_for_s}});
  ar.push_back(alert(
      "TrainmonStragglerRank", "D24", Severity::warning,
      fmt::format("trainmon:rank_straggler:score < {} {}", n(th.straggler_score_frac), outside_straggler),
      th.straggler_for_s,
      rank + job +
          " is a straggler: relative performance score {{ $value | humanize }} (the fastest rank's mean "
          "step time / its own)",
      advice::kD24Straggler, straggler_th));
  {
    auto r = alert(
        "TrainmonStragglerRank", "D24", Severity::warning,
        fmt::format("trainmon:rank_straggler_data:score < {0} unless trainmon:rank_straggler:score < {0} {1}",
                    n(th.straggler_score_frac), outside_straggler),
        th.straggler_for_s,
        rank + job +
            " is a straggler: it waits for data longer than the job's other ranks (score {{ $value | "
            "humanize "
            "}}: 1 - its extra data wait / its mean step time), and every step waits for it",
        advice::kD24DataWait, straggler_th);
    r.labels["cause"] = "data-wait";
    ar.push_back(std::move(r));
  }
  {
    auto r = alert(
        "TrainmonStragglerRank", "D24", Severity::warning,
        fmt::format("trainmon:rank_straggler_compute:score < {0} unless trainmon:rank_straggler:score < {1} "
                    "unless trainmon:rank_straggler_data:score < {1} {2}",
                    n(th.straggler_compute_frac), n(th.straggler_score_frac), outside_straggler),
        th.straggler_compute_for_s,
        rank + job +
            " is a straggler: its compute per step (step - data wait - collective wait) is slower than the "
            "job's fastest rank's (score {{ $value | humanize }}), and the others wait for it in every "
            "collective",
        advice::kD24Compute,
        th_list({{"straggler_compute_frac", th.straggler_compute_frac},
                 {"straggler_window_s", th.straggler_window_s},
                 {"straggler_min_steps", th.straggler_min_steps},
                 {"straggler_compute_for_s", th.straggler_compute_for_s}}));
    r.labels["cause"] = "compute";
    ar.push_back(std::move(r));
  }
  // D27 communication-bound: the job's lowest rank still waits in collectives for comm_bound_share_pct
  // of its step time (every rank does), across all its nodes.
  ar.push_back(alert("TrainmonCommBound", "D27", Severity::warning,
                     fmt::format("trainmon:job:rank_comm_share_min >= {} unless on (job_id) "
                                 "trainmon:job_outside_loop_recent:bool",
                                 n(th.comm_bound_share_pct / 100.0)),
                     th.comm_bound_for_s,
                     "job {{ $labels.job_id }}: every rank waits in collectives for at least {{ $value | "
                     "humanizePercentage }} of each step",
                     advice::kD27CommBound,
                     th_list({{"comm_bound_share_pct", th.comm_bound_share_pct},
                              {"window_s", th.window_s},
                              {"comm_bound_for_s", th.comm_bound_for_s}})));
  return {std::move(rec), std::move(al)};
}

std::string prometheus_rules_yaml(const std::vector<PromRuleGroup>& groups, const Thresholds& th) {
  std::string out =
      "# Prometheus rules from `trainmon rules` (docs/cluster.md). Thresholds (defaults: the local "
      "detectors'):\n";
  std::string line = "#";
  for (const auto& t : threshold_table()) {
    auto item = fmt::format(" {}={}", t.name, prom_number(th.*(t.field)));
    if (line.size() + item.size() > 100) {
      out += line + "\n";
      line = "#";
    }
    line += item;
  }
  out += line + "\ngroups:\n";
  for (const auto& g : groups) {
    out += fmt::format("  - name: {}\n    rules:\n", yaml_quoted(g.name));
    for (const auto& r : g.rules) {
      if (!r.record.empty())
        out += fmt::format("      - record: {}\n", yaml_quoted(r.record));
      else
        out += fmt::format("      - alert: {}\n", yaml_quoted(r.alert));
      out += fmt::format("        expr: {}\n", yaml_quoted(r.expr));
      if (!r.for_duration.empty()) out += fmt::format("        for: {}\n", yaml_quoted(r.for_duration));
      const auto map = [&](std::string_view key, const std::map<std::string, std::string>& m) {
        if (m.empty()) return;
        out += fmt::format("        {}:\n", key);
        for (const auto& [k, v] : m) out += fmt::format("          {}: {}\n", yaml_quoted(k), yaml_quoted(v));
      };
      map("labels", r.labels);
      map("annotations", r.annotations);
    }
  }
  return out;
}

}  // namespace trainmon::diagnose
