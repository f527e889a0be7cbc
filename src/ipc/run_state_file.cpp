// SPDX-License-Identifier: Apache-2.0
#include "trainmon/ipc/run_state_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "trainmon/core/private_files.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/host/parse_process.h"
#include "trainmon/ipc/snapshot_file.h"

namespace trainmon::ipc {
namespace {

using nlohmann::json;

Error bad(std::string message) {
  return Error{ErrorDomain::usage, 0, "BAD_RUN_STATE", std::move(message)};
}

json number(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}
json index(int v) {
  return v >= 0 ? json(v) : json(nullptr);
}
/// Run clock -> Unix seconds (null when unknown).
json unix_of(double start_unix_s, double t) {
  return std::isfinite(t) ? json(start_unix_s + t) : json(nullptr);
}

std::string parent_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos || slash == 0 ? std::string("/") : path.substr(0, slash);
}

/// The newest row of `rows` for which `has` holds, or nullptr.
template <class F>
const diagnose::TrainWindow* newest(const std::vector<diagnose::TrainWindow>& rows, F has) {
  for (auto it = rows.rbegin(); it != rows.rend(); ++it)
    if (has(*it)) return &*it;
  return nullptr;
}

bool finite(double v) {
  return std::isfinite(v);
}

// ---- reading helpers: a missing or null key is "not known"; a wrong type is an error ------------

struct Reader {
  const json& j;
  std::string where;
  std::string error;

  const json* get(const char* key) const {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return nullptr;
    return &*it;
  }
  void fail(const char* key, const char* want) {
    if (error.empty()) error = fmt::format("{}{} is not {}", where, key, want);
  }
  double num(const char* key) {
    const json* v = get(key);
    if (!v) return std::numeric_limits<double>::quiet_NaN();
    if (!v->is_number()) {
      fail(key, "a number");
      return std::numeric_limits<double>::quiet_NaN();
    }
    const double d = v->get<double>();
    return std::isfinite(d) ? d : std::numeric_limits<double>::quiet_NaN();
  }
  int small(const char* key) {
    const double d = num(key);
    return finite(d) && d >= 0 && d <= 1e7 && d == std::floor(d) ? static_cast<int>(d) : -1;
  }
  std::string str(const char* key) {
    const json* v = get(key);
    if (!v) return {};
    if (!v->is_string()) {
      fail(key, "a string");
      return {};
    }
    return v->get<std::string>();
  }
  const json* obj(const char* key) {
    const json* v = get(key);
    if (v && !v->is_object()) {
      fail(key, "an object");
      return nullptr;
    }
    return v;
  }
  const json* arr(const char* key) {
    const json* v = get(key);
    if (v && !v->is_array()) {
      fail(key, "an array");
      return nullptr;
    }
    return v;
  }
};

}  // namespace

std::string run_state_dir() {
  const char* x = std::getenv("XDG_RUNTIME_DIR");
  if (x && *x == '/' && ::access(x, W_OK | X_OK) == 0) return fmt::format("{}/trainmon/runs", x);
  return fmt::format("/tmp/trainmon-{}/runs", ::geteuid());
}

Expected<void> ensure_private_dir(const std::string& dir) {
  if (auto r = files::ensure_private_dir(parent_of(dir)); !r) return r;
  return files::ensure_private_dir(dir);
}

std::uint64_t own_pid_namespace() {
  struct stat st {};
  return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0;
}

std::optional<std::uint64_t> process_start_ticks(std::uint32_t pid, const std::string& proc_root) {
  if (pid == 0) return std::nullopt;
  const std::string path = fmt::format("{}/{}/stat", proc_root, pid);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  auto st = parse_pid_stat(std::string_view(buf, static_cast<std::size_t>(n)));
  if (!st) return std::nullopt;
  return st->start_time_ticks;
}

