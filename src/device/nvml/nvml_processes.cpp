// SPDX-License-Identifier: Apache-2.0
// Processes on one GPU: compute and graphics lists (two-call protocol, oversized buffer, retried
// when the list grows), the 535.43–535.86 32-byte _v3 layout detected by probing, per-process
// utilisation since the previous tick, and process names.
#include <algorithm>
#include <map>

#include "device/nvml/nvml_device.h"
#include "device/nvml/nvml_validate.h"

namespace trainmon::nvml {

namespace {

constexpr int kListAttempts = 4;

struct ListResult {
  int rc = NVML_SUCCESS;
  std::vector<RawProcess> entries;
  bool has_instance_ids = true;  ///< false for the v1 layout
};

/// Run the two-call protocol for one list. `call_fn(count*, void* buffer)` performs the NVML call.
template <class CallFn>
ListResult two_call(CallFn call_fn, std::size_t stride_hint, DeviceContext* probe_ctx) {
  ListResult out;
  unsigned count = 0;
  int rc = call_fn(&count, nullptr);
  if (rc == NVML_SUCCESS && count == 0) return out;
  if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) {
    out.rc = rc;
    return out;
  }
  // Storage sized for the widest layout (32 bytes) so a driver writing 32-byte entries into what we
  // believe is a 24-byte array never overruns it.
  std::vector<nvmlProcessInfo_535_t> storage;
  for (int attempt = 0; attempt < kListAttempts; ++attempt) {
    unsigned capacity = 2 * count + 5;
    storage.assign(capacity, nvmlProcessInfo_535_t{});
    unsigned io = capacity;
    rc = call_fn(&io, storage.data());
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      count = std::max(io, count + 1);  // grew between calls: ask again with the new size
      continue;
    }
    if (rc != NVML_SUCCESS) {
      out.rc = rc;
      return out;
    }
    io = std::min(io, capacity);
    const auto* bytes = reinterpret_cast<const unsigned char*>(storage.data());
    const std::size_t nbytes = storage.size() * sizeof(nvmlProcessInfo_535_t);
    std::size_t stride = stride_hint;
    if (probe_ctx != nullptr) {  // a _v3 call: which layout did the driver write?
      if (probe_ctx->v3_stride) {
        stride = *probe_ctx->v3_stride;
      } else if (auto detected = detect_process_stride(bytes, nbytes, io)) {
        probe_ctx->v3_stride = *detected;
        stride = *detected;
      }
    }
    out.entries = parse_processes(bytes, nbytes, io, stride);
    out.has_instance_ids = stride >= 24;
    return out;
  }
  out.rc = NVML_ERROR_INSUFFICIENT_SIZE;
  return out;
}

/// One list (compute or graphics) through the newest version that implements itself: _v3 (unless
/// it turned out to write the 535.43–535.86 32-byte layout and _v2 exists), then _v2, then the
/// plain v1 name. A version that is not exported, or answers nvml_answer_means_try_older() (or
/// NVML_ERROR_ARGUMENT_VERSION_MISMATCH), hands over to the next older one, as a missing symbol
/// does; one that declined while an older one answered is skipped from then on (`skipped`).
template <class V3, class V2, class V1>
ListResult read_list(Call& call, DeviceContext& ctx, nvmlDevice_t h, unsigned& skipped, const V3& v3,
                     const V2& v2, const V1& v1) {
  // A _v3 that turned out to write the 535.43–535.86 32-byte layout: prefer _v2 from then on.
  const bool v3_broken = ctx.v3_stride && *ctx.v3_stride == 32 && v2 != nullptr;
  ListResult declined;
  declined.rc = NVML_ERROR_FUNCTION_NOT_FOUND;
  auto declines = [](const ListResult& r) {
    return nvml_answer_means_try_older(r.rc) || r.rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  };
  bool only_not_found = true;  // every newer version declined with FUNCTION_NOT_FOUND
  auto keep = [&](ListResult r, unsigned level) {
    if (declines(r)) {
      if (declined.rc != NVML_ERROR_NOT_SUPPORTED) declined.rc = r.rc;  // the most telling answer
      only_not_found = only_not_found && r.rc == NVML_ERROR_FUNCTION_NOT_FOUND;
      return false;
    }
    if (r.rc == NVML_SUCCESS || only_not_found) skipped = std::max(skipped, level);
    declined = std::move(r);
    return true;
  };
  if (v3 != nullptr && !v3_broken && skipped < 1 &&
      keep(two_call([&](unsigned* n,
                        void* buf) { return call(v3, h, n, static_cast<nvmlProcessInfo_v2_t*>(buf)); },
                    24, &ctx),
           0))
    return declined;
  if (v2 != nullptr && skipped < 2 &&
      keep(two_call([&](unsigned* n,
                        void* buf) { return call(v2, h, n, static_cast<nvmlProcessInfo_v2_t*>(buf)); },
                    24, nullptr),
           1))
    return declined;
  if (v1 != nullptr &&
      keep(two_call([&](unsigned* n,
                        void* buf) { return call(v1, h, n, static_cast<nvmlProcessInfo_v1_t*>(buf)); },
                    16, nullptr),
           2))
    return declined;
  return declined;
}

