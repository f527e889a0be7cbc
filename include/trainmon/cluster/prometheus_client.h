// SPDX-License-Identifier: Apache-2.0
// A small client of the Prometheus HTTP API (https://prometheus.io/docs/prometheus/latest/querying/api/):
// instant queries, range queries and the firing alerts, over libcurl (loaded on first use, as the
// alert sinks do), each request bounded by a timeout. What `top --prometheus` and
// `report --prometheus` read (docs/cluster.md).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainmon/core/error.h"

namespace trainmon::cluster {

/// Where Prometheus is and how long one request may take.
struct PromEndpoint {
  std::string base_url;  ///< "http://prometheus:9090" (a trailing '/' is allowed)
  double timeout_s = 3;  ///< the whole request, connection included
};

/// One series of an instant query's vector result: its labels and value.
struct PromSample {
  std::map<std::string, std::string> labels;  ///< __name__ included when the query kept it
  double value = 0;                           ///< NaN for "NaN"
  double t_unix_s = 0;                        ///< the evaluation time
};

/// One series of a range query's matrix result.
struct PromSeries {
  std::map<std::string, std::string> labels;
  std::vector<std::pair<double, double>> points;  ///< (unix seconds, value), oldest first
};

/// One alert of GET /api/v1/alerts.
struct PromAlert {
  std::map<std::string, std::string> labels, annotations;
  std::string state;  ///< "firing" or "pending"
  double active_since_unix_s = 0;
  double value = 0;
};

/// Checks a base URL given by the user: http:// or https://, a host, no query or fragment, no
/// control characters. Error (usage): a sentence saying what is wrong.
Expected<std::string> normalize_base_url(std::string_view url);

/// GET /api/v1/query?query=Q[&time=T] (T <= 0: now). Error: the request failed (the message names
/// the URL and curl's reason: connection refused, timeout, ...), an HTTP status other than 200
/// (with Prometheus' own error text when it gave one), an answer that is not JSON or not a
/// "success" vector.
Expected<std::vector<PromSample>> query(const PromEndpoint& ep, std::string_view promql, double t_unix_s = 0);

/// GET /api/v1/query_range over [start, end] every step_s seconds. Errors as query() (a matrix).
Expected<std::vector<PromSeries>> query_range(const PromEndpoint& ep, std::string_view promql,
                                              double start_unix_s, double end_unix_s, double step_s);

/// GET /api/v1/alerts: the alerts Prometheus has pending or firing. Errors as query().
Expected<std::vector<PromAlert>> alerts(const PromEndpoint& ep);

}  // namespace trainmon::cluster