std::string run_state_json(const RunStateHeader& h, const diagnose::TrainSeries& train, double now_s,
                           std::span<const diagnose::Finding> findings, std::span<const RankSums> sums) {
  json j;
  j["v"] = kRunStateVersion;
  j["run_id"] = h.run_id;
  j["name"] = h.name;
  j["db"] = h.db;
  j["pid"] = h.pid;
  j["pid_start_ticks"] = h.pid_start_ticks;
  j["pid_ns"] = h.pid_ns;
  j["host"] = h.host;
  j["start_unix_s"] = h.start_unix_s;
  j["time_unix_s"] = h.start_unix_s + now_s;
  j["interval_ms"] = h.interval_ms;
  json labels = json::object();
  for (const auto& [k, v] : h.labels) labels[k] = v;
  j["labels"] = std::move(labels);

  if (train.empty()) {
    j["train"] = nullptr;
  } else {
    const auto recent = diagnose::train_stats(train, now_s - kRunStateRecentS, now_s);
    json t;
    t["window_s"] = kRunStateRecentS;
    t["samples_per_s"] = number(recent.samples_per_s);
    t["steps_per_s"] = number(recent.steps_per_s);
    t["step_median_s"] = number(recent.step_median_s);
    t["data_share"] = number(recent.data_share);
    t["comm_share"] = number(recent.comm_share);
    double job_steps = std::numeric_limits<double>::quiet_NaN(), job_samples = job_steps;
    json ranks = json::array();
    for (std::size_t i = 0; i < train.ranks.size(); ++i) {
      const auto& r = train.ranks[i];
      const auto& id = r.id;
      json o;
      o["key"] = id.key;
      o["rank"] = index(id.rank);
      o["local_rank"] = index(id.local_rank);
      o["world_size"] = index(id.world_size);
      o["node_rank"] = index(id.node_rank);
      o["host"] = id.host;
      o["pid"] = id.pid;
      o["gpu"] = index(id.gpu);
      o["cuda_device"] = index(id.cuda_device);
      o["gpu_uuid"] = id.gpu_uuid;
      o["framework"] = id.framework;
      // Totals: the sender's cumulative figures (exact across dropped windows), else our sums.
      const RankSums* own = nullptr;
      for (const auto& s : sums)
        if (s.key == id.key) own = &s;
      auto total = [&](auto field, double fallback) {
        const auto* w = newest(r.rows, [&](const diagnose::TrainWindow& x) { return finite(x.*field); });
        return w ? w->*field : fallback;
      };
      const double nan = std::numeric_limits<double>::quiet_NaN();
      const double steps = total(&diagnose::TrainWindow::total_steps, own ? own->steps : nan);
      const double samples =
          total(&diagnose::TrainWindow::total_samples, own && own->samples_known ? own->samples : nan);
      const double step_s = total(&diagnose::TrainWindow::total_step_s, own ? own->step_s : nan);
      const double data_s =
          total(&diagnose::TrainWindow::total_data_s, own && own->data_known ? own->data_s : nan);
      const double comm_s =
          total(&diagnose::TrainWindow::total_comm_s, own && own->comm_known ? own->comm_s : nan);
      o["total"] = {{"steps", number(steps)},
                    {"samples", number(samples)},
                    {"step_s", number(step_s)},
                    {"data_s", number(data_s)},
                    {"comm_s", number(comm_s)}};
      if (finite(steps)) job_steps = finite(job_steps) ? std::max(job_steps, steps) : steps;
      if (finite(samples)) job_samples = finite(job_samples) ? job_samples + samples : samples;
      const auto* last = newest(r.rows, [](const diagnose::TrainWindow& x) { return finite(x.last_step_t); });
      o["last_step_unix_s"] = unix_of(h.start_unix_s, last ? last->last_step_t : nan);
      const auto& st = recent.ranks[i];
      o["recent"] = {{"steps", st.steps},
                     {"samples_per_s", number(st.samples_per_s)},
                     {"steps_per_s", number(st.steps_per_s)},
                     {"step_p50_s", number(st.step_median_s)},
                     {"step_p90_s", number(st.step_p90_s)},
                     {"step_p99_s", number(st.step_p99_s)},
                     {"data_share", number(st.data_share)},
                     {"comm_share", number(st.comm_share)},
                     {"compute_mean_s", number(st.compute_mean_s)}};
      const auto* ph = newest(
          r.rows, [](const diagnose::TrainWindow& x) { return x.phase != diagnose::TrainPhase::unknown; });
      o["phase"] = ph ? json(std::string(diagnose::train_phase_name(ph->phase))) : json(nullptr);
      o["phase_since_unix_s"] = unix_of(h.start_unix_s, ph ? ph->phase_t : nan);
      if (ph && ph->phase == diagnose::TrainPhase::collective && !ph->coll.op.empty()) {
        json c = {{"op", ph->coll.op},
                  {"seq", ph->coll.seq >= 0 ? json(ph->coll.seq) : json(nullptr)},
                  {"pg", ph->coll.group},
                  {"bytes", number(ph->coll.bytes)}};
        o["coll"] = std::move(c);
      }
      ranks.push_back(std::move(o));
    }
    t["steps"] = number(job_steps);
    t["samples"] = number(job_samples);
    t["ranks"] = std::move(ranks);
    j["train"] = std::move(t);
  }
  j["findings"] = json::array();
  for (const auto& f : findings) j["findings"].push_back(f);
  return text::json_dump(j);  // names and hosts from the training process: invalid UTF-8, C1, U+2028
}

