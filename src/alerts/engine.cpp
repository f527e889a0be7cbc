// SPDX-License-Identifier: Apache-2.0
#include "trainmon/alerts/engine.h"

#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "trainmon/alerts/template.h"
#include "trainmon/core/gpu_fields.h"
#include "trainmon/core/i18n.h"

namespace trainmon::alerts {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

bool selected_gpu(const Rule& r, unsigned index) {
  return r.gpus.empty() || std::find(r.gpus.begin(), r.gpus.end(), index) != r.gpus.end();
}

bool glob_any(const std::vector<std::string>& globs, const std::string& s) {
  if (globs.empty()) return true;
  for (const auto& g : globs)
    if (fnmatch(g.c_str(), s.c_str(), 0) == 0) return true;
  return false;
}

template <class T>
std::optional<double> val(const Reading<T>& r, double scale = 1) {
  if (!r.ok()) return std::nullopt;
  return static_cast<double>(r.value) / scale;
}

/// A GPU metric's value: a registry field's (core/gpu_fields.h) in its alert unit, or one of the
/// metrics derived from several fields. nullopt when the reading is missing.
std::optional<double> gpu_metric(std::string_view m, const GpuSample& g) {
  if (const gpu_fields::GpuField* f = gpu_fields::find_alert(m)) {
    const gpu_fields::Value v = f->read(g);
    if (!v.ok) return std::nullopt;
    return v.d / f->alert_divisor;
  }
  if (m == "memory.used_pct") {
    if (!g.memory_used_bytes.ok() || !g.memory_total_bytes.ok() || g.memory_total_bytes.value == 0)
      return std::nullopt;
    return 100.0 * static_cast<double>(g.memory_used_bytes.value) /
           static_cast<double>(g.memory_total_bytes.value);
  }
  if (m == "power.draw_pct") {
    if (!g.power_draw_mw.ok() || !g.enforced_power_limit_mw.ok() || g.enforced_power_limit_mw.value == 0)
      return std::nullopt;
    return 100.0 * g.power_draw_mw.value / g.enforced_power_limit_mw.value;
  }
  if (m == "gpu.responsive") {
    switch (g.responsive.status) {
      case ReadStatus::ok: return 1.0;
      case ReadStatus::gpu_lost:
      case ReadStatus::timeout:
      case ReadStatus::failed: return 0.0;
      default: return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<double> host_metric(std::string_view m, const HostSample& h) {
  if (m == "host.memory.used_pct") {
    if (!h.memory.total_bytes.ok() || !h.memory.available_bytes.ok() || h.memory.total_bytes.value == 0)
      return std::nullopt;
    return 100.0 * (1.0 - static_cast<double>(h.memory.available_bytes.value) / h.memory.total_bytes.value);
  }
  if (m == "host.memory.available") return val(h.memory.available_bytes, kMiB);
  if (m == "host.swap.used") return val(h.memory.swap_used_bytes, kMiB);
  if (m == "host.load1") return val(h.load1);
  if (m == "host.pressure.memory.some_avg10_pct") return val(h.pressure_memory.some_avg10_pct);
  return std::nullopt;
}

bool finding_matches(const Rule& r, const diagnose::Finding& f) {
  if (f.severity < r.min_severity) return false;
  if (r.finding != "*" && r.finding != f.code && r.finding != f.slug) return false;
  if (r.gpus.empty() || f.gpus.empty()) return true;
  for (unsigned g : f.gpus)
    if (selected_gpu(r, g)) return true;
  return false;
}

std::string finding_target(const diagnose::Finding& f) {
  std::string t = f.code;
  for (unsigned g : f.gpus) t += fmt::format(" gpu{}", g);
  if (f.gpus.empty() && !f.pids.empty()) t += fmt::format(" pid {}", f.pids.front());
  return t;
}

}  // namespace

std::vector<Observation> observe_metric(const Rule& rule, const Snapshot& snap) {
  std::vector<Observation> out;
  const MetricInfo* mi = find_metric(rule.metric);
  if (!mi) return out;
  switch (mi->scope) {
    case Scope::gpu:
      for (const auto& g : snap.gpus)
        if (selected_gpu(rule, g.index))
          if (auto v = gpu_metric(rule.metric, g)) out.push_back({fmt::format("gpu{}", g.index), *v});
      break;
    case Scope::host:
      if (auto v = host_metric(rule.metric, snap.host)) out.push_back({"host", *v});
      break;
    case Scope::process:
      for (const auto& p : snap.gpu_processes) {
        if (!selected_gpu(rule, p.gpu_index)) continue;
        std::string name = p.process_name.ok() ? p.process_name.value : std::string("?");
        if (auto slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
        if (!glob_any(rule.processes, name)) continue;
        std::optional<double> v =
            rule.metric == "process.used_memory" ? val(p.used_memory_bytes, kMiB) : val(p.sm_util_pct);
        if (v) out.push_back({fmt::format("pid {} ({}) gpu{}", p.pid, name, p.gpu_index), *v});
      }
      break;
    case Scope::event:
      for (const auto& e : snap.events)
        if ((e.event_type & 0x8) && selected_gpu(rule, e.gpu_index))
          out.push_back({fmt::format("gpu{}", e.gpu_index), static_cast<double>(e.xid)});
      break;
  }
  return out;
}

AlertEngine::AlertEngine(std::vector<Rule> rules, EngineContext ctx)
    : rules_(std::move(rules)), ctx_(std::move(ctx)), states_(rules_.size()) {}

Notification AlertEngine::make(const Rule& rule, const std::string& target, double value,
                               const std::string& state, std::int64_t time_unix_ns) {
  Notification n;
  n.id = fmt::format("{}-{}-{}", time_unix_ns, ::getpid(), ++seq_);
  n.state = state;
  n.rule = rule.name;
  n.severity = std::string(diagnose::severity_name(rule.severity));
  n.target = target;
  n.metric = rule.finding.empty() ? rule.metric : rule.finding;
  n.value = value;
  n.condition = rule.finding.empty()
                    ? fmt::format("{} {}", op_name(rule.condition.op), rule.condition.threshold)
                    : fmt::format("severity >= {}", diagnose::severity_name(rule.min_severity));
  n.for_s = rule.for_s;
  n.hostname = ctx_.hostname;
  n.tool = ctx_.tool;
  n.run_id = ctx_.run_id;
  n.run_name = ctx_.run_name;
  n.time_unix_ns = time_unix_ns;
  auto vars = template_vars(n);
  vars["finding"] = target;
  n.message = render_template(rule.message, vars);
  if (state == "resolved") n.message = std::string(i18n::tr("resolved: ")) + n.message;
  return n;
}

void AlertEngine::step(std::size_t ri, const std::vector<Observation>& obs, bool transient, double now_s,
                       std::int64_t t_ns, std::vector<Notification>& out) {
  const Rule& rule = rules_[ri];
  auto& states = states_[ri];
  for (auto& [_, st] : states) st.seen = false;
  for (const auto& o : obs) {
    TargetState& st = states[o.target];
    if (st.seen) {  // two observations of one target in a tick (two Xids): keep the first
      continue;
    }
    st.seen = true;
    bool holds = rule.finding.empty() ? rule.condition.holds(o.value) : true;
    if (!holds) {
      if (st.firing && st.notified && rule.send_resolved)
        out.push_back(make(rule, o.target, o.value, "resolved", t_ns));
      st.holding = st.firing = st.notified = false;
      st.value = o.value;
      continue;
    }
    if (!st.holding) {
      st.holding = true;
      st.since_s = now_s;
    }
    st.value = o.value;
    if (!st.firing) {
      if (now_s - st.since_s + 1e-9 >= rule.for_s) {
        st.firing = true;
        st.notified = false;
        if (now_s - st.last_notified_s + 1e-9 >= rule.cooldown_s) {
          out.push_back(make(rule, o.target, o.value, "firing", t_ns));
          st.notified = true;
          st.last_notified_s = now_s;
        }
      }
    } else if (!st.notified) {
      if (now_s - st.last_notified_s + 1e-9 >= rule.cooldown_s) {  // still firing after a quiet cooldown
        out.push_back(make(rule, o.target, o.value, "firing", t_ns));
        st.notified = true;
        st.last_notified_s = now_s;
      }
    } else if (rule.repeat_s > 0 && now_s - st.last_notified_s + 1e-9 >= rule.repeat_s) {
      out.push_back(make(rule, o.target, o.value, "firing", t_ns));
      st.last_notified_s = now_s;
    }
  }
  // Targets without a value this tick: events and findings are over (cleared); a metric that
  // could not be read keeps its state.
  for (auto it = states.begin(); it != states.end();) {
    TargetState& st = it->second;
    if (!st.seen && transient && st.holding) {
      if (st.firing && st.notified && rule.send_resolved)
        out.push_back(make(rule, it->first, st.value, "resolved", t_ns));
      st.holding = st.firing = st.notified = false;
    }
    // forget idle transient targets once their cooldown has passed (bounded memory)
    if (!st.seen && transient && now_s - st.last_notified_s > rule.cooldown_s)
      it = states.erase(it);
    else
      ++it;
  }
}

std::vector<Notification> AlertEngine::evaluate(const Snapshot& snap,
                                                std::span<const diagnose::Finding> findings, double now_s) {
  std::vector<Notification> out;
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    const Rule& rule = rules_[i];
    if (!glob_any(rule.runs, ctx_.run_name)) continue;
    if (!rule.finding.empty()) {
      std::vector<Observation> obs;
      std::vector<const diagnose::Finding*> which;
      for (const auto& f : findings)
        if (finding_matches(rule, f)) {
          obs.push_back({finding_target(f), 1});
          which.push_back(&f);
        }
      std::size_t before = out.size();
      step(i, obs, true, now_s, snap.time_unix_ns, out);
      // finding notifications carry the finding's severity and text
      for (std::size_t k = before; k < out.size(); ++k)
        for (const auto* f : which)
          if (finding_target(*f) == out[k].target) {
            out[k].severity = std::string(diagnose::severity_name(f->severity));
            auto vars = template_vars(out[k]);
            vars["finding"] = diagnose::to_text(*f);
            out[k].message = std::string(out[k].state == "resolved" ? i18n::tr("resolved: ") : "") +
                             render_template(rule.message, vars);
          }
      continue;
    }
    const MetricInfo* mi = find_metric(rule.metric);
    bool transient = mi && (mi->scope == Scope::event || mi->scope == Scope::process);
    step(i, observe_metric(rule, snap), transient, now_s, snap.time_unix_ns, out);
  }
  return out;
}

}  // namespace trainmon::alerts
