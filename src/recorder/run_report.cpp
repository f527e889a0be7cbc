// SPDX-License-Identifier: Apache-2.0
#include "trainmon/recorder/run_report.h"

#include <time.h>

#include "trainmon/core/i18n.h"
#include "trainmon/core/i18n_plural.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/core/units.h"
#include "trainmon/recorder/recording.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <functional>
#include <optional>

#include "trainmon/recorder/duration.h"
#include "trainmon/recorder/run_stats.h"
#include "trainmon/runner/exit_status.h"
#include "trainmon/store/chunk_codec.h"

namespace trainmon::recorder {
namespace {

std::string iso_time(std::int64_t unix_ns) {
  std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string join_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && a.find_first_of(" \t\"'\\$") == std::string::npos;
    out += plain ? a : "'" + a + "'";
  }
  return terminal_text(out);
}

/// How long a run lasted, and up to what: its end; for a run still recording, now; for a lost run
/// (recorder killed, no end written), its newest stored sample.
struct RunDuration {
  std::int64_t ms = 0;
  std::string_view until = "end";  // "end", "now", "last_sample"
};

RunDuration run_duration(const store::RunInfo& r) {
  if (r.end_unix_ns) return {(*r.end_unix_ns - r.start_unix_ns) / 1'000'000, "end"};
  if (auto s = summary_from_json(r.summary_json); s.duration_ms > 0) return {s.duration_ms, "end"};
  if (store::effective_status(r) == "running") {
    // On the recorder's host and boot, the monotonic clock: a wall-clock step while the run records
    // does not change its duration. Elsewhere (another host, an older store), the wall clock.
    if (r.start_monotonic_ns && !r.boot_id.empty() && r.boot_id == current_boot_id()) {
      timespec ts{};
      ::clock_gettime(CLOCK_MONOTONIC, &ts);
      const std::int64_t mono = static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
      return {std::max<std::int64_t>(0, (mono - *r.start_monotonic_ns) / 1'000'000), "now"};
    }
    const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    return {std::max<std::int64_t>(0, (now_ns - r.start_unix_ns) / 1'000'000), "now"};
  }
  const std::int64_t last_ms = r.last_sample_unix_ms.value_or(r.start_unix_ns / 1'000'000);
  return {std::max<std::int64_t>(0, last_ms - r.start_unix_ns / 1'000'000), "last_sample"};
}

/// The DURATION column: "+" after a duration that is not final (up to now, or to the last sample).
std::string table_duration(const store::RunInfo& r) {
  const RunDuration d = run_duration(r);
  return format_duration_ms(d.ms) + (d.until == "end" ? "" : "+");
}

/// A stored integer back in the column's unit (text, to keep integers exact).
std::string value_text(std::int64_t v, double scale) {
  if (v == store::kNull) return "";
  if (scale == 1) return std::to_string(v);
  return fmt::format("{}", static_cast<double>(v) / scale);
}

std::vector<std::string> column_names(store::SeriesKind kind, bool aggregated) {
  std::vector<std::string> names;
  auto f = store::fields_of(kind);
  if (!aggregated) {
    for (const auto& d : f) names.emplace_back(d.name);
    return names;
  }
  for (const char* suffix : {"", "_min", "_max"}) {
    for (const auto& d : f) names.push_back(std::string(d.name) + suffix);
  }
  return names;
}

double column_scale(store::SeriesKind kind, std::size_t col) {
  auto f = store::fields_of(kind);
  return f.empty() ? 1 : f[col % f.size()].scale;
}

}  // namespace

