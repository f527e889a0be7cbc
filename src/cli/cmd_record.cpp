// SPDX-License-Identifier: Apache-2.0
// `trainmon record`: record the whole machine (every GPU, the host, the processes on GPUs and their
// trees) until SIGINT / SIGTERM / SIGHUP, then close the run cleanly. For shared servers, under
// systemd (deploy/systemd/trainmon-record.service). --retention deletes old runs and samples; samples older
// than --downsample-after are kept as one mean/min/max row per chunk (about one per minute at 1 s).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/record_options.h"
#include "trainmon/core/i18n.h"
#include "trainmon/recorder/duration.h"
#include "trainmon/recorder/record_loop.h"
#include "trainmon/runner/job_stop.h"
#include "trainmon/runner/launcher.h"

namespace trainmon::cli {
namespace {

struct RecordOptions {
  RecordCliOptions common{.name = "record"};
  std::string print_every = "0";
};

int record(const RecordOptions& o, const GlobalOptions& global) {
  // Signals are blocked first, before any thread exists (the alert delivery threads included) and
  // before the slower set-up (slow under the sanitizers): a SIGTERM that early is a clean stop, exit 0.
  runner::prepare_signals();
  auto lo = record_loop_options(o.common, global, "record");
  if (!lo) return kExitUsage;
  auto print_every = recorder::parse_duration_ns(o.print_every);
  if (!print_every) {
    std::fputs(i18n::trf("trainmon record: --print-every wants {} (got '{}')\n", recorder::duration_syntax(),
                         o.print_every)
                   .c_str(),
               stderr);
    return kExitUsage;
  }
  lo->print_every_ns = *print_every;
  auto alerts = alert_observer(o.common, "record");
  if (!alerts) return kExitUsage;
  std::vector<diagnose::TickObserver*> observers;
  if (*alerts) observers.push_back(alerts->get());
  const int rc = recorder::run_record_loop(*lo, observers);
  // Nothing the alert commands started outlives the recorder (runner/job_stop.h).
  (void)runner::JobStop(0, runner::JobStopOptions{"record", runner::kHelperGrace, false}).finish();
  return rc == 0 ? kExitOk : kExitFailure;
}

const Registrar kRegistrar{CommandSpec{
    "record", N_("Record the whole machine until stopped (a foreground daemon for shared servers)"),
    [](CLI::App& app, const GlobalOptions& global) -> Runner {
      auto o = std::make_shared<RecordOptions>();
      add_record_options(app, o->common);
      app.add_option("--print-every", o->print_every, tr("Seconds between resource lines; 0: none"))
          ->capture_default_str();
      return [o, &global] { return record(*o, global); };
    },
    31}};

}  // namespace
}  // namespace trainmon::cli
