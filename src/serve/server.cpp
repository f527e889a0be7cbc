// SPDX-License-Identifier: Apache-2.0
#include "trainmon/serve/server.h"

#include <sys/socket.h>

#include <httplib.h>
#include <algorithm>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "trainmon/serve/api.h"
#include "trainmon/serve/http_policy.h"

namespace trainmon::serve {

struct Server::Impl {
  ServerOptions options;
  ServeState* state = nullptr;
  httplib::Server http;
  std::thread thread;
  int port = 0;
};

namespace {

void reply(httplib::Response& res, const ApiReply& r) {
  res.status = r.status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(r.body, r.content_type.c_str());
}

std::int64_t id_of(const httplib::Request& req) {
  return std::strtoll(req.matches[1].str().c_str(), nullptr, 10);
}

bool authorized(const httplib::Request& req, const std::string& token) {
  if (token.empty()) return true;
  if (token_equals(bearer_token(req.get_header_value("Authorization")), token)) return true;
  if (token_equals(cookie_value(req.get_header_value("Cookie"), kTokenCookie), token)) return true;
  return req.has_param("token") && token_equals(req.get_param_value("token"), token);
}

void install_routes(Server::Impl& s);

}  // namespace

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  stop();
}

int Server::port() const noexcept {
  return impl_->port;
}

Expected<std::unique_ptr<Server>> Server::bind(const ServerOptions& options, ServeState& state) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->state = &state;
  auto& http = impl->http;
  const int threads = options.threads > 0 ? options.threads : 16;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  http.set_read_timeout(options.timeout_s, 0);
  http.set_write_timeout(options.timeout_s, 0);
  // An idle keep-alive connection holds a worker: give it back soon (a scrape or a dashboard poll
  // comes every second or more, so reconnecting costs nothing).
  http.set_keep_alive_timeout(std::min(options.timeout_s, 2));
  http.set_keep_alive_max_count(1000);
  // Nagle held the last partial segment of each answer (headers and body are separate writes) until
  // the client's ACK: paced at 100 requests/s, /metrics took 1.2 ms median and 11.6 ms at p99 against
  // 0.13 ms median at full speed.
  http.set_tcp_nodelay(true);
  http.set_payload_max_length(options.max_body);
  install_routes(*impl);
  // httplib's default sets SO_REUSEPORT: a second trainmon serve on the same port then binds too and
  // the kernel splits the connections between the two (Prometheus would scrape two machines at
  // random). SO_REUSEADDR only: a restart can rebind over TIME_WAIT, a live listener is refused.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  int port = options.port;
  if (port == 0) {
    port = http.bind_to_any_port(options.host);
    if (port < 0) port = 0;
  } else if (!http.bind_to_port(options.host, port)) {
    port = 0;
  }
  if (port <= 0) {
    return std::unexpected(Error{ErrorDomain::os, 0, "EADDRNOTAVAIL",
                                 "cannot listen on " + options.host + ":" + std::to_string(options.port) +
                                     " (address in use, or not an address of this machine)"});
  }
  impl->port = port;
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

