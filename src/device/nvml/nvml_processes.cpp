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

template <class V3, class V2, class V1>
ListResult read_list(Call& call, DeviceContext& ctx, V3 v3, V2 v2, V1 v1) {
  nvmlDevice_t h = ctx.handle;
  // A _v3 that turned out to write the 535.43–535.86 32-byte layout: prefer _v2 from then on.
  const bool v3_broken = ctx.v3_stride && *ctx.v3_stride == 32 && v2 != nullptr;
  if (v3 != nullptr && !v3_broken) {
    return two_call(
        [&](unsigned* n, void* buf) { return call(v3, h, n, static_cast<nvmlProcessInfo_v2_t*>(buf)); }, 24,
        &ctx);
  }
  if (v2 != nullptr) {
    return two_call(
        [&](unsigned* n, void* buf) { return call(v2, h, n, static_cast<nvmlProcessInfo_v2_t*>(buf)); }, 24,
        nullptr);
  }
  if (v1 != nullptr) {
    return two_call(
        [&](unsigned* n, void* buf) { return call(v1, h, n, static_cast<nvmlProcessInfo_v1_t*>(buf)); }, 16,
        nullptr);
  }
  ListResult r;
  r.rc = NVML_ERROR_FUNCTION_NOT_FOUND;
  return r;
}

/// Newest utilisation sample per pid since the previous tick. Returns the NVML code of the call
/// (NOT_FOUND = no process had a sample).
int read_process_utilization(Call& call, DeviceContext& ctx,
                             std::map<std::uint32_t, nvmlProcessUtilizationSample_t>& by_pid) {
  const NvmlApi& a = *ctx.api;
  if (a.device_get_process_utilization == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
  if (ctx.last_process_util_us == 0) ctx.last_process_util_us = now_unix_us() - 1'000'000;
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
    std::uint64_t newest = ctx.last_process_util_us;
    for (unsigned i = 0; i < io; ++i) {
      const auto& smp = buf[i];
      newest = std::max<std::uint64_t>(newest, smp.timeStamp);
      auto [it, inserted] = by_pid.try_emplace(smp.pid, smp);
      if (!inserted && smp.timeStamp > it->second.timeStamp) it->second = smp;
    }
    ctx.last_process_util_us = newest;
    return NVML_SUCCESS;
  }
  return NVML_ERROR_INSUFFICIENT_SIZE;
}

Reading<unsigned> pid_or_instance(bool has_ids, unsigned v) {
  if (!has_ids) return Reading<unsigned>::fail(ReadStatus::not_supported);
  return checked_u32(v);
}

}  // namespace

std::vector<GpuProcessSample> read_processes(DeviceContext& ctx, Call& call) {
  const NvmlApi& a = *ctx.api;
  ListResult compute =
      read_list(call, ctx, a.device_get_compute_running_processes_v3,
                a.device_get_compute_running_processes_v2, a.device_get_compute_running_processes_v1);
  ListResult graphics =
      read_list(call, ctx, a.device_get_graphics_running_processes_v3,
                a.device_get_graphics_running_processes_v2, a.device_get_graphics_running_processes_v1);

  std::map<std::uint32_t, GpuProcessSample> by_pid;
  const std::uint64_t total = ctx.info ? ctx.info->memory_total_bytes.value_or(0) : 0;
  auto add = [&](const ListResult& list, char type) {
    for (const RawProcess& p : list.entries) {
      if (p.pid == 0 || p.pid > kMaxLinuxPid) continue;  // garbage entry: never a row
      auto [it, inserted] = by_pid.try_emplace(p.pid);
      GpuProcessSample& s = it->second;
      if (!inserted) {  // already listed by the compute list
        s.compute_and_graphics = true;
        continue;
      }
      s.gpu_index = ctx.index;
      s.pid = p.pid;
      s.type = type;
      s.used_memory_bytes = checked_u64(p.used_memory);
      if (s.used_memory_bytes.ok() && total != 0 && *s.used_memory_bytes > total) {
        s.used_memory_bytes = Reading<std::uint64_t>::fail(ReadStatus::invalid_value);
      }
      s.gpu_instance_id = pid_or_instance(list.has_instance_ids, p.gpu_instance_id);
      s.compute_instance_id = pid_or_instance(list.has_instance_ids, p.compute_instance_id);
    }
  };
  add(compute, 'C');
  add(graphics, 'G');
  if (by_pid.empty()) return {};

  // ---- per-process utilisation since the previous tick ----
  std::map<std::uint32_t, nvmlProcessUtilizationSample_t> util;
  const int urc = read_process_utilization(call, ctx, util);
  for (auto& [pid, s] : by_pid) {
    auto it = util.find(pid);
    if (urc == NVML_SUCCESS && it != util.end()) {
      s.sm_util_pct = checked_percent(it->second.smUtil);
      s.mem_util_pct = checked_percent(it->second.memUtil);
      s.enc_util_pct = checked_percent(it->second.encUtil);
      s.dec_util_pct = checked_percent(it->second.decUtil);
    } else {
      // No sample for this process since the last tick: nvidia-smi pmon prints "-".
      const int code = urc == NVML_SUCCESS ? NVML_ERROR_NOT_FOUND : urc;
      auto r = code == NVML_ERROR_NOT_FOUND ? Reading<unsigned>::fail(ReadStatus::not_available, code)
                                            : nvml_fail<unsigned>(code);
      s.sm_util_pct = s.mem_util_pct = s.enc_util_pct = s.dec_util_pct = r;
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
  for (auto& [pid, s] : by_pid) out.push_back(std::move(s));
  return out;
}

}  // namespace trainmon::nvml
