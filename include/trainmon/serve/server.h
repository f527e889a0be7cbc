// SPDX-License-Identifier: Apache-2.0
// The HTTP server of `trainmon serve` (cpp-httplib): read-only routes over a ServeState and the
// store. Every request, before anything else: its Host header must name this server (DNS
// rebinding), it may carry no body (refused before a byte of it is read), then the bearer token
// when one is set, with repeated failures slowed down per client (AuthThrottle). Connections wait in
// a ConnectionHub, never in a worker thread, so idle or slow clients cannot starve /metrics.
// Routes: docs/serve.md.
//
// The server lives in a plugin, trainmon-http.so (src/serve/http/, built with cpp-httplib), that
// Server::bind loads with dlopen when `serve` starts (http_plugin.h): cpp-httplib and the TLS,
// brotli and zlib libraries it links are then mapped only by `serve`, not by every one-shot command.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainmon/core/error.h"
#include "trainmon/serve/connection_hub.h"
#include "trainmon/serve/serve_state.h"

namespace trainmon::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 9400;    ///< 0: any free port
  std::string token;  ///< empty: no authentication
  int threads = 16;   ///< worker threads; they only ever answer whole requests (connection_hub.h)
  int timeout_s = 5;  ///< idle connections, request heads, and each read or write, in seconds
  std::size_t max_connections = 1024;  ///< open at once (idle ones included); see ConnectionHub
  std::string hostname;                ///< this machine's name, allowed as Host on a wildcard listener
  std::string hostname_label;          ///< Hostname label of the server's own metrics (empty: hostname)
  /// Host header values answered besides the listen address's own (--allowed-host; "*": any).
  std::vector<std::string> allowed_hosts;
  /// /health answers 503 once the last sample is older than this (seconds; serve sets 3 intervals,
  /// at least 10 s).
  double health_max_age_s = 10;
  /// The dashboard's language when the server was told one (--lang or $TRAINMON_LANG: "zh_CN", "en");
  /// empty: each browser's Accept-Language decides (accept_language.h, /api/v1/messages).
  std::string lang;
};

/// What the server refused or throttled since start, and its connections (for /metrics and tests).
struct ServerStats {
  HubStats connections;
  std::uint64_t bad_host = 0;      ///< 421: Host header not a name of this server
  std::uint64_t body_refused = 0;  ///< 413: a request with a body
  std::uint64_t unauthorized = 0;  ///< 401: no or a wrong token
  std::uint64_t throttled = 0;     ///< 429: a client that failed too often, made to wait
};

/// One HTTP server (an interface: the implementation is in the plugin, src/serve/http/server.cpp).
class Server {
 public:
  /// Loads the HTTP plugin (once per process, http_plugin.h) and binds the socket (no thread yet).
  /// Errors: the plugin is missing or cannot be loaded (the message names the paths tried); the
  /// address cannot be bound (in use, not local).
  static Expected<std::unique_ptr<Server>> bind(const ServerOptions& options, ServeState& state);
  virtual ~Server() = default;

  /// The bound port (the chosen one when the options asked for 0).
  virtual int port() const noexcept = 0;
  /// Starts serving on a thread of its own. Call after runner::prepare_signals().
  virtual void start() = 0;
  /// Stops accepting, finishes the requests in flight and joins the thread. Idempotent.
  virtual void stop() = 0;
  virtual ServerStats stats() const = 0;

 protected:
  Server() = default;
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
};

}  // namespace trainmon::serve