// ---- RunStateFile ---------------------------------------------------------------------------------

Expected<RunStateFile> RunStateFile::create(RunStateHeader header, std::string dir) {
  if (dir.empty()) dir = run_state_dir();
  if (auto r = ensure_private_dir(dir); !r) return std::unexpected(r.error());
  RunStateFile f;
  f.path_ = fmt::format("{}/run-{}-{}.json", dir, header.run_id, header.pid);
  if (header.pid_ns == 0) header.pid_ns = own_pid_namespace();
  f.header_ = std::move(header);
  return f;
}

RunStateFile::RunStateFile(RunStateFile&& o) noexcept
    : header_(std::move(o.header_)),
      path_(std::move(o.path_)),
      sums_(std::move(o.sums_)),
      removed_(o.removed_) {
  o.removed_ = true;
}

RunStateFile& RunStateFile::operator=(RunStateFile&& o) noexcept {
  if (this != &o) {
    remove();
    header_ = std::move(o.header_);
    path_ = std::move(o.path_);
    sums_ = std::move(o.sums_);
    removed_ = o.removed_;
    o.removed_ = true;
  }
  return *this;
}

RunStateFile::~RunStateFile() {
  remove();
}

void RunStateFile::remove() noexcept {
  if (removed_ || path_.empty()) return;
  removed_ = true;
  ::unlink(path_.c_str());
}

Expected<void> RunStateFile::write(const diagnose::TrainSeries& train, double now_s,
                                   std::span<const diagnose::Finding> findings) {
  if (removed_) return {};
  // Sums of the rows not yet added, for senders that give no cumulative totals.
  for (const auto& r : train.ranks) {
    auto it = std::find_if(sums_.begin(), sums_.end(), [&](const RankSums& s) { return s.key == r.id.key; });
    if (it == sums_.end()) {
      sums_.push_back(RankSums{r.id.key});
      it = sums_.end() - 1;
    }
    for (; it->rows < r.rows.size(); ++it->rows) {
      const auto& w = r.rows[it->rows];
      if (w.steps == 0) continue;
      it->steps += w.steps;
      if (finite(w.samples)) {
        it->samples += w.samples;
        it->samples_known = true;
      }
      if (finite(w.step.sum)) it->step_s += w.step.sum;
      if (finite(w.data.sum)) {
        it->data_s += w.data.sum;
        it->data_known = true;
      }
      if (finite(w.comm.sum)) {
        it->comm_s += w.comm.sum;
        it->comm_known = true;
      }
    }
  }
  return write_file_atomic(path_, run_state_json(header_, train, now_s, findings, sums_));
}

// ---- reading --------------------------------------------------------------------------------------

