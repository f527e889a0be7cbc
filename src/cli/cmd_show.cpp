// SPDX-License-Identifier: Apache-2.0
// `trainmon show RUN`: one run's header and summary (RUN: an id, a unique name, or `last`).
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/parse_errors.h"
#include "cli/run_lookup.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/recorder/run_report.h"
#include "trainmon/store/db_path.h"
#include "trainmon/store/store.h"

namespace trainmon::cli {
namespace {

struct ShowOptions {
  std::string db;
  std::string run = "last";
  bool json = false;
};

int show(const ShowOptions& o) {
  auto st = store::Store::open(store::resolve_db_path(o.db), store::OpenMode::read_only);
  if (!st) {
    std::fprintf(stderr, "trainmon show: %s\n", said(st.error()).c_str());
    return kExitFailure;
  }
  auto id = st->resolve_run(o.run);
  if (!id) {
    std::fprintf(stderr, "trainmon show: %s\n", said(id.error()).c_str());
    return run_lookup_exit(id.error());
  }
  auto run = st->get_run(*id);
  if (!run) {
    std::fprintf(stderr, "trainmon show: %s\n", said(run.error()).c_str());
    return kExitFailure;
  }
  if (o.json) {
    std::puts(text::json_dump(recorder::run_to_json(*run), 2).c_str());
  } else {
    std::fputs(recorder::format_run_details(*run).c_str(), stdout);
  }
  return kExitOk;
}

const Registrar kRegistrar{
    CommandSpec{"show", N_("Show one recorded run (id, unique name, or last)"),
                [](CLI::App& app, const GlobalOptions&) -> Runner {
                  auto o = std::make_shared<ShowOptions>();
                  app.add_option("run", o->run, tr("Run id, unique name, or last"))->capture_default_str();
                  app.add_option("--db", o->db, tr("Run store"));
                  app.add_flag("--json", o->json, tr("JSON object"));
                  return [o] { return show(*o); };
                },
                33}};

}  // namespace
}  // namespace trainmon::cli
