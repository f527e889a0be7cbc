// SPDX-License-Identifier: Apache-2.0
// `trainmon report RUN [-o FILE] [--format html|md|json] [--max-points N]`: one run's report
// (docs/report.md). HTML goes to a file (default: beside the store, reports/<db name>-run-<id>.html; the
// path is printed); md and json go to stdout unless -o names a file. `-o -` is stdout.
// `trainmon report --prometheus URL --job ID [--from T] [--to T]`: a whole job's report over every
// node, read from Prometheus (docs/cluster.md; report/job_report.h).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "cli/parse_errors.h"
#include "cli/run_lookup.h"
#include "trainmon/cluster/job_history.h"
#include "trainmon/cluster/job_query.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/private_files.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/report/job_report.h"
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
  bool run_given = false;
  // --prometheus: a whole job's report from Prometheus (docs/cluster.md)
  std::string prometheus, job, from, to;
  double timeout_s = 30;
};

/// `report --prometheus URL --job ID [--from T] [--to T]`: the job's report over every node.
int job_report_command(const ReportCliOptions& o, const report::ReportOptions& ro) {
  auto say = [](const std::string& m) {
    std::fprintf(stderr, "trainmon report: %s\n", text::terminal(m).c_str());
  };
  if (o.run_given) return say(tr("give either RUN or --prometheus URL --job ID, not both")), kExitUsage;
  if (o.job.empty())
    return say(tr("--prometheus needs --job ID (the job's id: train_job, slurm_job_id, ...)")), kExitUsage;
  auto url = cluster::normalize_base_url(o.prometheus);
  if (!url) return say("--prometheus '" + o.prometheus + "': " + said(url.error())), kExitUsage;
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  cluster::JobHistoryOptions jo;
  jo.endpoint.base_url = *url;
  jo.endpoint.timeout_s = o.timeout_s;
  jo.job = o.job;
  jo.max_points = 1000;
  for (auto [arg, name, out] :
       {std::tuple{&o.from, "--from", &jo.from_unix_s}, std::tuple{&o.to, "--to", &jo.to_unix_s}}) {
    if (arg->empty()) continue;
    auto t = cluster::parse_time_arg(*arg, now);
    if (!t) return say(std::string(name) + ": " + t.error().message), kExitUsage;
    *out = *t;
  }
  auto history = cluster::read_job_history(jo, now);
  if (!history) {
    say(history.error().message);
    const auto& n = history.error().name;
    return n == "JOB_NOT_FOUND" || n == "EMPTY_RANGE" || n == "USAGE" ? kExitUsage : kExitFailure;
  }
  auto text = report::render_job_report(*history, ro);
  if (!text)
    return say(text.error().message), ro.format == report::Format::markdown ? kExitUsage : kExitFailure;
  std::string out = o.output;
  if (out.empty())
    out = ro.format == report::Format::html
              ? report::default_job_report_path(store::resolve_db_path(o.db), o.job)
              : "-";
  if (out == "-") {
    write_out(stdout, *text);
    return kExitOk;
  }
  const std::filesystem::path target(out);
  std::error_code ec;
  if (target.has_parent_path()) {
    if (o.output.empty()) std::filesystem::create_directories(target.parent_path(), ec);
    if (!std::filesystem::is_directory(target.parent_path(), ec))
      return say("cannot write " + out + ": directory " + target.parent_path().string() +
                 " does not exist (create it first)"),
             kExitFailure;
  }
  if (auto w = files::write_output_file(out, *text, files::default_file_mode()); !w)
    return say(w.error().message), kExitFailure;
  std::printf("%s\n", out.c_str());
  return kExitOk;
}

