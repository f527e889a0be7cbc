// SPDX-License-Identifier: Apache-2.0
// export_csv / export_jsonl on chunks written before a column was appended to their series kind
// (docs/store.md: columns are only ever appended), plain and downsampled.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "trainmon/recorder/run_report.h"
#include "trainmon/store/series_fields.h"
#include "trainmon/store/store.h"
#include "unit/store/store_test_util.h"

namespace trainmon::recorder {
namespace {

using store::SeriesKind;

TEST(RunExport, OldChunksWithFewerColumnsKeepTheirColumnNames) {
  store::testing::TempDir dir;
  auto s = store::Store::open(dir.file("t.db"), store::OpenMode::read_write);
  ASSERT_TRUE(s) << s.error().message;
  store::RunInfo run;
  run.name = "old";
  run.start_unix_ns = 1'700'000'000'000'000'000;
  run.end_unix_ns = 1'700'000'100'000'000'000;
  const auto run_id = *s->create_run(run);
  store::SeriesInfo si;
  si.run_id = run_id;
  si.kind = SeriesKind::gpu;
  si.gpu_index = 0;
  const auto sid = *s->create_series(si);
  const std::size_t ncols = store::fields_of(SeriesKind::gpu).size();
  const std::size_t total = *store::field_index(SeriesKind::gpu, "memory_total_bytes");
  // The newest column, whichever was appended last.
  const std::string last_name(store::fields_of(SeriesKind::gpu).back().name);
  // Written before the newest column existed: one column fewer. Memory total alternates 100 / 300.
  store::Chunk c;
  c.columns = ncols - 1;
  for (int i = 0; i < 4; ++i) {
    std::vector<std::int64_t> row(ncols - 1, store::kNull);
    row[total] = i % 2 ? 300 : 100;
    c.append(1'700'000'000'000 + i * 1000, row);
  }
  ASSERT_TRUE(s->insert_chunk(sid, c));

  auto jsonl = [&] {
    std::ostringstream out;
    EXPECT_TRUE(export_jsonl(*s, run_id, out, "gpu"));
    std::vector<nlohmann::json> rows;
    std::istringstream in(out.str());
    for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
    return rows;
  };
  auto rows = jsonl();
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[1]["memory_total_bytes"], 300);
  EXPECT_FALSE(rows[1].contains(last_name));

  // Downsampled: [means, minima, maxima] of the chunk's own width, not of today's.
  const std::int64_t later = 1'700'000'000'000'000'000 + 2LL * 86'400'000'000'000;
  auto r = s->apply_retention(later, store::RetentionPolicy{0, 86'400'000'000'000});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->chunks_downsampled, 1);
  rows = jsonl();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["aggregated"], true);
  EXPECT_EQ(rows[0]["memory_total_bytes"], 200);
  EXPECT_EQ(rows[0]["memory_total_bytes_min"], 100);
  EXPECT_EQ(rows[0]["memory_total_bytes_max"], 300);
  EXPECT_FALSE(rows[0].contains(last_name));
  EXPECT_FALSE(rows[0].contains(last_name + "_min"));

  std::ostringstream csv;
  ASSERT_TRUE(export_csv(*s, run_id, "gpu", csv));
  std::istringstream in(csv.str());
  std::string header, line;
  std::getline(in, header);
  std::getline(in, line);
  // time_unix_s,gpu,pid,comm,aggregated, then the columns: the last one is empty, not the chunk's
  // first minimum.
  EXPECT_TRUE(header.ends_with("," + last_name)) << header;
  EXPECT_TRUE(line.ends_with(",")) << line;
  EXPECT_EQ(std::count(line.begin(), line.end(), ','), std::count(header.begin(), header.end(), ','));
}

}  // namespace
}  // namespace trainmon::recorder
