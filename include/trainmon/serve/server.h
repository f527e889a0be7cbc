// SPDX-License-Identifier: Apache-2.0
// The HTTP server of `trainmon serve` (cpp-httplib): read-only routes over a ServeState and the
// store, bearer-token check on every request when a token is set, bounded request size, header
// size, read/write times and threads. Routes: docs/serve.md.
#pragma once

#include <memory>
#include <string>

#include "trainmon/core/error.h"
#include "trainmon/serve/serve_state.h"

namespace trainmon::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 9400;    ///< 0: any free port
  std::string token;  ///< empty: no authentication
  int threads = 16;   ///< worker threads (each open connection holds one: a browser alone opens up to 6)
  int timeout_s = 5;  ///< read and write timeout per request
  std::size_t max_body = 4096;  ///< request bodies larger than this are refused (413)
};

class Server {
 public:
  /// Binds the socket (no thread yet). Errors: the address cannot be bound (in use, not local).
  static Expected<std::unique_ptr<Server>> bind(const ServerOptions& options, ServeState& state);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// The bound port (the chosen one when the options asked for 0).
  int port() const noexcept;
  /// Starts serving on a thread of its own. Call after runner::prepare_signals().
  void start();
  /// Stops accepting, finishes the requests in flight and joins the thread. Idempotent.
  void stop();

  struct Impl;  ///< implementation detail (httplib stays out of this header)

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainmon::serve
