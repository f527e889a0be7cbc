// SPDX-License-Identifier: Apache-2.0
#include "trainmon/tui/process_table.h"

#include "trainmon/core/units.h"
#include "trainmon/export/attribution.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "trainmon/core/i18n.h"
#include "trainmon/tui/format.h"

namespace trainmon::tui {

std::string_view sort_key_title(SortKey key) noexcept {
  switch (key) {
    case SortKey::pid: return "PID";
    case SortKey::user: return "USER";
    case SortKey::gpu: return "GPU";
    case SortKey::gpu_memory: return "GPU-MEM";
    case SortKey::sm: return "SM%";
    case SortKey::cpu: return "CPU%";
    case SortKey::rss: return "RSS";
    case SortKey::elapsed: return "ELAPSED";
    case SortKey::command: return "COMMAND";
  }
  return "?";
}

namespace {

bool contains_icase(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return true;
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != hay.end();
}

// Three-way comparison of a and b on the sort key alone (pid for SortKey::pid).
int key_compare(const ProcessRow& a, const ProcessRow& b, SortKey key) {
  auto cmp = [](const auto& x, const auto& y) { return x < y ? -1 : y < x ? 1 : 0; };
  switch (key) {
    case SortKey::pid: return cmp(a.pid, b.pid);
    case SortKey::user: return cmp(a.user, b.user);
    case SortKey::gpu: return cmp(a.gpus, b.gpus);
    case SortKey::gpu_memory: return cmp(a.gpu_memory_bytes, b.gpu_memory_bytes);
    case SortKey::sm: return cmp(a.sm_pct, b.sm_pct);
    case SortKey::cpu: return cmp(a.cpu_pct, b.cpu_pct);
    case SortKey::rss: return cmp(a.rss_bytes, b.rss_bytes);
    case SortKey::elapsed: return cmp(a.elapsed_s, b.elapsed_s);
    case SortKey::command: return cmp(a.command, b.command);
  }
  return 0;
}

}  // namespace

std::string compact_gpu_list(std::span<const unsigned> gpus) {
  std::string out;
  for (std::size_t i = 0; i < gpus.size();) {
    std::size_t j = i;
    while (j + 1 < gpus.size() && gpus[j + 1] == gpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    if (j - i >= 2) {
      fmt::format_to(std::back_inserter(out), "{}-{}", gpus[i], gpus[j]);
    } else {
      for (std::size_t k = i; k <= j; ++k)
        fmt::format_to(std::back_inserter(out), "{}{}", k > i ? "," : "", gpus[k]);
    }
    i = j + 1;
  }
  return out;
}

std::vector<ProcessRow> build_process_rows(const Snapshot& snap, const UiState& ui, bool utf8) {
  // GPU figures per pid, from the driver's lists: a vector by ascending pid (this runs on every
  // frame; a map of sets allocated per GPU process per frame).
  struct GpuAgg {
    std::uint32_t pid = 0;
    std::vector<unsigned> gpus;  ///< ascending, unique
    double mem = -1, sm = -1;
    bool joined = false;  ///< the join matched it to the local process with this pid
    bool exited = false, zombie = false;
    bool listed = false;  ///< has a row from snap.processes
    std::string name;
  };
  std::vector<GpuAgg> gpu;
  auto find_gpu = [&](std::uint32_t pid) -> GpuAgg* {
    auto it = std::lower_bound(gpu.begin(), gpu.end(), pid,
                               [](const GpuAgg& a, std::uint32_t p) { return a.pid < p; });
    return it != gpu.end() && it->pid == pid ? &*it : nullptr;
  };
  for (const auto& gp : snap.gpu_processes) {
    auto it = std::lower_bound(gpu.begin(), gpu.end(), gp.pid,
                               [](const GpuAgg& a, std::uint32_t p) { return a.pid < p; });
    if (it == gpu.end() || it->pid != gp.pid) {
      it = gpu.insert(it, GpuAgg{});
      it->pid = gp.pid;
    }
    GpuAgg& a = *it;
    if (auto g = std::lower_bound(a.gpus.begin(), a.gpus.end(), gp.gpu_index);
        g == a.gpus.end() || *g != gp.gpu_index)
      a.gpus.insert(g, gp.gpu_index);
    if (gp.used_memory_bytes) a.mem = std::max(0.0, a.mem) + static_cast<double>(*gp.used_memory_bytes);
    if (gp.sm_util_pct) a.sm = std::max(0.0, a.sm) + static_cast<double>(*gp.sm_util_pct);
    if (joined_to_host(gp.host)) a.joined = true;
    if (gp.host == HostVisibility::exited) a.exited = true;
    if (gp.host == HostVisibility::zombie) a.zombie = true;
    if (a.name.empty() && gp.process_name) a.name = *gp.process_name;
  }
  const double now_boot = snap.host.uptime_s.value_or(0);

  std::vector<ProcessRow> rows;
  rows.reserve(ui.view == ProcessView::gpu ? gpu.size() : snap.processes.size() + gpu.size());
  auto fill_gpu = [&](ProcessRow& r, const GpuAgg& a) {
    r.on_gpu = true;
    r.gpus = compact_gpu_list(a.gpus);
    r.gpu_memory_bytes = a.mem;
    r.sm_pct = a.sm;
    r.ghost = a.zombie;
  };
  for (const auto& p : snap.processes) {
    // Only a GPU process the join matched is this local process; an unmatched one with the same
    // number (another PID namespace, or exited) gets its own row below.
    GpuAgg* a = find_gpu(p.pid);
    if (a != nullptr && !a->joined) a = nullptr;
    const bool on_gpu = a != nullptr;
    if (ui.view == ProcessView::gpu && !on_gpu) continue;
    ProcessRow r;
    r.pid = p.pid;
    r.ppid = p.ppid;
    r.start_time_ticks = p.start_time_ticks;
    r.user = p.user.empty() ? std::to_string(p.uid) : p.user;
    r.command = !p.cmdline.empty() ? p.cmdline : !p.comm.empty() ? "[" + p.comm + "]" : "";
    r.job = exp::shown_job(p.attribution, snap.host.own_container_id);
    if (p.cpu_pct) r.cpu_pct = *p.cpu_pct;
    if (p.rss_bytes) r.rss_bytes = static_cast<double>(*p.rss_bytes);
    if (now_boot > 0 && p.start_time_boot_s > 0) r.elapsed_s = now_boot - p.start_time_boot_s;
    if (on_gpu) fill_gpu(r, *a);
    if (p.state == 'Z' && r.on_gpu) r.ghost = true;
    if (a != nullptr) a->listed = true;
    rows.push_back(std::move(r));
  }
  // Driver-listed processes without a local process: not visible from this PID namespace, or gone.
  for (const auto& a : gpu) {
    if (a.listed) continue;
    ProcessRow r;
    r.pid = a.pid;
    r.user = "?";
    r.command = a.name.empty() ? "?" : a.name;
    fill_gpu(r, a);
    r.exited = a.exited;
    r.not_visible = !a.exited;
    rows.push_back(std::move(r));
  }

  // Filters.
  std::erase_if(rows, [&](const ProcessRow& r) {
    if (!ui.filter_user.empty() && r.user != ui.filter_user) return true;
    if (!ui.filter_text.empty()) {
      const std::string pid = std::to_string(r.pid);
      if (!contains_icase(r.command, ui.filter_text) && !contains_icase(r.user, ui.filter_text) &&
          !contains_icase(r.job, ui.filter_text) && pid != ui.filter_text)
        return true;
    }
    return false;
  });

  auto order = [&](const ProcessRow& a, const ProcessRow& b) {
    if (a.on_gpu != b.on_gpu) return a.on_gpu;  // GPU processes first, whatever the sort
    const int c = key_compare(a, b, ui.sort);
    if (c != 0) return ui.descending ? c > 0 : c < 0;
    return a.pid < b.pid;  // ties: ascending pid whatever the direction
  };
  std::sort(rows.begin(), rows.end(), order);
  if (!ui.tree) return rows;

  // Tree: children follow their parent; a row whose parent is not listed is a root.
  std::unordered_map<std::uint32_t, std::size_t> index;
  for (std::size_t i = 0; i < rows.size(); ++i) index[rows[i].pid] = i;
  std::unordered_map<std::uint32_t, std::vector<std::size_t>> children;
  std::vector<std::size_t> roots;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (r.ppid != 0 && r.ppid != r.pid && index.count(r.ppid))
      children[r.ppid].push_back(i);
    else
      roots.push_back(i);
  }
  std::vector<ProcessRow> out;
  out.reserve(rows.size());
  std::vector<char> done(rows.size(), 0);
  const char* branch = utf8 ? "├─ " : "|- ";
  const char* last = utf8 ? "└─ " : "`- ";
  const char* pipe = utf8 ? "│  " : "|  ";
  std::function<void(std::size_t, int, const std::string&, const std::string&)> visit =
      [&](std::size_t i, int depth, const std::string& prefix, const std::string& child_prefix) {
        if (done[i]) return;  // cycles in malformed data
        done[i] = 1;
        ProcessRow r = rows[i];
        r.depth = depth;
        r.tree_prefix = prefix;
        out.push_back(std::move(r));
        auto it = children.find(rows[i].pid);
        if (it == children.end()) return;
        const auto& kids = it->second;
        for (std::size_t k = 0; k < kids.size(); ++k) {
          const bool is_last = k + 1 == kids.size();
          visit(kids[k], depth + 1, child_prefix + (is_last ? last : branch),
                child_prefix + (is_last ? "   " : pipe));
        }
      };
  for (std::size_t i : roots) visit(i, 0, "", "");
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (!done[i]) visit(i, 0, "", "");  // members of a ppid cycle
  return out;
}

int selected_row(const std::vector<ProcessRow>& rows, const UiState& ui) noexcept {
  if (rows.empty()) return -1;
  int same_pid = -1;  // a row with the pid but of the other kind: next best
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].pid != ui.selected_pid) continue;
    if (!rows[i].start_time_ticks.has_value() == ui.selected_no_local) return static_cast<int>(i);
    if (same_pid < 0) same_pid = static_cast<int>(i);
  }
  return same_pid >= 0 ? same_pid : 0;
}