/// Newest utilisation sample per pid since the previous tick. Returns the NVML code of the call
/// (NOT_FOUND = no process had a sample).
int read_process_utilization(Call& call, DeviceContext& ctx,
                             std::map<std::uint32_t, nvmlProcessUtilizationSample_t>& by_pid) {
  const NvmlApi& a = *ctx.api;
  if (a.device_get_process_utilization == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
  // First read: the last ~1 s; a "last seen" after now (a clock stepped back) starts again there.
  ctx.last_process_util_us = sample_window_start(ctx.last_process_util_us, now_unix_us());
  const unsigned long long since = ctx.last_process_util_us;
  unsigned count = 0;
  int rc = call(a.device_get_process_utilization, ctx.handle,
                static_cast<nvmlProcessUtilizationSample_t*>(nullptr), &count, since);
  if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) return rc;
  if (count == 0) return NVML_ERROR_NOT_FOUND;
  std::vector<nvmlProcessUtilizationSample_t> buf;
  for (int attempt = 0; attempt < kListAttempts; ++attempt) {
    buf.assign(2 * count + 5, nvmlProcessUtilizationSample_t{});
    unsigned io = static_cast<unsigned>(buf.size());
    rc = call(a.device_get_process_utilization, ctx.handle, buf.data(), &io, since);
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      count = std::max(io, count + 1);
      continue;
    }
    if (rc != NVML_SUCCESS) return rc;
    io = std::min<unsigned>(io, static_cast<unsigned>(buf.size()));
    const std::uint64_t now_us = now_unix_us();
    std::uint64_t newest = ctx.last_process_util_us;
    for (unsigned i = 0; i < io; ++i) {
      const auto& smp = buf[i];
      // A sample not newer than asked for (a driver that answers its whole buffer), undated (0) or
      // dated in the future is left out: it is not shown as current, and a future date never becomes
      // the next "last seen" (which would blank every later read until that date). Per sample: the
      // other pids' samples of the same answer count.
      if (!sample_dated_in_window(smp.timeStamp, since, now_us)) continue;
      newest = std::max<std::uint64_t>(newest, std::min<std::uint64_t>(smp.timeStamp, now_us));
      auto [it, inserted] = by_pid.try_emplace(smp.pid, smp);
      if (!inserted && smp.timeStamp > it->second.timeStamp) it->second = smp;
    }
    ctx.last_process_util_us = newest;
    return by_pid.empty() ? NVML_ERROR_NOT_FOUND : NVML_SUCCESS;
  }
  return NVML_ERROR_INSUFFICIENT_SIZE;
}

Reading<unsigned> pid_or_instance(bool has_ids, unsigned v) {
  if (!has_ids) return Reading<unsigned>::fail(ReadStatus::not_supported);
  return checked_u32(v);
}

/// One pid's entries while the lists are merged: memory per (instance, list) entry.
struct PidEntries {
  GpuProcessSample s;
  /// memory per MIG instance (kNotAvailableU32 pair when MIG is off): summed within one list (the
  /// driver listing the pid twice), the larger of the compute and the graphics list's sums (one
  /// allocation seen by both lists), then summed over the instances.
  std::vector<std::pair<MigInstanceRef, std::array<Reading<std::uint64_t>, 2>>> memory;
  bool in_list[2] = {false, false};
};

Reading<std::uint64_t> add_memory(const Reading<std::uint64_t>& a, const Reading<std::uint64_t>& b) {
  if (a.status == ReadStatus::not_collected) return b;
  if (b.status == ReadStatus::not_collected) return a;
  if (!a.ok()) return a;  // a part unknown: the total is unknown
  if (!b.ok()) return b;
  return Reading<std::uint64_t>::of(*a + *b);
}

}  // namespace

