// SPDX-License-Identifier: Apache-2.0
// The report's model: everything a report shows, as one JSON object (docs/report.md "Data model").
// The HTML page embeds it and draws it; the JSON format prints it; the Markdown summary reads it.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainmon/core/error.h"
#include "trainmon/diagnose/finding.h"
#include "trainmon/diagnose/series.h"
#include "trainmon/store/run_info.h"
#include "trainmon/store/store.h"

namespace trainmon::report {

/// Schema version of the model ("version" key); bumped when a key changes meaning.
inline constexpr int kModelVersion = 1;

/// The model of run `run_id` read from `store`, series reduced to `max_points` buckets (0: none).
/// Errors: the run does not exist or its header cannot be read. Samples or processes that cannot be
/// read leave their part empty and add a line to "notes".
Expected<nlohmann::json> build_report_model(store::Store& store, std::int64_t run_id, int max_points);

/// The charts part of the model ("x", "reduced", "bucket_s", "charts") for `series`, and the epoch
/// markers ("epochs"), added to `model`. Pure: tests feed it synthetic series.
void add_charts(nlohmann::json& model, const diagnose::RunSeries& series, int max_points);

/// "findings" (each with "id" and the "charts" its region is shaded on) and "batch_advice" (D22);
/// call after add_charts.
void add_findings(nlohmann::json& model, const std::vector<diagnose::Finding>& findings);

/// `v` rounded to 2 decimals; null when not finite (what the model's figures hold).
nlohmann::json rounded(double v);

/// NaN-skipping mean and max of a column (both NaN when it has no finite value).
struct Stat {
  double mean = NAN, max = NAN;
};
Stat stat(const std::vector<float>& v);

}  // namespace trainmon::report
