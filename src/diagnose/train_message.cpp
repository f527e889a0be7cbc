// SPDX-License-Identifier: Apache-2.0
#include "trainmon/diagnose/train_message.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

namespace trainmon::diagnose {

namespace {

using json = nlohmann::json;

constexpr std::array<std::string_view, kEventTypeCount> kTypeNames = {
    "hello",   "train_start", "epoch_start", "batch_end", "epoch_end",
    "val_end", "memory",      "train_end",   "heartbeat"};

constexpr std::array<std::string_view, kRejectReasonCount> kReasonNames = {
    "too_large", "not_json",  "too_deep",   "not_object",   "bad_version", "unknown_type",
    "bad_field", "wrong_run", "wrong_user", "rate_limited", "queue_full",  "too_many_clients"};

// 2^53: the largest integer a double (and so a JSON reader in Python or JS) holds exactly.
constexpr double kMaxExactInt = 9007199254740992.0;

Error reject(RejectReason reason, std::string message) {
  return Error{ErrorDomain::usage, static_cast<std::int32_t>(reason), std::string(reject_reason_name(reason)),
               std::move(message)};
}

// Nesting depth of a JSON text, counted outside strings, stopping early past `limit`. Runs before
// the parser so a hostile "[[[[..." never reaches it.
int nesting_depth(std::string_view s, int limit) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : s) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

// Reads optional fields of one JSON object into a TrainMessage, remembering the first bad one.
class FieldReader {
 public:
  explicit FieldReader(const json& obj) : obj_(obj) {}

  // An integer field in [lo, hi]. A float with an integral value (3.0) is accepted.
  void integer(const char* key, std::int64_t& out, std::int64_t lo, std::int64_t hi) {
    const json* v = find(key);
    if (!v) return;
    double d = 0;
    if (v->is_number_unsigned()) {
      auto u = v->get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(hi)) return fail(key, "out of range");
      out = static_cast<std::int64_t>(u);
      if (out < lo) return fail(key, "out of range");
      return;
    }
    if (v->is_number_integer()) {
      auto i = v->get<std::int64_t>();
      if (i < lo || i > hi) return fail(key, "out of range");
      out = i;
      return;
    }
    if (!v->is_number_float()) return fail(key, "not a number");
    d = v->get<double>();
    if (!std::isfinite(d)) return fail(key, "not finite");
    if (d != std::floor(d)) return fail(key, "not an integer");
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi)) return fail(key, "out of range");
    out = static_cast<std::int64_t>(d);
  }

  // A finite number in [lo, hi].
  void number(const char* key, double& out, double lo, double hi) {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_number()) return fail(key, "not a number");
    double d = v->get<double>();
    if (!std::isfinite(d)) return fail(key, "not finite");
    if (d < lo || d > hi) return fail(key, "out of range");
    out = d;
  }

  void number(const char* key, std::optional<double>& out, double lo, double hi) {
    if (!find(key)) return;
    double d = 0;
    const auto before = error_.size();
    number(key, d, lo, hi);
    if (error_.size() == before) out = d;
  }

  // A string of at most `max` bytes made of printable ASCII (names, ids).
  void text(const char* key, std::string& out, std::size_t max = kMaxStringBytes) {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_string()) return fail(key, "not a string");
    const auto& s = v->get_ref<const std::string&>();
    if (s.size() > max) return fail(key, max == kMaxStringBytes ? "longer than 128 bytes" : "too long");
    for (unsigned char c : s) {
      if (c < 0x20 || c > 0x7e) return fail(key, "not printable ASCII");
    }
    out = s;
  }

  const json* find(const char* key) const {
    auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  const std::string& error() const { return error_; }

 private:
  void fail(const char* key, const char* why) {
    if (error_.empty()) error_ = fmt::format("field '{}': {}", key, why);
  }

  const json& obj_;
  std::string error_;
};

