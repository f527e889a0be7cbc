// SPDX-License-Identifier: Apache-2.0
// `trainmon export RUN --format csv|jsonl [-o FILE]`: a run's samples and events. CSV holds one
// series kind (--series gpu by default; host, process, gpu_process, gpu_util_hr, events); JSON
// Lines holds everything, or the one kind --series names.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "cli/parse_errors.h"
#include "cli/run_lookup.h"
#include "trainmon/core/i18n.h"
#include "trainmon/recorder/run_report.h"
#include "trainmon/store/db_path.h"
#include "trainmon/store/store.h"

namespace trainmon::cli {
namespace {

struct ExportOptions {
  std::string db;
  std::string run = "last";
  std::string format = "jsonl";
  std::string series;  // empty: gpu for csv, everything for jsonl
  std::string output;
};

int export_run(const ExportOptions& o) {
  if (o.format != "csv" && o.format != "jsonl") {
    std::fputs(i18n::tr("trainmon export: --format is csv or jsonl\n").data(), stderr);
    return kExitUsage;
  }
  auto st = store::Store::open(store::resolve_db_path(o.db), store::OpenMode::read_only);
  if (!st) {
    std::fprintf(stderr, "trainmon export: %s\n", said(st.error()).c_str());
    return kExitFailure;
  }
  auto id = st->resolve_run(o.run);
  if (!id) {
    std::fprintf(stderr, "trainmon export: %s\n", said(id.error()).c_str());
    return run_lookup_exit(id.error());
  }
  std::ofstream file;
  if (!o.output.empty() && o.output != "-") {
    file.open(o.output, std::ios::binary | std::ios::trunc);
    if (!file) {
      std::fputs(i18n::trf("trainmon export: cannot write {}\n", o.output).c_str(), stderr);
      return kExitFailure;
    }
  }
  std::ostream& out = file.is_open() ? static_cast<std::ostream&>(file) : std::cout;
  auto r = o.format == "csv" ? recorder::export_csv(*st, *id, o.series.empty() ? "gpu" : o.series, out)
                             : recorder::export_jsonl(*st, *id, out, o.series);
  out.flush();
  // `trainmon export RUN | head`: the reader left; that ends the export quietly, status 0.
  const bool gone = !out && !file.is_open() && (errno == EPIPE || reader_gone(STDOUT_FILENO));
  if (gone) return kExitOk;
  if (!r) {
    std::fprintf(stderr, "trainmon export: %s\n", said(r.error()).c_str());
    return r.error().domain == ErrorDomain::usage ? kExitUsage : kExitFailure;
  }
  if (!out) {
    std::fputs(i18n::tr("trainmon export: write failed\n").data(), stderr);
    return kExitFailure;
  }
  return kExitOk;
}

const Registrar kRegistrar{CommandSpec{
    "export", N_("Export a recorded run's samples and events (csv or jsonl)"),
    [](CLI::App& app, const GlobalOptions&) -> Runner {
      auto o = std::make_shared<ExportOptions>();
      app.add_option("run", o->run, tr("Run id, unique name, or last"))->capture_default_str();
      app.add_option("--format", o->format, tr("csv or jsonl"))->capture_default_str();
      app.add_option("--series", o->series,
                     tr("gpu, gpu_util_hr, host, process, gpu_process or events (csv default: gpu; "
                        "jsonl default: all)"));
      app.add_option("-o,--output", o->output, tr("Output file (default: stdout)"));
      app.add_option("--db", o->db, tr("Run store"));
      return [o] { return export_run(*o); };
    },
    34}};

}  // namespace
}  // namespace trainmon::cli