Expected<LiveRunState> parse_run_state(std::string_view text) {
  if (text.size() > kRunStateMaxBytes) return std::unexpected(bad("larger than 4 MiB"));
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return std::unexpected(bad("not JSON"));
  if (!j.is_object()) return std::unexpected(bad("not a JSON object"));
  Reader rd{j, "", ""};
  LiveRunState s;
  const double v = rd.num("v");
  if (v != kRunStateVersion)
    return std::unexpected(
        bad(fmt::format("version {} is not 1", rd.get("v") ? rd.get("v")->dump() : "missing")));
  s.version = kRunStateVersion;
  const double id = rd.num("run_id");
  s.run_id = finite(id) ? static_cast<std::int64_t>(id) : 0;
  s.name = rd.str("name");
  s.db = rd.str("db");
  s.host = rd.str("host");
  const double pid = rd.num("pid");
  s.pid = finite(pid) && pid > 0 && pid <= 4194304 ? static_cast<std::uint32_t>(pid) : 0;
  const double ticks = rd.num("pid_start_ticks");
  s.pid_start_ticks = finite(ticks) && ticks >= 0 ? static_cast<std::uint64_t>(ticks) : 0;
  const double ns = rd.num("pid_ns");
  s.pid_ns = finite(ns) && ns > 0 ? static_cast<std::uint64_t>(ns) : 0;
  s.start_unix_s = rd.num("start_unix_s");
  s.time_unix_s = rd.num("time_unix_s");
  const double iv = rd.num("interval_ms");
  s.interval_ms = finite(iv) ? static_cast<std::int64_t>(iv) : 0;
  if (const json* l = rd.obj("labels")) {
    for (const auto& [k, val] : l->items())
      if (val.is_string()) s.labels.emplace_back(k, val.get<std::string>());
  }
  if (const json* t = rd.obj("train")) {
    Reader tr{*t, "train.", ""};
    s.train = true;
    if (const double w = tr.num("window_s"); finite(w)) s.window_s = w;
    s.steps = tr.num("steps");
    s.samples = tr.num("samples");
    s.samples_per_s = tr.num("samples_per_s");
    s.steps_per_s = tr.num("steps_per_s");
    s.step_median_s = tr.num("step_median_s");
    s.data_share = tr.num("data_share");
    s.comm_share = tr.num("comm_share");
    if (const json* ranks = tr.arr("ranks")) {
      for (const auto& x : *ranks) {
        if (!x.is_object()) {
          tr.fail("ranks[]", "an object");
          break;
        }
        Reader rr{x, "train.ranks[].", ""};
        LiveRankState r;
        const double key = rr.num("key");
        r.key = finite(key) ? static_cast<std::int64_t>(key) : 0;
        r.rank = rr.small("rank");
        r.local_rank = rr.small("local_rank");
        r.world_size = rr.small("world_size");
        r.node_rank = rr.small("node_rank");
        r.host = rr.str("host");
        const double rpid = rr.num("pid");
        r.pid = finite(rpid) && rpid > 0 && rpid <= 4194304 ? static_cast<std::uint32_t>(rpid) : 0;
        r.gpu = rr.small("gpu");
        r.cuda_device = rr.small("cuda_device");
        if (const json* tot = rr.obj("total")) {
          Reader tt{*tot, "train.ranks[].total.", ""};
          r.total_steps = tt.num("steps");
          r.total_samples = tt.num("samples");
          r.total_step_s = tt.num("step_s");
          r.total_data_s = tt.num("data_s");
          r.total_comm_s = tt.num("comm_s");
          if (!tt.error.empty()) return std::unexpected(bad(tt.error));
        }
        r.last_step_unix_s = rr.num("last_step_unix_s");
        if (const json* rec = rr.obj("recent")) {
          Reader rc{*rec, "train.ranks[].recent.", ""};
          const double n = rc.num("steps");
          r.recent_steps = finite(n) ? n : 0;
          r.samples_per_s = rc.num("samples_per_s");
          r.steps_per_s = rc.num("steps_per_s");
          r.step_p50_s = rc.num("step_p50_s");
          r.step_p90_s = rc.num("step_p90_s");
          r.step_p99_s = rc.num("step_p99_s");
          r.data_share = rc.num("data_share");
          r.comm_share = rc.num("comm_share");
          r.compute_mean_s = rc.num("compute_mean_s");
          if (!rc.error.empty()) return std::unexpected(bad(rc.error));
        }
        r.phase = rr.str("phase");
        if (!r.phase.empty() && !diagnose::parse_train_phase(r.phase)) r.phase = "unknown";
        r.phase_since_unix_s = rr.num("phase_since_unix_s");
        if (!rr.error.empty()) return std::unexpected(bad(rr.error));
        s.ranks.push_back(std::move(r));
      }
    }
    if (!tr.error.empty()) return std::unexpected(bad(tr.error));
  }
  if (const json* f = rd.arr("findings")) {
    for (const auto& x : *f) {
      try {
        s.findings.push_back(x.get<diagnose::Finding>());
      } catch (const json::exception& e) {
        return std::unexpected(bad(std::string("findings[]: ") + e.what()));
      }
    }
  }
  if (!rd.error.empty()) return std::unexpected(bad(rd.error));
  // Served as is (/api/v1/train): written again by our own escaper, never the bytes as read.
  s.document = text::json_dump(j);
  return s;
}

