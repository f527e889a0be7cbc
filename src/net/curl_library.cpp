// SPDX-License-Identifier: Apache-2.0
#include "trainmon/net/curl_library.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace trainmon::net {

namespace {

template <typename F>
bool bind(void* lib, const char* name, F& out, std::string& missing) {
  out = reinterpret_cast<F>(::dlsym(lib, name));
  if (!out) missing += missing.empty() ? name : std::string(", ") + name;
  return out != nullptr;
}

}  // namespace

Expected<const CurlLibrary*> curl_library() {
  static CurlLibrary api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = ::dlerror();
      error = std::string("libcurl.so.4 cannot be loaded (") + (why ? why : "unknown") +
              "): webhook and e-mail alerts need it (Debian: apt install libcurl4)";
      return;
    }
    std::string missing;
    bind(lib, "curl_global_init", api.global_init, missing);
    bind(lib, "curl_easy_init", api.easy_init, missing);
    bind(lib, "curl_easy_setopt", api.easy_setopt, missing);
    bind(lib, "curl_easy_perform", api.easy_perform, missing);
    bind(lib, "curl_easy_getinfo", api.easy_getinfo, missing);
    bind(lib, "curl_easy_cleanup", api.easy_cleanup, missing);
    bind(lib, "curl_easy_strerror", api.easy_strerror, missing);
    bind(lib, "curl_slist_append", api.slist_append, missing);
    bind(lib, "curl_slist_free_all", api.slist_free_all, missing);
    if (!missing.empty()) {
      error = "libcurl.so.4 lacks " + missing + ": webhook and e-mail alerts are off";
      return;  // the handle stays open: harmless, and dlclose of libcurl is not safe in general
    }
    if (CURLcode rc = api.global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK) {
      error = "curl_global_init failed (code " + std::to_string(static_cast<int>(rc)) + ")";
    }
  });
  if (!error.empty()) return std::unexpected(Error{ErrorDomain::os, 0, "ENOENT", error});
  return &api;
}

}  // namespace trainmon::net
