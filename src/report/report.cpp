// SPDX-License-Identifier: Apache-2.0
#include "trainmon/report/report.h"

#include "report/report_model.h"
#include "report/writers.h"

namespace trainmon::report {

Expected<std::string> render_report(store::Store& store, std::int64_t run_id, const ReportOptions& options) {
  auto model = build_report_model(store, run_id, options.max_points);
  if (!model) return std::unexpected(model.error());
  switch (options.format) {
    case Format::markdown: return write_markdown(*model);
    case Format::json: model->erase("findings_shown"); return write_json(*model);
    case Format::html: break;
  }
  std::string html = write_html(*model);
  if (html.empty()) {
    return std::unexpected(Error{ErrorDomain::internal, 0, "REPORT_ASSETS_MISSING",
                                 "the report's scripts are not built into this binary"});
  }
  return html;
}

}  // namespace trainmon::report
