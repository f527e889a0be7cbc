// SPDX-License-Identifier: Apache-2.0
#include "trainmon/alerts/delivery.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

#include "trainmon/alerts/backoff.h"
#include "trainmon/alerts/spool.h"

namespace trainmon::alerts {

namespace {
double mono_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

struct Delivery::Worker {
  SinkConfig config;
  std::unique_ptr<Sink> sink;
  Spool spool;
  DeliveryConfig delivery;
  std::string tool;
  /// Start of every message: "trainmon run: alerts", or "trainmon alerts" for `trainmon alerts
  /// flush` itself (not "trainmon alerts: alerts").
  std::string prefix;
  RateLimiter limiter;

  mutable std::mutex mu;
  std::condition_variable cv;
  bool stop = false;  // finish: stop after the grace period
  double stop_at_s = 0;
  bool wake = false;
  std::int64_t suppressed = 0;  // rate-limited since the last queued one
  Stats stats;
  std::thread thread;
  std::string last_error;

  Worker(SinkConfig c, std::unique_ptr<Sink> s, std::string spool_dir, DeliveryConfig d, std::string t)
      : config(std::move(c)),
        sink(std::move(s)),
        spool(std::move(spool_dir)),
        delivery(d),
        tool(std::move(t)),
        prefix(tool == "alerts" ? "trainmon alerts" : "trainmon " + tool + ": alerts"),
        limiter(config.rate_per_hour) {}

  void queue(Notification n) {
    {
      std::lock_guard lk(mu);
      if (n.state != "test" && !limiter.allow(mono_s())) {
        ++suppressed;
        ++stats.rate_limited;
        return;
      }
      n.suppressed = suppressed;
      suppressed = 0;
    }
    if (config.type == SinkType::log) {  // immediate, never fails
      (void)sink->deliver(n);
      std::lock_guard lk(mu);
      ++stats.delivered;
      return;
    }
    auto put = spool.put(n);
    if (!put) std::fprintf(stderr, "%s: %s\n", prefix.c_str(), put.error().message.c_str());
    std::lock_guard lk(mu);
    wake = true;
    cv.notify_all();
  }

  void run() {
    int failures = 0;
    bool tried_while_stopping = false;  // finish() always gets one delivery attempt, even with no grace
    for (;;) {
      // `stop` is read before the spool is listed: everything queued before finish() is then in the
      // list (a list taken first could miss the last alert and end the worker with it undelivered).
      bool stopping = false;
      {
        std::lock_guard lk(mu);
        stopping = stop;
      }
      auto files = spool.list();
      {
        std::lock_guard lk(mu);
        stats.pending = static_cast<std::int64_t>(files.size());
        if (stopping && (files.empty() || (mono_s() >= stop_at_s && tried_while_stopping))) return;
        if (stopping && !files.empty()) tried_while_stopping = true;
      }
      if (files.empty()) {
        std::unique_lock lk(mu);
        cv.wait_for(lk, std::chrono::seconds(5), [&] { return wake || stop; });
        wake = false;
        continue;
      }
      const std::string& path = files.front();
      auto n = Spool::read(path);
      if (!n) {
        std::fprintf(stderr, "%s: %s (moved aside)\n", prefix.c_str(), n.error().message.c_str());
        Spool::quarantine(path);
        continue;
      }
      auto r = sink->deliver(*n);
      if (r) {
        Spool::remove(path);
        failures = 0;
        std::lock_guard lk(mu);
        ++stats.delivered;
        last_error.clear();
        continue;
      }
      ++failures;
      double delay = backoff_delay_s(failures, delivery.retry_initial_s, delivery.retry_max_s);
      std::unique_lock lk(mu);
      ++stats.failures;
      if (r.error().message != last_error) {
        std::fprintf(stderr, "%s: sink %s: %s; kept in %s, retrying in %.1f s\n", prefix.c_str(),
                     config.name.c_str(), r.error().message.c_str(), spool.dir().c_str(), delay);
        last_error = r.error().message;
      }
      double until = mono_s() + delay;
      if (stop) until = std::min(until, stop_at_s);
      cv.wait_for(lk, std::chrono::duration<double>(std::max(0.0, until - mono_s())),
                  [&] { return stop && mono_s() >= stop_at_s; });
      wake = false;
    }
  }
};

Delivery::Delivery(const RuleSet& rules, std::string spool_dir, std::string tool) {
  for (const auto& [name, cfg] : rules.sinks) {
    auto w =
        std::make_unique<Worker>(cfg, make_sink(cfg, tool), spool_dir + "/" + name, rules.delivery, tool);
    if (cfg.type != SinkType::log) w->thread = std::thread([p = w.get()] { p->run(); });
    workers_.emplace(name, std::move(w));
  }
}

Delivery::~Delivery() {
  finish();
}

void Delivery::send(const Notification& n, const std::vector<std::string>& sinks) {
  for (const auto& s : sinks)
    if (auto it = workers_.find(s); it != workers_.end()) it->second->queue(n);
}

void Delivery::finish() {
  if (finished_) return;
  finished_ = true;
  for (auto& [_, w] : workers_) {
    std::lock_guard lk(w->mu);
    w->stop = true;
    w->stop_at_s = mono_s() + w->delivery.finish_grace_s;
    w->cv.notify_all();
  }
  for (auto& [_, w] : workers_)
    if (w->thread.joinable()) w->thread.join();
  for (auto& [name, w] : workers_) {
    auto left = w->spool.list().size();
    if (left > 0)
      std::fprintf(stderr, "%s: %zu alert(s) for sink %s not delivered yet, kept in %s\n", w->prefix.c_str(),
                   left, name.c_str(), w->spool.dir().c_str());
  }
}

std::map<std::string, Delivery::Stats> Delivery::stats() const {
  std::map<std::string, Stats> out;
  for (const auto& [name, w] : workers_) {
    std::lock_guard lk(w->mu);
    out[name] = w->stats;
  }
  return out;
}

}  // namespace trainmon::alerts
