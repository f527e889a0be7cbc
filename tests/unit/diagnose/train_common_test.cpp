// SPDX-License-Identifier: Apache-2.0
// The helpers the training-loop detectors share: the weighted median selected in linear time and the
// sliding window's median give what a scan of the sorted pairs gives (the definition), and the ranks'
// merged report times equal the sorted, distinct union.
#include <gtest/gtest.h>

#include <random>

#include "diagnose/detectors/train_common.h"

namespace trainmon::diagnose::detail {
namespace {

/// The definition: sort, then the first value where the running weight reaches half the total.
double sorted_scan(std::vector<std::pair<double, double>> v) {
  std::erase_if(v, [](const auto& p) { return na(p.first) || !(p.second > 0); });
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  double total = 0, acc = 0;
  for (const auto& p : v) total += p.second;
  for (const auto& p : v)
    if ((acc += p.second) >= 0.5 * total) return p.first;
  return v.back().first;
}

TEST(DiagTrainCommon, WeightedMedianIsTheSortedScansAnswer) {
  std::mt19937_64 rng(18);  // fixed seed: failures reproduce
  for (int trial = 0; trial < 3000; ++trial) {
    const std::size_t n = rng() % 200;
    const unsigned distinct = 1 + static_cast<unsigned>(rng() % 40);  // few values: many ties
    std::vector<std::pair<double, double>> v;
    for (std::size_t i = 0; i < n; ++i) {
      double x = 0.001 * static_cast<double>(rng() % distinct);
      if (rng() % 50 == 0) x = NAN;
      const double w = static_cast<double>(rng() % 6);  // step counts, some 0 (dropped)
      v.emplace_back(x, w);
    }
    const double want = sorted_scan(v);
    auto got_v = v;
    const double got = weighted_median(got_v);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(got)) << "trial " << trial;
    else
      EXPECT_EQ(got, want) << "trial " << trial << ", " << n << " pairs";
  }
}

TEST(DiagTrainCommon, WeightedMedianEdges) {
  std::vector<std::pair<double, double>> v;
  EXPECT_TRUE(std::isnan(weighted_median(v)));
  v = {{NAN, 3}, {0.2, 0}};
  EXPECT_TRUE(std::isnan(weighted_median(v)));
  v = {{0.3, 1}, {0.1, 1}};  // a tie of weight: the lower one
  EXPECT_EQ(weighted_median(v), 0.1);
  v = {{0.3, 5}, {0.1, 1}, {0.2, 1}};  // the heavy value wins
  EXPECT_EQ(weighted_median(v), 0.3);
  v.assign(1000, {0.5, 1});  // all equal
  v.emplace_back(0.1, 2000);
  EXPECT_EQ(weighted_median(v), 0.1);
}

TEST(DiagTrainCommon, SlidingWeightedMedianIsEachWindowsWeightedMedian) {
  std::mt19937_64 rng(24);
  for (int trial = 0; trial < 100; ++trial) {
    const std::size_t n = 1 + rng() % 400;
    const unsigned distinct = 1 + static_cast<unsigned>(rng() % 30);
    std::vector<std::pair<double, double>> v(n);
    std::vector<double> values;
    for (auto& p : v) {
      p = {rng() % 40 == 0 ? NAN : 0.01 * static_cast<double>(rng() % distinct),
           static_cast<double>(rng() % 5)};
      values.push_back(p.first);
    }
    SlidingWeightedMedian slide(values);
    std::size_t lo = 0, hi = 0;
    while (hi < n) {  // windows of changing width moving forward
      for (std::size_t grow = 1 + rng() % 20; grow-- > 0 && hi < n; ++hi) slide.add(hi, v[hi].second);
      for (std::size_t shrink = rng() % 20; shrink-- > 0 && lo < hi; ++lo) slide.add(lo, v[lo].second, -1);
      std::vector<std::pair<double, double>> in(v.begin() + static_cast<std::ptrdiff_t>(lo),
                                                v.begin() + static_cast<std::ptrdiff_t>(hi));
      const double want = sorted_scan(in), got = slide.median();
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(got)) << "trial " << trial << " [" << lo << ", " << hi << ")";
      else
        EXPECT_EQ(got, want) << "trial " << trial << " [" << lo << ", " << hi << ")";
    }
  }
  SlidingWeightedMedian none({NAN});
  EXPECT_TRUE(std::isnan(none.median()));
  none.add(0, 3);  // a NaN value, and a position past the end: never counted
  none.add(7, 3);
  EXPECT_TRUE(std::isnan(none.median()));
}

TEST(DiagTrainCommon, RankRowTimesAreTheSortedDistinctUnion) {
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<RankSeries> ranks(rng() % 5);
    std::vector<double> all, steps;
    for (auto& r : ranks) {
      double t = static_cast<double>(rng() % 5);
      for (std::size_t i = rng() % 50; i-- > 0;) {
        t += static_cast<double>(rng() % 3);  // repeats within a rank too
        TrainWindow w;
        w.t = t;
        w.steps = static_cast<std::uint32_t>(rng() % 3);
        r.rows.push_back(w);
        all.push_back(t);
        if (w.steps > 0) steps.push_back(t);
      }
    }
    for (auto* v : {&all, &steps}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    EXPECT_EQ(rank_row_times(ranks, false), all) << "trial " << trial;
    EXPECT_EQ(rank_row_times(ranks, true), steps) << "trial " << trial;
  }
  // rows out of order (bad input) still give the sorted union
  std::vector<RankSeries> ranks(1);
  for (double t : {3.0, 1.0, 2.0}) ranks[0].rows.push_back(TrainWindow{.t = t, .steps = 1});
  EXPECT_EQ(rank_row_times(ranks, true), (std::vector<double>{1, 2, 3}));
}

}  // namespace
}  // namespace trainmon::diagnose::detail
