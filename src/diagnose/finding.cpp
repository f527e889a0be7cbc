// SPDX-License-Identifier: Apache-2.0
#include "trainmon/diagnose/finding.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <tuple>

#include <fmt/format.h>

#include "trainmon/core/text_escape.h"

namespace trainmon::diagnose {
namespace {

// Stable codes: D1..D11 are MISSION.md §4's table; D12.. are ours. Append only.
constexpr std::array<FindingKind, 22> kKinds{{
    {"D1", "fragmentation-oom-risk", "OOM risk: allocator fragmentation or memory spike"},
    {"D2", "ddp-imbalance", "Multi-GPU imbalance"},
    {"D3", "host-memory-leak", "Host memory leak in the training job"},
    {"D4", "dataloader-starved", "GPU starved by data loading"},
    {"D5", "gpu-memory-growth", "GPU memory grows every epoch"},
    {"D6", "power-bound", "Power or memory-bandwidth bound"},
    {"D7", "wrong-device", "Wrong device or a GPU held but unused"},
    {"D8", "ddp-not-running", "Multi-GPU job runs on one GPU only"},
    {"D9", "ghost-gpu-process", "Ghost or idle process holding GPU memory"},
    {"D10", "ecc-errors", "Uncorrectable ECC errors"},
    {"D11", "low-utilization", "GPU utilisation headroom"},
    {"D12", "clock-throttle", "Clocks throttled"},
    {"D13", "xid-error", "Xid error reported by the driver"},
    {"D14", "gpu-lost", "GPU stopped responding"},
    {"D15", "memory-retirement", "GPU memory pages retired or rows remapped"},
    {"D16", "pcie-link-degraded", "PCIe link below its maximum under load"},
    {"D17", "host-memory-pressure", "Host memory pressure or swapping"},
    {"D18", "io-bound-loading", "Data loading bound by disk I/O"},
    {"D19", "cpu-bound-loading", "Data loading bound by CPU"},
    {"D20", "oom-killed", "Job killed by the OOM killer"},
    {"D21", "gpu-memory-near-full", "GPU memory near full"},
    {"D22", "batch-size-advice", "Largest safe batch size"},
}};

int code_number(std::string_view code) {
  int n = 0;
  if (code.size() > 1) std::from_chars(code.data() + 1, code.data() + code.size(), n);
  return n;
}

}  // namespace

std::string_view severity_name(Severity s) noexcept {
  switch (s) {
    case Severity::info: return "info";
    case Severity::warning: return "warning";
    case Severity::critical: return "critical";
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

std::string to_text(const Finding& f) {
  std::string who;
  for (auto g : f.gpus) who += fmt::format("{}GPU{}", who.empty() ? "" : ",", g);
  for (auto p : f.pids) who += fmt::format("{}pid {}", who.empty() ? "" : ",", p);
  // Evidence quotes GPU and process names: the line goes to terminals (text::terminal).
  return text::terminal(fmt::format("[{}] {} {} {:.0f}-{:.0f}s{}{}: {} -> {}", severity_name(f.severity),
                                    f.code, f.slug, f.start_s, f.end_s, who.empty() ? "" : " ", who,
                                    f.evidence, f.advice));
}

void to_json(nlohmann::json& j, const Finding& f) {
  j = nlohmann::json{{"code", f.code},         {"slug", f.slug},
                     {"title", f.title},       {"severity", std::string(severity_name(f.severity))},
                     {"start_s", f.start_s},   {"end_s", f.end_s},
                     {"gpus", f.gpus},         {"pids", f.pids},
                     {"evidence", f.evidence}, {"numbers", f.numbers},
                     {"advice", f.advice},     {"thresholds", f.thresholds}};
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
}

bool finding_less(const Finding& a, const Finding& b) {
  return std::forward_as_tuple(a.start_s, code_number(a.code), a.gpus, a.pids, a.end_s, a.evidence) <
         std::forward_as_tuple(b.start_s, code_number(b.code), b.gpus, b.pids, b.end_s, b.evidence);
}

}  // namespace trainmon::diagnose