namespace {

/// The run's `trainmon run` is gone: its pid does not exist, or names a process started at another
/// time; for a writer in another PID namespace (whose pids mean nothing here), its document is old.
bool writer_gone(const LiveRunState& s, std::uint64_t our_ns, double now_unix_s) {
  if (s.pid_ns != 0 && our_ns != 0 && s.pid_ns != our_ns)
    return !(now_unix_s - s.time_unix_s <= kRunStateForeignStaleS);
  if (s.pid == 0) return true;
  if (::kill(static_cast<pid_t>(s.pid), 0) != 0 && errno == ESRCH) return true;
  if (s.pid_start_ticks == 0) return false;
  const auto ticks = process_start_ticks(s.pid);
  return ticks && *ticks != s.pid_start_ticks;
}

}  // namespace

std::vector<LiveRunState> read_live_runs(const std::string& dir_in) {
  const std::string dir = dir_in.empty() ? run_state_dir() : dir_in;
  std::vector<LiveRunState> out;
  auto opened = files::open_private_dir(dir);  // checked on the descriptor: no swap after the check
  if (!opened) return out;
  const int dir_fd = *opened;
  DIR* d = ::fdopendir(::dup(dir_fd));
  if (!d) {
    ::close(dir_fd);
    return out;
  }
  const std::uint64_t our_ns = own_pid_namespace();
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const double now_unix_s = static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
  std::size_t n_files = 0, n_bytes = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (!name.starts_with("run-") || !name.ends_with(".json")) continue;
    if (n_files >= kRunStateMaxFiles || n_bytes >= kRunStateMaxTotalBytes) break;  // bounded per call
    // Only our own regular files, never through a link nor blocking on a FIFO (files::).
    auto text = files::read_regular_file_at(dir_fd, e->d_name, kRunStateMaxBytes);
    if (!text) continue;
    ++n_files;
    n_bytes += text->size();
    auto s = parse_run_state(*text);
    if (!s) continue;
    if (writer_gone(*s, our_ns, now_unix_s)) {
      ::unlinkat(dir_fd, e->d_name, 0);  // stale: its trainmon run was killed before removing it
      continue;
    }
    s->path = dir + "/" + std::string(name);
    out.push_back(std::move(*s));
  }
  ::closedir(d);
  ::close(dir_fd);
  std::sort(out.begin(), out.end(), [](const LiveRunState& a, const LiveRunState& b) {
    return a.start_unix_s != b.start_unix_s ? a.start_unix_s < b.start_unix_s : a.path < b.path;
  });
  return out;
}

}  // namespace trainmon::ipc
