// SPDX-License-Identifier: Apache-2.0
#include "device/device_worker.h"

#include <utility>

namespace trainmon::device {

DeviceWorker::DeviceWorker() : state_(std::make_shared<State>()) {
  thread_ = std::thread(&DeviceWorker::run, state_);
}

DeviceWorker::~DeviceWorker() {
  stop(std::chrono::milliseconds(1000));
}

void DeviceWorker::run(std::shared_ptr<State> state) {
  std::unique_lock lock(state->mu);
  for (;;) {
    state->cv.wait(lock, [&] { return state->stopping || static_cast<bool>(state->job); });
    if (state->stopping && !state->job) break;
    std::function<void()> job = std::move(state->job);
    state->job = nullptr;
    lock.unlock();
    job();          // may block for as long as the driver does
    job = nullptr;  // release what the job holds before reporting idle
    lock.lock();
    state->busy = false;
    std::function<void()> on_idle = std::move(state->on_idle);
    state->on_idle = nullptr;
    // Notify after unlocking, here and below: a waiter woken while the lock is still held wakes a
    // second time for the mutex (two context switches where one does).
    lock.unlock();
    state->cv.notify_all();
    if (on_idle) {
      on_idle();
      on_idle = nullptr;
    }
    lock.lock();
  }
  state->exited = true;
  state->cv.notify_all();
}

void TickLatch::expect() {
  std::lock_guard lock(mu_);
  ++pending_;
}

void TickLatch::arrive() {
  std::unique_lock lock(mu_);
  if (pending_ > 0 && --pending_ == 0) {
    lock.unlock();
    cv_.notify_all();  // the caller keeps the latch alive (shared_ptr) until this returns
  }
}

bool TickLatch::wait_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  return cv_.wait_until(lock, deadline, [&] { return pending_ == 0; });
}

bool DeviceWorker::try_submit(std::function<void()> job, std::function<void()> on_idle) {
  std::unique_lock lock(state_->mu);
  if (state_->busy || state_->stopping) return false;
  state_->busy = true;
  state_->job = std::move(job);
  state_->on_idle = std::move(on_idle);
  lock.unlock();
  state_->cv.notify_all();
  return true;
}

bool DeviceWorker::wait_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(state_->mu);
  return state_->cv.wait_until(lock, deadline, [&] { return !state_->busy; });
}

bool DeviceWorker::busy() const {
  std::lock_guard lock(state_->mu);
  return state_->busy;
}

bool DeviceWorker::stop(std::chrono::milliseconds grace) {
  request_stop();
  return stop_until(std::chrono::steady_clock::now() + grace);
}

void DeviceWorker::request_stop() {
  std::lock_guard lock(state_->mu);
  state_->stopping = true;
  if (!state_->busy) state_->job = nullptr;
  state_->cv.notify_all();
}

bool DeviceWorker::stop_until(std::chrono::steady_clock::time_point deadline) {
  if (!thread_.joinable()) return true;
  bool exited = false;
  {
    std::unique_lock lock(state_->mu);
    exited = state_->cv.wait_until(lock, deadline, [&] { return state_->exited; });
  }
  if (exited) {
    thread_.join();
    return true;
  }
  thread_.detach();
  return false;
}

}  // namespace trainmon::device
