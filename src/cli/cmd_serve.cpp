// SPDX-License-Identifier: Apache-2.0
// `trainmon serve`: record the whole machine like `trainmon record` and serve it over HTTP:
// /metrics (Prometheus, dcgm-exporter names), /api/v1/... (JSON) and a live dashboard at /.
// Loopback only unless --allow-remote; a bearer token from --token-file protects every endpoint.
// Read-only: nothing over HTTP can start, stop or signal a process. docs/serve.md.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "trainmon/diagnose/thresholds.h"
#include "trainmon/recorder/duration.h"
#include "trainmon/recorder/labels.h"
#include "trainmon/recorder/record_loop.h"
#include "trainmon/runner/launcher.h"
#include "trainmon/serve/http_policy.h"
#include "trainmon/serve/serve_state.h"
#include "trainmon/serve/server.h"
#include "trainmon/store/db_path.h"

extern char** environ;

namespace trainmon::cli {
namespace {

struct ServeOptions {
  std::string listen = "127.0.0.1:9400";
  bool allow_remote = false;
  std::string token_file;
  std::string name = "serve";
  std::string interval = "1";
  std::string db;
  std::vector<std::string> labels;
  std::string retention;
  std::string downsample_after = "1d";
  std::string duration;
  std::vector<std::string> thresholds;
  int threads = 4;
  bool quiet = false;
};

int serve(const ServeOptions& o, const GlobalOptions& global) {
  auto interval = recorder::parse_duration_ns(o.interval);
  if (!interval || *interval < 100'000'000) {
    std::fprintf(stderr, "trainmon serve: --interval must be at least 0.1 s\n");
    return kExitUsage;
  }
  auto addr = serve::parse_listen(o.listen);
  if (!addr) {
    std::fprintf(stderr, "trainmon serve: --listen wants HOST:PORT (127.0.0.1:9400, [::1]:9400), got '%s'\n",
                 o.listen.c_str());
    return kExitUsage;
  }
  const bool loopback = serve::is_loopback_host(addr->host);
  if (!loopback && !o.allow_remote) {
    std::fprintf(stderr,
                 "trainmon serve: %s is reachable from other machines; add --allow-remote to listen there "
                 "(and --token-file to require a token)\n",
                 addr->host.c_str());
    return kExitUsage;
  }
  if (o.threads < 1 || o.threads > 64) {
    std::fprintf(stderr, "trainmon serve: --threads must be 1..64\n");
    return kExitUsage;
  }
  serve::ServerOptions so;
  so.host = addr->host;
  so.port = addr->port;
  so.threads = o.threads;
  if (!o.token_file.empty()) {
    std::string error;
    auto token = serve::read_token_file(o.token_file, error);
    if (!token) {
      std::fprintf(stderr, "trainmon serve: %s\n", error.c_str());
      return kExitUsage;
    }
    so.token = *token;
  }
  if (!loopback && so.token.empty()) {
    std::fprintf(stderr,
                 "trainmon serve: warning: listening on %s without a token: anyone who can reach this port "
                 "sees this machine's GPUs, processes and runs (use --token-file)\n",
                 addr->host.c_str());
  }

  recorder::RecordLoopOptions lo;
  lo.tool = "serve";
  lo.kind = "record";
  lo.name = o.name;
  lo.interval_ns = *interval;
  lo.quiet = o.quiet;
  if (!o.retention.empty()) {
    auto r = recorder::parse_duration_ns(o.retention);
    auto d = recorder::parse_duration_ns(o.downsample_after);
    if (!r || !d) {
      std::fprintf(stderr, "trainmon serve: --retention / --downsample-after want 30d, 12h, 90m ...\n");
      return kExitUsage;
    }
    lo.retention.delete_after_ns = *r;
    lo.retention.downsample_after_ns = *d;
  }
  if (!o.duration.empty()) {
    lo.stop_after_ns = recorder::parse_duration_ns(o.duration);
    if (!lo.stop_after_ns) {
      std::fprintf(stderr, "trainmon serve: bad --duration '%s'\n", o.duration.c_str());
      return kExitUsage;
    }
  }
  for (const auto& l : o.labels) {
    auto kv = recorder::parse_label(l);
    if (!kv) {
      std::fprintf(stderr, "trainmon serve: --label wants KEY=VALUE (got '%s')\n", l.c_str());
      return kExitUsage;
    }
    lo.labels.push_back(*kv);
  }
  for (const auto& kv : o.thresholds) {
    if (auto r = diagnose::set_threshold(lo.thresholds, kv); !r) {
      std::fprintf(stderr, "trainmon serve: --threshold %s\n", r.error().c_str());
      return kExitUsage;
    }
  }
  lo.db_path = store::resolve_db_path(o.db);
  lo.nvml_library = global.nvml_library;
  lo.proc_root = global.proc_root;
  lo.sys_root = global.sys_root;

  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  serve::ServeState state(recorder::collect_labels(lo.labels, env));

  // Signals must be blocked before any thread exists, the HTTP server's included.
  runner::prepare_signals();
  auto server = serve::Server::bind(so, state);
  if (!server) {
    std::fprintf(stderr, "trainmon serve: %s\n", server.error().message.c_str());
    return kExitFailure;
  }
  const bool v6 = addr->host.find(':') != std::string::npos;
  std::fprintf(stderr, "trainmon serve: listening on http://%s%s%s:%d/ (metrics at /metrics)\n",
               v6 ? "[" : "", addr->host.c_str(), v6 ? "]" : "", (*server)->port());
  std::fflush(stderr);
  (*server)->start();

  // Observers, in order. The lead wires the alert engine (--alerts FILE) in here as well.
  std::vector<recorder::TickObserver*> observers{&state};
  int rc = recorder::run_record_loop(lo, observers);
  (*server)->stop();
  return rc == 0 ? kExitOk : kExitFailure;
}

const Registrar kRegistrar{CommandSpec{
    "serve", "Record like `record` and serve /metrics (Prometheus), a JSON API and a live dashboard",
    [](CLI::App& app, const GlobalOptions& global) -> Runner {
      auto o = std::make_shared<ServeOptions>();
      app.add_option("--listen", o->listen, "HOST:PORT to listen on (port 0: any free port)")
          ->capture_default_str();
      app.add_flag("--allow-remote", o->allow_remote, "Allow a --listen address other than loopback");
      app.add_option("--token-file", o->token_file,
                     "File whose first line is a bearer token every request must carry");
      app.add_option("--threads", o->threads, "HTTP worker threads")->capture_default_str();
      app.add_option("--name", o->name, "Run name")->capture_default_str();
      app.add_option("--interval", o->interval, "Sampling interval: seconds (0.5) or 500ms")
          ->capture_default_str();
      app.add_option("--db", o->db,
                     "Run store (default: $TRAINMON_DB, then $XDG_STATE_HOME/trainmon/trainmon.db)");
      app.add_option("--label", o->labels, "KEY=VALUE label (repeatable); also on trainmon_labels_info");
      app.add_option("--retention", o->retention,
                     "Delete runs and samples older than this (30d, 12h); default: keep");
      app.add_option("--downsample-after", o->downsample_after,
                     "With --retention: keep older samples as mean/min/max per minute")
          ->capture_default_str();
      app.add_option("--duration", o->duration, "Stop after this long (default: until SIGINT/SIGTERM)");
      app.add_option("--threshold", o->thresholds, "Override a diagnosis threshold: name=value (repeatable)");
      app.add_flag("-q,--quiet", o->quiet, "Print only errors");
      return [o, &global] { return serve(*o, global); };
    },
    32}};

}  // namespace
}  // namespace trainmon::cli
