// SPDX-License-Identifier: Apache-2.0
// `trainmon report RUN [-o FILE] [--format html|md|json] [--max-points N]`: one run's report
// (docs/report.md). HTML goes to a file (default: beside the store, reports/<db name>-run-<id>.html; the
// path is printed); md and json go to stdout unless -o names a file. `-o -` is stdout.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "cli/run_lookup.h"
#include "trainmon/report/report.h"
#include "trainmon/report/report_file.h"
#include "trainmon/store/db_path.h"
#include "trainmon/store/store.h"

namespace trainmon::cli {
namespace {

struct ReportCliOptions {
  std::string db;
  std::string run = "last";
  std::string output;
  std::string format = "html";
  int max_points = 2000;
};

int report_command(const ReportCliOptions& o) {
  report::ReportOptions ro;
  if (o.format == "html") {
    ro.format = report::Format::html;
  } else if (o.format == "md" || o.format == "markdown") {
    ro.format = report::Format::markdown;
  } else if (o.format == "json") {
    ro.format = report::Format::json;
  } else {
    std::fprintf(stderr, "trainmon report: --format must be html, md or json (got '%s')\n", o.format.c_str());
    return kExitUsage;
  }
  if (o.max_points < 0 || o.max_points > 1'000'000) {
    std::fprintf(stderr, "trainmon report: --max-points must be 0 (no reduction) to 1000000\n");
    return kExitUsage;
  }
  ro.max_points = o.max_points;
  const std::string db_path = store::resolve_db_path(o.db);
  auto st = store::Store::open(db_path, store::OpenMode::read_only);
  if (!st) {
    std::fprintf(stderr, "trainmon report: %s\n", st.error().message.c_str());
    return kExitFailure;
  }
  auto id = st->resolve_run(o.run);
  if (!id) {
    std::fprintf(stderr, "trainmon report: %s\n", id.error().message.c_str());
    return run_lookup_exit(id.error());
  }
  std::string out = o.output;
  if (out.empty()) out = ro.format == report::Format::html ? report::default_report_path(db_path, *id) : "-";
  if (out == "-") {
    auto text = report::render_report(*st, *id, ro);
    if (!text) {
      std::fprintf(stderr, "trainmon report: %s\n", text.error().message.c_str());
      return kExitFailure;
    }
    // main() reports a write failure once; a reader that left (`| head`) is none.
    write_out(stdout, *text);
    return kExitOk;
  }
  // An explicit -o FILE must name an existing directory (as curl -o); the default location under the
  // store directory creates its reports/ directory.
  if (auto r = report::write_report_file(*st, *id, out, ro, o.output.empty()); !r) {
    std::fprintf(stderr, "trainmon report: %s\n", r.error().message.c_str());
    return kExitFailure;
  }
  std::printf("%s\n", out.c_str());
  return kExitOk;
}

const Registrar kRegistrar{CommandSpec{
    "report", "Write a run's report: one offline HTML page with charts, or a Markdown / JSON summary",
    [](CLI::App& app, const GlobalOptions&) -> Runner {
      auto o = std::make_shared<ReportCliOptions>();
      app.add_option("RUN", o->run, "Run id, name, or 'last'")->capture_default_str();
      app.add_option("--db", o->db,
                     "Run store (default: $TRAINMON_DB, then $XDG_STATE_HOME/trainmon/trainmon.db)");
      app.add_option(
          "-o,--output", o->output,
          "Output file; '-' is stdout (default: html to <store dir>/reports/<db name>-run-<id>.html, "
          "md and json to stdout)");
      app.add_option("--format", o->format, "html, md or json")->capture_default_str();
      app.add_option("--max-points", o->max_points,
                     "Buckets per chart series (min/mean/max); 0: every sample")
          ->capture_default_str();
      return [o] { return report_command(*o); };
    },
    62}};

}  // namespace
}  // namespace trainmon::cli