// The figures of one quantity ({"sum","min","max","p50","p90","p99"}, seconds).
void read_figures(FieldReader& outer, const json& steps, const char* key, StepFigures& out,
                  std::string& error) {
  (void)outer;
  auto it = steps.find(key);
  if (it == steps.end() || it->is_null() || !error.empty()) return;
  if (!it->is_object()) {
    error = fmt::format("field 'steps.{}': not an object", key);
    return;
  }
  FieldReader f(*it);
  f.number("sum", out.sum, 0, 1e12);
  f.number("min", out.min, 0, 1e7);
  f.number("max", out.max, 0, 1e7);
  f.number("p50", out.p50, 0, 1e7);
  f.number("p90", out.p90, 0, 1e7);
  f.number("p99", out.p99, 0, 1e7);
  if (!f.error().empty()) error = fmt::format("steps.{}.{}", key, f.error());
}

// Waits are parts of a step: a window's collective wait (and data wait + collective wait) above its
// step time is clamped to it, sums and totals alike (a sender that timed overlapping or
// background collectives would otherwise show collective wait above 100 % and a
// collective counter above step_seconds on /metrics). Each figure lowered counts in `corrected`.
void clamp_to_step(StepsMessage& s) {
  auto fix = [&](double& part, double whole) {
    if (std::isfinite(part) && std::isfinite(whole) && part > whole) {
      part = std::max(0.0, whole);
      ++s.corrected;
    }
  };
  const double step = s.step_s.sum;
  fix(s.data_s.sum, step);
  fix(s.comm_s.sum, std::isfinite(s.data_s.sum) ? step - s.data_s.sum : step);
  for (double* v : {&s.comm_s.min, &s.comm_s.p50, &s.comm_s.p90, &s.comm_s.p99, &s.comm_s.max})
    fix(*v, s.step_s.max);
  fix(s.total_data_s, s.total_step_s);
  fix(s.total_comm_s, std::isfinite(s.total_data_s) ? s.total_step_s - s.total_data_s : s.total_step_s);
}

// The v2 `steps` object; a message with a bad one is refused whole. Returns the error, if any.
std::optional<std::string> read_steps(const json& st, TrainMessage& m) {
  if (!st.is_object()) return std::string("field 'steps': not an object");
  FieldReader r(st);
  StepsMessage s;
  if (!r.find("n")) return std::string("field 'steps.n': missing");
  r.integer("n", s.n, 0, 1'000'000'000);
  constexpr double kBig = 9e15;  // below 2^53: exact in a double
  r.number("samples", s.samples, 0, kBig);
  r.number("span_s", s.span_s, 0, 1e7);
  r.number("last_step_t", s.last_step_t, 1e9, 1e10);
  r.number("last_step_mt", s.last_step_mt, 0, 1e10);
  r.number("phase_mt", s.phase_mt, 0, 1e10);
  r.text("phase", s.phase);
  if (!r.error().empty()) return "steps." + r.error();
  if (!s.phase.empty() && !diagnose::parse_train_phase(s.phase))
    return std::string("field 'steps.phase': not data, compute, collective, optimizer, idle or unknown");
  std::string error;
  read_figures(r, st, "step_s", s.step_s, error);
  read_figures(r, st, "data_s", s.data_s, error);
  read_figures(r, st, "comm_s", s.comm_s, error);
  if (!error.empty()) return "field " + error;
  if (auto it = st.find("total"); it != st.end() && !it->is_null()) {
    if (!it->is_object()) return std::string("field 'steps.total': not an object");
    FieldReader t(*it);
    t.number("steps", s.total_steps, 0, kBig);
    t.number("samples", s.total_samples, 0, kBig);
    t.number("step_s", s.total_step_s, 0, 1e12);
    t.number("data_s", s.total_data_s, 0, 1e12);
    t.number("comm_s", s.total_comm_s, 0, 1e12);
    if (!t.error().empty()) return "steps.total." + t.error();
  }
  if (auto it = st.find("coll"); it != st.end() && !it->is_null()) {
    if (!it->is_object()) return std::string("field 'steps.coll': not an object");
    FieldReader c(*it);
    if (!c.find("op")) return std::string("field 'steps.coll.op': missing");
    c.text("op", s.coll_op);
    c.integer("seq", s.coll_seq, 0, 1'000'000'000'000'000);
    c.text("pg", s.coll_pg);
    c.number("bytes", s.coll_bytes, 0, kMaxExactInt);
    if (!c.error().empty()) return "steps.coll." + c.error();
    if (s.coll_op.empty()) return std::string("field 'steps.coll.op': empty");
  }
  clamp_to_step(s);
  m.steps = std::move(s);
  return std::nullopt;
}

}  // namespace

std::string_view event_type_name(EventType type) noexcept {
  auto i = static_cast<std::size_t>(type);
  return i < kTypeNames.size() ? kTypeNames[i] : std::string_view("unknown");
}

std::optional<EventType> event_type_from_name(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kTypeNames.size(); ++i) {
    if (kTypeNames[i] == name) return static_cast<EventType>(i);
  }
  return std::nullopt;
}

