// SPDX-License-Identifier: Apache-2.0
// `trainmon usage [--since 7d] [--until T] [--by user|job|pod|gpu] [--json|--csv]`: the usage ledger
// (GPU-hours held, busy and held idle, memory GiB-hours, energy kWh) from what record / serve / run
// stored, worst offenders first. The arithmetic is store/usage_ledger.h; this file parses options
// and prints.
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/parse_errors.h"
#include "trainmon/cluster/job_query.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/core/units.h"
#include "trainmon/export/terminal.h"
#include "trainmon/recorder/duration.h"
#include "trainmon/store/db_path.h"
#include "trainmon/store/store.h"
#include "trainmon/store/usage_ledger.h"

namespace trainmon::cli {
namespace {

struct UsageOptions {
  std::string db;
  std::string since = "7d";
  std::string until;
  std::string by = "user";
  bool json = false;
  bool csv = false;
};

/// `--since` / `--until`: a duration before now ("7d", "12h", "90m"; the duration grammar,
/// recorder/duration.h, with a unit), "all" (since the beginning), or a time as `report --from`
/// takes it (RFC 3339, unix seconds, "now", "-2h"). Unix ms, or nullopt.
std::optional<std::int64_t> parse_when(const std::string& text, std::int64_t now_ms) {
  if (text == "all") return 0;
  const bool has_unit = !text.empty() && std::isalpha(static_cast<unsigned char>(text.back())) &&
                        text.front() != '-' && text != "now";
  if (has_unit) {
    if (auto d = recorder::parse_duration_ns(text)) return now_ms - *d / 1'000'000;
  }
  auto t = cluster::parse_time_arg(text, static_cast<double>(now_ms) / 1e3);
  if (!t) return std::nullopt;
  return static_cast<std::int64_t>(std::llround(*t * 1e3));
}

/// What `option` (--since, --until) takes, for its error: the duration grammar's words (core/duration.h)
/// and the times, in the chosen language, with the refused text.
std::string when_wanted(std::string_view option, const std::string& text) {
  return i18n::trf(
      "{} wants {} (that long before now), a time (2026-12-01T00:00:00Z, unix seconds, now, "
      "-2h) or all (got '{}')",
      option, recorder::duration_syntax(), text::terminal(text));
}

/// "2026-12-06 19:00" in local time; "" for 0.
std::string local_time(std::int64_t ms) {
  if (ms <= 0) return {};
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
  return buf;
}

/// RFC 3339 in UTC with milliseconds; "" for 0.
std::string utc_time(std::int64_t ms) {
  if (ms <= 0) return {};
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03}Z", buf, ms % 1000);
}

nlohmann::ordered_json row_json(const store::UsageRow& r, store::UsageGroup by) {
  nlohmann::ordered_json j;
  j["key"] = r.key;
  if (by == store::UsageGroup::gpu) j["gpu_uuid"] = r.gpu_uuid;
  j["gpu_hours_held"] = r.held_h;
  j["gpu_hours_busy"] = r.busy_h;
  j["gpu_hours_held_idle"] = r.idle_h;
  j["memory_gib_hours"] = r.memory_gib_h;
  j["energy_kwh"] = r.energy_kwh;
  j["processes"] = r.processes;
  j["first_unix_ms"] = r.first_ms;
  j["last_unix_ms"] = r.last_ms;
  return j;
}

std::string ledger_json(const store::UsageLedger& l, const store::UsageQuery& q) {
  nlohmann::ordered_json j;
  j["by"] = store::usage_group_name(q.by);
  j["since_unix_ms"] = q.since_ms;
  j["until_unix_ms"] = q.until_ms;
  j["since"] = utc_time(q.since_ms);
  j["until"] = utc_time(q.until_ms);
  nlohmann::ordered_json c;
  c["usage_from_unix_ms"] = l.covered_from_ms;
  c["usage_to_unix_ms"] = l.covered_to_ms;
  c["downsampled_from_unix_ms"] = l.downsampled_from_ms;
  c["downsampled_to_unix_ms"] = l.downsampled_to_ms;
  c["runs"] = l.runs;
  c["runs_without_usage_data"] = l.runs_without_usage_data;
  j["coverage"] = c;
  j["rows"] = nlohmann::ordered_json::array();
  for (const auto& r : l.rows) j["rows"].push_back(row_json(r, q.by));
  auto total = row_json(l.total, q.by);
  total.erase("key");
  total.erase("gpu_uuid");
  j["total"] = total;
  return text::json_dump(j, 2) + "\n";
}

std::string ledger_csv(const store::UsageLedger& l) {
  std::string out =
      "key,gpu_uuid,gpu_hours_held,gpu_hours_busy,gpu_hours_held_idle,memory_gib_hours,energy_kwh,processes,"
      "first_unix_ms,last_unix_ms\n";
  for (const auto& r : l.rows) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", text::csv(r.key), text::csv(r.gpu_uuid), r.held_h,
                       r.busy_h, r.idle_h, r.memory_gib_h, r.energy_kwh, r.processes, r.first_ms, r.last_ms);
  }
  return out;
}

