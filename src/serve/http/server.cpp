// SPDX-License-Identifier: Apache-2.0
// The HTTP server of `trainmon serve` on cpp-httplib, built into the plugin trainmon-http.so
// (trainmon/serve/http_plugin.h): Server::bind in the binary reaches it through
// trainmon_http_plugin() at the end of this file.
#include "trainmon/serve/server.h"

#include <sys/socket.h>
#include <time.h>

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "trainmon/core/i18n.h"
#include "trainmon/serve/accept_language.h"
#include "trainmon/serve/api.h"
#include "trainmon/serve/auth_throttle.h"
#include "trainmon/serve/http_plugin.h"
#include "trainmon/serve/http_policy.h"
#include "trainmon/serve/metrics_text.h"

namespace trainmon::serve {

namespace {

/// The connection whose request this thread answers (set by the hub's handler around
/// process_request, read by the routing handlers to end the connection after a refusal).
thread_local HubConnection* tl_connection = nullptr;

/// A request from the hub as cpp-httplib's Stream.
class HubStream final : public httplib::Stream {
 public:
  explicit HubStream(HubConnection& c) : c_(c) {}
  bool is_readable() const override { return c_.readable(); }
  bool is_writable() const override { return c_.writable(); }
  ssize_t read(char* ptr, size_t size) override { return c_.read(ptr, size); }
  ssize_t write(const char* ptr, size_t size) override { return c_.write(ptr, size); }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = c_.peer_ip();
    port = c_.peer_port();
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip.clear();
    port = -1;
  }
  socket_t socket() const override { return c_.fd(); }

 private:
  HubConnection& c_;
};

/// cpp-httplib's server with its connection handling replaced: the accept loop hands each socket
/// to the hub (process_and_close_socket, called inline by InlineQueue), and the hub's workers answer
/// whole requests through process_request.
class HubHttpServer final : public httplib::Server {
 public:
  ConnectionHub* hub = nullptr;
  /// cpp-httplib 0.11 listens with a backlog of 5: a burst of connections (a browser, a scrape
  /// while hundreds of clients reconnect) overflowed it, and each dropped SYN cost its client a 1 s
  /// retransmission. listen(2) again on the bound socket raises it (the kernel caps it at somaxconn).
  void widen_backlog() {
    if (svr_sock_ != INVALID_SOCKET) ::listen(svr_sock_, 4096);
  }
  /// One request on `c`; whether the connection may stay open.
  bool answer(HubConnection& c, bool last) {
    HubStream stream(c);
    bool closed = false;
    tl_connection = &c;
    const bool ok = process_request(stream, last, closed, nullptr);
    tl_connection = nullptr;
    return ok && !closed && !last;
  }

 private:
  bool process_and_close_socket(socket_t sock) override {
    hub->adopt(sock);  // never blocks: the hub holds it until its request arrives
    return true;
  }
};

/// The accept loop's task queue: runs each task at once on the accept thread (the task only hands
/// the socket to the hub) and stops the hub when the server stops.
class InlineQueue final : public httplib::TaskQueue {
 public:
  explicit InlineQueue(ConnectionHub& hub) : hub_(hub) {}
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override { hub_.stop(); }

 private:
  ConnectionHub& hub_;
};

struct ServerImpl {
  ServerOptions options;
  ServeState* state = nullptr;
  HostPolicy hosts;
  HubHttpServer http;
  std::unique_ptr<ConnectionHub> hub;  // after `http`: stopped and destroyed first
  std::thread thread;
  int port = 0;
  std::mutex throttle_mu;
  AuthThrottle throttle;
  std::atomic<std::uint64_t> bad_host{0}, body_refused{0}, unauthorized{0}, throttled{0};
};

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

/// Whether a request tries a token at all (a header, the cookie or ?token=): only those are guesses.
bool presents_credential(const httplib::Request& req) {
  return req.has_header("Authorization") ||
         !cookie_value(req.get_header_value("Cookie"), kTokenCookie).empty() || req.has_param("token");
}

/// A request that carries (or announces) a body: a Content-Length other than 0, or any
/// Transfer-Encoding. None of our routes takes one, so none is ever read.
bool has_body(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding")) return true;
  if (!req.has_header("Content-Length")) return false;
  const std::string v = req.get_header_value("Content-Length");
  return v.find_first_not_of("0 \t") != std::string::npos;
}

/// The connection ends after this answer (a refusal: the client may still be sending).
void end_connection(httplib::Response& res) {
  res.set_header("Connection", "close");
  if (tl_connection) tl_connection->close_after();
}

void install_routes(ServerImpl& s);

/// The Server the plugin hands out (trainmon/serve/server.h).
class HttpServer final : public Server {
 public:
  explicit HttpServer(std::unique_ptr<ServerImpl> impl) : impl_(std::move(impl)) {}
  ~HttpServer() override { stop(); }
  int port() const noexcept override { return impl_->port; }
  void start() override;
  void stop() override;
  ServerStats stats() const override;

