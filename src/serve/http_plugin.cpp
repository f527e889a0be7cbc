// SPDX-License-Identifier: Apache-2.0
#include "trainmon/serve/http_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#ifndef TRAINMON_HTTP_PLUGIN_FROM_BIN
#define TRAINMON_HTTP_PLUGIN_FROM_BIN "../lib/trainmon"  // install(... lib/trainmon), CMakeLists.txt
#endif

namespace trainmon::serve {

std::vector<std::string> http_plugin_candidates(std::string_view exe_path) {
  const auto slash = exe_path.rfind('/');
  if (slash == std::string_view::npos) return {};
  const std::string dir(exe_path.substr(0, slash + 1));
  return {dir + std::string(kHttpPluginFile),
          dir + TRAINMON_HTTP_PLUGIN_FROM_BIN "/" + std::string(kHttpPluginFile)};
}

namespace {

Error plugin_error(const std::string& message) {
  return Error{ErrorDomain::os, 0, "ENOENT", message};
}

Expected<const HttpPluginApi*> load() {
  char exe[4096] = {};
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    return std::unexpected(plugin_error(std::string("cannot find the HTTP server plugin ") +
                                        std::string(kHttpPluginFile) + ": /proc/self/exe unreadable (" +
                                        std::strerror(errno) + ")"));
  }
  const auto candidates = http_plugin_candidates(std::string_view(exe, static_cast<std::size_t>(n)));
  std::string tried;
  for (const auto& path : candidates) {
    tried += (tried.empty() ? "" : ", ") + path;
    if (::access(path.c_str(), F_OK) != 0) continue;
    // RTLD_NOW: a plugin that needs a symbol this binary lacks fails here, with the symbol's name,
    // never later in the middle of a request.
    void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = ::dlerror();
      return std::unexpected(
          plugin_error("cannot load the HTTP server plugin " + path + " (" + (why ? why : "unknown") + ")"));
    }
    using Entry = const HttpPluginApi* (*)();
    auto entry = reinterpret_cast<Entry>(::dlsym(lib, kHttpPluginEntry));
    const HttpPluginApi* api = entry ? entry() : nullptr;
    if (!api || !api->bind) {
      return std::unexpected(
          plugin_error(path + " is not trainmon's HTTP server plugin (no " + kHttpPluginEntry + "())"));
    }
    if (api->abi != kHttpPluginAbi || !api->build || std::strcmp(api->build, kHttpPluginBuild) != 0 ||
        api->options_size != sizeof(ServerOptions) || api->state_size != sizeof(ServeState)) {
      return std::unexpected(plugin_error(path + " was built for another trainmon (" +
                                          (api->build ? api->build : "?") + "; this is " + kHttpPluginBuild +
                                          "): reinstall trainmon, or rebuild both"));
    }
    return api;  // the handle stays open for the process's life
  }
  return std::unexpected(plugin_error("the HTTP server plugin " + std::string(kHttpPluginFile) +
                                      " is missing (looked for " + tried +
                                      "): it is built and installed with trainmon"));
}

}  // namespace

Expected<const HttpPluginApi*> http_plugin() {
  static Expected<const HttpPluginApi*> result = std::unexpected(Error{});
  static std::once_flag once;
  std::call_once(once, [] { result = load(); });
  return result;
}

Expected<std::unique_ptr<Server>> Server::bind(const ServerOptions& options, ServeState& state) {
  auto api = http_plugin();
  if (!api) return std::unexpected(api.error());
  std::string error;
  Server* server = (*api)->bind(options, state, error);
  if (!server) return std::unexpected(Error{ErrorDomain::os, 0, "EADDRNOTAVAIL", error});
  return std::unique_ptr<Server>(server);
}

}  // namespace trainmon::serve