int report_command(const ReportCliOptions& o) {
  report::ReportOptions ro;
  if (o.format == "html") {
    ro.format = report::Format::html;
  } else if (o.format == "md" || o.format == "markdown") {
    ro.format = report::Format::markdown;
  } else if (o.format == "json") {
    ro.format = report::Format::json;
  } else {
    std::fputs(i18n::trf("trainmon report: --format must be html, md or json (got '{}')\n", o.format).c_str(),
               stderr);
    return kExitUsage;
  }
  if (o.max_points < 0 || o.max_points > 1'000'000) {
    std::fputs(i18n::tr("trainmon report: --max-points must be 0 (no reduction) to 1000000\n").data(),
               stderr);
    return kExitUsage;
  }
  ro.max_points = o.max_points;
  if (!o.prometheus.empty()) return job_report_command(o, ro);
  if (!o.job.empty() || !o.from.empty() || !o.to.empty()) {
    std::fputs(i18n::tr("trainmon report: --job, --from and --to need --prometheus URL\n").data(), stderr);
    return kExitUsage;
  }
  const std::string db_path = store::resolve_db_path(o.db);
  auto st = store::Store::open(db_path, store::OpenMode::read_only);
  if (!st) {
    std::fprintf(stderr, "trainmon report: %s\n", said(st.error()).c_str());
    return kExitFailure;
  }
  auto id = st->resolve_run(o.run);
  if (!id) {
    std::fprintf(stderr, "trainmon report: %s\n", said(id.error()).c_str());
    return run_lookup_exit(id.error());
  }
  std::string out = o.output;
  if (out.empty()) out = ro.format == report::Format::html ? report::default_report_path(db_path, *id) : "-";
  if (out == "-") {
    auto text = report::render_report(*st, *id, ro);
    if (!text) {
      std::fprintf(stderr, "trainmon report: %s\n", said(text.error()).c_str());
      return kExitFailure;
    }
    // main() reports a write failure once; a reader that left (`| head`) is none.
    write_out(stdout, *text);
    return kExitOk;
  }
  // An explicit -o FILE must name an existing directory (as curl -o); the default location under the
  // store directory creates its reports/ directory.
  if (auto r = report::write_report_file(*st, *id, out, ro, o.output.empty()); !r) {
    std::fprintf(stderr, "trainmon report: %s\n", said(r.error()).c_str());
    return kExitFailure;
  }
  std::printf("%s\n", out.c_str());
  return kExitOk;
}

const Registrar kRegistrar{CommandSpec{
    "report", N_("Write a run's report: one offline HTML page with charts, or a Markdown / JSON summary"),
    [](CLI::App& app, const GlobalOptions&) -> Runner {
      auto o = std::make_shared<ReportCliOptions>();
      auto* run = app.add_option("RUN", o->run, tr("Run id, name, or 'last'"))->capture_default_str();
      app.add_option("--db", o->db,
                     tr("Run store (default: $TRAINMON_DB, then $XDG_STATE_HOME/trainmon/trainmon.db)"));
      app.add_option(
          "-o,--output", o->output,
          tr("Output file; '-' is stdout (default: html to <store dir>/reports/<db name>-run-<id>.html, "
             "md and json to stdout)"));
      app.add_option("--format", o->format, tr("html, md or json"))->capture_default_str();
      app.add_option("--max-points", o->max_points,
                     tr("Buckets per chart series (min/mean/max); 0: every sample"))
          ->capture_default_str();
      app.add_option("--prometheus", o->prometheus,
                     tr("A whole job's report from this Prometheus (base URL), every node of --job"));
      app.add_option("--job", o->job, tr("With --prometheus: the job id (train_job, slurm_job_id, ...)"));
      app.add_option(
          "--from", o->from,
          tr("With --prometheus: start (RFC 3339, unix seconds, now, -2h; default: the job's first sample)"));
      app.add_option("--to", o->to,
                     tr("With --prometheus: end (same forms; default: the job's last sample)"));
      app.add_option("--timeout", o->timeout_s, tr("With --prometheus: seconds one request may take"))
          ->check(CLI::Range(0.1, 3600.0))
          ->capture_default_str();
      return [o, run] {
        o->run_given = run->count() > 0;
        return report_command(*o);
      };
    },
    62}};

}  // namespace
}  // namespace trainmon::cli
