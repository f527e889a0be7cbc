// SPDX-License-Identifier: Apache-2.0
// Counter continuity for /metrics: serve follows every counter series it exports (CounterState,
// trainmon/serve/metrics_text.h) so that a counter the driver resets (a reload zeroes the ECC and
// energy counters) keeps rising, as Prometheus requires; a series seen for the first time exports
// its reading as is.
#pragma once

#include <string>
#include <string_view>

#include "trainmon/serve/metrics_text.h"

namespace trainmon::serve::metrics {

/// The key of one counter series in CounterState: name{labels.
std::string counter_key(std::string_view name, std::string_view labels);

/// The value to export for a counter series: its continued value when followed, else `raw`.
double continued(const CounterState& counters, std::string_view name, std::string_view labels, double raw);

}  // namespace trainmon::serve::metrics
