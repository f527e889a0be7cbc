// SPDX-License-Identifier: Apache-2.0
// `trainmon pmon`: nvidia-smi pmon's per-process scrolling monitor (same columns), plus --json / --csv.
#include "cli/monitor_loop.h"

namespace trainmon::cli {
namespace {

Registrar reg{
    {"pmon", N_("per-process scrolling monitor (nvidia-smi pmon columns)"),
     [](CLI::App& app, const GlobalOptions& global) -> Runner {
       return setup_monitor(
           app, global,
           {.name = "pmon",
            .groups_help = N_("metric groups u (utilisation), m (memory) (default u)"),
            .json_help = N_("one JSON object per process per line"),
            .parse_groups = [](const std::string& s) { return exp::parse_pmon_groups(s); },
            .configure =
                [](SamplerOptions& so, const exp::MonitorOptions& mo) {
                  so.backend.collect_processes = true;
                  so.backend.collect_pcie_throughput = false;
                  if (mo.format == exp::MonitorFormat::json) {
                    // The GPU processes' attribution (Slurm job, pod, container, rank): their /proc
                    // entries only, with environ and cgroup read once per process.
                    so.collect_host = true;
                    so.host.all_processes = false;
                    so.host.disks = so.host.nets = false;
                    so.host.cpu_frequency = false;
                    so.host.requested_process_details = false;
                    so.host.requested_process_attribution = true;
                    so.host.process_status_every_tick = false;
                  }
                },
            .header = [](const exp::MonitorOptions& mo) { return exp::pmon_header(mo); },
            .header_every_rows = exp::kPmonHeaderEveryRows,
            .rows = [](const exp::MonitorOptions& mo, const Snapshot& snap, const Snapshot*,
                       std::span<const std::size_t> order) { return exp::pmon_rows(mo, snap, order); },
            .warnings = [](const Snapshot& snap,
                           std::span<const std::size_t> order) { return exp::pmon_warnings(snap, order); }});
     },
     31}};

}  // namespace
}  // namespace trainmon::cli
