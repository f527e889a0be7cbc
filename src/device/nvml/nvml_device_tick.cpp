// SPDX-License-Identifier: Apache-2.0
// One device's reads in one tick (NvmlBackend::run_tick, run on the worker the tick scheduling picks,
// nvml_tick_schedule.cpp): the handle looked up (again) until it answers, the static facts, the
// dynamic values and the processes, and a lost or failing GPU's status on every field.
#include "device/nvml/nvml_backend.h"
#include "device/nvml/nvml_error.h"

namespace trainmon::nvml {

void NvmlBackend::run_tick(DeviceContext& ctx, TickResult& out) {
  const NvmlApi& a = *ctx.api;
  const bool processes = ctx.options.collect_processes;
  if (ctx.handle == nullptr) {  // the first tick, or the look-up failed: look it up (again)
    nvmlDevice_t h = nullptr;
    int rc = a.device_get_handle_by_index(ctx.index, &h);
    if (rc != NVML_SUCCESS || h == nullptr) {
      out.sample.index = ctx.index;
      out.sample.info = ctx.info;
      set_all_status(out.sample, nvml_read_status(rc == NVML_SUCCESS ? NVML_ERROR_UNKNOWN : rc), rc,
                     processes);
      if (out.sample.responsive.status == ReadStatus::not_supported)
        out.sample.responsive.status = ReadStatus::failed;
      return;
    }
    ctx.handle = h;
  }
  {
    // Static facts count apart: a GPU whose dynamic calls all fail is "failed" on every tick,
    // including the first one where its static facts still read.
    Call static_call;
    read_static_info(ctx, static_call);
    if (static_call.fatal() != 0) {
      out.sample.index = ctx.index;
      out.sample.info = ctx.info;
      set_all_status(out.sample, ReadStatus::gpu_lost, static_call.fatal(), processes);
      return;
    }
  }
  Call call;
  out.sample = read_sample(ctx, call);
  if (call.fatal() != 0) {
    set_all_status(out.sample, ReadStatus::gpu_lost, call.fatal(), processes);
    return;
  }
  if (call.ok_count() == 0 && call.failed_count() > 0) {
    out.sample.responsive = Reading<bool>::fail(ReadStatus::failed, call.last_failure());
  } else {
    out.sample.responsive = Reading<bool>::of(true);
  }
  if (processes) {
    Call pcall;
    const bool mig = out.sample.mig_mode_current.ok() && *out.sample.mig_mode_current == 1;
    out.processes = read_processes(ctx, pcall, out.sample.process_count, mig);
  }
}

}  // namespace trainmon::nvml