nlohmann::json run_to_json(const store::RunInfo& r) {
  nlohmann::json j;
  j["id"] = r.id;
  j["name"] = r.name;
  j["kind"] = r.kind;
  j["command"] = r.command;
  j["cwd"] = r.cwd;
  j["user"] = r.user;
  j["host"] = r.host;
  j["start_unix_s"] = static_cast<double>(r.start_unix_ns) / 1e9;
  j["start"] = iso_time(r.start_unix_ns);
  j["end_unix_s"] =
      r.end_unix_ns ? nlohmann::json(static_cast<double>(*r.end_unix_ns) / 1e9) : nlohmann::json();
  const RunDuration d = run_duration(r);
  j["duration_s"] = static_cast<double>(d.ms) / 1000.0;
  j["duration_until"] = std::string(d.until);
  j["status"] = store::effective_status(r);
  j["exit_code"] = r.exit_code ? nlohmann::json(*r.exit_code) : nlohmann::json();
  j["exit_signal"] = r.exit_signal ? nlohmann::json(*r.exit_signal) : nlohmann::json();
  j["exit_signal_name"] =
      r.exit_signal ? nlohmann::json(runner::signal_name(*r.exit_signal)) : nlohmann::json();
  j["interval_ms"] = r.interval_ms;
  j["labels"] = nlohmann::json::object();
  for (const auto& [k, v] : r.labels) j["labels"][k] = v;
  // Only for a run given some (older stores and runs with the defaults have none).
  if (!r.thresholds.empty()) {
    j["thresholds"] = nlohmann::json::object();
    for (const auto& [k, v] : r.thresholds) j["thresholds"][k] = v;
  }
  j["gpus"] = nlohmann::json::array();
  for (const auto& g : r.gpus) {
    j["gpus"].push_back({{"index", g.index},
                         {"uuid", g.uuid},
                         {"name", g.name},
                         {"pci_bus_id", g.pci_bus_id},
                         {"memory_total_bytes",
                          g.memory_total_bytes ? nlohmann::json(*g.memory_total_bytes) : nlohmann::json()},
                         {"used_by_job", g.used_by_job}});
  }
  j["finding_count"] = r.finding_count;
  // What the recording could not keep (store locked or full too long, sampling stalled).
  j["gaps"] = nlohmann::json::array();
  for (const auto& g : r.gaps) {
    j["gaps"].push_back({{"t0_unix_s", static_cast<double>(g.t0_unix_ns) / 1e9},
                         {"t1_unix_s", static_cast<double>(g.t1_unix_ns) / 1e9},
                         {"ticks", g.ticks},
                         {"cause", g.cause},
                         {"detail", g.detail}});
  }
  auto summary = nlohmann::json::parse(r.summary_json, nullptr, false);
  j["summary"] = summary.is_object() ? summary : nlohmann::json();
  // The job's cgroup limits as one line (reports): only when some limit is set.
  if (const auto limits = runner::describe_cgroup_limits(summary_from_json(r.summary_json).cgroup);
      !limits.empty())
    j["cgroup_limits"] = limits;
  return j;
}

namespace {

/// One column of the runs table: its cells (header first) and how it is laid out.
struct TableColumn {
  std::vector<std::string> cells;  ///< [0] is the header
  bool right = false;              ///< right-aligned (numbers)
  std::size_t width = 0;           ///< display width now
};

std::string pad_cell(const std::string& text, std::size_t width, bool right) {
  const std::size_t w = display_width(text);
  const std::string fill(w < width ? width - w : 0, ' ');
  return right ? fill + text : text + fill;
}

/// A run's status as people read it (`runs`, `show`): the store's word (store::effective_status) in
/// the reader's language; a status this trainmon does not know (a newer one's) as stored.
std::string status_text(const std::string& status) {
  static constexpr std::array<std::pair<std::string_view, const char*>, 7> kStatus = {{
      {"running", N_("running")},
      {"exited", N_("exited")},
      {"signaled", N_("signaled")},
      {"oom_killed", N_("oom_killed")},
      {"lost", N_("lost")},
      {"stopped", N_("stopped")},
      {"failed_to_start", N_("failed_to_start")},
  }};
  for (const auto& [name, msgid] : kStatus)
    if (name == status) return std::string(i18n::tr(msgid));
  return status;
}

/// START: the local time as "YYYY-MM-DD HH:MM:SS", or compact as `ls -l` does: "MM-DD HH:MM" in the
/// current year, "YYYY-MM-DD" otherwise.
std::string start_text(std::int64_t unix_ns, bool compact) {
  if (!compact) return iso_time(unix_ns);
  std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000), now = std::time(nullptr);
  std::tm tm{}, now_tm{};
  ::localtime_r(&t, &tm);
  ::localtime_r(&now, &now_tm);
  char buf[32];
  std::strftime(buf, sizeof buf, tm.tm_year == now_tm.tm_year ? "%m-%d %H:%M" : "%Y-%m-%d", &tm);
  return buf;
}

}  // namespace