namespace {

struct Column {
  SortKey key;
  int width;
  bool right;        // right-aligned
  int drop;          // drop order when narrow (1 first); 0 never
  bool job = false;  // the JOB column (not a sort key: `key` is unused)
};

/// The widest JOB cell a table shows (terminal columns); longer jobs are cut with a mark.
constexpr int kJobColumnMax = 24;

std::string cell_text(const ProcessRow& r, SortKey key) {
  switch (key) {
    case SortKey::pid: return std::to_string(r.pid);
    case SortKey::user: return r.user;
    case SortKey::gpu: return r.gpus.empty() ? "-" : r.gpus;
    case SortKey::gpu_memory:
      return r.gpu_memory_bytes >= 0 ? human_bytes(static_cast<std::uint64_t>(r.gpu_memory_bytes))
                                     : (r.on_gpu ? "N/A" : "-");
    case SortKey::sm: return r.sm_pct >= 0 ? fmt::format("{:.0f}", r.sm_pct) : (r.on_gpu ? "N/A" : "-");
    case SortKey::cpu: return r.cpu_pct >= 0 ? fmt::format("{:.1f}", r.cpu_pct) : "-";
    case SortKey::rss: return r.rss_bytes >= 0 ? human_bytes(static_cast<std::uint64_t>(r.rss_bytes)) : "-";
    case SortKey::elapsed: return r.elapsed_s >= 0 ? human_elapsed(r.elapsed_s) : "-";
    case SortKey::command: {
      std::string c = r.tree_prefix + r.command;
      if (r.not_visible) c = "[not visible] " + c;
      if (r.exited) c = "[exited] " + c;
      if (r.ghost) c = "[ghost] " + c;
      return c;
    }
  }
  return {};
}

std::string fit(std::string s, int width, bool right, bool utf8) {
  // Cut and padded by terminal columns (a CJK user name takes two a character). A cut cell ends
  // with a mark ("…", ASCII "~"): "0,2,…" is never read as the whole list "0,2".
  const auto w = static_cast<std::size_t>(std::max(0, width));
  if (display_width(s) > w) s = w > 1 ? truncate_display(s, w - 1) + (utf8 ? "…" : "~") : std::string(w, '~');
  const std::size_t used = display_width(s);
  if (used < w) {
    const std::string pad(w - used, ' ');
    s = right ? pad + s : s + pad;
  }
  return s;
}

}  // namespace

