// SPDX-License-Identifier: Apache-2.0
// NvmlBackend's hang-safe tick scheduling: each tick has one deadline for every device
// (BackendOptions::device_timeout, or tick_wait). Quick devices are sampled one after the other on one
// shared worker, followed there by the NVML event poll; the others (first ticks, slow calls, hung or
// lost GPUs) each on a worker of its own. A worker inside a hung call is handed over to its device (or
// to the event watcher) and survives the tick; its late answer is shown by the next tick.
// The lifecycle (load, init, shutdown) is in nvml_backend.cpp, one device's reads in a tick in
// nvml_device_tick.cpp.
#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <vector>

#include "device/nvml/nvml_backend.h"

namespace trainmon::nvml {

void NvmlBackend::run_into(DeviceContext& ctx, TickResult& out) {
  const auto start = std::chrono::steady_clock::now();
  run_tick(ctx, out);
  out.slow = std::chrono::steady_clock::now() - start > kQuickTick;
  out.done.store(true, std::memory_order_release);  // `out` is the sampler's from here on
  // Event registration after the tick's values are handed over: one that hangs keeps this worker
  // busy (the device's next ticks report it as not answering), not this tick's values.
  if (!ctx.events_done.load(std::memory_order_relaxed) && ctx.handle != nullptr)
    ctx.events_done.store(ctx.register_events(ctx.handle, ctx.index), std::memory_order_release);
}

std::function<void()> NvmlBackend::shared_job(std::shared_ptr<SharedTick> t) {
  return [t = std::move(t)] {
    for (std::size_t k = 0; k < t->devices.size(); ++k) {
      {
        std::lock_guard lock(t->mu);
        if (t->abandoned) return;  // the sampler gave up on this tick and took the rest
        if (t->claimed[k]) continue;
        t->claimed[k] = true;
        t->running = static_cast<int>(t->devices[k]);
      }
      run_into(*t->ctx[k], *t->slots[k]);
      std::lock_guard lock(t->mu);
      t->running = -1;
    }
    // The event poll comes last: the devices never wait for it, and one that hangs is found at the
    // handover with every device of this job answered.
    {
      std::lock_guard lock(t->mu);
      if (t->abandoned || !t->poll || t->poll_claimed) return;
      t->poll_claimed = true;
      t->running = kPolling;
    }
    (void)t->poll();  // false: skipped (an earlier poll is still inside the driver)
    std::lock_guard lock(t->mu);
    t->running = -1;
  };
}

void NvmlBackend::start_poll_on_watcher(const std::shared_ptr<device::TickLatch>& latch) {
  latch->expect();
  if (!events_->poll([latch] { latch->arrive(); })) latch->arrive();
}

void NvmlBackend::start_on_own_worker(std::size_t i, const std::shared_ptr<TickResult>& slot,
                                      const std::shared_ptr<device::TickLatch>& latch) {
  Device& d = devices_[i];
  d.own = std::make_unique<device::DeviceWorker>();
  d.calm_ticks = 0;  // its job_started stays the tick's start: the tick asked for it then
  latch->expect();
  if (!d.own->try_submit([ctx = d.ctx, slot] { run_into(*ctx, *slot); }, [latch] { latch->arrive(); }))
    latch->arrive();
}

bool NvmlBackend::wait_latch(device::TickLatch& latch, std::chrono::steady_clock::time_point deadline) {
  if (!options_.stop_requested) return latch.wait_until(deadline);
  for (;;) {
    const auto step = std::min(deadline, std::chrono::steady_clock::now() + kStopPollInterval);
    if (latch.wait_until(step)) return true;
    if (step >= deadline || options_.stop_requested()) return false;
  }
}

void NvmlBackend::sample(std::vector<GpuSample>& gpus, std::vector<GpuProcessSample>& processes,
                         const std::function<void()>& meanwhile) {
  if (startup_) {
    bool done = false;
    {
      std::lock_guard lock(startup_->mu);
      done = startup_->done;
    }
    if (done) {
      finish_startup();  // the devices are sampled from the next tick
    }
    if (meanwhile) meanwhile();  // nothing to overlap with: the caller's own work, and the tick is over
    return;
  }
  if (startup_worker_ && !startup_worker_->busy()) startup_worker_.reset();
  const auto start = std::chrono::steady_clock::now();
  const auto wait = options_.tick_wait.count() > 0 ? std::min(options_.tick_wait, options_.device_timeout)
                                                   : options_.device_timeout;
  const auto deadline = start + wait;
  const auto handover = start + wait / 2;
  // Every job owns what it touches (context, result slot, latch): a job that outlives this tick, or
  // the backend, writes only into memory it keeps alive itself.
  std::vector<std::shared_ptr<TickResult>> slots(devices_.size());
  std::vector<bool> submitted(devices_.size(), false);
  for (auto& slot : slots) slot = std::make_shared<TickResult>();
  // One wake-up for the whole tick: every worker arrives at the latch when its job is done.
  auto latch = std::make_shared<device::TickLatch>();
  auto shared = std::make_shared<SharedTick>();
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    Device& d = devices_[i];
    if (!d.own) {
      shared->devices.push_back(i);
      shared->ctx.push_back(d.ctx);
      shared->slots.push_back(slots[i]);
      shared->claimed.push_back(false);
      submitted[i] = true;
      d.job_started = start;
      continue;
    }
    latch->expect();
    if (d.own->try_submit([ctx = d.ctx, slot = slots[i]] { run_into(*ctx, *slot); },
                          [latch] { latch->arrive(); })) {
      submitted[i] = true;
      d.job_started = start;
    } else {
      latch->arrive();  // still inside an earlier tick's call: nothing to wait for
    }
  }
  // Events pending in the driver join this tick's snapshot (drain_events() after sample()): polled
  // by the shared worker after its devices, else (no shared job this tick) on the watcher's worker.
  bool shared_started = false;
  if (!shared->devices.empty()) {
    if (!shared_worker_) shared_worker_ = std::make_unique<device::DeviceWorker>();
    shared->poll = event_poll_;
    latch->expect();
    shared_started = shared_worker_->try_submit(shared_job(shared), [shared, latch] {
      if (!shared->arrived.exchange(true)) latch->arrive();
    });
    if (!shared_started) {
      // Still finishing an earlier tick (late, not hung: a hung one is handed over below): this
      // tick, each of these devices runs on a worker of its own.
      latch->arrive();
      for (std::size_t i : shared->devices) start_on_own_worker(i, slots[i], latch);
    }
  }
  // While devices still register for events (their first ticks), the poll waits for them: events
  // pending since before the start arrive in the first tick, for every device.
  const bool registering = events_ && std::any_of(devices_.begin(), devices_.end(), [](const Device& d) {
                             return !d.ctx->events_done.load(std::memory_order_acquire);
                           });
  if (events_) {
    if (!shared_started) {
      if (!registering) start_poll_on_watcher(latch);
    } else {
      events_->release_idle_workers();  // the poll has a home without a wake-up of its own
    }
  }
  // The caller's work overlaps the workers'. The deadlines stay where they were: if it took past the
  // handover, the wait below returns at once and the handover happens all the same.
  std::exception_ptr meanwhile_failed;
  if (meanwhile) {
    try {
      meanwhile();
    } catch (...) {
      meanwhile_failed = std::current_exception();
    }
  }
  // The shared worker has half the budget: the devices it has not started by then run on workers of
  // their own in the other half, so the tick still ends by the deadline even when it hangs (and when
  // more GPUs hang in the same tick).
  if (shared_started && !wait_latch(*latch, handover)) {
    int stuck = -1;
    std::vector<std::size_t> taken;  // devices the shared worker did not reach in time
    bool take_poll = false;
    {
      std::lock_guard lock(shared->mu);
      shared->abandoned = true;
      stuck = shared->running;
      for (std::size_t k = 0; k < shared->devices.size(); ++k) {
        if (!shared->claimed[k]) {
          shared->claimed[k] = true;
          taken.push_back(shared->devices[k]);
        }
      }
      if (shared->poll && !shared->poll_claimed) {
        shared->poll_claimed = true;
        take_poll = true;
      }
    }
    if (stuck == kPolling) {
      // Inside the event poll, every device of the job answered: the watcher keeps that worker
      // (polls are skipped while it is stuck), a new one serves the quick devices from the next
      // tick on, and this tick waits for it no longer.
      events_->adopt(std::move(shared_worker_));
      if (!shared->arrived.exchange(true)) latch->arrive();
    } else if (stuck >= 0) {
      // The shared worker is inside this device's calls: it becomes that device's own worker (while
      // busy, the device does not answer), and a new one serves the quick devices from now on.
      Device& d = devices_[static_cast<std::size_t>(stuck)];
      d.own = std::move(shared_worker_);
      d.calm_ticks = 0;
    }
    for (std::size_t i : taken) start_on_own_worker(i, slots[i], latch);
    if (take_poll) start_poll_on_watcher(latch);  // a hung GPU does not cost this tick its events
  }
  if (wait_latch(*latch, deadline) && registering && !shared_started) {
    auto poll_latch = std::make_shared<device::TickLatch>();
    start_poll_on_watcher(poll_latch);
    (void)wait_latch(*poll_latch, deadline);
  }
  const auto end = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    Device& d = devices_[i];
    TickResult& r = *slots[i];
    const bool answered = r.done.load(std::memory_order_acquire);
    const bool calm = answered && !r.slow && r.sample.responsive.ok();
    // This tick's answer, else the answer of an earlier tick's job that came after its tick ended.
    std::shared_ptr<TickResult> late;
    if (!answered && d.pending && d.pending->done.load(std::memory_order_acquire))
      late = std::move(d.pending);
    if (answered) {
      d.pending.reset();
    } else if (submitted[i]) {
      d.pending = slots[i];  // its answer, if it comes, is a later tick's
    }
    TickResult* use = answered ? &r : late.get();
    if (use != nullptr) {
      if (use->sample.info) d.last_info = use->sample.info;
      use->sample.info = d.last_info;
      gpus.push_back(std::move(use->sample));
      for (auto& p : use->processes) processes.push_back(std::move(p));
    } else {
      // Still inside NVML calls (this tick's, or an earlier tick's): past device_timeout the device
      // does not respond; before that it is only slower than this tick (nothing collected yet).
      GpuSample s;
      s.index = static_cast<unsigned>(i);
      s.info = d.last_info;
      const bool hung = end - d.job_started >= options_.device_timeout;
      set_all_status(s, hung ? ReadStatus::timeout : ReadStatus::not_collected, 0,
                     options_.collect_processes && hung);
      gpus.push_back(std::move(s));
    }
    // Where the device is sampled next tick: a device that was slow (e.g. the 20 ms PCIe call) or did
    // not answer keeps (or gets) a worker of its own, so its wait runs in parallel with the others;
    // one that answered quickly kCalmTicksToShare ticks in a row joins the shared worker.
    if (d.own) {
      d.calm_ticks = calm ? d.calm_ticks + 1 : 0;
      if (d.calm_ticks >= kCalmTicksToShare && !d.own->busy()) d.own.reset();
    } else if (answered && r.slow) {
      d.own = std::make_unique<device::DeviceWorker>();
      d.calm_ticks = 0;
    }
  }
  if (meanwhile_failed) std::rethrow_exception(meanwhile_failed);
}

std::vector<GpuEvent> NvmlBackend::drain_events() {
  return events_ ? events_->drain() : std::vector<GpuEvent>{};
}

unsigned NvmlBackend::devices_on_shared_worker() const {
  return static_cast<unsigned>(
      std::count_if(devices_.begin(), devices_.end(), [](const Device& d) { return !d.own; }));
}

unsigned NvmlBackend::worker_threads() const {
  unsigned n = shared_worker_ ? 1u : 0u;
  for (const auto& d : devices_) n += d.own ? 1u : 0u;
  return n + (events_ ? events_->worker_threads() : 0u);
}

}  // namespace trainmon::nvml