 private:
  std::unique_ptr<ServerImpl> impl_;
};

ServerStats HttpServer::stats() const {
  ServerStats st;
  if (impl_->hub) st.connections = impl_->hub->stats();
  st.bad_host = impl_->bad_host;
  st.body_refused = impl_->body_refused;
  st.unauthorized = impl_->unauthorized;
  st.throttled = impl_->throttled;
  return st;
}

/// Binds the socket; nullptr with `error` set when the address cannot be bound.
Server* bind_server(const ServerOptions& options, ServeState& state, std::string& error) {
  auto impl = std::make_unique<ServerImpl>();
  impl->options = options;
  impl->state = &state;
  impl->hosts = host_policy_for(options.host, options.allowed_hosts, options.hostname);
  HubOptions ho;
  ho.workers = static_cast<std::size_t>(options.threads > 0 ? options.threads : 16);
  ho.max_connections = options.max_connections > 0 ? options.max_connections : 1024;
  const auto t = std::chrono::seconds(std::max(1, options.timeout_s));
  ho.idle_timeout = ho.head_timeout = ho.io_timeout = t;
  auto* raw = impl.get();
  impl->hub = std::make_unique<ConnectionHub>(ho, [raw](HubConnection& c) {
    // A connection is not kept for ever: the 1000th request on it is answered with "close".
    return raw->http.answer(c, c.served() + 1 >= 1000);
  });
  auto& http = impl->http;
  http.hub = impl->hub.get();
  http.new_task_queue = [raw] { return new InlineQueue(*raw->hub); };
  http.set_payload_max_length(0);
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
    error = "cannot listen on " + options.host + ":" + std::to_string(options.port) +
            " (address in use, or not an address of this machine)";
    return nullptr;
  }
  impl->port = port;
  http.widen_backlog();
  return new HttpServer(std::move(impl));
}