void draw_process_table(Canvas& canvas, int top, int height, const std::vector<ProcessRow>& rows, UiState& ui,
                        std::string_view empty_text) {
  if (height <= 0) return;
  std::vector<Column> cols = {
      {SortKey::pid, 7, true, 0},        {SortKey::user, 8, false, 3},   {SortKey::gpu, 3, false, 4},
      {SortKey::gpu_memory, 8, true, 0}, {SortKey::sm, 4, true, 1},      {SortKey::cpu, 6, true, 6},
      {SortKey::rss, 6, true, 5},        {SortKey::elapsed, 8, true, 2},
  };
  // JOB after USER, only when some row has a job: a machine without Slurm, pods or containers keeps
  // its table as it was.
  int job_width = 0;
  for (const auto& r : rows)
    if (!r.job.empty())
      job_width = std::max(job_width, static_cast<int>(display_width(terminal_text(r.job))));
  if (job_width > 0) {
    const int title_width = static_cast<int>(display_width(i18n::tr("JOB")));
    cols.insert(cols.begin() + 2,
                Column{SortKey::pid, std::clamp(job_width, title_width, kJobColumnMax), false, 2, true});
  }
  const int width = canvas.width();
  auto fixed_width = [&] {
    int w = 0;
    for (const auto& c : cols) w += c.width + 1;
    return w;
  };
  for (int drop = 1; drop <= 6 && width - fixed_width() < 12; ++drop)
    std::erase_if(cols, [&](const Column& c) { return c.drop == drop; });

  // Header.
  canvas.clear_rect(top, 0, 1, width, Style::header);
  int x = 0;
  const bool utf8 = canvas.utf8();
  auto title = [&](SortKey k) {
    std::string t(sort_key_title(k));
    if (k == ui.sort) t += ui.descending ? (utf8 ? "▼" : "v") : (utf8 ? "▲" : "^");
    return t;
  };
  for (const auto& c : cols) {
    canvas.put(top, x, fit(c.job ? std::string(i18n::tr("JOB")) : title(c.key), c.width, c.right, utf8),
               Style::header);
    x += c.width + 1;
  }
  std::string cmd_title = title(SortKey::command);
  if (ui.tree) cmd_title += " (tree)";
  canvas.put(top, x, cmd_title, Style::header);

  const int body = height - 1;
  if (body <= 0) return;
  if (rows.empty()) {
    canvas.put(top + 1, 1,
               !empty_text.empty()           ? std::string(empty_text)
               : ui.view == ProcessView::gpu ? std::string(i18n::tr("no GPU processes (a: all processes)"))
                                             : std::string(i18n::tr("no processes match")),
               Style::dim);
    return;
  }
  const int sel = selected_row(rows, ui);
  if (sel < ui.scroll) ui.scroll = sel;
  if (sel >= ui.scroll + body) ui.scroll = sel - body + 1;
  ui.scroll = std::clamp(ui.scroll, 0, std::max(0, static_cast<int>(rows.size()) - body));
  for (int i = 0; i < body; ++i) {
    const int idx = ui.scroll + i;
    if (idx >= static_cast<int>(rows.size())) break;
    const auto& r = rows[static_cast<std::size_t>(idx)];
    const int y = top + 1 + i;
    const Style base = r.not_visible || r.exited || r.ghost ? Style::dim : Style::normal;
    x = 0;
    for (const auto& c : cols) {
      Style s = base;
      if (c.key == SortKey::gpu_memory && r.on_gpu && base == Style::normal) s = Style::warn;
      const std::string text =
          c.job ? (r.job.empty() ? std::string("-") : terminal_text(r.job)) : cell_text(r, c.key);
      canvas.put(y, x, fit(text, c.width, c.right, utf8), s);
      x += c.width + 1;
    }
    canvas.put(y, x, cell_text(r, SortKey::command), r.ghost ? Style::bad : base);
    if (idx == sel) canvas.set_style(y, 0, width, Style::selected);
  }
}

}  // namespace trainmon::tui
