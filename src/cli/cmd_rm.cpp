// SPDX-License-Identifier: Apache-2.0
// `trainmon rm RUN...`: delete recorded runs and everything recorded for them.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/run_lookup.h"
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
    std::fprintf(stderr, "trainmon rm: no run store at %s\n", path.c_str());
    return kExitFailure;
  }
  auto st = store::Store::open(path, store::OpenMode::read_write);
  if (!st) {
    std::fprintf(stderr, "trainmon rm: %s\n", st.error().message.c_str());
    return kExitFailure;
  }
  int rc = kExitOk;
  for (const auto& spec : o.runs) {
    auto id = st->resolve_run(spec);
    if (!id) {
      std::fprintf(stderr, "trainmon rm: %s\n", id.error().message.c_str());
      rc = run_lookup_exit(id.error());
      continue;
    }
    auto run = st->get_run(*id);
    if (run && store::effective_status(*run) == "running") {
      std::fprintf(stderr, "trainmon rm: run %lld is still recording; stop it first\n",
                   static_cast<long long>(*id));
      rc = kExitFailure;
      continue;
    }
    if (auto r = st->delete_run(*id); !r) {
      std::fprintf(stderr, "trainmon rm: %s\n", r.error().message.c_str());
      rc = kExitFailure;
      continue;
    }
    std::printf("deleted run %lld\n", static_cast<long long>(*id));
  }
  return rc;
}

const Registrar kRegistrar{
    CommandSpec{"rm", "Delete recorded runs",
                [](CLI::App& app, const GlobalOptions&) -> Runner {
                  auto o = std::make_shared<RmOptions>();
                  app.add_option("run", o->runs, "Run ids, unique names, or last")->required();
                  app.add_option("--db", o->db, "Run store");
                  return [o] { return remove_runs(*o); };
                },
                35}};

}  // namespace
}  // namespace trainmon::cli
