// SPDX-License-Identifier: Apache-2.0
// `trainmon rm RUN...`: delete recorded runs and everything recorded for them.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/parse_errors.h"
#include "cli/run_lookup.h"
#include "trainmon/core/i18n.h"
#include "trainmon/report/report_file.h"
#include "trainmon/store/db_path.h"
#include "trainmon/store/store.h"

namespace trainmon::cli {
namespace {

struct RmOptions {
  std::string db;
  std::vector<std::string> runs;
};

int remove_runs(const RmOptions& o) {
  const std::string path = store::resolve_db_path(o.db);
  // A missing store is status 1 as for show / export (opening it read-write would create it).
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    std::fputs(i18n::trf("trainmon rm: no run store at {}\n", path).c_str(), stderr);
    return kExitFailure;
  }
  auto st = store::Store::open(path, store::OpenMode::read_write);
  if (!st) {
    std::fprintf(stderr, "trainmon rm: %s\n", said(st.error()).c_str());
    return kExitFailure;
  }
  // Every RUN is resolved before anything is deleted: one unknown or ambiguous RUN (status 2) or a
  // store that cannot be read (status 1) deletes nothing. A run named twice ("rm 3 3", "rm 3 last")
  // is deleted once.
  std::vector<std::int64_t> ids;
  for (const auto& spec : o.runs) {
    auto id = st->resolve_run(spec);
    if (!id) {
      std::fputs(i18n::trf("trainmon rm: {}; nothing deleted\n", said(id.error())).c_str(), stderr);
      return run_lookup_exit(id.error());
    }
    if (std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(*id);
  }
  int rc = kExitOk;
  for (const std::int64_t id : ids) {
    auto run = st->get_run(id);
    if (run && store::effective_status(*run) == "running") {
      std::fputs(i18n::trf("trainmon rm: run {} is still recording; stop it first\n", id).c_str(), stderr);
      rc = kExitFailure;
      continue;
    }
    if (auto r = st->delete_run(id); !r) {
      std::fprintf(stderr, "trainmon rm: %s\n", said(r.error()).c_str());
      rc = kExitFailure;
      continue;
    }
    std::printf("deleted run %lld\n", static_cast<long long>(id));
    // The run's HTML report at its default location (trainmon run / trainmon report without -o)
    // goes with it; a report written elsewhere with -o is the user's file and is left alone.
    const std::string report = report::default_report_path(path, id);
    if (std::filesystem::is_regular_file(report, ec)) {
      if (std::filesystem::remove(report, ec))
        std::printf("deleted report %s\n", report.c_str());
      else
        std::fputs(i18n::trf("trainmon rm: cannot delete report {}: {}\n", report, ec.message()).c_str(),
                   stderr);
    }
  }
  return rc;
}

const Registrar kRegistrar{
    CommandSpec{"rm", N_("Delete recorded runs"),
                [](CLI::App& app, const GlobalOptions&) -> Runner {
                  auto o = std::make_shared<RmOptions>();
                  app.add_option("run", o->runs, tr("Run ids, unique names, or last"))->required();
                  app.add_option("--db", o->db, tr("Run store"));
                  return [o] { return remove_runs(*o); };
                },
                35}};

}  // namespace
}  // namespace trainmon::cli