std::string format_runs_table(const std::vector<store::RunInfo>& runs, std::size_t columns) {
  enum Col {
    kId,
    kName,
    kStatus,
    kStart,
    kDuration,
    kGpus,
    kFindings,
    kSamples,
    kStep,
    kData,
    kComm,
    kCommand,
    kCols
  };
  std::vector<TableColumn> c(kCols);
  // The headers in the reader's language; cells are padded in terminal columns (CJK characters are
  // two: display_width), so the table aligns in either language.
  const char* headers[kCols] = {N_("ID"),       N_("NAME"), N_("STATUS"),   N_("START"),
                                N_("DURATION"), N_("GPUS"), N_("FINDINGS"), N_("SAMPLES/S"),
                                N_("STEP"),     N_("DATA"), N_("COMM"),     N_("COMMAND")};
  for (int i = 0; i < kCols; ++i) c[i].cells.emplace_back(i18n::tr(headers[i]));
  for (int i : {kId, kDuration, kGpus, kFindings, kSamples, kStep, kData, kComm}) c[i].right = true;
  bool any_train = false, any_comm = false;
  for (const auto& r : runs) {
    const std::string stored = store::effective_status(r);
    const bool running = stored == "running";
    std::string status = status_text(stored);
    // killed by a signal: its name (what a person recognises), else the exit status
    if (r.exit_signal && !running)
      status += fmt::format("({})", runner::signal_name(*r.exit_signal));
    else if (r.exit_code && !running)
      status += fmt::format("({})", *r.exit_code);
    const auto summary = summary_from_json(r.summary_json);
    c[kId].cells.push_back(std::to_string(r.id));
    c[kName].cells.push_back(terminal_text(r.name));
    c[kStatus].cells.push_back(std::move(status));
    c[kStart].cells.push_back(iso_time(r.start_unix_ns));
    c[kDuration].cells.push_back(table_duration(r));
    c[kGpus].cells.push_back(std::to_string(r.gpus.size()));
    // A running run: the findings open now (its live ones that closed are stored too).
    c[kFindings].cells.push_back(std::to_string(running ? r.open_finding_count : r.finding_count));
    // Training figures over the whole run; a run without training data shows nothing (not zeros).
    const auto& t = summary.train;
    any_train = any_train || t.has_value();
    c[kSamples].cells.push_back(t && t->samples_per_s ? diagnose::format_samples_per_s(*t->samples_per_s)
                                                      : "");
    c[kStep].cells.push_back(t && t->step_median_s ? diagnose::format_step_s(*t->step_median_s) : "");
    c[kData].cells.push_back(t && t->data_share ? diagnose::format_share_pct(*t->data_share) : "");
    // Collective wait (protocol v3 senders): a column only when some run measured it.
    any_comm = any_comm || (t && t->comm_share);
    c[kComm].cells.push_back(t && t->comm_share ? diagnose::format_share_pct(*t->comm_share) : "");
    c[kCommand].cells.push_back(r.kind == "record" ? std::string(i18n::tr("(record)"))
                                                   : join_command(r.command));
  }
  std::vector<bool> shown(kCols, true);
  if (!any_train) shown[kSamples] = shown[kStep] = shown[kData] = false;
  if (!any_comm) shown[kComm] = false;
  std::size_t name_max = 16;
  auto measure = [&] {
    for (int i = 0; i < kCols; ++i) {
      c[i].width = 0;
      for (const auto& cell : c[i].cells) c[i].width = std::max(c[i].width, display_width(cell));
    }
    c[kName].width = std::min(c[kName].width, name_max);
    c[kStatus].width = std::max<std::size_t>(c[kStatus].width, 10);
  };
  // The gap before a column: two after ID and before COMMAND, one elsewhere.
  auto gap = [](int i) { return i == kName || i == kCommand ? 2u : 1u; };
  auto fixed_width = [&] {
    std::size_t w = 0;
    for (int i = 0; i < kCommand; ++i)
      if (shown[i]) w += (w ? gap(i) : 0) + c[i].width;
    return w;
  };
  measure();
  // A terminal narrower than the table: the command is cut first; then, until the other columns fit,
  // GPUS goes, START turns compact, NAME shrinks to 8 columns, START goes, DURATION goes; what still
  // does not fit is cut.
  if (columns > 0) {
    const std::array<std::function<void()>, 5> degrade = {
        [&] { shown[kGpus] = false; },
        [&] {
          for (std::size_t row = 0; row < runs.size(); ++row)
            c[kStart].cells[row + 1] = start_text(runs[row].start_unix_ns, true);
          measure();
        },
        [&] {
          name_max = 8;
          measure();
        },
        [&] { shown[kStart] = false; },
        [&] { shown[kDuration] = false; },
    };
    for (const auto& step : degrade) {
      if (fixed_width() <= columns) break;
      step();
    }
  }
  // What is left for COMMAND: its whole header at least, else the column goes (a cut header reads as
  // another column's, "COMM" of "COMMAND"); a command cut to it ends with a mark.
  std::size_t command_cols = std::string::npos;
  if (columns > 0) {
    const std::size_t fixed = fixed_width() + gap(kCommand);
    command_cols = columns > fixed ? columns - fixed : 0;
    if (command_cols < display_width(c[kCommand].cells[0])) shown[kCommand] = false;
  }
  auto line = [&](std::size_t row) {
    std::string text;
    for (int i = 0; i < kCols; ++i) {
      if (!shown[i]) continue;
      if (!text.empty()) text += std::string(gap(i), ' ');
      std::string cell = c[i].cells[row];
      if (i == kName) cell = truncate_display(cell, c[i].width);
      if (i == kCommand && display_width(cell) > command_cols)
        cell = truncate_display(cell, command_cols - 1) + "…";
      text += i == kCommand ? cell : pad_cell(cell, c[i].width, c[i].right);
    }
    if (columns > 0 && display_width(text) > columns) text = truncate_display(text, columns);
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text + '\n';
  };
  std::string out;
  for (std::size_t row = 0; row <= runs.size(); ++row) out += line(row);
  return out;
}

