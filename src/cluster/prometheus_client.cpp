// SPDX-License-Identifier: Apache-2.0
#include "trainmon/cluster/prometheus_client.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trainmon/net/curl_library.h"

namespace trainmon::cluster {
namespace {

/// An answer larger than this is refused (100 nodes x 8 GPUs of every series is a few MiB).
constexpr std::size_t kMaxBodyBytes = 256u << 20;

Error fail(std::string message, std::string name = "PROMETHEUS") {
  return Error{ErrorDomain::usage, 0, std::move(name), std::move(message)};
}

std::string percent_encode(std::string_view s) {
  std::string out;
  out.reserve(s.size() * 3);
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

struct Body {
  std::string text;
  bool too_large = false;
};

size_t collect(char* data, size_t size, size_t n, void* user) {
  auto* b = static_cast<Body*>(user);
  if (b->text.size() + size * n > kMaxBodyBytes) {
    b->too_large = true;
    return 0;  // ends the transfer
  }
  b->text.append(data, size * n);
  return size * n;
}

/// GET base + path; the JSON "data" of a {"status":"success"} answer.
Expected<nlohmann::json> api_get(const PromEndpoint& ep, const std::string& path) {
  auto lib = net::curl_library();
  if (!lib) return std::unexpected(lib.error());
  const auto& curl = **lib;
  std::string url = ep.base_url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += path;
  CURL* h = curl.easy_init();
  if (!h) return std::unexpected(fail("cannot start an HTTP request (curl_easy_init failed)"));
  Body body;
  const long ms = static_cast<long>(std::max(0.1, ep.timeout_s) * 1000);
  curl.easy_setopt(h, CURLOPT_URL, url.c_str());
  curl.easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
  curl.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms);
  curl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl.easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
  curl.easy_setopt(h, CURLOPT_WRITEDATA, &body);
  curl.easy_setopt(h, CURLOPT_USERAGENT, "trainmon");
  curl.easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");  // gzip when Prometheus offers it
  const CURLcode rc = curl.easy_perform(h);
  long status = 0;
  curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl.easy_cleanup(h);
  const std::string where = ep.base_url;
  if (body.too_large)
    return std::unexpected(
        fail(fmt::format("Prometheus {}: the answer is larger than {} MiB", where, kMaxBodyBytes >> 20)));
  if (rc != CURLE_OK)
    return std::unexpected(fail(fmt::format("Prometheus {}: {}", where, curl.easy_strerror(rc)), "HTTP"));
  nlohmann::json doc = nlohmann::json::parse(body.text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    std::string head = body.text.substr(0, 60);
    for (auto& c : head)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = ' ';
    return std::unexpected(fail(fmt::format(
        "Prometheus {}: not a Prometheus API answer (HTTP {}, not JSON: \"{}\")", where, status, head)));
  }
  if (doc.value("status", "") != "success" || status != 200) {
    std::string err =
        doc.contains("error") && doc["error"].is_string() ? doc["error"].get<std::string>() : "";
    return std::unexpected(fail(fmt::format("Prometheus {}: HTTP {}{}{}", where, status,
                                            err.empty() ? "" : ": ", err.substr(0, 300))));
  }
  if (!doc.contains("data"))
    return std::unexpected(fail(fmt::format("Prometheus {}: the answer has no data", where)));
  return std::move(doc["data"]);
}

double number(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return std::numeric_limits<double>::quiet_NaN();
  const std::string s = v.get<std::string>();
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "+Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  return end == s.c_str() ? std::numeric_limits<double>::quiet_NaN() : d;
}

std::map<std::string, std::string> string_map(const nlohmann::json& o) {
  std::map<std::string, std::string> m;
  if (!o.is_object()) return m;
  for (auto it = o.begin(); it != o.end(); ++it)
    if (it.value().is_string()) m[it.key()] = it.value().get<std::string>();
  return m;
}

Expected<const nlohmann::json*> result_of(const nlohmann::json& data, std::string_view type,
                                          const PromEndpoint& ep) {
  if (!data.is_object() || data.value("resultType", "") != type || !data.contains("result") ||
      !data["result"].is_array())
    return std::unexpected(fail(fmt::format("Prometheus {}: the answer is not a {}", ep.base_url, type)));
  return &data["result"];
}

double parse_rfc3339(const std::string& s) {
  std::tm tm{};
  double frac = 0;
  const char* p = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!p) return 0;
  if (*p == '.') {
    char* end = nullptr;
    frac = std::strtod(p, &end);
    p = end;
  }
  return static_cast<double>(timegm(&tm)) + frac;  // Prometheus writes UTC ("Z")
}

/// What is wrong with a URL's authority ([user@]host[:port], RFC 3986 §3.2), empty when nothing:
/// an IPv6 address without its ']' or with other characters, a host with characters no host name
/// has, a port that is not 1..65535.
std::string authority_problem(std::string_view a) {
  if (const auto at = a.rfind('@'); at != std::string_view::npos) a.remove_prefix(at + 1);
  std::string_view host, port;
  bool has_port = false;
  if (a.starts_with("[")) {
    const auto close = a.find(']');
    if (close == std::string_view::npos) return "the URL's IPv6 address has no closing ']'";
    host = a.substr(1, close - 1);
    if (host.empty() || host.find_first_not_of("0123456789abcdefABCDEF:.%") != std::string_view::npos)
      return fmt::format("the URL's IPv6 address '[{}]' is not one", host);
    const auto after = a.substr(close + 1);
    if (!after.empty() && after.front() != ':') return "the URL has characters after its IPv6 address's ']'";
    has_port = !after.empty();
    port = has_port ? after.substr(1) : std::string_view{};
  } else {
    const auto colon = a.find(':');
    host = a.substr(0, colon);
    has_port = colon != std::string_view::npos;
    port = has_port ? a.substr(colon + 1) : std::string_view{};
    if (host.empty()) return "the URL names no host";
    for (unsigned char c : host)
      if (!std::isalnum(c) && c != '-' && c != '.' && c != '_' && c != '~' && c != '%')
        return fmt::format("the URL's host '{}' has a character a host name cannot have ('{}')", host,
                           static_cast<char>(c));
  }
  if (has_port) {
    const bool digits =
        !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string_view::npos;
    const long p = digits ? std::strtol(std::string(port).c_str(), nullptr, 10) : 0;
    if (p < 1 || p > 65535) return fmt::format("the URL's port '{}' is not a number from 1 to 65535", port);
  }
  return {};
}

}  // namespace