void Server::start() {
  if (impl_->thread.joinable()) return;
  impl_->thread = std::thread([this] { impl_->http.listen_after_bind(); });
  // stop() before the listening loop runs would be lost (httplib only stops a running server) and
  // the join would hang: wait until it runs (it does within microseconds; give up after 10 s).
  for (int i = 0; i < 10'000 && !impl_->http.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void Server::stop() {
  if (!impl_) return;
  impl_->http.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

namespace {

void install_routes(Server::Impl& s) {
  auto& http = s.http;
  auto* state = s.state;
  const std::string token = s.options.token;

  http.set_default_headers({{"X-Content-Type-Options", "nosniff"},
                            {"X-Frame-Options", "DENY"},
                            {"Referrer-Policy", "no-referrer"},
                            {"Content-Security-Policy",
                             "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
                             "frame-ancestors 'none'"}});

  // Every request: read-only methods, then the token.
  http.set_pre_routing_handler([token](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET" && req.method != "HEAD") {
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      res.set_content("trainmon serve is read-only\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!authorized(req, token)) {
      res.status = 401;
      res.set_header("WWW-Authenticate", "Bearer realm=\"trainmon\"");
      res.set_content("a bearer token is required\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // A browser that opened the dashboard with ?token=... keeps it in a cookie for the page's requests.
  http.set_post_routing_handler([token](const httplib::Request& req, httplib::Response& res) {
    if (!token.empty() && req.has_param("token") && token_equals(req.get_param_value("token"), token)) {
      res.set_header("Set-Cookie",
                     std::string(kTokenCookie) + "=" + token + "; Path=/; HttpOnly; SameSite=Strict");
    }
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    res.status = 500;
    res.set_content("{\"error\":\"internal error\"}", "application/json");
  });
  http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      res.set_content(res.status == 404 ? "not found\n" : "error\n", "text/plain");
    }
  });

  http.Get("/metrics", [state](const httplib::Request&, httplib::Response& res) {
    res.set_content(state->metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Get("/api/v1/snapshot", [state](const httplib::Request&, httplib::Response& res) {
    reply(res, {200, state->snapshot_json()});
  });
  http.Get("/api/v1/history", [state](const httplib::Request& req, httplib::Response& res) {
    double seconds = 900;
    if (req.has_param("seconds")) {
      char* end = nullptr;
      auto v = req.get_param_value("seconds");
      seconds = std::strtod(v.c_str(), &end);
      if (end != v.c_str() + v.size() || !(seconds >= 0)) {
        reply(res, {400, "{\"error\":\"seconds must be a number >= 0\"}"});
        return;
      }
    }
    reply(res, {200, state->history_json(seconds)});
  });
  http.Get("/api/v1/train", [state](const httplib::Request&, httplib::Response& res) {
    reply(res, {200, state->train_json()});
  });
  http.Get("/api/v1/findings", [state](const httplib::Request&, httplib::Response& res) {
    reply(res, {200, state->findings_json()});
  });
  http.Get("/api/v1/runs", [state](const httplib::Request&, httplib::Response& res) {
    reply(res, api_runs(state->db_path()));
  });
  http.Get(R"(/api/v1/runs/(\d{1,18}))", [state](const httplib::Request& req, httplib::Response& res) {
    reply(res, api_run(state->db_path(), id_of(req)));
  });
  http.Get(R"(/api/v1/runs/(\d{1,18})/samples)",
           [state](const httplib::Request& req, httplib::Response& res) {
             std::string error;
             auto q = parse_sample_query(req.get_param_value("from"), req.get_param_value("to"),
                                         req.get_param_value("step"), error);
             if (!q) {
               reply(res, {400, "{\"error\":\"" + error + "\"}"});
               return;
             }
             reply(res, api_samples(state->db_path(), id_of(req), *q));
           });
  http.Get(R"(/api/v1/runs/(\d{1,18})/findings)",
           [state](const httplib::Request& req, httplib::Response& res) {
             reply(res, api_findings(state->db_path(), id_of(req)));
           });
  http.Get(R"(/api/v1/runs/(\d{1,18})/events)", [state](const httplib::Request& req, httplib::Response& res) {
    reply(res, api_events(state->db_path(), id_of(req)));
  });
  http.Get(R"(/runs/(\d{1,18})/report)", [state](const httplib::Request& req, httplib::Response& res) {
    reply(res, api_report(state->db_path(), id_of(req)));
    // The report is one self-contained file with its scripts and styles inline (report.h).
    res.headers.erase("Content-Security-Policy");
    res.set_header(
        "Content-Security-Policy",
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
        "frame-ancestors 'none'");
  });
  // Everything else: the built-in assets (no file system access).
  http.Get(R"(/.*)", [](const httplib::Request& req, httplib::Response& res) {
    const auto* a = asset_for_path(req.path);
    if (!a) {
      res.status = 404;
      res.set_content("not found\n", "text/plain");
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_content(a->data.data(), a->data.size(), std::string(a->content_type).c_str());
  });
}

}  // namespace
}  // namespace trainmon::serve