namespace {

// The rows' labels (thresholds: left out, its English is wider than the others and overflows by one).
constexpr std::array<const char*, 14> kRowLabels = {
    N_("command:"),  N_("cwd:"),    N_("user:"),    N_("start:"),   N_("duration:"),
    N_("status:"),   N_("label:"),  N_("job:"),     N_("gap:"),     N_("cgroup:"),
    N_("training:"), N_("events:"), N_("summary:"), N_("findings:")};

// A row label of `show` in the reader's language, indented and padded so the values line up: to
// the widest label plus one space, at least 10 terminal columns (the English layout; CJK characters
// count two: text::columns); a wider label (thresholds) gets one space.
std::string row_label(std::string_view shown) {
  std::size_t width = 10;
  for (const char* l : kRowLabels) width = std::max(width, text::columns(i18n::tr(l)) + 1);
  const std::size_t w = text::columns(shown);
  return "  " + std::string(shown) + std::string(w < width ? width - w : 1, ' ');
}

std::string row_label_tr(std::string_view msgid) {
  return row_label(i18n::tr(msgid));
}

}  // namespace

std::string format_run_details(const store::RunInfo& r) {
  using i18n::tr;
  using i18n::trf;
  std::string out = trf("run {} \"{}\" ({})\n", r.id, terminal_text(r.name), r.kind);
  if (!r.command.empty()) out += row_label_tr(N_("command:")) + join_command(r.command) + "\n";
  out += row_label_tr(N_("cwd:")) + terminal_text(r.cwd) + "\n";
  out += row_label_tr(N_("user:")) + terminal_text(r.user) + "@" + terminal_text(r.host) + "\n";
  out += row_label_tr(N_("start:")) + iso_time(r.start_unix_ns) + "\n";
  const RunDuration d = run_duration(r);
  out += row_label_tr(N_("duration:")) + format_duration_ms(d.ms) +
         std::string(d.until == "now"           ? tr(" so far (still recording)")
                     : d.until == "last_sample" ? tr(" up to the last stored sample (the recorder is gone)")
                                                : std::string_view()) +
         "\n";
  std::string status = status_text(store::effective_status(r));
  if (r.exit_signal) {
    status += trf(" ({}, signal {}, exit status {})", runner::signal_name(*r.exit_signal), *r.exit_signal,
                  r.exit_code.value_or(0));
  } else if (r.exit_code) {
    status += trf(" (exit status {})", *r.exit_code);
  }
  out += row_label_tr(N_("status:")) + status + "\n";
  for (const auto& [k, v] : r.labels)
    out += row_label_tr(N_("label:")) + terminal_text(k) + "=" + terminal_text(v) + "\n";
  auto s = summary_from_json(r.summary_json);
  for (const auto& g : r.gpus) {
    std::string stats;
    for (const auto& gs : s.gpus) {
      if (gs.index != g.index) continue;
      stats = trf(", utilisation mean {} peak {}, peak memory {}",
                  gs.mean_util_pct ? fmt::format("{:.1f}%", *gs.mean_util_pct) : "N/A",
                  gs.peak_util_pct ? fmt::format("{:.1f}%", *gs.peak_util_pct) : "N/A",
                  gs.peak_memory_used_bytes
                      ? fmt::format("{:.0f} MiB", static_cast<double>(*gs.peak_memory_used_bytes) / 1048576.0)
                      : "N/A");
    }
    out += row_label(fmt::format("GPU{}:", g.index)) +
           fmt::format("{} {}{}{}\n", text::terminal(g.name), text::terminal(g.uuid),
                       g.used_by_job ? tr(" (used by the job)") : std::string_view(), stats);
  }
  if (s.peak_job_rss_bytes) {
    const auto procs = s.peak_job_processes.value_or(0);
    out += row_label_tr(N_("job:")) +
           i18n::trfn(procs, "peak RSS {:.2f} GiB, peak CPU {:.1f}%, up to {} process\n",
                      "peak RSS {:.2f} GiB, peak CPU {:.1f}%, up to {} processes\n",
                      static_cast<double>(*s.peak_job_rss_bytes) / (1024.0 * 1024 * 1024),
                      s.peak_job_cpu_pct.value_or(0), procs);
  }
  for (const auto& g : r.gaps) {
    // The ticks from t0 to t1, one interval each.
    const double span_s =
        static_cast<double>(g.t1_unix_ns - g.t0_unix_ns) / 1e9 + static_cast<double>(r.interval_ms) / 1e3;
    out += row_label_tr(N_("gap:")) +
           (g.ticks == 1 ? trf("{} tick not recorded from {} for {:.1f} s ({}: {})\n", g.ticks,
                               iso_time(g.t0_unix_ns), span_s, g.cause, terminal_text(g.detail))
                         : trf("{} ticks not recorded from {} for {:.1f} s ({}: {})\n", g.ticks,
                               iso_time(g.t0_unix_ns), span_s, g.cause, terminal_text(g.detail)));
  }
  if (const auto limits = runner::describe_cgroup_limits(s.cgroup); !limits.empty())
    out += row_label_tr(N_("cgroup:")) + terminal_text(limits) +
           std::string(s.oom_at_cgroup_limit ? tr(" (the OOM kill was at this memory limit)")
                                             : std::string_view()) +
           "\n";
  if (s.train) out += diagnose::format_train_summary(*s.train, "  ", row_label_tr(N_("training:")).substr(2));
  if (s.train_events) {
    if (auto line = format_train_events(*s.train_events); !line.empty())
      out += row_label_tr(N_("events:")) + line + "\n";
  }
  if (r.summary_json.empty())
    out += row_label_tr(N_("summary:")) + std::string(tr("none (the recorder has not finished this run)")) +
           "\n";
  if (!r.thresholds.empty()) {
    std::string list;
    for (const auto& [k, v] : r.thresholds) list += fmt::format("{}{}={}", list.empty() ? "" : " ", k, v);
    out += row_label_tr(N_("thresholds:")) +
           trf("{} (given to the run; `diagnose` uses them)\n", text::terminal(list));
  }
  out += row_label_tr(N_("findings:")) + fmt::format("{}\n", r.finding_count);
  return out;
}

