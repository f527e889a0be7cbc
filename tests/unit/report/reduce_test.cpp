// SPDX-License-Identifier: Apache-2.0
#include "report/reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace trainmon::report {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<double> ticks(std::size_t n, double step = 1.0) {
  std::vector<double> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<double>(i) * step;
  return t;
}

TEST(ReportReduce, ShortSeriesKeepsOneBucketPerTick) {
  const auto t = ticks(10, 0.5);
  const Grid g = make_grid(t, 2000);
  EXPECT_FALSE(g.reduced);
  ASSERT_EQ(g.size(), 10u);
  EXPECT_EQ(g.x, t);
  EXPECT_DOUBLE_EQ(g.edges.front(), -0.5);  // the first bucket reaches back one interval
  std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const Envelope e = reduce_to_grid(g, t, v);
  EXPECT_EQ(e.samples, 10u);
  EXPECT_EQ(e.mean, v);
  EXPECT_FALSE(e.spread());
}

TEST(ReportReduce, BucketCountIsMaxPoints) {
  const auto t = ticks(259'200);  // 3 days at 1 s
  const Grid g = make_grid(t, 2000);
  EXPECT_TRUE(g.reduced);
  EXPECT_EQ(g.size(), 2000u);
  EXPECT_EQ(g.edges.size(), 2001u);
  EXPECT_DOUBLE_EQ(g.edges.back(), t.back());
  EXPECT_NEAR(g.x.front(), 259'199.0 / 2000 / 2, 1e-6);
  std::vector<float> v(t.size(), 50.0f);
  const Envelope e = reduce_to_grid(g, t, v);
  EXPECT_EQ(e.samples, t.size());  // every sample lands in exactly one bucket
  for (std::size_t b = 0; b < g.size(); ++b) ASSERT_FLOAT_EQ(e.mean[b], 50.0f) << b;
  // max_points 0: no reduction
  EXPECT_EQ(make_grid(t, 0).size(), t.size());
  EXPECT_EQ(make_grid({}, 10).size(), 0u);
}

TEST(ReportReduce, EnvelopeKeepsOneSampleSpikes) {
  const auto t = ticks(100'000);
  std::vector<float> v(t.size(), 10.0f);
  v[31'337] = 99.0f;  // one second at 99 %
  v[77'000] = 0.0f;   // one second at 0 %
  const Grid g = make_grid(t, 500);
  const Envelope e = reduce_to_grid(g, t, v);
  ASSERT_EQ(e.max.size(), 500u);
  int spikes = 0, dips = 0;
  for (std::size_t b = 0; b < 500; ++b) {
    if (e.max[b] == 99.0f) ++spikes;
    if (e.min[b] == 0.0f) ++dips;
    EXPECT_LT(e.mean[b], 11.0f);  // the mean alone hides them
  }
  EXPECT_EQ(spikes, 1);
  EXPECT_EQ(dips, 1);
  EXPECT_TRUE(e.spread());
}

TEST(ReportReduce, NaNMakesGapsOnlyWhereABucketHasNoValue) {
  const auto t = ticks(8);
  std::vector<float> v = {1, kNaN, kNaN, kNaN, 5, kNaN, 7, 8};
  const Grid one = make_grid(t, 100);
  const Envelope a = reduce_to_grid(one, t, v);
  EXPECT_FLOAT_EQ(a.mean[0], 1);
  EXPECT_TRUE(std::isnan(a.mean[1]) && std::isnan(a.min[2]) && std::isnan(a.max[3]));
  EXPECT_FLOAT_EQ(a.mean[4], 5);
  EXPECT_EQ(a.samples, 4u);
  // 4 buckets of ~1.75 s: (−ε,1.75] {1,NaN} (1.75,3.5] {NaN,NaN} (3.5,5.25] {NaN,5} (5.25,7] {NaN,7,8}
  const Grid four = make_grid(t, 4);
  const Envelope b = reduce_to_grid(four, t, v);
  ASSERT_EQ(b.mean.size(), 4u);
  EXPECT_FLOAT_EQ(b.mean[0], 1);
  EXPECT_TRUE(std::isnan(b.mean[1]));
  EXPECT_FLOAT_EQ(b.mean[2], 5);
  EXPECT_FLOAT_EQ(b.min[3], 7);
  EXPECT_FLOAT_EQ(b.max[3], 8);
  EXPECT_FLOAT_EQ(b.mean[3], 7.5);
}

TEST(ReportReduce, SamplesBetweenTicksLandInTheLaterTick) {
  // high-resolution samples (6 per second) on a 1-s tick grid
  const auto t = ticks(3);
  const Grid g = make_grid(t, 100);
  std::vector<double> ht;
  std::vector<float> hv;
  for (int i = -6; i < 12; ++i) {  // -0.99 .. 1.84 s
    ht.push_back(i / 6.0 + 0.01);
    hv.push_back(i % 2 ? 0.0f : 100.0f);
  }
  const Envelope e = reduce_to_grid(g, ht, hv);
  EXPECT_EQ(e.samples, 18u);  // buckets (-1, 0], (0, 1], (1, 2]: six samples each
  EXPECT_FLOAT_EQ(e.min[1], 0);
  EXPECT_FLOAT_EQ(e.max[1], 100);
}

}  // namespace
}  // namespace trainmon::report
