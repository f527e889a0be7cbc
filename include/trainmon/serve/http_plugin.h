// SPDX-License-Identifier: Apache-2.0
// The plugin that holds `trainmon serve`'s HTTP server: trainmon-http.so, a CMake MODULE library
// built from src/serve/http/ and linked with cpp-httplib (and through it libssl, libcrypto, brotli,
// zlib). Linking it into the binary made every start of every command map those libraries (~3 ms of
// `trainmon status`'s ~7 ms, bench/compare_status_startup.sh); now only `serve` loads it, with
// dlopen, the way libcurl is loaded on first use (include/trainmon/net/curl_library.h).
//
// The plugin exports one extern "C" function, trainmon_http_plugin(), returning a HttpPluginApi.
// Everything else it needs from trainmon (ServeState, the store, the assets) it takes from the
// binary, which exports its trainmon:: symbols for that (cmake/trainmon-exports.list).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "trainmon/core/error.h"
#include "trainmon/serve/server.h"

namespace trainmon::serve {

/// Bumped whenever HttpPluginApi, Server, ServerOptions or ServerStats change shape.
inline constexpr int kHttpPluginAbi = 1;

/// What trainmon_http_plugin() returns. A plugin is used only when abi, build and the two sizes all
/// equal the binary's own (a plugin left over from another build is refused, never called).
struct HttpPluginApi {
  int abi = kHttpPluginAbi;
  const char* build = nullptr;   ///< kHttpPluginBuild of the build that made the plugin
  std::size_t options_size = 0;  ///< sizeof(ServerOptions) there
  std::size_t state_size = 0;    ///< sizeof(ServeState) there
  /// Server::bind's work. nullptr with `error` set (one sentence) when the address cannot be bound.
  Server* (*bind)(const ServerOptions& options, ServeState& state, std::string& error) = nullptr;
};

/// The trainmon version and compiler the binary and its plugin must share.
inline constexpr const char* kHttpPluginBuild = "trainmon " TRAINMON_VERSION " / " __VERSION__;

/// The plugin's file name and its extern "C" entry point.
inline constexpr std::string_view kHttpPluginFile = "trainmon-http.so";
inline constexpr const char* kHttpPluginEntry = "trainmon_http_plugin";

/// Where the plugin is looked for, in order, for a binary at `exe_path` (/proc/self/exe):
/// next to it (the build tree; a gpu-check bundle, whose lib/ holds the loader that runs it), then
/// `<exe dir>/../lib/trainmon/` (the installed layout, <prefix>/bin and <prefix>/lib/trainmon).
/// Empty when exe_path has no directory.
std::vector<std::string> http_plugin_candidates(std::string_view exe_path);

/// The plugin, loaded once (thread-safe) and kept for the process's life. Error (the same every
/// call): no candidate exists (the message names every path tried), dlopen failed (the path and
/// dlerror()), or the file is not this build's plugin (no entry point, another build).
Expected<const HttpPluginApi*> http_plugin();

}  // namespace trainmon::serve

/// The plugin's entry point (defined in src/serve/http/server.cpp, looked up with dlsym).
extern "C" const trainmon::serve::HttpPluginApi* trainmon_http_plugin();