Expected<void> export_csv(store::Store& st, std::int64_t run_id, const std::string& what, std::ostream& out) {
  if (what == "events") {
    auto ev = st.gpu_events(run_id);
    if (!ev) return std::unexpected(ev.error());
    out << "time_unix_s,source,gpu,event_type,xid,kind,json\n";
    for (const auto& e : *ev) {
      out << fmt::format("{:.3f},nvml,{},{},{},,\n", static_cast<double>(e.time_unix_ns) / 1e9, e.gpu_index,
                         e.event_type, e.xid);
    }
    auto te = st.train_events(run_id);
    if (!te) return std::unexpected(te.error());
    for (const auto& e : *te) {
      out << fmt::format("{:.3f},train,,,,{},{}\n", static_cast<double>(e.time_unix_ns) / 1e9,
                         text::csv(e.kind), text::csv(e.json));
    }
    return {};
  }
  auto kind = store::parse_series_kind(what);
  if (!kind) {
    return std::unexpected(Error{
        ErrorDomain::usage, 0, "BAD_SERIES",
        fmt::format("unknown series '{}' (gpu, gpu_util_hr, host, process, gpu_process, events)", what)});
  }
  auto series = st.list_series(run_id);
  if (!series) return std::unexpected(series.error());
  // Downsampled rows (aggregated = 1) hold the means; `export --format jsonl` has their min/max too.
  out << "time_unix_s,gpu,pid,comm,aggregated";
  for (const auto& n : column_names(*kind, false)) out << ',' << n;
  out << '\n';
  const std::size_t ncols = store::fields_of(*kind).size();
  for (const auto& s : *series) {
    if (s.kind != *kind) continue;
    std::string key = fmt::format("{},{},{}", s.gpu_index ? std::to_string(*s.gpu_index) : "",
                                  s.pid ? std::to_string(*s.pid) : "", text::csv(s.comm));
    auto r = st.read_series(s.id, [&](const store::Chunk& c, bool agg) {
      for (std::size_t row = 0; row < c.rows(); ++row) {
        out << fmt::format("{:.3f},{},{}", static_cast<double>(c.t_ms[row]) / 1e3, key, agg ? 1 : 0);
        // A chunk written before a column was appended has fewer columns (an aggregated one 3x its own
        // width: means, minima, maxima); the newer columns are empty there.
        const std::size_t width = agg ? c.columns / 3 : c.columns;
        for (std::size_t col = 0; col < ncols; ++col) {
          out << ',';
          if (col < width) out << value_text(c.at(row, col), column_scale(*kind, col));
        }
        out << '\n';
      }
    });
    if (!r) return r;
  }
  return {};
}