std::vector<GpuProcessSample> read_processes(DeviceContext& ctx, Call& call, Reading<unsigned>& count,
                                             bool mig_enabled) {
  const NvmlApi& a = *ctx.api;
  auto list_of = [&](int k, nvmlDevice_t h, unsigned& skipped) {
    return k == 0 ? read_list(call, ctx, h, skipped, a.device_get_compute_running_processes_v3,
                              a.device_get_compute_running_processes_v2,
                              a.device_get_compute_running_processes_v1)
                  : read_list(call, ctx, h, skipped, a.device_get_graphics_running_processes_v3,
                              a.device_get_graphics_running_processes_v2,
                              a.device_get_graphics_running_processes_v1);
  };
  ListResult lists[2] = {list_of(0, ctx.handle, ctx.process_list_versions_skipped[0]),
                         list_of(1, ctx.handle, ctx.process_list_versions_skipped[1])};
  // A MIG GPU whose own list failed (on the parent handle it needs privileges: NVML-NOTES §6.1, MIG
  // caveats): each MIG instance lists its processes on its own MIG device handle. Known only if
  // every instance answers.
  for (int k = 0; mig_enabled && k < 2; ++k) {
    if (lists[k].rc == NVML_SUCCESS || lists[k].rc == NVML_ERROR_FUNCTION_NOT_FOUND) continue;
    unsigned max_count = 0;
    if (call(a.device_get_max_mig_device_count, ctx.handle, &max_count) != NVML_SUCCESS) continue;
    ListResult merged;
    for (unsigned i = 0; i < max_count && i < 64 && merged.rc == NVML_SUCCESS; ++i) {
      nvmlDevice_t mh = nullptr;
      const int rc = call(a.device_get_mig_device_handle_by_index, ctx.handle, i, &mh);
      if (rc == NVML_ERROR_NOT_FOUND) continue;  // an empty slot
      if (rc != NVML_SUCCESS || mh == nullptr) {
        merged.rc = rc == NVML_SUCCESS ? NVML_ERROR_UNKNOWN : rc;
        break;
      }
      unsigned skipped = ctx.process_list_versions_skipped[k];
      ListResult one = list_of(k, mh, skipped);
      if (one.rc != NVML_SUCCESS) {
        merged.rc = one.rc;
        break;
      }
      merged.has_instance_ids = merged.has_instance_ids && one.has_instance_ids;
      merged.entries.insert(merged.entries.end(), one.entries.begin(), one.entries.end());
    }
    if (merged.rc == NVML_SUCCESS) lists[k] = std::move(merged);
  }
  // A list that failed leaves the processes unknown (its entries are not all there); one that a
  // driver does not implement at all (no graphics list on a compute-only board) does not.
  int list_rc = NVML_SUCCESS;
  for (const ListResult& l : lists) {
    if (l.rc == NVML_SUCCESS || l.rc == NVML_ERROR_NOT_SUPPORTED || l.rc == NVML_ERROR_FUNCTION_NOT_FOUND)
      continue;
    if (list_rc == NVML_SUCCESS) list_rc = l.rc;
  }
  if (lists[0].rc == NVML_ERROR_NOT_SUPPORTED || lists[0].rc == NVML_ERROR_FUNCTION_NOT_FOUND) {
    if (list_rc == NVML_SUCCESS) list_rc = lists[0].rc;  // no compute list: nothing is known
  }

  std::vector<PidEntries> by_pid;  // in the driver's order (compute list first)
  const std::uint64_t total = ctx.info ? ctx.info->memory_total_bytes.value_or(0) : 0;
  for (int k = 0; k < 2; ++k) {
    const ListResult& list = lists[k];
    for (const RawProcess& p : list.entries) {
      if (p.pid == 0 || p.pid > kMaxLinuxPid) continue;  // garbage entry: never a row
      auto it =
          std::find_if(by_pid.begin(), by_pid.end(), [&](const PidEntries& e) { return e.s.pid == p.pid; });
      if (it == by_pid.end()) {
        PidEntries e;
        e.s.gpu_index = ctx.index;
        e.s.pid = p.pid;
        e.s.type = k == 0 ? 'C' : 'G';
        e.s.list_position = static_cast<unsigned>(by_pid.size());  // kept for --query-compute-apps
        e.s.gpu_instance_id = pid_or_instance(list.has_instance_ids, p.gpu_instance_id);
        e.s.compute_instance_id = pid_or_instance(list.has_instance_ids, p.compute_instance_id);
        by_pid.push_back(std::move(e));
        it = std::prev(by_pid.end());
      }
      PidEntries& e = *it;
      e.in_list[k] = true;
      const MigInstanceRef inst{p.gpu_instance_id, p.compute_instance_id};
      const bool mig = list.has_instance_ids && p.gpu_instance_id != kNotAvailableU32;
      if (mig &&
          std::find(e.s.mig_instances.begin(), e.s.mig_instances.end(), inst) == e.s.mig_instances.end())
        e.s.mig_instances.push_back(inst);
      Reading<std::uint64_t> used = checked_u64(p.used_memory);
      if (used.ok() && total != 0 && *used > total)
        used = Reading<std::uint64_t>::fail(ReadStatus::invalid_value);
      auto m = std::find_if(e.memory.begin(), e.memory.end(), [&](const auto& x) { return x.first == inst; });
      if (m == e.memory.end()) {
        e.memory.push_back({inst, {}});
        m = std::prev(e.memory.end());
      }
      m->second[k] = add_memory(m->second[k], used);
    }
  }
  for (PidEntries& e : by_pid) {
    e.s.compute_and_graphics = e.in_list[0] && e.in_list[1];
    Reading<std::uint64_t> sum;
    for (const auto& [inst, per_list] : e.memory) {
      const auto& c = per_list[0];
      const auto& g = per_list[1];
      Reading<std::uint64_t> one =
          c.status == ReadStatus::not_collected ? g
          : g.status == ReadStatus::not_collected
              ? c
              : (c.ok() && g.ok() ? Reading<std::uint64_t>::of(std::max(*c, *g)) : c);
      sum = add_memory(sum, one);
    }
    if (sum.ok() && total != 0 && *sum > total) sum = Reading<std::uint64_t>::fail(ReadStatus::invalid_value);
    e.s.used_memory_bytes = sum;
  }
  count = list_rc == NVML_SUCCESS ? Reading<unsigned>::of(static_cast<unsigned>(by_pid.size()))
                                  : nvml_fail<unsigned>(list_rc);
  if (by_pid.empty()) {
    ctx.last_process_util.clear();
    return {};
  }

  // ---- per-process utilisation since the previous tick ----
  std::map<std::uint32_t, nvmlProcessUtilizationSample_t> util;
  const int urc = read_process_utilization(call, ctx, util);
  const std::uint64_t now_us = now_unix_us();
  // Remember the newest sample of every listed pid; forget pids no longer listed.
  std::map<std::uint32_t, nvmlProcessUtilizationSample_t> kept;
  for (const PidEntries& e : by_pid) {
    auto it = util.find(e.s.pid);
    auto old = ctx.last_process_util.find(e.s.pid);
    if (urc == NVML_SUCCESS && it != util.end() &&
        (old == ctx.last_process_util.end() || it->second.timeStamp >= old->second.timeStamp)) {
      kept[e.s.pid] = it->second;
    } else if (old != ctx.last_process_util.end()) {
      kept[e.s.pid] = old->second;
    }
  }
  ctx.last_process_util = kept;
  for (PidEntries& e : by_pid) {
    GpuProcessSample& s = e.s;
    const std::uint32_t pid = s.pid;
    auto it = kept.find(pid);
    const bool fresh = urc == NVML_SUCCESS && util.contains(pid);
    // No newer sample (the driver refreshes on its own period, NOT_FOUND): the last one, while young.
    // Every value shown is at most kProcessUtilHoldS old by its own timestamp, a new one too (a
    // driver's answer may hold samples older than what was asked for: those were left out above).
    const double age_s = it == kept.end() ? 0
                         : it->second.timeStamp >= now_us
                             ? 0.0
                             : static_cast<double>(now_us - it->second.timeStamp) / 1e6;
    const bool usable = fresh || urc == NVML_SUCCESS || urc == NVML_ERROR_NOT_FOUND;
    if (it != kept.end() && usable && age_s <= kProcessUtilHoldS) {
      s.sm_util_pct = checked_percent(it->second.smUtil);
      s.mem_util_pct = checked_percent(it->second.memUtil);
      s.enc_util_pct = checked_percent(it->second.encUtil);
      s.dec_util_pct = checked_percent(it->second.decUtil);
      s.util_age_s = Reading<double>::of(age_s);
    } else {
      // No sample for this process lately: nvidia-smi pmon prints "-".
      const int code = urc == NVML_SUCCESS ? NVML_ERROR_NOT_FOUND : urc;
      auto r = code == NVML_ERROR_NOT_FOUND ? Reading<unsigned>::fail(ReadStatus::not_available, code)
                                            : nvml_fail<unsigned>(code);
      s.sm_util_pct = s.mem_util_pct = s.enc_util_pct = s.dec_util_pct = r;
      s.util_age_s = Reading<double>::fail(r.status, r.code);
    }

    // ---- name ----
    std::array<char, 256> name{};
    int rc = call(a.system_get_process_name, pid, name.data(), unsigned{name.size()});
    if (rc == NVML_SUCCESS) {
      s.process_name = checked_string(name.data(), name.size());
    } else if (rc == NVML_ERROR_NOT_FOUND) {
      s.process_name = Reading<std::string>::fail(ReadStatus::not_available, rc);  // exited meanwhile
    } else {
      s.process_name = nvml_fail<std::string>(rc);
    }
  }

  std::vector<GpuProcessSample> out;
  out.reserve(by_pid.size());
  for (auto& e : by_pid) out.push_back(std::move(e.s));
  // by gpu then pid (Snapshot::gpu_processes), as the map this replaced gave
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.pid < y.pid; });
  return out;
}

}  // namespace trainmon::nvml
