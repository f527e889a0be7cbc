// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include <fmt/format.h>

#include "report/writers.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/i18n_plural.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/core/units.h"
#include "trainmon/diagnose/train_summary.h"

namespace trainmon::report {
namespace {

using nlohmann::json;

/// Text from the run (names, labels, command lines, evidence quoting them) as inline Markdown: the
/// markup characters escaped, newlines folded, controls shown as '?' (text::markdown_inline). The
/// summary is read on terminals, CI logs and rendered pages alike.
std::string cell(std::string_view s) {
  return text::markdown_inline(s);
}

/// A command line or name shown as code, in a table cell (text::markdown_code_span).
std::string code(std::string_view s) {
  return text::markdown_code_span(s);
}

std::string str(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// A number with `unit`, or "—" for null.
std::string num(const json& j, const char* key, const char* unit = "", int digits = 1) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return "—";
  return fmt::format("{:.{}f}{}", it->get<double>(), digits, unit);
}

std::string mib(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return "—";
  const double v = it->get<double>();
  return v >= 1024 ? fmt::format("{:.1f} GiB", v / 1024) : fmt::format("{:.0f} MiB", v);
}

std::string duration(double s) {
  if (!std::isfinite(s) || s < 0) return "—";
  if (s < 120) return fmt::format("{:.1f} s", s);
  const auto total = static_cast<long long>(s);
  if (total < 3600) return fmt::format("{}m{:02}s", total / 60, total % 60);
  return fmt::format("{}h{:02}m{:02}s", total / 3600, total % 3600 / 60, total % 60);
}

std::string command_line(const json& run) {
  std::string out;
  if (run.contains("command") && run["command"].is_array()) {
    for (const auto& a : run["command"]) {
      if (!out.empty()) out += ' ';
      out += a.is_string() ? a.get<std::string>() : a.dump();
    }
  }
  return out.empty() ? fmt::format("({})", str(run, "kind")) : out;
}

std::string exit_text(const json& run) {
  std::string s = str(run, "status");
  if (run.contains("exit_signal") && run["exit_signal"].is_number()) {
    const int sig = run["exit_signal"].get<int>();
    const std::string name = str(run, "exit_signal_name");
    s += name.empty() || name == fmt::format("signal {}", sig) ? fmt::format(", signal {}", sig)
                                                               : fmt::format(", {} (signal {})", name, sig);
  } else if (run.contains("exit_code") && run["exit_code"].is_number()) {
    s += fmt::format(", exit status {}", run["exit_code"].get<int>());
  }
  return s;
}

}  // namespace

std::string write_markdown(const json& m) {
  const json& run = m["run"];
  std::string out = i18n::trf("# trainmon report: run {} {}\n\n", run.value("id", 0),
                              text::markdown_code_span(str(run, "name"), false));
  out += "| | |\n|---|---|\n";
  out += i18n::trf("| Command | {} |\n", code(command_line(run)));
  out += i18n::trf("| User@host | {}@{} |\n", cell(str(run, "user")), cell(str(run, "host")));
  std::string gpus;
  if (run.contains("gpus")) {
    for (const auto& g : run["gpus"]) {
      if (!gpus.empty()) gpus += "; ";
      gpus += fmt::format("{}: {}", g.value("index", 0), str(g, "name"));
      if (g.contains("memory_total_bytes") && g["memory_total_bytes"].is_number())
        gpus += fmt::format(" {:.0f} GiB", g["memory_total_bytes"].get<double>() / (1024.0 * 1024 * 1024));
      if (g.value("used_by_job", false)) gpus += " (job)";
    }
  }
  out += i18n::trf("| GPUs | {} |\n", gpus.empty() ? std::string(i18n::tr("none seen")) : cell(gpus));
  out += i18n::trf("| Start | {} |\n", cell(str(run, "start")));
  const std::string until = str(run, "duration_until");  // "end", "now" (recording), "last_sample" (lost)
  out += fmt::format(
      "| Duration | {}{} |\n",
      duration(run.contains("duration_s") && run["duration_s"].is_number() ? run["duration_s"].get<double>()
                                                                           : NAN),
      until == "now"           ? i18n::tr(" so far (still recording)")
      : until == "last_sample" ? i18n::tr(" up to the last stored sample (the recorder is gone)")
                               : "");
  out += i18n::trf("| Status | {} |\n", cell(exit_text(run)));
  std::string labels;
  if (run.contains("labels") && run["labels"].is_object()) {
    for (const auto& [k, v] : run["labels"].items()) {
      if (!labels.empty()) labels += ", ";
      labels += k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  if (!labels.empty()) out += i18n::trf("| Labels | {} |\n", cell(labels));
  if (const auto limits = str(run, "cgroup_limits"); !limits.empty())
    out += i18n::trf("| Cgroup limits | {} |\n", cell(limits));
  const auto ticks = m.value("ticks", std::uint64_t{0});
  const auto train_events = m.value("train_events", std::uint64_t{0});
  out += i18n::trf("| Samples | {}, {} |\n", i18n::trfn(ticks, "{} tick", "{} ticks", ticks),
                   i18n::trfn(train_events, "{} training event", "{} training events", train_events));

  const json& findings = m["findings"];
  std::set<std::string> codes;
  for (const auto& f : findings) codes.insert(str(f, "code"));
  out += i18n::trf("\n## Findings ({})\n\n", findings.size());
  if (findings.empty()) {
    out += i18n::tr("Nothing found.\n");
  } else {
    std::string list;
    for (const auto& c : codes) list += (list.empty() ? "" : ", ") + cell(c);
    out += i18n::trf("Codes: {}\n\n", list);
    // The title, evidence and advice in the reader's language (add_findings), else the English.
    const json* shown = m.contains("findings_shown") ? &m["findings_shown"] : nullptr;
    for (std::size_t i = 0; i < findings.size(); ++i) {
      const json& f = findings[i];
      const json& say = shown && i < shown->size() ? (*shown)[i] : f;
      std::string where;
      if (f.contains("gpus") && !f["gpus"].empty()) {
        for (const auto& g : f["gpus"]) where += (where.empty() ? " GPU " : ",") + g.dump();
      }
      std::string cost;
      if (f.contains("cost") && f["cost"].is_object()) {
        const double share = f["cost"].value("share", 0.0), speedup = f["cost"].value("speedup", 0.0);
        cost = speedup > 0
                   ? i18n::trf(" **Cost: {:.0f} % of throughput; up to {:.2g}× if fixed{}.**", 100 * share,
                               speedup,
                               f["cost"].value("basis", "") == "estimated" ? i18n::tr(" (estimated)") : "")
                   : std::string(i18n::tr(" **Cost: no step completes.**"));
      }
      // the finding that explains this one (listed before it)
      const std::string because = str(f, "cause").empty() || !codes.contains(str(f, "cause"))
                                      ? std::string()
                                      : i18n::trf("caused by {}: ", cell(str(f, "cause")));
      out += fmt::format("- **[{}] {} {}** ({}) {:.1f}–{:.1f} s{}: {}{}{}\n  → {}\n",
                         cell(std::string(i18n::tr(str(f, "severity")))), cell(str(f, "code")),
                         cell(str(f, "slug")), cell(str(say, "title")), f.value("start_s", 0.0),
                         f.value("end_s", 0.0), where, because, cell(str(say, "evidence")), cost,
                         cell(str(say, "advice")));
      if (f.contains("stacks") && f["stacks"].is_array()) {
        for (const auto& st : f["stacks"]) {
          const int rank = st.value("rank", -1);
          out += fmt::format(
              "  - {} pid {}: {}{}\n",
              rank >= 0 ? i18n::trf("rank {}", rank) : std::string(i18n::tr("process")), st.value("pid", 0),
              text::markdown_code_span(str(st, "where"), false),
              str(st, "caller").empty()
                  ? ""
                  : i18n::trf(" (called from {})", text::markdown_code_span(str(st, "caller"), false)));
        }
      }
    }
  }

  // The training loop (the run summary's figures), per rank when there are several.
  if (const auto it = m.find("train"); it != m.end()) {
    if (const auto t = diagnose::train_summary_from_json(*it)) {
      auto text = [](const std::optional<double>& v, auto f) { return v ? f(*v) : std::string("—"); };
      out += i18n::tr(
          "\n## Training\n\n| Rank | Host | GPU | Steps | Samples/s | Median step | p90 step | Data wait |\n"
          "|---|---|---|---|---|---|---|---|\n");
      auto row = [&](const std::string& who, const diagnose::TrainRankSummary& r) {
        out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", who,
                           r.host.empty() ? "—" : cell(r.host), r.gpu >= 0 ? std::to_string(r.gpu) : "—",
                           r.steps, text(r.samples_per_s, diagnose::format_samples_per_s),
                           text(r.step_median_s, diagnose::format_step_s),
                           text(r.step_p90_s, diagnose::format_step_s),
                           text(r.data_share, diagnose::format_share_pct));
      };
      diagnose::TrainRankSummary job;
      job.steps = t->steps;
      job.samples_per_s = t->samples_per_s;
      job.step_median_s = t->step_median_s;
      job.data_share = t->data_share;
      row(std::string(i18n::tr("job")), job);
      for (const auto& r : t->ranks)
        row(r.rank >= 0 ? std::to_string(r.rank) : fmt::format("pid {}", -1 - r.key), r);
      // Where each rank's step time went (protocol v3 senders measure the collective wait): data,
      // collective, compute (the rest), as shares of its step time.
      bool split = false;
      for (const auto& r : t->ranks) split = split || r.comm_share.has_value();
      if (split) {
        out += i18n::tr(
            "\n### Where the time went\n\n| Rank | Data wait | Collective wait | Compute | Compute per step "
            "|\n"
            "|---|---|---|---|---|\n");
        for (const auto& r : t->ranks) {
          if (!r.comm_share) continue;
          const double data = r.data_share.value_or(0.0);
          const double compute = std::max(0.0, 1.0 - data - *r.comm_share);
          out += fmt::format("| {} | {} | {} | {} | {} |\n",
                             r.rank >= 0 ? std::to_string(r.rank) : fmt::format("pid {}", -1 - r.key),
                             text(r.data_share, diagnose::format_share_pct),
                             diagnose::format_share_pct(*r.comm_share), diagnose::format_share_pct(compute),
                             text(r.compute_mean_s, diagnose::format_step_s));
        }
      }
      // What each rank's steps cost in energy (its GPU's NVML energy counter over its steps): said only
      // where it is known; a GPU shared with another rank or process gets no per-step figure.
      bool energy = false;
      for (const auto& r : t->ranks) energy = energy || r.energy_j.has_value();
      if (energy) {
        out += i18n::tr(
            "\n### Energy\n\n| Rank | GPU | Energy | J/step | J/sample | Wh/epoch |\n"
            "|---|---|---|---|---|---|\n");
        auto row_e = [&](const std::string& who, const diagnose::TrainRankSummary& r) {
          if (!r.energy_j) return;
          const std::string shared(i18n::tr("shared"));
          auto per = [&](const std::optional<double>& v, auto f) {
            return r.energy_shared ? shared : text(v, f);
          };
          out +=
              fmt::format("| {} | {} | {} | {} | {} | {} |\n", who, r.gpu >= 0 ? std::to_string(r.gpu) : "—",
                          diagnose::format_wh(*r.energy_j), per(r.j_per_step, diagnose::format_joules),
                          per(r.j_per_sample, diagnose::format_joules),
                          per(r.wh_per_epoch, [](double wh) { return diagnose::format_wh(wh * 3600.0); }));
        };
        diagnose::TrainRankSummary job_e;
        job_e.energy_j = t->energy_j;
        job_e.j_per_step = t->j_per_step;
        job_e.j_per_sample = t->j_per_sample;
        job_e.wh_per_epoch = t->wh_per_epoch;
        if (t->ranks.size() > 1) row_e(std::string(i18n::tr("job")), job_e);
        for (const auto& r : t->ranks)
          row_e(r.rank >= 0 ? std::to_string(r.rank) : fmt::format("pid {}", -1 - r.key), r);
      }
    }
  }

  if (!m["gpu_stats"].empty()) {
    out += i18n::tr(
        "\n## GPUs\n\n| GPU | Name | Mean util | Peak util | Peak memory | Memory total | Mean power | "
        "Power limit | Peak temp |\n|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& g : m["gpu_stats"]) {
      out +=
          fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", g.value("index", 0),
                      cell(str(g, "name")), num(g, "mean_util_pct", " %"), num(g, "peak_util_pct", " %", 0),
                      mib(g, "peak_mem_used_mib"), mib(g, "mem_total_mib"), num(g, "mean_power_w", " W"),
                      num(g, "power_limit_w", " W", 0), num(g, "peak_temp_c", " °C", 0));
    }
  }

  const bool unknown = m.contains("processes_unknown") && !m["processes_unknown"].empty();
  if (!m["processes"].empty() || unknown) out += i18n::tr("\n## Processes\n\n");
  if (unknown) {
    // The driver's lists failed: the table below (if any) is not every process that held a GPU.
    for (const auto& u : m["processes_unknown"])
      out += i18n::trf("- GPU {}: processes unknown in {} of {} samples: {}\n", u.value("gpu", 0),
                       u.value("samples_unknown", 0), u.value("samples", 0), cell(str(u, "reason")));
    out += "\n";
  }
  if (!m["processes"].empty()) {
    out += i18n::tr(
        "| PID | Command | In job | Peak RSS | CPU time | Peak GPU memory | GPUs |\n"
        "|---|---|---|---|---|---|---|\n");
    for (const auto& p : m["processes"]) {
      std::string name = str(p, "cmdline").empty() ? str(p, "comm") : str(p, "cmdline");
      name = text::terminal(name);
      if (display_width(name) > 60) name = truncate_display(name, 57) + "...";
      const auto vis = str(p, "host_visibility");
      const std::string_view mark = vis == "exited"        ? i18n::tr(" (exited)")
                                    : vis == "not_visible" ? i18n::tr(" (not visible from here)")
                                                           : "";
      std::string g;
      for (const auto& x : p["gpus"])
        fmt::format_to(std::back_inserter(g), "{}{}", g.empty() ? "" : ",", x.dump());
      out += fmt::format("| {} | {}{} | {} | {} | {} | {} | {} |\n", p.value("pid", 0), code(name), mark,
                         p.value("in_job", false) ? i18n::tr("yes") : i18n::tr("no"), mib(p, "peak_rss_mib"),
                         num(p, "cpu_time_s", " s"), mib(p, "peak_gpu_mem_mib"), g.empty() ? "—" : g);
    }
  }

  out += i18n::tr("\n## Batch size\n\n");
  if (m["batch_advice"].empty()) {
    out +=
        i18n::tr("No advice: the training process sent no batch size with PyTorch memory figures (D22).\n");
  } else {
    for (const auto& a : m["batch_advice"])
      out += fmt::format("- {}\n  → {}\n", cell(str(a, "evidence")), cell(str(a, "advice")));
  }

  const json& epochs = m["epochs"];
  if (!epochs.empty()) {
    out += i18n::trf("\n## Epochs\n\n{} epoch ends:", epochs.size());
    for (const auto& e : epochs) out += fmt::format(" {}@{:.1f}s", e.value("epoch", 0), e.value("t", 0.0));
    out += "\n";
  }
  for (const auto& n : m["notes"])
    out += i18n::trf("\nNote: {}\n", cell(n.is_string() ? n.get<std::string>() : n.dump()));
  return out;
}

}  // namespace trainmon::report
