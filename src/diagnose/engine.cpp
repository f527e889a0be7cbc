// SPDX-License-Identifier: Apache-2.0
#include "trainmon/diagnose/engine.h"

#include "diagnose/detail.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string_view>

namespace trainmon::diagnose {

std::vector<Finding> DiagnosisEngine::run_all(const RunSeries& series, const Thresholds& th) const {
  std::vector<Finding> out;
  const detail::RunAllMemo memo(series);  // the detectors share rolling means and GPU uses
  for (const auto& d : detector_table()) {
    auto v = d.fn(series, th);
    out.insert(out.end(), std::make_move_iterator(v.begin()), std::make_move_iterator(v.end()));
  }
  link_related(out);
  link_causes(out, th.window_s);
  std::stable_sort(out.begin(), out.end(), finding_less);
  return out;
}

void link_related(std::vector<Finding>& findings) {
  // What can explain a throughput drop: data loading, clocks, power, the PCIe link, host memory,
  // another process on the GPU, a straggler.
  static constexpr std::string_view kCauses[] = {"D2",  "D4",  "D6",  "D9",  "D12", "D16", "D17",
                                                 "D18", "D19", "D24", "D25", "D27", "D28"};
  for (auto& f : findings) {
    if (f.code != "D26") continue;
    f.related.clear();
    std::string also;
    for (const auto& o : findings) {
      if (std::find(std::begin(kCauses), std::end(kCauses), o.code) == std::end(kCauses)) continue;
      if (o.end_s < f.start_s || o.start_s > f.end_s) continue;
      // A finding about GPUs explains the drop only on a GPU the job is known to use (D26's own
      // GPUs, train_gpus): a throttled GPU of another program says nothing of a job on the CPU.
      if (!o.gpus.empty() && std::none_of(o.gpus.begin(), o.gpus.end(), [&](unsigned g) {
            return std::find(f.gpus.begin(), f.gpus.end(), g) != f.gpus.end();
          }))
        continue;
      if (std::find(f.related.begin(), f.related.end(), o.code) != f.related.end()) continue;
      f.related.push_back(o.code);
      also += (also.empty() ? "" : ", ") + o.code + " " + o.slug;
    }
    if (!also.empty()) f.evidence += "; overlapping: " + also;
  }
}

void link_causes(std::vector<Finding>& findings, double window_s) {
  auto overlaps = [&](const Finding& a, const Finding& b) {
    return a.start_s <= b.end_s + window_s && b.start_s <= a.end_s + window_s;
  };
  auto num = [](const Finding& f, const char* key) {
    const auto it = f.numbers.find(key);
    return it == f.numbers.end() ? NAN : it->second;
  };
  auto first_of = [&](const Finding& f, std::initializer_list<std::string_view> codes,
                      auto&& also) -> const Finding* {
    for (auto code : codes)
      for (const auto& o : findings)
        if (&o != &f && o.code == code && overlaps(o, f) && also(o)) return &o;
    return nullptr;
  };
  auto any = [](const Finding&) { return true; };
  for (auto& f : findings) {
    if (!f.cause.empty()) continue;
    const Finding* c = nullptr;
    if (f.code == "D20") {
      // the leak that led to the kill: it ended at most a window before the kill, not after it
      const double killed = num(f, "killed_pid");
      auto before = [&](const Finding& o) { return o.end_s <= f.start_s + window_s; };
      c = first_of(f, {"D3"}, [&](const Finding& o) {
        return before(o) && !std::isnan(killed) && num(o, "grower_pid") == killed;
      });
      if (!c) c = first_of(f, {"D3"}, before);
    } else if (f.code == "D17") {
      c = first_of(f, {"D3"}, any);
    } else if (f.code == "D23") {
      c = first_of(f, {"D17"}, any);
      if (c) {
        f.evidence += "; during host memory pressure (" + c->code + ")";
        if (!f.evidence_local.empty())
          f.evidence_local += i18n::trf("; during host memory pressure ({})", c->code);
        f.advice = N_(
            "The stall came with host memory pressure (see the cause above): the processes wait for memory, "
            "not on a line of the training code. Free memory first (fix the leak, fewer DataLoader workers, "
            "stop the other memory users on this machine); the stacks show where they waited.");
        f.advice_local.clear();
      }
    } else if (f.code == "D14" && num(f, "host_pressure") == 1) {
      c = first_of(f, {"D17", "D19"}, any);
    } else if (f.code == "D25" || f.code == "D4") {
      c = first_of(f, {"D3"}, [&](const Finding& o) {
        return num(o, "grower_kind") == static_cast<double>(JobProcessKind::worker);
      });
      if (c) {
        f.evidence += "; a DataLoader worker leaks memory meanwhile (" + c->code + ")";
        if (!f.evidence_local.empty())
          f.evidence_local += i18n::trf("; a DataLoader worker leaks memory meanwhile ({})", c->code);
      }
    }
    if (c) f.cause = c->code;
  }
}

LiveDiagnosis::LiveDiagnosis(Thresholds th, LiveOptions opt) : th_(th), opt_(opt) {}

bool LiveDiagnosis::on_snapshot(const Snapshot& snap, const JobContext& ctx) {
  append_snapshot(series_, snap, ctx);
  trim();
  if (series_.t.back() - last_eval_s_ < opt_.every_s) return false;
  return evaluate();
}

void LiveDiagnosis::trim() {
  if (opt_.retain_s <= 0 || series_.t.empty()) return;
  const double now = series_.t.back();
  const double keep = std::max(opt_.retain_s, opt_.window_s);
  // Trim in steps of a tenth of the retained span: one copy per step, not one per tick.
  if (now - series_.t.front() < keep * kWindowSlack) return;
  series_ = slice(series_, now - keep, now);
  std::erase_if(live_, [&](const LiveFinding& l) { return !l.open && now - l.last_seen_s > keep; });
}

void LiveDiagnosis::on_train_event(TrainEvent ev) {
  append_train_event(series_, std::move(ev));
}

void LiveDiagnosis::on_train_window(const TrainRank& rank, const TrainWindow& window) {
  append_train_window(series_.train, rank, window);
}

void LiveDiagnosis::on_train_stack(TrainStackRec stack) {
  append_train_stack(series_, std::move(stack));
}

bool LiveDiagnosis::evaluate() {
  if (series_.t.empty()) return false;
  const double now = series_.t.back();
  last_eval_s_ = now;
  // The window is copied only when the series reaches further back than a tenth beyond it: a
  // retained series (retain_s, trimmed in steps of a tenth) is evaluated in place. The copy was a
  // third of an evaluation's CPU time (bench_diagnose, BM_LiveEvaluateHour8Gpus), every 10 s.
  std::optional<RunSeries> window;
  if (series_.t.front() < now - opt_.window_s * kWindowSlack)
    window = slice(series_, now - opt_.window_s, now);
  const auto found = engine_.run_all(window ? *window : series_, th_);
  bool changed = false;
  auto same = [](const Finding& a, const Finding& b) {
    return a.code == b.code && a.gpus == b.gpus && a.pids == b.pids;
  };
  for (const auto& f : found) {
    // Only what holds now counts as "seen": past episodes still inside the window do not keep a
    // finding open (end_s lags the last row by at most one evaluation period plus clear_s).
    if (now - f.end_s > opt_.every_s + th_.clear_s) continue;
    auto it = std::find_if(live_.begin(), live_.end(),
                           [&](const LiveFinding& l) { return l.open && same(l.finding, f); });
    if (it != live_.end()) {
      // A late GPU answer under host pressure (D14, a warning) that kept failing past gpu_late_max_s
      // is a lost GPU: said again, critical (the warning was announced while the calls still hung).
      if (f.code == "D14" && f.severity > it->finding.severity) {
        it->open = false;
        live_.push_back({f, now, now, true});
        changed = true;
        continue;
      }
      it->finding = f;
      it->last_seen_s = now;
      continue;
    }
    live_.push_back({f, now, now, true});
    changed = true;
  }
  for (auto& l : live_) {
    if (l.open && now - l.last_seen_s >= opt_.close_after_s) {
      l.open = false;
      changed = true;
    }
  }
  return changed;
}

std::vector<Finding> LiveDiagnosis::active() const {
  std::vector<Finding> out;
  for (const auto& l : live_)
    if (l.open) out.push_back(l.finding);
  std::stable_sort(out.begin(), out.end(), finding_less);
  return out;
}

std::vector<Finding> LiveDiagnosis::finish(const JobFacts& facts) {
  const auto root = series_.facts.root_pid;
  series_.facts = facts;
  if (!series_.facts.root_pid) series_.facts.root_pid = root;
  return engine_.run_all(series_, th_);
}

}  // namespace trainmon::diagnose
