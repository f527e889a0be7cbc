// SPDX-License-Identifier: Apache-2.0
// `trainmon serve`: record the whole machine like `trainmon record` and serve it over HTTP:
// /metrics (Prometheus, dcgm-exporter names), /api/v1/... (JSON) and a live dashboard at /.
// Loopback only unless --allow-remote; a bearer token from --token-file protects every endpoint.
// Read-only: nothing over HTTP can start, stop or signal a process. docs/serve.md.
#include <malloc.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/parse_errors.h"
#include "cli/record_options.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/recorder/labels.h"
#include "trainmon/recorder/record_loop.h"
#include "trainmon/runner/job_stop.h"
#include "trainmon/runner/launcher.h"
#include "trainmon/serve/http_plugin.h"
#include "trainmon/serve/http_policy.h"
#include "trainmon/serve/serve_state.h"
#include "trainmon/serve/server.h"

extern char** environ;

namespace trainmon::cli {
namespace {

struct ServeOptions {
  std::string listen = "127.0.0.1:9400";
  bool allow_remote = false;
  std::string token_file;
  int threads = 16;
  std::vector<std::string> allowed_hosts;
  std::string hostname_label;  ///< --hostname: the Hostname label instead of gethostname()
  bool hostname_given = false;
  int max_connections = 1024;
  RecordCliOptions common{.name = "serve"};
};

int serve(const ServeOptions& o, const GlobalOptions& global) {
  // Signals are blocked first: before any thread exists (the HTTP server's included), and before the
  // HTTP plugin and its libraries load (slow under the sanitizers), so that a SIGTERM that early is
  // still a clean stop (exit 0), never the default action.
  runner::prepare_signals();
  auto lo = record_loop_options(o.common, global, "serve");
  if (!lo) return kExitUsage;
  auto addr = serve::parse_listen(o.listen);
  if (!addr) {
    std::fputs(i18n::trf("trainmon serve: --listen wants HOST:PORT (127.0.0.1:9400, [::1]:9400), got '{}'\n",
                         o.listen)
                   .c_str(),
               stderr);
    return kExitUsage;
  }
  const bool loopback = serve::is_loopback_host(addr->host);
  if (!loopback && !o.allow_remote) {
    std::fputs(i18n::trf("trainmon serve: {} is reachable from other machines; add --allow-remote to listen "
                         "there (and --token-file to require a token)\n",
                         addr->host)
                   .c_str(),
               stderr);
    return kExitUsage;
  }
  if (o.threads < 1 || o.threads > 64) {
    std::fputs(i18n::tr("trainmon serve: --threads must be 1..64\n").data(), stderr);
    return kExitUsage;
  }
  if (o.max_connections < 1 || o.max_connections > 65536) {
    std::fputs(i18n::tr("trainmon serve: --max-connections must be 1..65536\n").data(), stderr);
    return kExitUsage;
  }
  serve::ServerOptions so;
  so.host = addr->host;
  so.port = addr->port;
  so.threads = o.threads;
  so.max_connections = static_cast<std::size_t>(o.max_connections);
  so.allowed_hosts = o.allowed_hosts;
  // The dashboard follows each browser's language unless this server was told one.
  if (const char* env = std::getenv("TRAINMON_LANG"); !global.lang.empty() || (env && *env))
    so.lang = global.lang.empty() ? env : global.lang;
  char hostname[256] = {};
  if (::gethostname(hostname, sizeof hostname - 1) == 0) so.hostname = hostname;
  if (!o.hostname_label.empty() || o.hostname_given) {
    const auto& h = o.hostname_label;
    const bool ok = !h.empty() && h.size() <= 253 && std::all_of(h.begin(), h.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
             c == '.' || c == '_';
    });
    if (!ok) {
      std::fprintf(
          stderr,
          "trainmon serve: --hostname '%s': 1 to 253 letters, digits, '-', '.' or '_' (a host name)\n",
          text::terminal(h).c_str());
      return kExitUsage;
    }
    so.hostname_label = h;
  }
  so.health_max_age_s = std::max(10.0, 3.0 * static_cast<double>(lo->interval_ns) / 1e9);
  if (!o.token_file.empty()) {
    std::string error;
    auto token = serve::read_token_file(o.token_file, error);
    if (!token) {
      std::fprintf(stderr, "trainmon serve: %s\n", error.c_str());
      return kExitUsage;
    }
    so.token = *token;
    struct stat st {};
    if (::stat(o.token_file.c_str(), &st) == 0) {
      for (const auto& w :
           serve::token_file_warnings(o.token_file, st.st_mode & 07777, st.st_uid, ::geteuid(), so.token)) {
        std::fprintf(stderr, "trainmon serve: warning: %s\n", text::terminal(w).c_str());
      }
    }
  }
  // 16 HTTP workers would spread their short-lived answers over 16 malloc arenas, each keeping its
  // high-water mark: a few arenas hold the same answers with far less memory.
  ::mallopt(M_ARENA_MAX, 4);
  // Every open connection is a descriptor: make room for --max-connections (the soft limit is often
  // 1024) up to the hard limit.
  rlimit nofile{};
  const rlim_t want = static_cast<rlim_t>(so.max_connections) + 256;
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < want) {
    nofile.rlim_cur = std::min(want, nofile.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &nofile);
  }
  if (!loopback && so.token.empty()) {
    std::fputs(
        i18n::trf("trainmon serve: warning: listening on {} without a token: anyone who can reach this "
                  "port sees this machine's GPUs, processes and runs (use --token-file)\n",
                  addr->host)
            .c_str(),
        stderr);
  }