Expected<void> export_jsonl(store::Store& st, std::int64_t run_id, std::ostream& out,
                            const std::string& what) {
  const bool all = what.empty();
  const bool events = all || what == "events";
  std::optional<store::SeriesKind> only;
  if (!all && !events) {
    only = store::parse_series_kind(what);
    if (!only) {
      return std::unexpected(Error{
          ErrorDomain::usage, 0, "BAD_SERIES",
          fmt::format("unknown series '{}' (gpu, gpu_util_hr, host, process, gpu_process, events)", what)});
    }
  }
  auto series = st.list_series(run_id);
  if (!series) return std::unexpected(series.error());
  for (const auto& s : *series) {
    if (!all && (!only || s.kind != *only)) continue;
    auto names = column_names(s.kind, true);
    const std::size_t ncols = store::fields_of(s.kind).size();
    auto r = st.read_series(s.id, [&](const store::Chunk& c, bool agg) {
      for (std::size_t row = 0; row < c.rows(); ++row) {
        nlohmann::json j;
        j["t"] = static_cast<double>(c.t_ms[row]) / 1e3;
        j["series"] = store::series_kind_name(s.kind);
        if (s.gpu_index) j["gpu"] = *s.gpu_index;
        if (s.kind == store::SeriesKind::train_rank)
          j["rank_key"] = s.rank_key;  // its global rank, or -1 - pid
        if (s.pid) {
          j["pid"] = *s.pid;
          j["comm"] = s.comm;
          j["in_job"] = s.in_job;
        }
        if (agg) j["aggregated"] = true;
        // Aggregated chunks hold means, minima, maxima of their own width, which is smaller than
        // ncols for chunks written before a column was appended.
        const std::size_t own = agg ? c.columns / 3 : c.columns;
        const std::size_t width = std::min(ncols, own);
        for (std::size_t part = 0; part < (agg ? 3u : 1u); ++part) {
          for (std::size_t col = 0; col < width; ++col) {
            const std::int64_t v = c.at(row, part * own + col);
            const double scale = column_scale(s.kind, col);
            const std::string& name = names[part * ncols + col];
            if (v == store::kNull) {
              j[name] = nullptr;
            } else if (scale == 1) {
              j[name] = v;
            } else {
              j[name] = static_cast<double>(v) / scale;
            }
          }
        }
        out << text::json_dump(j) << '\n';
      }
    });
    if (!r) return r;
  }
  if (!events) return {};
  auto ev = st.gpu_events(run_id);
  if (!ev) return std::unexpected(ev.error());
  for (const auto& e : *ev) {
    out << text::json_dump(nlohmann::json{{"t", static_cast<double>(e.time_unix_ns) / 1e9},
                                          {"event", "nvml"},
                                          {"gpu", e.gpu_index},
                                          {"event_type", e.event_type},
                                          {"xid", e.xid}})
        << '\n';
  }
  auto te = st.train_events(run_id);
  if (!te) return std::unexpected(te.error());
  for (const auto& e : *te) {
    auto payload = nlohmann::json::parse(e.json, nullptr, false);
    out << text::json_dump(
               nlohmann::json{{"t", static_cast<double>(e.time_unix_ns) / 1e9},
                              {"event", "train"},
                              {"kind", e.kind},
                              {"data", payload.is_discarded() ? nlohmann::json(e.json) : payload}})
        << '\n';
  }
  return {};
}

}  // namespace trainmon::recorder
