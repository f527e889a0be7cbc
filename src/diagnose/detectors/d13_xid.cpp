// SPDX-License-Identifier: Apache-2.0
// D13 xid-error: NVML XidCriticalError events (event type 0x8, NVML-NOTES §6.2). Events with the
// same GPU and Xid within window_s of each other are one finding (with a count). Meanings, advice
// and severities follow NVIDIA's Xid catalog (https://docs.nvidia.com/deploy/xid-errors/).
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

namespace {
constexpr std::uint64_t kXidEvent = 0x8;

const std::array<XidInfo, 12> kXids{{
    {0, N_("Xid error (not in trainmon's table)"),
     N_("Look the code up in NVIDIA's Xid catalog; restart the application and "
        "contact the administrator if it repeats."),
     Severity::warning},
    {13,
     N_("Graphics engine exception: usually the application (illegal instruction or out-of-range access), "
        "sometimes the driver or hardware"),
     N_("Rerun with CUDA_LAUNCH_BLOCKING=1 and compute-sanitizer to find the "
        "failing kernel; if it repeats on one GPU only, report it."),
     Severity::warning},
    {31, N_("GPU memory page fault (MMU fault): usually an illegal memory access by the application"),
     N_("Debug the application (compute-sanitizer, CUDA_LAUNCH_BLOCKING=1); if unrelated programs fault on "
        "the "
        "same "
        "GPU, report the hardware."),
     Severity::warning},
    {43,
     N_("GPU stopped processing: the channel was reset after a user-application fault; the GPU stays "
        "healthy"),
     N_("Restart the application; look for the application error logged just before."), Severity::warning},
    {48, N_("Double-bit ECC error (uncorrectable memory error)"),
     N_("Stop using the GPU: results may be wrong. An administrator must drain it and reset it; RMA if it "
        "repeats."),
     Severity::critical},
    {63, N_("ECC page retirement or row-remapping recorded: a memory row is being replaced"),
     N_("Finish or stop the job, then reset the GPU (when idle) so the remap takes effect."),
     Severity::warning},
    {64, N_("ECC page retirement or row-remapping recording failed"),
     N_("The GPU could not record a bad memory row: drain it and contact support/RMA."), Severity::critical},
    {74, N_("NVLink error"),
     N_("Check NVLink state (`nvidia-smi nvlink -s`, `-e`); drain and reset the GPUs involved; "
        "report the hardware if it repeats."),
     Severity::critical},
    {79, N_("GPU has fallen off the bus"),
     N_("The GPU is gone until a reset or reboot: check power, cooling and PCIe "
        "seating; drain the node and report it."),
     Severity::critical},
    {92, N_("High single-bit ECC error rate"),
     N_("Watch the ECC counters; plan to drain the GPU for a check."), Severity::warning},
    {94, N_("Contained ECC error: only the affected application is hit"),
     N_("Restart the affected application; the GPU can keep running other work; reset it when idle."),
     Severity::warning},
    {95, N_("Uncontained ECC error: every application on the GPU is affected"),
     N_("Stop all work on the GPU; an administrator must reset it (drain the node)."), Severity::critical},
}};
}  // namespace

std::span<const XidInfo> xid_table() noexcept {
  return kXids;
}

const XidInfo& xid_info(unsigned xid) noexcept {
  for (const auto& x : kXids)
    if (x.xid == xid) return x;
  return kXids[0];
}

std::vector<Finding> detect_xid(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  std::vector<GpuEventRec> ev;
  for (const auto& e : s.gpu_events)
    if ((e.event_type & kXidEvent) || e.xid != 0) ev.push_back(e);
  std::stable_sort(ev.begin(), ev.end(), [](const GpuEventRec& a, const GpuEventRec& b) {
    return std::tie(a.gpu, a.xid, a.t) < std::tie(b.gpu, b.xid, b.t);
  });
  for (std::size_t i = 0; i < ev.size();) {
    std::size_t j = i + 1;
    while (j < ev.size() && ev[j].gpu == ev[i].gpu && ev[j].xid == ev[i].xid &&
           ev[j].t - ev[j - 1].t <= th.window_s)
      ++j;
    const auto xid = static_cast<unsigned>(ev[i].xid);
    const auto& info = xid_info(xid);
    Finding f = make_finding("D13", info.severity, ev[i].t, ev[j - 1].t);
    f.gpus = {ev[i].gpu};
    f.numbers["xid"] = static_cast<double>(xid);
    f.numbers["count"] = static_cast<double>(j - i);
    say(f, "Xid {} on GPU{}{}: {}", xid, ev[i].gpu, j - i > 1 ? phrase(" ({} times)", j - i) : Phrase{},
        word(info.meaning));
    f.advice = std::string(info.advice);
    f.thresholds = {{"window_s", th.window_s}};
    out.push_back(std::move(f));
    i = j;
  }
  return out;
}

}  // namespace trainmon::diagnose
