// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "report/writers.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/web/assets.h"

namespace trainmon::report {

namespace {

/// JSON inside <script type="application/json">: every '<' (only ever inside strings) as \u003c.
std::string json_for_script(const nlohmann::json& model) {
  const std::string dumped = text::json_dump(model);
  std::string out;
  out.reserve(dumped.size() + 64);
  for (char c : dumped) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string write_html(const nlohmann::json& model) {
  const auto* uplot_js = web::find_asset("uplot/uPlot.iife.min.js");
  const auto* uplot_css = web::find_asset("uplot/uPlot.min.css");
  const auto* js = web::find_asset("report/report.js");
  const auto* css = web::find_asset("report/report.css");
  if (!uplot_js || !uplot_css || !js || !css) return {};
  const auto& run = model["run"];
  const std::string title =
      model.contains("job")  // a whole job (job_report.h)
          ? i18n::trf("trainmon report: job {}", model["job"].value("id", std::string()))
          : i18n::trf("trainmon report: run {} {}", run.value("id", 0), run.value("name", std::string()));
  // The catalogue for report.js (its tr()): nothing for English.
  nlohmann::json messages = nlohmann::json::object();
  for (const auto& [id, text] : i18n::translations()) messages[std::string(id)] = std::string(text);
  const std::string lang = i18n::language().empty() ? "en" : std::string(i18n::language());
  std::string out;
  out.reserve(uplot_js->data.size() + js->data.size() + 1024 * 1024);
  // BCP 47 tag: "zh_CN" -> "zh-CN" (the browser picks CJK glyphs by it).
  std::string tag = lang;
  std::replace(tag.begin(), tag.end(), '_', '-');
  out += "<!DOCTYPE html>\n<html lang=\"" + text::html(tag) + "\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + text::html(title) + "</title>\n<style>\n";
  out += text::html_script(uplot_css->data);
  out += "\n</style>\n<style>\n";
  out += text::html_script(css->data);
  out +=
      "\n</style>\n</head>\n<body>\n<main id=\"report\"><noscript>This report draws its charts with "
      "JavaScript; `trainmon report --format md` gives a text summary.</noscript></main>\n";
  out += "<script type=\"application/json\" id=\"trainmon-i18n\">";
  out += json_for_script({{"lang", lang}, {"messages", messages}});
  out += "</script>\n";
  out += "<script type=\"application/json\" id=\"trainmon-data\">";
  out += json_for_script(model);
  out += "</script>\n<script>\n";
  out += text::html_script(uplot_js->data);
  out += "\n</script>\n<script>\n";
  out += text::html_script(js->data);
  out += "\n</script>\n</body>\n</html>\n";
  return out;
}

std::string write_json(const nlohmann::json& model) {
  return text::json_dump(model) + "\n";
}

}  // namespace trainmon::report
