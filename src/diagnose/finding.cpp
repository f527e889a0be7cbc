// SPDX-License-Identifier: Apache-2.0
#include "trainmon/diagnose/finding.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"

namespace trainmon::diagnose {
namespace {

// Stable codes: D1..D11 are MISSION.md §4's table; D12.. are ours. Append only.
constexpr std::array<FindingKind, 26> kKinds{{
    {"D1", "fragmentation-oom-risk", N_("OOM risk: allocator fragmentation or memory spike")},
    {"D2", "ddp-imbalance", N_("Multi-GPU imbalance")},
    {"D3", "host-memory-leak", N_("Host memory leak in the training job")},
    {"D4", "dataloader-starved", N_("GPU starved by data loading")},
    {"D5", "gpu-memory-growth", N_("GPU memory grows every epoch")},
    {"D6", "power-bound", N_("Power or memory-bandwidth bound")},
    {"D7", "wrong-device", N_("Wrong device or a GPU held but unused")},
    {"D8", "ddp-not-running", N_("Multi-GPU job runs on one GPU only")},
    {"D9", "ghost-gpu-process", N_("Ghost or idle process holding GPU memory")},
    {"D10", "ecc-errors", N_("Uncorrectable ECC errors")},
    {"D11", "low-utilization", N_("GPU utilisation headroom")},
    {"D12", "clock-throttle", N_("Clocks throttled")},
    {"D13", "xid-error", N_("Xid error reported by the driver")},
    {"D14", "gpu-lost", N_("GPU stopped responding")},
    {"D15", "memory-retirement", N_("GPU memory pages retired or rows remapped")},
    {"D16", "pcie-link-degraded", N_("PCIe link below its maximum under load")},
    {"D17", "host-memory-pressure", N_("Host memory pressure or swapping")},
    {"D18", "io-bound-loading", N_("Data loading bound by disk I/O")},
    {"D19", "cpu-bound-loading", N_("Data loading bound by CPU")},
    {"D20", "oom-killed", N_("Job killed by the OOM killer")},
    {"D21", "gpu-memory-near-full", N_("GPU memory near full")},
    {"D22", "batch-size-advice", N_("Largest safe batch size")},
    {"D23", "training-hang", N_("Training hang: no step completes")},
    {"D24", "straggler-rank", N_("Straggler rank holds back the others")},
    {"D25", "data-wait-measured", N_("Steps wait for data (measured in the training loop)")},
    {"D26", "throughput-drop", N_("Throughput dropped below the run's steady level")},
}};

int code_number(std::string_view code) {
  int n = 0;
  if (code.size() > 1) std::from_chars(code.data() + 1, code.data() + code.size(), n);
  return n;
}

}  // namespace

std::string_view severity_name(Severity s) noexcept {
  switch (s) {
    case Severity::info: return N_("info");
    case Severity::warning: return N_("warning");
    case Severity::critical: return N_("critical");
  }
  return "info";
}

bool parse_severity(std::string_view name, Severity& out) noexcept {
  for (auto s : {Severity::info, Severity::warning, Severity::critical}) {
    if (severity_name(s) == name) {
      out = s;
      return true;
    }
  }
  return false;
}

std::span<const FindingKind> finding_kinds() noexcept {
  return kKinds;
}

const FindingKind* find_kind(std::string_view code) noexcept {
  for (const auto& k : kKinds)
    if (k.code == code) return &k;
  return nullptr;
}

Finding make_finding(std::string_view code, Severity severity, double start_s, double end_s) {
  Finding f;
  f.code = std::string(code);
  if (const auto* k = find_kind(code)) {
    f.slug = std::string(k->slug);
    f.title = std::string(k->title);
  }
  f.severity = severity;
  f.start_s = start_s;
  f.end_s = end_s;
  return f;
}

std::string_view shown_title(const Finding& f) noexcept {
  return i18n::tr(f.title);
}

std::string_view shown_evidence(const Finding& f) noexcept {
  return f.evidence_local.empty() ? std::string_view(f.evidence) : std::string_view(f.evidence_local);
}

std::string_view shown_advice(const Finding& f) noexcept {
  return f.advice_local.empty() ? i18n::tr(f.advice) : std::string_view(f.advice_local);
}

void set_cost(Finding& f, double share, std::string_view basis) {
  if (!std::isfinite(share)) return;
  Cost c;
  c.share = std::clamp(share, 0.0, 1.0);
  c.speedup = c.share >= 1.0 ? 0.0 : 1.0 / (1.0 - c.share);
  c.basis = std::string(basis);
  f.cost = std::move(c);
}

std::string cost_text(const Finding& f) {
  if (!f.cost) return {};
  const auto& c = *f.cost;
  if (c.speedup <= 0) return std::string(i18n::tr("costs all of the throughput (no step completes)"));
  return i18n::trf("costs {:.0f} % of throughput{}; up to {:.2g}x samples/s if fixed", 100.0 * c.share,
                   c.basis == "estimated" ? i18n::tr(" (estimated from the GPU side)") : "", c.speedup);
}

std::string to_text(const Finding& f) {
  std::string who;
  for (auto g : f.gpus) who += fmt::format("{}GPU{}", who.empty() ? "" : ",", g);
  for (auto p : f.pids) who += fmt::format("{}pid {}", who.empty() ? "" : ",", p);
  // Evidence quotes GPU and process names, a stack the job's file names: every line goes to terminals
  // (text::terminal, line by line: it replaces newlines too).
  const std::string cost = cost_text(f);
  std::string out = text::terminal(fmt::format("[{}] {} {} {:.0f}-{:.0f}s{}{}: {}{}{} -> {}",
                                               i18n::tr(severity_name(f.severity)), f.code, f.slug, f.start_s,
                                               f.end_s, who.empty() ? "" : " ", who, shown_evidence(f),
                                               cost.empty() ? "" : i18n::tr("; "), cost, shown_advice(f)));
  for (const auto& st : f.stacks) {
    std::string line =
        fmt::format("    {} pid {}{}: {}",
                    st.rank >= 0 ? i18n::trf("rank {}", st.rank) : std::string(i18n::tr("process")), st.pid,
                    st.host.empty() ? "" : i18n::trf(" on {}", st.host),
                    st.where.empty() ? i18n::tr("(no Python frame)") : std::string_view(st.where));
    if (!st.caller.empty()) line += i18n::trf(" (called from {})", st.caller);
    out += '\n';  // not "\n" + string&&: GCC 12 at -O3 reports a false -Warray-bounds there
    out += text::terminal(line);
  }
  return out;
}

void to_json(nlohmann::json& j, const RankStack& s) {
  j = nlohmann::json{{"t", s.t},
                     {"rank_key", s.rank_key},
                     {"rank", s.rank},
                     {"pid", s.pid},
                     {"host", s.host},
                     {"where", s.where},
                     {"caller", s.caller},
                     {"main_stack", s.main_stack},
                     {"collective", s.collective}};
}

void from_json(const nlohmann::json& j, RankStack& s) {
  s.t = j.value("t", 0.0);
  s.rank_key = j.value("rank_key", std::int64_t{0});
  s.rank = j.value("rank", -1);
  s.pid = j.value("pid", std::uint32_t{0});
  s.host = j.value("host", std::string{});
  s.where = j.value("where", std::string{});
  s.caller = j.value("caller", std::string{});
  s.main_stack = j.value("main_stack", std::string{});
  s.collective = j.value("collective", std::string{});
}

void to_json(nlohmann::json& j, const Finding& f) {
  j = nlohmann::json{{"code", f.code},         {"slug", f.slug},
                     {"title", f.title},       {"severity", std::string(severity_name(f.severity))},
                     {"start_s", f.start_s},   {"end_s", f.end_s},
                     {"gpus", f.gpus},         {"pids", f.pids},
                     {"evidence", f.evidence}, {"numbers", f.numbers},
                     {"advice", f.advice},     {"thresholds", f.thresholds}};
  if (f.cost) j["cost"] = {{"share", f.cost->share}, {"speedup", f.cost->speedup}, {"basis", f.cost->basis}};
  if (!f.related.empty()) j["related"] = f.related;
  if (!f.stacks.empty()) j["stacks"] = f.stacks;
}

void from_json(const nlohmann::json& j, Finding& f) {
  j.at("code").get_to(f.code);
  f.slug = j.value("slug", std::string{});
  f.title = j.value("title", std::string{});
  const auto sev = j.at("severity").get<std::string>();
  if (!parse_severity(sev, f.severity))
    throw nlohmann::json::other_error::create(501, "unknown severity '" + sev + "'", &j);
  j.at("start_s").get_to(f.start_s);
  j.at("end_s").get_to(f.end_s);
  f.gpus = j.value("gpus", std::vector<unsigned>{});
  f.pids = j.value("pids", std::vector<std::uint32_t>{});
  f.evidence = j.value("evidence", std::string{});
  f.numbers = j.value("numbers", std::map<std::string, double>{});
  f.advice = j.value("advice", std::string{});
  f.thresholds = j.value("thresholds", std::map<std::string, double>{});
  f.cost.reset();
  if (const auto it = j.find("cost"); it != j.end() && it->is_object()) {
    Cost c;
    c.share = it->at("share").get<double>();
    c.speedup = it->value("speedup", 0.0);
    c.basis = it->value("basis", std::string{});
    f.cost = std::move(c);
  }
  f.related = j.value("related", std::vector<std::string>{});
  f.stacks = j.value("stacks", std::vector<RankStack>{});
}

bool finding_less(const Finding& a, const Finding& b) {
  return std::forward_as_tuple(a.start_s, code_number(a.code), a.gpus, a.pids, a.end_s, a.evidence) <
         std::forward_as_tuple(b.start_s, code_number(b.code), b.gpus, b.pids, b.end_s, b.evidence);
}

double cost_weight(const Finding& f, double run_span_s) {
  if (!f.cost) return 0;
  const double span = std::max(0.0, f.end_s - f.start_s);
  return run_span_s > 0 ? f.cost->share * std::min(1.0, span / run_span_s) : f.cost->share;
}

void rank_findings(std::vector<Finding>& findings, double run_span_s) {
  auto group = [](const Finding& f) {
    if (f.severity == Severity::critical) return 0;
    if (f.severity == Severity::info) return 3;
    return f.cost ? 1 : 2;
  };
  std::stable_sort(findings.begin(), findings.end(), [&](const Finding& a, const Finding& b) {
    const int ga = group(a), gb = group(b);
    if (ga != gb) return ga < gb;
    const double wa = cost_weight(a, run_span_s), wb = cost_weight(b, run_span_s);
    if (wa != wb) return wa > wb;
    return finding_less(a, b);
  });
}

}  // namespace trainmon::diagnose