std::string_view reject_reason_name(RejectReason reason) noexcept {
  auto i = static_cast<std::size_t>(reason);
  return i < kReasonNames.size() ? kReasonNames[i] : std::string_view("unknown");
}

RejectReason reject_reason_of(const Error& error) noexcept {
  if (error.code >= 0 && static_cast<std::size_t>(error.code) < kRejectReasonCount) {
    return static_cast<RejectReason>(error.code);
  }
  return RejectReason::not_json;
}

std::optional<Error> parse_train_event_into(std::string_view message, TrainMessage& m) {
  m = TrainMessage{};
  if (message.size() > kMaxMessageBytes) {
    return reject(RejectReason::too_large,
                  fmt::format("{} bytes, limit {}", message.size(), kMaxMessageBytes));
  }
  if (nesting_depth(message, kMaxDepth) > kMaxDepth) {
    return reject(RejectReason::too_deep, fmt::format("nesting deeper than {}", kMaxDepth));
  }
  json doc = json::parse(message.begin(), message.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return reject(RejectReason::not_json, "not valid JSON");
  if (!doc.is_object()) return reject(RejectReason::not_object, "not a JSON object");

  auto v = doc.find("v");
  if (v == doc.end() || !v->is_number_integer() || v->get<std::int64_t>() < kOldestProtocolVersion ||
      v->get<std::int64_t>() > kProtocolVersion) {
    return reject(RejectReason::bad_version,
                  fmt::format("\"v\" must be {} to {}", kOldestProtocolVersion, kProtocolVersion));
  }
  m.version = static_cast<int>(v->get<std::int64_t>());
  auto type = doc.find("type");
  if (type == doc.end() || !type->is_string()) return reject(RejectReason::unknown_type, "\"type\" missing");
  const auto& type_name = type->get_ref<const std::string&>();
  auto kind = event_type_from_name(type_name);
  if (!kind) {
    return reject(RejectReason::unknown_type,
                  fmt::format("unknown type '{}'", type_name.size() <= 32 ? type_name : "(long)"));
  }

  m.type = *kind;
  FieldReader r(doc);
  // Times from 2001-09 to 2286-11: anything else is a broken clock or a hostile sender.
  if (!r.find("t")) return reject(RejectReason::bad_field, "field 't': missing");
  r.number("t", m.time_unix_s, 1e9, 1e10);
  constexpr std::int64_t kBig = 1'000'000'000'000'000;  // 1e15: batches, steps
  r.integer("seq", m.seq, 0, kBig);
  r.integer("pid", m.pid, 1, 4'194'304);  // PID_MAX_LIMIT
  r.integer("rank", m.rank, 0, 65'535);
  r.integer("gpu", m.gpu, 0, 1'023);
  r.integer("epoch", m.epoch, 0, 1'000'000'000);
  r.integer("epochs", m.epochs, 0, 1'000'000'000);
  r.integer("batch", m.batch, 0, kBig);
  r.integer("batches", m.batches, 0, kBig);
  r.integer("step", m.step, 0, kBig);
  r.integer("batch_size", m.batch_size, 1, 10'000'000);
  r.integer("imgsz", m.imgsz, 1, 1'000'000);
  r.number("loss", m.loss, -1e30, 1e30);
  r.number("lr", m.lr, 0, 1e6);
  r.integer("rss_bytes", m.rss_bytes, 0, static_cast<std::int64_t>(kMaxExactInt));
  r.integer("dropped", m.dropped, 0, static_cast<std::int64_t>(kMaxExactInt));
  r.text("framework", m.framework);
  r.text("run_id", m.run_id);
  // v2 (a v1 sender never sends them; unknown fields were always ignored)
  r.number("mt", m.mono_s, 0, 1e10);
  r.integer("local_rank", m.local_rank, 0, 65'535);
  r.integer("world_size", m.world_size, 1, 65'536);
  r.integer("node_rank", m.node_rank, 0, 65'535);
  r.integer("stack_signal", m.stack_signal, 1, 64);
  r.number("lines", m.lines_s, 0, 1e7);
  r.text("host", m.host);
  r.text("gpu_uuid", m.gpu_uuid);
  r.text("cuda_visible_devices", m.cuda_visible_devices, kMaxDeviceListBytes);
  r.text("cuda_device_order", m.cuda_device_order);
  if (!r.error().empty()) return reject(RejectReason::bad_field, r.error());
  if (const json* st = r.find("steps")) {
    if (auto error = read_steps(*st, m)) return reject(RejectReason::bad_field, *error);
  }

  if (const json* t = r.find("torch")) {
    if (!t->is_object()) return reject(RejectReason::bad_field, "field 'torch': not an object");
    FieldReader tr(*t);
    constexpr auto kMax = static_cast<std::int64_t>(kMaxExactInt);
    auto whole = [&](const char* key, double& out) {
      std::int64_t v = -1;
      tr.integer(key, v, 0, kMax);
      if (v >= 0) out = static_cast<double>(v);
    };
    whole("allocated_bytes", m.torch.allocated_bytes);
    whole("reserved_bytes", m.torch.reserved_bytes);
    whole("peak_bytes", m.torch.peak_bytes);
    whole("num_alloc_retries", m.torch.num_alloc_retries);
    whole("num_ooms", m.torch.num_ooms);
    if (!tr.error().empty()) return reject(RejectReason::bad_field, "torch." + tr.error());
  }
  return std::nullopt;
}

Expected<TrainMessage> parse_train_event(std::string_view message) {
  TrainMessage m;
  if (auto error = parse_train_event_into(message, m)) return std::unexpected(std::move(*error));
  return m;
}

namespace {

bool same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

void put_figures(json& into, const char* key, const StepFigures& f) {
  json o = json::object();
  auto put = [&](const char* k, double v) {
    if (std::isfinite(v)) o[k] = v;
  };
  put("sum", f.sum);
  put("min", f.min);
  put("max", f.max);
  put("p50", f.p50);
  put("p90", f.p90);
  put("p99", f.p99);
  if (!o.empty()) into[key] = std::move(o);
}

json steps_json(const StepsMessage& s) {
  json j = json::object();
  j["n"] = s.n;
  auto put = [&](json& o, const char* k, double v) {
    if (std::isfinite(v)) o[k] = v;
  };
  auto put_whole = [&](json& o, const char* k, double v) {
    if (std::isfinite(v)) {
      if (v == std::floor(v) && std::fabs(v) < kMaxExactInt) {
        o[k] = static_cast<std::int64_t>(v);
      } else {
        o[k] = v;
      }
    }
  };
  put_whole(j, "samples", s.samples);
  put(j, "span_s", s.span_s);
  put_figures(j, "step_s", s.step_s);
  put_figures(j, "data_s", s.data_s);
  put_figures(j, "comm_s", s.comm_s);
  json t = json::object();
  put_whole(t, "steps", s.total_steps);
  put_whole(t, "samples", s.total_samples);
  put(t, "step_s", s.total_step_s);
  put(t, "data_s", s.total_data_s);
  put(t, "comm_s", s.total_comm_s);
  if (!t.empty()) j["total"] = std::move(t);
  put(j, "last_step_t", s.last_step_t);
  put(j, "last_step_mt", s.last_step_mt);
  if (!s.phase.empty()) j["phase"] = s.phase;
  put(j, "phase_mt", s.phase_mt);
  if (!s.coll_op.empty()) {
    json c = json::object();
    c["op"] = s.coll_op;
    if (s.coll_seq >= 0) c["seq"] = s.coll_seq;
    if (!s.coll_pg.empty()) c["pg"] = s.coll_pg;
    put_whole(c, "bytes", s.coll_bytes);
    j["coll"] = std::move(c);
  }
  return j;
}

}  // namespace

bool StepFigures::operator==(const StepFigures& o) const noexcept {
  return same(sum, o.sum) && same(min, o.min) && same(max, o.max) && same(p50, o.p50) && same(p90, o.p90) &&
         same(p99, o.p99);
}

bool StepsMessage::operator==(const StepsMessage& o) const noexcept {
  return n == o.n && same(samples, o.samples) && same(span_s, o.span_s) && step_s == o.step_s &&
         data_s == o.data_s && comm_s == o.comm_s && same(total_comm_s, o.total_comm_s) &&
         coll_op == o.coll_op && coll_seq == o.coll_seq && coll_pg == o.coll_pg &&
         same(coll_bytes, o.coll_bytes) && same(total_steps, o.total_steps) &&
         same(total_samples, o.total_samples) && same(total_step_s, o.total_step_s) &&
         same(total_data_s, o.total_data_s) && same(last_step_t, o.last_step_t) &&
         same(last_step_mt, o.last_step_mt) && phase == o.phase && same(phase_mt, o.phase_mt);
}

bool TrainMessage::operator==(const TrainMessage& o) const noexcept {
  return version == o.version && type == o.type && time_unix_s == o.time_unix_s && same(mono_s, o.mono_s) &&
         seq == o.seq && pid == o.pid && rank == o.rank && gpu == o.gpu && local_rank == o.local_rank &&
         world_size == o.world_size && node_rank == o.node_rank && stack_signal == o.stack_signal &&
         lines_s == o.lines_s && epoch == o.epoch && epochs == o.epochs && batch == o.batch &&
         batches == o.batches && step == o.step && batch_size == o.batch_size && imgsz == o.imgsz &&
         loss == o.loss && lr == o.lr && torch == o.torch && rss_bytes == o.rss_bytes &&
         dropped == o.dropped && framework == o.framework && run_id == o.run_id && host == o.host &&
         gpu_uuid == o.gpu_uuid && cuda_visible_devices == o.cuda_visible_devices &&
         cuda_device_order == o.cuda_device_order && steps == o.steps;
}

std::string to_json(const TrainMessage& m, bool with_steps) {
  json j = json::object();
  j["v"] = m.version;
  j["type"] = std::string(event_type_name(m.type));
  j["t"] = m.time_unix_s;
  if (std::isfinite(m.mono_s)) j["mt"] = m.mono_s;
  auto put = [&](const char* key, std::int64_t value) {
    if (value >= 0) j[key] = value;
  };
  put("seq", m.seq);
  put("pid", m.pid);
  put("rank", m.rank);
  put("gpu", m.gpu);
  put("local_rank", m.local_rank);
  put("world_size", m.world_size);
  put("node_rank", m.node_rank);
  put("stack_signal", m.stack_signal);
  if (m.lines_s) j["lines"] = *m.lines_s;
  put("epoch", m.epoch);
  put("epochs", m.epochs);
  put("batch", m.batch);
  put("batches", m.batches);
  put("step", m.step);
  put("batch_size", m.batch_size);
  put("imgsz", m.imgsz);
  if (m.loss) j["loss"] = *m.loss;
  if (m.lr) j["lr"] = *m.lr;
  put("rss_bytes", m.rss_bytes);
  put("dropped", m.dropped);
  if (!m.framework.empty()) j["framework"] = m.framework;
  if (!m.run_id.empty()) j["run_id"] = m.run_id;
  if (!m.host.empty()) j["host"] = m.host;
  if (!m.gpu_uuid.empty()) j["gpu_uuid"] = m.gpu_uuid;
  if (!m.cuda_visible_devices.empty()) j["cuda_visible_devices"] = m.cuda_visible_devices;
  if (!m.cuda_device_order.empty()) j["cuda_device_order"] = m.cuda_device_order;
  json t = json::object();
  auto put_bytes = [&](const char* key, double value) {
    if (value >= 0) t[key] = static_cast<std::int64_t>(value);
  };
  put_bytes("allocated_bytes", m.torch.allocated_bytes);
  put_bytes("reserved_bytes", m.torch.reserved_bytes);
  put_bytes("peak_bytes", m.torch.peak_bytes);
  put_bytes("num_alloc_retries", m.torch.num_alloc_retries);
  put_bytes("num_ooms", m.torch.num_ooms);
  if (!t.empty()) j["torch"] = std::move(t);
  if (with_steps && m.steps) j["steps"] = steps_json(*m.steps);
  return j.dump();
}

double RunClock::of(double mono_s, double unix_s) const noexcept {
  if (std::isfinite(mono_s) && std::isfinite(start_mono_s)) return mono_s - start_mono_s;
  if (std::isfinite(unix_s)) return unix_s - start_unix_s;
  return std::numeric_limits<double>::quiet_NaN();
}

double RunClock::of(const TrainMessage& m) const noexcept {
  return of(m.mono_s, m.time_unix_s);
}

diagnose::TrainEvent to_diagnose_event(const TrainMessage& m, double run_t) {
  diagnose::TrainEvent e;
  e.t = run_t;
  e.kind = std::string(event_type_name(m.type));
  e.epoch = static_cast<int>(m.epoch);
  e.batch = static_cast<long>(m.batch);
  e.batch_size = static_cast<int>(m.batch_size);
  e.gpu = static_cast<int>(m.gpu);
  e.torch_allocated_bytes = m.torch.allocated_bytes;
  e.torch_reserved_bytes = m.torch.reserved_bytes;
  e.torch_peak_bytes = m.torch.peak_bytes;
  e.num_alloc_retries = m.torch.num_alloc_retries;
  e.num_ooms = m.torch.num_ooms;
  return e;
}

diagnose::TrainRank rank_of(const TrainMessage& m, std::int64_t sender_pid) {
  diagnose::TrainRank r;
  const auto pid = sender_pid > 0 ? sender_pid : m.pid;
  r.pid = pid > 0 && pid <= UINT32_MAX ? static_cast<std::uint32_t>(pid) : 0;
  r.rank = static_cast<int>(m.rank);
  r.key = diagnose::train_rank_key(r.rank, r.pid);
  r.local_rank = static_cast<int>(m.local_rank);
  r.world_size = static_cast<int>(m.world_size);
  r.node_rank = static_cast<int>(m.node_rank);
  r.host = m.host;
  r.cuda_device = static_cast<int>(m.gpu);
  r.gpu_uuid = m.gpu_uuid;
  r.cuda_visible_devices = m.cuda_visible_devices;
  r.cuda_device_order = m.cuda_device_order;
  r.framework = m.framework;
  if (m.stack_signal > 0) r.stack_signal = static_cast<int>(m.stack_signal);
  if (m.lines_s) r.lines_s = *m.lines_s;
  return r;
}

std::optional<diagnose::TrainWindow> window_of(const TrainMessage& m, const RunClock& clock) {
  if (!m.steps) return std::nullopt;
  const auto& s = *m.steps;
  diagnose::TrainWindow w;
  w.t = clock.of(m);
  w.steps = s.n > 0 ? static_cast<std::uint32_t>(std::min<std::int64_t>(s.n, UINT32_MAX)) : 0u;
  auto f = [](double v) { return static_cast<float>(v); };
  auto figures = [&](const StepFigures& x) {
    return w.steps ? diagnose::StepStats{f(x.sum), f(x.min), f(x.max), f(x.p50), f(x.p90), f(x.p99)}
                   : diagnose::StepStats{};
  };
  w.samples = w.steps ? s.samples : (std::isfinite(s.samples) ? 0.0 : s.samples);
  w.span_s = f(s.span_s);
  w.step = figures(s.step_s);
  w.data = figures(s.data_s);
  w.comm = figures(s.comm_s);
  w.total_steps = s.total_steps;
  w.total_samples = s.total_samples;
  w.total_step_s = s.total_step_s;
  w.total_data_s = s.total_data_s;
  w.total_comm_s = s.total_comm_s;
  w.last_step_t = clock.of(s.last_step_mt, s.last_step_t);
  if (!s.phase.empty())
    w.phase = diagnose::parse_train_phase(s.phase).value_or(diagnose::TrainPhase::unknown);
  w.phase_t = clock.of(s.phase_mt, std::numeric_limits<double>::quiet_NaN());
  if (!s.coll_op.empty()) {
    w.coll.op = s.coll_op;
    w.coll.seq = s.coll_seq;
    w.coll.group = s.coll_pg;
    w.coll.bytes = s.coll_bytes;
  }
  return w;
}

}  // namespace trainmon::diagnose
