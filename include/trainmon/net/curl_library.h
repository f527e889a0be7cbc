// SPDX-License-Identifier: Apache-2.0
// libcurl, loaded on first use with dlopen("libcurl.so.4") instead of linked: only the alert sinks
// (webhook, e-mail) and the cluster's Prometheus client (`top --prometheus`) need it, and linking it
// made every trainmon start (status, query, ...) map ~25 more shared libraries (TLS, Kerberos,
// LDAP, ...), which doubled the start-up time. The `net` module (floor 1, docs/architecture.md):
// below alerts and cluster, which both use it; it includes only core.
#pragma once

#include <curl/curl.h>

#include "trainmon/core/error.h"

namespace trainmon::net {

/// The libcurl entry points the sinks and the Prometheus client use (same signatures as curl/curl.h).
struct CurlLibrary {
  CURLcode (*global_init)(long flags) = nullptr;
  CURL* (*easy_init)() = nullptr;
  CURLcode (*easy_setopt)(CURL* handle, CURLoption option, ...) = nullptr;
  CURLcode (*easy_perform)(CURL* handle) = nullptr;
  CURLcode (*easy_getinfo)(CURL* handle, CURLINFO info, ...) = nullptr;
  void (*easy_cleanup)(CURL* handle) = nullptr;
  const char* (*easy_strerror)(CURLcode code) = nullptr;
  curl_slist* (*slist_append)(curl_slist* list, const char* text) = nullptr;
  void (*slist_free_all)(curl_slist* list) = nullptr;
};

/// The library, loaded and curl_global_init'ed once (thread-safe); kept for the process's life.
/// Error (the same one every call): libcurl.so.4 or one of its entry points is missing.
Expected<const CurlLibrary*> curl_library();

}  // namespace trainmon::net
