// SPDX-License-Identifier: Apache-2.0
// `trainmon dmon`: nvidia-smi dmon's per-device scrolling monitor (same columns), plus --json / --csv.
#include "cli/scrolling_monitor.h"

namespace trainmon::cli {
namespace {

Registrar reg{
    {"dmon", N_("per-device scrolling monitor (nvidia-smi dmon columns)"),
     [](CLI::App& app, const GlobalOptions& global) -> Runner {
       return setup_monitor(
           app, global,
           {.name = "dmon",
            .groups_help = N_("metric groups p,u,c,v,m,e,t (default puc)"),
            .json_help = N_("one JSON object per GPU per line"),
            .parse_groups = [](const std::string& s) { return exp::parse_dmon_groups(s); },
            .configure =
                [](SamplerOptions& so, const exp::MonitorOptions& mo) {
                  so.backend.collect_processes = false;
                  so.backend.collect_pcie_throughput = mo.groups.find('t') != std::string::npos;
                },
            .header = [](const exp::MonitorOptions& mo) { return exp::dmon_header(mo); },
            .rows =
                [](const exp::MonitorOptions& mo, const Snapshot& snap, const Snapshot* prev,
                   std::span<const std::size_t> order) { return exp::dmon_rows(mo, snap, prev, order); }});
     },
     30}};

}  // namespace
}  // namespace trainmon::cli
