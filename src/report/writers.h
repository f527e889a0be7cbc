// SPDX-License-Identifier: Apache-2.0
// The three renderings of a report model (report_model.h).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace trainmon::report {

/// One self-contained HTML page: uPlot, report.css / report.js and the model inlined.
/// Empty when an embedded asset is missing (a build error; render_report turns it into an Error).
std::string write_html(const nlohmann::json& model);
/// A Markdown summary: header, findings (codes first), GPUs, processes, batch-size advice, epochs.
std::string write_markdown(const nlohmann::json& model);
/// The model as compact JSON, newline-terminated.
std::string write_json(const nlohmann::json& model);

// Escaping (HTML, scripts, Markdown) is text::html, text::html_script and text::markdown_* from
// trainmon/core/text_escape.h, the one place for every output format.

}  // namespace trainmon::report