/// `text` cut to `columns` display columns from the middle: its first third and its last two thirds
/// around `mark` ("slurm:4242424" at 8: "sl…42424"; a GPU and its UUID keep the UUID's tail), so that
/// keys that share a prefix (job ids, UUIDs) stay apart. Never splits a character; text that fits is
/// unchanged.
std::string cut_middle(std::string_view text, std::size_t columns, std::string_view mark) {
  if (display_width(text) <= columns) return std::string(text);
  const std::size_t mark_w = display_width(mark);
  if (columns <= mark_w) return truncate_display(text, columns);
  const std::size_t head_w = (columns - mark_w) / 3, tail_w = columns - mark_w - head_w;
  std::size_t at = 0;  // the tail: the last tail_w columns, from a character's first byte
  while (at < text.size() && display_width(text.substr(at)) > tail_w) {
    ++at;
    while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
  }
  return truncate_display(text, head_w) + std::string(mark) + std::string(text.substr(at));
}

/// The text table: the key column cut from the middle with a mark ("…", ASCII "~") to what the
/// terminal leaves.
std::string ledger_text(const store::UsageLedger& l, const store::UsageQuery& q, std::size_t columns,
                        bool utf8) {
  std::string out;
  const char* by_word = q.by == store::UsageGroup::user  ? N_("by user")
                        : q.by == store::UsageGroup::job ? N_("by job")
                        : q.by == store::UsageGroup::pod ? N_("by pod")
                                                         : N_("by GPU");
  out += i18n::trf("GPU usage {} to {}, {}\n", q.since_ms > 0 ? local_time(q.since_ms) : std::string("-"),
                   local_time(q.until_ms), i18n::tr(by_word));
  if (l.covered_from_ms > 0) {
    out += i18n::trf("the store's usage data covers {} to {}\n", local_time(l.covered_from_ms),
                     local_time(l.covered_to_ms));
  } else {
    out +=
        std::string(i18n::tr("the store has no usage data yet (recorded by record, serve and run)")) + "\n";
  }
  if (l.downsampled_from_ms > 0)
    out += i18n::trf("samples from {} to {} are downsampled by retention (the usage figures stay exact)\n",
                     local_time(l.downsampled_from_ms), local_time(l.downsampled_to_ms));
  if (l.runs_without_usage_data > 0)
    out += i18n::trf("{} runs in the range have GPU processes but no usage data (recorded before schema 5)\n",
                     l.runs_without_usage_data);
  const char* key_header = q.by == store::UsageGroup::user  ? N_("USER")
                           : q.by == store::UsageGroup::job ? N_("JOB")
                           : q.by == store::UsageGroup::pod ? N_("POD")
                                                            : N_("GPU");
  const std::string none = utf8 ? "\u2014" : "-";
  std::vector<std::array<std::string, 7>> cells;
  cells.push_back({std::string(i18n::tr(key_header)), std::string(i18n::tr("HELD h")),
                   std::string(i18n::tr("BUSY h")), std::string(i18n::tr("IDLE h")),
                   std::string(i18n::tr("GiB*h")), std::string(i18n::tr("kWh")),
                   std::string(i18n::tr("PROCS"))});
  auto nums = [](const store::UsageRow& r) {
    return std::array<std::string, 6>{
        fmt::format("{:.2f}", r.held_h),     fmt::format("{:.2f}", r.busy_h),
        fmt::format("{:.2f}", r.idle_h),     fmt::format("{:.1f}", r.memory_gib_h),
        fmt::format("{:.3f}", r.energy_kwh), std::to_string(r.processes)};
  };
  for (const auto& r : l.rows) {
    std::string key = r.key.empty() ? none : terminal_text(r.key, utf8);
    if (q.by == store::UsageGroup::gpu && !r.gpu_uuid.empty()) key += " " + terminal_text(r.gpu_uuid, utf8);
    const auto n = nums(r);
    cells.push_back({key, n[0], n[1], n[2], n[3], n[4], n[5]});
  }
  {
    const auto n = nums(l.total);
    cells.push_back({std::string(i18n::tr("TOTAL")), n[0], n[1], n[2], n[3], n[4], n[5]});
  }
  std::array<std::size_t, 7> w{};
  for (const auto& row : cells)
    for (std::size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], display_width(row[i]));
  std::size_t rest = 0;
  for (std::size_t i = 1; i < w.size(); ++i) rest += w[i] + 2;
  const std::size_t width = columns > 0 ? columns : 80;  // a pipe: the table still fits 80 columns
  const std::size_t key_max = width > rest + 8 ? width - rest : 8;
  if (w[0] > key_max) w[0] = key_max;
  const std::string mark = utf8 ? "\u2026" : "~";
  for (std::size_t r = 0; r < cells.size(); ++r) {
    std::string key = cells[r][0];
    key = cut_middle(key, w[0], mark);
    std::string line = key + std::string(w[0] - std::min(w[0], display_width(key)), ' ');
    for (std::size_t i = 1; i < w.size(); ++i) {
      const std::size_t cw = display_width(cells[r][i]);
      line += std::string(2 + (w[i] > cw ? w[i] - cw : 0), ' ') + cells[r][i];
    }
    out += line + "\n";
  }
  return out;
}

