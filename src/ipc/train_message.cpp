// SPDX-License-Identifier: Apache-2.0
#include "trainmon/ipc/train_message.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace trainmon::ipc {

namespace {

using json = nlohmann::json;

constexpr std::array<std::string_view, kEventTypeCount> kTypeNames = {
    "hello", "train_start", "epoch_start", "batch_end", "epoch_end", "val_end", "memory", "train_end"};

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

  // A string of at most kMaxStringBytes made of printable ASCII (names, ids).
  void text(const char* key, std::string& out) {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_string()) return fail(key, "not a string");
    const auto& s = v->get_ref<const std::string&>();
    if (s.size() > kMaxStringBytes) return fail(key, "longer than 128 bytes");
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
  if (v == doc.end() || !v->is_number_integer() || v->get<std::int64_t>() != kProtocolVersion) {
    return reject(RejectReason::bad_version, fmt::format("\"v\" must be {}", kProtocolVersion));
  }
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
  if (!r.error().empty()) return reject(RejectReason::bad_field, r.error());

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

std::string to_json(const TrainMessage& m) {
  json j = json::object();
  j["v"] = kProtocolVersion;
  j["type"] = std::string(event_type_name(m.type));
  j["t"] = m.time_unix_s;
  auto put = [&](const char* key, std::int64_t value) {
    if (value >= 0) j[key] = value;
  };
  put("seq", m.seq);
  put("pid", m.pid);
  put("rank", m.rank);
  put("gpu", m.gpu);
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
  return j.dump();
}

diagnose::TrainEvent to_diagnose_event(const TrainMessage& m, double run_start_unix_s) {
  diagnose::TrainEvent e;
  e.t = m.time_unix_s - run_start_unix_s;
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

store::TrainEvent to_store_event(const TrainMessage& m) {
  store::TrainEvent e;
  e.time_unix_ns = static_cast<std::int64_t>(std::llround(m.time_unix_s * 1e9));
  e.kind = std::string(event_type_name(m.type));
  e.json = to_json(m);
  return e;
}

}  // namespace trainmon::ipc
