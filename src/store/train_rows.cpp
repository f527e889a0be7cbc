// SPDX-License-Identifier: Apache-2.0
#include "trainmon/store/train_rows.h"

#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>

#include "trainmon/store/chunk_codec.h"
#include "trainmon/store/series_fields.h"

namespace trainmon::store {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::int64_t us(double seconds) {
  return std::isfinite(seconds) ? static_cast<std::int64_t>(std::llround(seconds * 1e6)) : kNull;
}
std::int64_t whole(double v) {
  return std::isfinite(v) ? static_cast<std::int64_t>(std::llround(v)) : kNull;
}
std::int64_t unix_ms(double run_s, std::int64_t start_ms) {
  return std::isfinite(run_s) ? start_ms + static_cast<std::int64_t>(std::llround(run_s * 1e3)) : kNull;
}

// The names of CollectiveAt::op a row stores as a code (its index + 1); another name is stored as
// kOtherOp and loads back as "other". Append only: the codes are in recorded runs.
constexpr std::string_view kCollOps[] = {"all_reduce",
                                         "all_gather",
                                         "all_gather_into_tensor",
                                         "reduce_scatter",
                                         "reduce_scatter_tensor",
                                         "broadcast",
                                         "reduce",
                                         "barrier",
                                         "all_to_all",
                                         "all_to_all_single",
                                         "send",
                                         "recv",
                                         "isend",
                                         "irecv",
                                         "wait",
                                         "ddp_bucket",
                                         "gather",
                                         "scatter",
                                         "all_gather_object",
                                         "broadcast_object_list",
                                         "other"};
constexpr std::int64_t kOtherOp = static_cast<std::int64_t>(std::size(kCollOps));

std::int64_t op_code(const std::string& op) {
  if (op.empty()) return kNull;
  for (std::size_t i = 0; i < std::size(kCollOps); ++i) {
    if (kCollOps[i] == op) return static_cast<std::int64_t>(i) + 1;
  }
  return kOtherOp;
}

std::string op_name(std::int64_t code) {
  if (code == kNull || code < 1) return {};
  if (code > kOtherOp) return "other";
  return std::string(kCollOps[static_cast<std::size_t>(code - 1)]);
}

}  // namespace

std::vector<std::int64_t> train_window_row(const diagnose::TrainWindow& w, std::int64_t start_ms) {
  return {static_cast<std::int64_t>(w.steps),
          whole(w.samples),
          us(w.span_s),
          us(w.step.sum),
          us(w.step.min),
          us(w.step.max),
          us(w.step.p50),
          us(w.step.p90),
          us(w.step.p99),
          us(w.data.sum),
          us(w.data.min),
          us(w.data.max),
          us(w.data.p50),
          us(w.data.p90),
          us(w.data.p99),
          whole(w.total_steps),
          whole(w.total_samples),
          us(w.total_step_s),
          us(w.total_data_s),
          unix_ms(w.last_step_t, start_ms),
          static_cast<std::int64_t>(w.phase),
          unix_ms(w.phase_t, start_ms),
          us(w.comm.sum),
          us(w.comm.min),
          us(w.comm.max),
          us(w.comm.p50),
          us(w.comm.p90),
          us(w.comm.p99),
          us(w.total_comm_s),
          op_code(w.coll.op),
          w.coll.op.empty() || w.coll.seq < 0 ? kNull : w.coll.seq,
          w.coll.op.empty() ? kNull : whole(w.coll.bytes)};
}

diagnose::TrainWindow train_window_from_row(std::int64_t t_ms, std::span<const std::int64_t> row,
                                            std::int64_t start_ms) {
  auto at = [&](std::size_t i) { return i < row.size() ? row[i] : kNull; };
  auto sec = [&](std::size_t i) { return at(i) == kNull ? kNaN : static_cast<double>(at(i)) / 1e6; };
  auto fsec = [&](std::size_t i) { return static_cast<float>(sec(i)); };
  auto num = [&](std::size_t i) { return at(i) == kNull ? kNaN : static_cast<double>(at(i)); };
  auto run_s = [&](std::size_t i) {
    return at(i) == kNull ? kNaN : static_cast<double>(at(i) - start_ms) / 1e3;
  };
  diagnose::TrainWindow w;
  w.t = static_cast<double>(t_ms - start_ms) / 1e3;
  w.steps = at(0) == kNull || at(0) < 0 ? 0u : static_cast<std::uint32_t>(at(0));
  w.samples = num(1);
  w.span_s = fsec(2);
  w.step = {fsec(3), fsec(4), fsec(5), fsec(6), fsec(7), fsec(8)};
  w.data = {fsec(9), fsec(10), fsec(11), fsec(12), fsec(13), fsec(14)};
  w.total_steps = num(15);
  w.total_samples = num(16);
  w.total_step_s = sec(17);
  w.total_data_s = sec(18);
  w.last_step_t = run_s(19);
  const auto phase = at(20);
  w.phase = phase >= 0 && phase <= static_cast<std::int64_t>(diagnose::TrainPhase::optimizer)
                ? static_cast<diagnose::TrainPhase>(phase)
                : diagnose::TrainPhase::unknown;
  w.phase_t = run_s(21);
  w.comm = {fsec(22), fsec(23), fsec(24), fsec(25), fsec(26), fsec(27)};
  w.total_comm_s = sec(28);
  w.coll.op = op_name(at(29));
  if (!w.coll.op.empty()) {
    w.coll.seq = at(30) == kNull ? -1 : at(30);
    w.coll.bytes = num(31);
  }
  return w;
}

}  // namespace trainmon::store