void HttpServer::start() {
  if (impl_->thread.joinable()) return;
  impl_->hub->start();
  impl_->thread = std::thread([this] { impl_->http.listen_after_bind(); });
  // stop() before the listening loop runs would be lost (httplib only stops a running server) and
  // the join would hang: wait until it runs (it does within microseconds; give up after 10 s).
  for (int i = 0; i < 10'000 && !impl_->http.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void HttpServer::stop() {
  if (!impl_) return;
  impl_->http.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  if (impl_->hub) impl_->hub->stop();
}

void install_routes(ServerImpl& s) {
  auto& http = s.http;
  auto* state = s.state;
  const std::string token = s.options.token;

  http.set_default_headers({{"X-Content-Type-Options", "nosniff"},
                            {"X-Frame-Options", "DENY"},
                            {"Referrer-Policy", "no-referrer"},
                            {"Content-Security-Policy",
                             "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
                             "frame-ancestors 'none'"}});

  // Every request, in this order: a Host that names us (DNS rebinding), no body (refused before a
  // byte of it is read: the handler runs after the head, before cpp-httplib reads any body),
  // read-only methods, then the token, with repeated failures slowed down per client.
  auto* sp = &s;
  http.set_expect_100_continue_handler([sp](const httplib::Request&, httplib::Response& res) {
    ++sp->body_refused;
    res.status = 413;  // cpp-httplib writes `res` as it is for an answer other than 100 or 417
    end_connection(res);
    res.set_content("trainmon serve takes no request bodies\n", "text/plain");
    return 413;
  });
  http.set_pre_routing_handler([sp, token](const httplib::Request& req, httplib::Response& res) {
    if (!host_allowed(sp->hosts, req.get_header_value("Host"))) {
      ++sp->bad_host;
      res.status = 421;
      end_connection(res);
      res.set_content("this server does not answer for that Host name (trainmon serve --allowed-host NAME)\n",
                      "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (has_body(req)) {
      ++sp->body_refused;
      res.status = 413;
      end_connection(res);
      res.set_content("trainmon serve takes no request bodies\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method != "GET" && req.method != "HEAD") {
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      res.set_content("trainmon serve is read-only\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (token.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const auto now = AuthThrottle::Clock::now();
    std::chrono::milliseconds wait{0};
    {
      std::lock_guard lock(sp->throttle_mu);
      wait = sp->throttle.wait_for(req.remote_addr, now);
    }
    if (wait.count() > 0) {
      ++sp->throttled;
      res.status = 429;
      res.set_header("Retry-After", std::to_string((wait.count() + 999) / 1000));
      res.set_content("too many wrong tokens from this address; try again later\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    const bool ok = authorized(req, token);
    if (!ok && presents_credential(req)) {
      std::lock_guard lock(sp->throttle_mu);
      sp->throttle.failed(req.remote_addr, now);
    }
    if (!ok) {
      ++sp->unauthorized;
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

  // Liveness for probes (dcgm-exporter's path): 200 "OK" while samples keep coming, 503 with the
  // reason once they stop. dcgm-exporter answers 200 "KO" whatever happens (docs/serve.md).
  const double max_age_s = s.options.health_max_age_s;
  http.Get("/health", [state, max_age_s](const httplib::Request&, httplib::Response& res) {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    const std::string problem =
        state->health_problem(static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec, max_age_s);
    res.status = problem.empty() ? 200 : 503;
    res.set_content(problem.empty() ? "OK\n" : problem + "\n", "text/plain");
  });
  http.Get("/metrics", [state, sp](const httplib::Request&, httplib::Response& res) {
    const HubStats h = sp->hub->stats();
    HttpCounters c;
    c.connections_open = h.open;
    c.connections_total = h.accepted;
    c.requests_total = h.requests;
    c.refused = {{"idle_timeout", h.idle_closed},
                 {"evicted", h.evicted},
                 {"full", h.refused_full},
                 {"head_timeout", h.head_timeouts},
                 {"head_too_large", h.head_too_large},
                 {"bad_host", sp->bad_host.load()},
                 {"body", sp->body_refused.load()},
                 {"unauthorized", sp->unauthorized.load()},
                 {"throttled", sp->throttled.load()}};
    res.set_content(state->metrics_text() + render_http_metrics(c, sp->options.hostname_label.empty()
                                                                       ? sp->options.hostname
                                                                       : sp->options.hostname_label),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  // The dashboard's messages in the reader's language (docs/language.md): the catalogue as
  // msgid -> translation, read once here; the server's --lang / $TRAINMON_LANG, else the browser's.
  auto messages = std::make_shared<std::map<std::string, std::string>>();
  std::vector<std::string> languages;
  for (const auto* lang : {"zh_CN"}) {
    if (i18n::catalogue_language(lang) != lang) continue;
    languages.emplace_back(lang);
  }
  auto messages_body = [](const std::string& lang, const char* chosen_by) {
    nlohmann::json m = nlohmann::json::object();
    for (auto& [id, text] : i18n::translations_of(lang)) m[id] = text;
    return nlohmann::json{{"lang", lang.empty() ? "en" : lang}, {"chosen_by", chosen_by}, {"messages", m}}
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  const std::string forced =
      s.options.lang.empty() ? std::string() : i18n::catalogue_language(s.options.lang);
  for (const auto& lang : languages) (*messages)[lang] = messages_body(lang, "browser");
  (*messages)[""] = messages_body("", "browser");
  if (!s.options.lang.empty()) (*messages)["server"] = messages_body(forced, "server");
  http.Get("/api/v1/messages", [messages, languages](const httplib::Request& req, httplib::Response& res) {
    const auto it = messages->find("server");
    const std::string& body =
        it != messages->end()
            ? it->second
            : messages->at(choose_language(req.get_header_value("Accept-Language"), languages));
    reply(res, {200, body});
    res.set_header("Vary", "Accept-Language");
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
  // The findings' evidence and advice in serve's language, for the page (docs/language.md); the
  // findings' JSON above stays English for scripts.
  http.Get("/api/v1/findings/l10n", [state](const httplib::Request&, httplib::Response& res) {
    reply(res, {200, state->findings_l10n_json()});
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
  http.Get(R"(/api/v1/runs/(\d{1,18})/findings/l10n)",
           [state](const httplib::Request& req, httplib::Response& res) {
             reply(res, api_findings_l10n(state->db_path(), id_of(req)));
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

extern "C" __attribute__((visibility("default"))) const trainmon::serve::HttpPluginApi*
trainmon_http_plugin() {
  using namespace trainmon::serve;
  static const HttpPluginApi api{kHttpPluginAbi, kHttpPluginBuild, sizeof(ServerOptions), sizeof(ServeState),
                                 &bind_server};
  return &api;
}
