// SPDX-License-Identifier: Apache-2.0
// `trainmon runs`: the recorded runs, newest first (id, name, status, start, duration, GPUs,
// findings, command); --json for scripts. Works while a run is recording (WAL readers).
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/parse_errors.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/export/terminal.h"
#include "trainmon/recorder/run_report.h"
#include "trainmon/store/db_path.h"
#include "trainmon/store/store.h"

namespace trainmon::cli {
namespace {

struct RunsOptions {
  std::string db;
  bool json = false;
};

int list_runs(const RunsOptions& o) {
  const std::string path = store::resolve_db_path(o.db);
  auto st = store::Store::open(path, store::OpenMode::read_only);
  if (!st && st.error().name == store::kErrMissing) {
    if (o.json) {
      std::puts("[]");
    } else {
      // the store's own words: no file at all, or an empty database
      std::printf("%s\n", said(st.error()).c_str());
    }
    return kExitOk;
  }
  if (!st) {
    std::fprintf(stderr, "trainmon runs: %s\n", said(st.error()).c_str());
    return kExitFailure;
  }
  auto runs = st->list_runs();
  if (!runs) {
    std::fprintf(stderr, "trainmon runs: %s\n", said(runs.error()).c_str());
    return kExitFailure;
  }
  if (o.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : *runs) arr.push_back(recorder::run_to_json(r));
    std::puts(text::json_dump(arr, 2).c_str());
  } else {
    // On a terminal every line is cut to its width (never wraps); pipes get whole lines.
    const auto term = exp::probe_terminal(STDOUT_FILENO);
    std::fputs(recorder::format_runs_table(*runs, term.is_tty ? term.columns : 0).c_str(), stdout);
  }
  return kExitOk;
}

const Registrar kRegistrar{CommandSpec{"runs", N_("List recorded runs"),
                                       [](CLI::App& app, const GlobalOptions&) -> Runner {
                                         auto o = std::make_shared<RunsOptions>();
                                         app.add_option("--db", o->db,
                                                        tr("Run store (default: $TRAINMON_DB, then "
                                                           "$XDG_STATE_HOME/trainmon/trainmon.db)"));
                                         app.add_flag("--json", o->json, tr("JSON array of runs"));
                                         return [o] { return list_runs(*o); };
                                       },
                                       32}};

}  // namespace
}  // namespace trainmon::cli