Expected<std::string> normalize_base_url(std::string_view url) {
  for (unsigned char c : url)
    if (c < 0x21 || c >= 0x7f)
      return std::unexpected(fail("the URL has a space or a control character", "USAGE"));
  const bool http = url.starts_with("http://"), https = url.starts_with("https://");
  if (!http && !https) return std::unexpected(fail("the URL must start with http:// or https://", "USAGE"));
  const auto rest = url.substr(http ? 7 : 8);
  if (rest.empty() || rest.front() == '/' || rest.front() == ':')
    return std::unexpected(fail("the URL names no host", "USAGE"));
  if (rest.find_first_of("?#") != std::string_view::npos)
    return std::unexpected(
        fail("the URL must not have a query or fragment (give the server's base URL)", "USAGE"));
  if (auto bad = authority_problem(rest.substr(0, rest.find('/'))); !bad.empty())
    return std::unexpected(fail(std::move(bad), "USAGE"));
  std::string out(url);
  while (out.ends_with("/")) out.pop_back();
  return out;
}

Expected<std::vector<PromSample>> query(const PromEndpoint& ep, std::string_view promql, double t_unix_s) {
  std::string path = "/api/v1/query?query=" + percent_encode(promql);
  if (t_unix_s > 0) path += fmt::format("&time={:.3f}", t_unix_s);
  auto data = api_get(ep, path);
  if (!data) return std::unexpected(data.error());
  auto res = result_of(*data, "vector", ep);
  if (!res) return std::unexpected(res.error());
  std::vector<PromSample> out;
  out.reserve((*res)->size());
  for (const auto& r : **res) {
    if (!r.is_object() || !r.contains("value") || !r["value"].is_array() || r["value"].size() != 2) continue;
    out.push_back({string_map(r.value("metric", nlohmann::json::object())), number(r["value"][1]),
                   number(r["value"][0])});
  }
  return out;
}

Expected<std::vector<PromSeries>> query_range(const PromEndpoint& ep, std::string_view promql,
                                              double start_unix_s, double end_unix_s, double step_s) {
  const std::string path = fmt::format("/api/v1/query_range?query={}&start={:.3f}&end={:.3f}&step={:.3f}",
                                       percent_encode(promql), start_unix_s, end_unix_s, step_s);
  auto data = api_get(ep, path);
  if (!data) return std::unexpected(data.error());
  auto res = result_of(*data, "matrix", ep);
  if (!res) return std::unexpected(res.error());
  std::vector<PromSeries> out;
  out.reserve((*res)->size());
  for (const auto& r : **res) {
    if (!r.is_object() || !r.contains("values") || !r["values"].is_array()) continue;
    PromSeries s{string_map(r.value("metric", nlohmann::json::object())), {}};
    s.points.reserve(r["values"].size());
    for (const auto& p : r["values"])
      if (p.is_array() && p.size() == 2) s.points.emplace_back(number(p[0]), number(p[1]));
    out.push_back(std::move(s));
  }
  return out;
}

Expected<std::vector<PromAlert>> alerts(const PromEndpoint& ep) {
  auto data = api_get(ep, "/api/v1/alerts");
  if (!data) return std::unexpected(data.error());
  if (!data->is_object() || !data->contains("alerts") || !(*data)["alerts"].is_array())
    return std::unexpected(fail(fmt::format("Prometheus {}: the answer lists no alerts", ep.base_url)));
  std::vector<PromAlert> out;
  for (const auto& a : (*data)["alerts"]) {
    if (!a.is_object()) continue;
    PromAlert x;
    x.labels = string_map(a.value("labels", nlohmann::json::object()));
    x.annotations = string_map(a.value("annotations", nlohmann::json::object()));
    x.state = a.value("state", "");
    x.active_since_unix_s = parse_rfc3339(a.value("activeAt", ""));
    x.value = a.contains("value") ? number(a["value"]) : std::numeric_limits<double>::quiet_NaN();
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace trainmon::cluster