int usage_command(const UsageOptions& o) {
  auto say = [](const std::string& m) { std::fprintf(stderr, "trainmon usage: %s\n", m.c_str()); };
  if (o.json && o.csv) return say(tr("give --json or --csv, not both")), kExitUsage;
  store::UsageQuery q;
  auto by = store::parse_usage_group(o.by);
  if (!by)
    return say(i18n::trf("--by wants user, job, pod or gpu (got '{}')", text::terminal(o.by))), kExitUsage;
  q.by = *by;
  const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
  auto since = parse_when(o.since, now_ms);
  if (!since) return say(when_wanted("--since", o.since)), kExitUsage;
  auto until = o.until.empty() ? std::optional<std::int64_t>(now_ms) : parse_when(o.until, now_ms);
  if (!until) return say(when_wanted("--until", o.until)), kExitUsage;
  if (*until <= *since) return say(tr("--until must be after --since")), kExitUsage;
  // Buckets are counted by their start: --since rounds down to the bucket that holds it.
  q.since_ms = *since - ((*since % store::kUsageBucketMs) + store::kUsageBucketMs) % store::kUsageBucketMs;
  q.until_ms = *until;

  const std::string path = store::resolve_db_path(o.db);
  auto st = store::Store::open(path, store::OpenMode::read_only);
  store::UsageLedger ledger;
  if (st) {
    auto l = store::usage_ledger(*st, q);
    if (!l) return say(said(l.error())), kExitFailure;
    ledger = std::move(*l);
  } else if (st.error().name != store::kErrMissing) {
    return say(said(st.error())), kExitFailure;
  } else {
    say(said(st.error()));  // which store was read: a mistyped --db is not an empty ledger unsaid
  }
  // A missing store is an empty ledger (as `runs` lists no runs).
  q.since_ms = *since;
  if (o.json) {
    std::fputs(ledger_json(ledger, q).c_str(), stdout);
  } else if (o.csv) {
    std::fputs(ledger_csv(ledger).c_str(), stdout);
  } else {
    const auto term = exp::probe_terminal(STDOUT_FILENO);
    std::fputs(ledger_text(ledger, q, term.is_tty ? term.columns : 0, term.utf8).c_str(), stdout);
  }
  return kExitOk;
}

const Registrar kRegistrar{CommandSpec{
    "usage", N_("Who held and used the GPUs: the usage ledger from recorded data"),
    [](CLI::App& app, const GlobalOptions&) -> Runner {
      auto o = std::make_shared<UsageOptions>();
      app.add_option("--since", o->since,
                     tr("Start: a duration before now (7d, 12h), a time (2026-12-01T00:00:00Z, "
                        "unix seconds, -2h) or all"))
          ->capture_default_str();
      app.add_option("--until", o->until, tr("End, as --since takes it (default: now)"));
      app.add_option("--by", o->by, tr("Rows per user, job, pod or gpu"))->capture_default_str();
      app.add_flag("--json", o->json, tr("JSON object (docs/cli.md)"));
      app.add_flag("--csv", o->csv, tr("CSV with a header line (docs/cli.md)"));
      app.add_option("--db", o->db,
                     tr("Run store (default: $TRAINMON_DB, then $XDG_STATE_HOME/trainmon/trainmon.db)"));
      return [o] { return usage_command(*o); };
    },
    36}};

}  // namespace
}  // namespace trainmon::cli