  // The HTTP server is a plugin (http_plugin.h): a missing or broken one stops here, before the
  // store or the GPUs are touched.
  if (auto plugin = serve::http_plugin(); !plugin) {
    std::fprintf(stderr, "trainmon serve: %s\n", text::terminal(plugin.error().message).c_str());
    return kExitFailure;
  }

  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  serve::ServeState state(recorder::collect_labels(lo->labels, env));
  state.set_hostname_label(so.hostname_label);

  // A bad rules file stops here, before the port is taken.
  auto alerts = alert_observer(o.common, "serve");
  if (!alerts) return kExitUsage;
  auto server = serve::Server::bind(so, state);
  if (!server) {
    std::fprintf(stderr, "trainmon serve: %s\n", said(server.error()).c_str());
    return kExitFailure;
  }
  const bool v6 = addr->host.find(':') != std::string::npos;
  std::fprintf(stderr, "trainmon serve: listening on http://%s%s%s:%d/ (metrics at /metrics)\n",
               v6 ? "[" : "", addr->host.c_str(), v6 ? "]" : "", (*server)->port());
  std::fflush(stderr);
  (*server)->start();

  // Observers, in order: the HTTP server's state, then the alert engine (--alerts FILE).
  std::vector<diagnose::TickObserver*> observers{&state};
  if (*alerts) observers.push_back(alerts->get());
  int rc = recorder::run_record_loop(*lo, observers);
  (*server)->stop();
  // Nothing the alert commands started outlives the server (runner/job_stop.h).
  (void)runner::JobStop(0, runner::JobStopOptions{"serve", runner::kHelperGrace, false}).finish();
  return rc == 0 ? kExitOk : kExitFailure;
}

const Registrar kRegistrar{CommandSpec{
    "serve", N_("Record like `record` and serve /metrics (Prometheus), a JSON API and a live dashboard"),
    [](CLI::App& app, const GlobalOptions& global) -> Runner {
      auto o = std::make_shared<ServeOptions>();
      app.add_option("--listen,-a,--address", o->listen,
                     tr("HOST:PORT to listen on (port 0: any free port; \":9400\" is every address, as "
                        "dcgm-exporter's -a)"))
          ->envname("DCGM_EXPORTER_LISTEN")
          ->capture_default_str();
      app.add_flag("--allow-remote", o->allow_remote, tr("Allow a --listen address other than loopback"));
      app.add_option("--token-file", o->token_file,
                     tr("File whose first line is a bearer token every request must carry"));
      app.add_option("--threads", o->threads, tr("HTTP worker threads"))->capture_default_str();
      app.add_option("--allowed-host", o->allowed_hosts,
                     tr("Host header name to answer besides the listen address (repeatable; '*': any, "
                        "behind a proxy that checks it)"))
          ->allow_extra_args(false);
      app.add_option("--hostname", o->hostname_label,
                     tr("Hostname label of every exported series instead of this machine's name (one "
                        "name per node, e.g. the scheduler's node name)"))
          ->each([o](const std::string&) { o->hostname_given = true; });
      app.add_option("--max-connections", o->max_connections,
                     tr("Connections open at once, idle ones included (beyond: the longest idle is closed)"))
          ->capture_default_str();
      add_record_options(app, o->common);
      return [o, &global] { return serve(*o, global); };
    },
    32}};

}  // namespace
}  // namespace trainmon::cli
