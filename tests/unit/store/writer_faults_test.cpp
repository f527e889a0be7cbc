// SPDX-License-Identifier: Apache-2.0
// StoreWriter against a store that refuses writes for a while: a second SQLite connection holding
// BEGIN EXCLUSIVE (another process's long transaction, `trainmon rm`, a backup), a small tmpfs
// that fills and is freed again, a damaged file. Recording waits, catches up, records what it could
// not keep as a gap, and records the run's end once the store accepts writes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "trainmon/store/store.h"
#include "trainmon/store/writer.h"
#include "unit/store/store_test_util.h"

namespace trainmon::store {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;

/// Another connection holding the store's write lock until release() (or destruction).
class Locker {
 public:
  explicit Locker(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db_, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  }
  ~Locker() {
    release();
    sqlite3_close(db_);
  }
  void release() {
    if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
  }

 private:
  sqlite3* db_ = nullptr;
};

WriterOptions fast_retry(std::size_t max_queued = 1000, std::size_t chunk_rows = 60) {
  WriterOptions o;
  o.chunk_rows = chunk_rows;
  o.max_queued = max_queued;
  o.busy_timeout = 30ms;
  o.retry_min = 10ms;
  o.retry_max = 50ms;
  return o;
}

/// Tick `i`: one GPU row (memory used = i) and `processes` process rows, at kT0 + i seconds.
TickBatch tick(int i, int processes = 0) {
  TickBatch b;
  b.t_ns = kT0 + i * 1'000'000'000LL;
  SeriesRow g;
  g.series.kind = SeriesKind::gpu;
  g.series.gpu_index = 0;
  g.t_ms = b.t_ns / 1'000'000;
  g.values.assign(fields_of(SeriesKind::gpu).size(), kNull);
  g.values[0] = i;
  b.rows.push_back(g);
  for (int p = 0; p < processes; ++p) {
    SeriesRow r;
    r.series.kind = SeriesKind::process;
    r.series.pid = static_cast<std::uint32_t>(1000 + p);
    r.series.start_time_ticks = 1;
    r.series.cmdline = std::string(2000, 'x');  // big rows: transactions that need many pages
    r.t_ms = g.t_ms;
    r.values.assign(fields_of(SeriesKind::process).size(), i * 1000 + p);
    b.rows.push_back(std::move(r));
  }
  return b;
}

std::int64_t new_run(const std::string& path) {
  auto s = Store::open(path, OpenMode::read_write);
  EXPECT_TRUE(s) << s.error().message;
  RunInfo run;
  run.name = "faults";
  run.start_unix_ns = kT0;
  return *s->create_run(run);
}

/// The GPU rows of `run_id` as (t_ms, first column), in stored order.
std::vector<std::pair<std::int64_t, std::int64_t>> gpu_rows(const std::string& path, std::int64_t run_id) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  auto s = Store::open(path, OpenMode::read_only);
  EXPECT_TRUE(s);
  const auto series = s->list_series(run_id);
  for (const auto& si : *series) {
    if (si.kind != SeriesKind::gpu) continue;
    EXPECT_TRUE(s->read_series(si.id, [&](const Chunk& c, bool) {
      for (std::size_t r = 0; r < c.rows(); ++r) out.emplace_back(c.t_ms[r], c.at(r, 0));
    }));
  }
  return out;
}

/// Polls `pred` every 10 ms for up to `timeout`.
template <class F>
bool eventually(F&& pred, std::chrono::milliseconds timeout = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

bool has_notice(const std::vector<std::string>& notices, std::string_view text) {
  for (const auto& n : notices)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

TEST(StoreWriterFaults, ALockHeldForSecondsLosesNothing) {
  testing::TempDir dir;
  const auto path = dir.file("t.db");
  const auto run_id = new_run(path);
  auto s = Store::open(path, OpenMode::read_write);
  ASSERT_TRUE(s);
  StoreWriter w(std::move(*s), run_id, fast_retry());
  w.push(tick(0));
  std::this_thread::sleep_for(200ms);
  std::vector<std::string> notices;
  {
    Locker lock(path);
    for (int i = 1; i < 20; ++i) {
      w.push(tick(i));
      std::this_thread::sleep_for(20ms);
    }
    ASSERT_TRUE(eventually([&] { return w.retrying_error().has_value(); }));
    EXPECT_FALSE(w.error());  // not given up
    notices = w.take_notices();
    EXPECT_TRUE(has_notice(notices, "recording paused")) << (notices.empty() ? "" : notices[0]);
  }
  ASSERT_TRUE(w.finish(RunEnd{kT0 + 30'000'000'000, "exited", 0, {}, "{}"}, 5s));
  notices = w.take_notices();
  EXPECT_TRUE(has_notice(notices, "nothing lost"));
  EXPECT_GT(w.stats().failed_attempts, 0u);
  EXPECT_EQ(w.stats().ticks_dropped, 0u);
  const auto rows = gpu_rows(path, run_id);
  ASSERT_EQ(rows.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(rows[static_cast<std::size_t>(i)].second, i);
  auto r = Store::open(path, OpenMode::read_only)->get_run(run_id);
  EXPECT_EQ(r->status, "exited");
  EXPECT_TRUE(r->gaps.empty());
}

TEST(StoreWriterFaults, TicksBeyondTheBufferAreRecordedAsAGapWithItsCause) {
  testing::TempDir dir;
  const auto path = dir.file("t.db");
  const auto run_id = new_run(path);
  auto s = Store::open(path, OpenMode::read_write);
  ASSERT_TRUE(s);
  StoreWriter w(std::move(*s), run_id, fast_retry(5));
  w.push(tick(0));
  std::this_thread::sleep_for(200ms);
  {
    Locker lock(path);
    w.push(tick(1));
    ASSERT_TRUE(eventually([&] { return w.retrying_error().has_value(); }));  // tried, refused
    for (int i = 2; i <= 12; ++i) w.push(tick(i));                            // 12 held, 5 fit: ticks 1..7 go
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(w.finish(RunEnd{kT0 + 20'000'000'000, "exited", 0, {}, "{}"}, 5s));
  EXPECT_TRUE(has_notice(w.take_notices(), "7 ticks did not fit"));
  const auto rows = gpu_rows(path, run_id);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].second, 0);
  EXPECT_EQ(rows[1].second, 8);
  EXPECT_EQ(rows[5].second, 12);
  auto r = Store::open(path, OpenMode::read_only)->get_run(run_id);
  ASSERT_EQ(r->gaps.size(), 1u);
  EXPECT_EQ(r->gaps[0].ticks, 7);
  EXPECT_EQ(r->gaps[0].t0_unix_ns, kT0 + 1'000'000'000);
  EXPECT_EQ(r->gaps[0].t1_unix_ns, kT0 + 7'000'000'000);
  EXPECT_EQ(r->gaps[0].cause, kGapStoreLocked);
  EXPECT_NE(r->gaps[0].detail.find("locked"), std::string::npos) << r->gaps[0].detail;
  EXPECT_EQ(w.stats().ticks_dropped, 7u);
  EXPECT_EQ(w.stats().gaps_recorded, 1u);
}

TEST(StoreWriterFaults, TicksDroppedWhileATransactionWaitsAreOneGapWithItsTicks) {
  // The writer spends nearly all its time inside a transaction waiting for the lock (busy timeout
  // 400 ms, back-off 1 ms): the ticks pushed meanwhile overflow the buffer and start a gap before
  // the waiting transaction's own (older) ticks come back to the buffer and are dropped too.
  testing::TempDir dir;
  const auto path = dir.file("t.db");
  const auto run_id = new_run(path);
  auto s = Store::open(path, OpenMode::read_write);
  ASSERT_TRUE(s);
  WriterOptions o = fast_retry(2);
  o.busy_timeout = 400ms;
  o.retry_min = o.retry_max = 1ms;
  StoreWriter w(std::move(*s), run_id, o);
  w.push(tick(0));
  ASSERT_TRUE(eventually([&] { return w.stats().ticks_written == 1; }));
  {
    Locker lock(path);
    w.push(tick(1));
    ASSERT_TRUE(eventually([&] { return w.retrying_error().has_value(); }));
    std::this_thread::sleep_for(20ms);  // tick 1 in the next attempt, waiting for the lock
    for (int i = 2; i <= 6; ++i) w.push(tick(i));
    std::this_thread::sleep_for(500ms);
  }
  ASSERT_TRUE(w.finish(RunEnd{kT0 + 20'000'000'000, "exited", 0, {}, "{}"}, 5s));
  const auto rows = gpu_rows(path, run_id);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].second, 5);
  auto r = Store::open(path, OpenMode::read_only)->get_run(run_id);
  ASSERT_EQ(r->gaps.size(), 1u) << r->gaps[0].ticks << " " << r->gaps.back().ticks;
  EXPECT_EQ(r->gaps[0].ticks, 4);
  EXPECT_EQ(r->gaps[0].t0_unix_ns, kT0 + 1'000'000'000);
  EXPECT_EQ(r->gaps[0].t1_unix_ns, kT0 + 4'000'000'000);
}

TEST(StoreWriterFaults, GapsFromTheLoopAndEventsOfDroppedTicksAreKept) {
  testing::TempDir dir;
  const auto path = dir.file("t.db");
  const auto run_id = new_run(path);
  auto s = Store::open(path, OpenMode::read_write);
  ASSERT_TRUE(s);
  StoreWriter w(std::move(*s), run_id, fast_retry(2));
  w.push(tick(0));
  std::this_thread::sleep_for(200ms);
  {
    Locker lock(path);
    auto t1 = tick(1);
    t1.events.push_back(GpuEvent{kT0 + 1'000'000'000, 0, 0x8, 79});
    t1.gaps.push_back(RecordingGap{kT0 + 500'000'000, kT0 + 500'000'000, 1, "sampling_stalled", "SIGSTOP"});
    w.push(std::move(t1));
    ASSERT_TRUE(eventually([&] { return w.retrying_error().has_value(); }));  // tried, refused
    for (int i = 2; i <= 5; ++i) w.push(tick(i));
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(w.finish(RunEnd{kT0 + 20'000'000'000, "exited", 0, {}, "{}"}, 5s));
  auto st = Store::open(path, OpenMode::read_only);
  auto events = st->gpu_events(run_id);
  ASSERT_EQ(events->size(), 1u);  // the Xid of a dropped tick is not sampled again: carried
  EXPECT_EQ((*events)[0].xid, 79u);
  auto r = st->get_run(run_id);
  ASSERT_EQ(r->gaps.size(), 2u);
  EXPECT_EQ(r->gaps[0].cause, kGapSamplingStalled);
  EXPECT_EQ(r->gaps[1].cause, kGapStoreLocked);
  EXPECT_EQ(r->gaps[1].ticks, 3);
}

TEST(StoreWriterFaults, AStoreLockedAtStartGetsItsRunWhenTheLockGoes) {
  testing::TempDir dir;
  const auto path = dir.file("t.db");
  (void)new_run(path);  // a store with an earlier run
  RunInfo run;
  run.name = "late";
  run.start_unix_ns = kT0;
  auto lock = std::make_unique<Locker>(path);
  StoreWriter w(path, run, fast_retry());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(w.wait_for_run(200ms), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);  // no caller waits for the lock
  EXPECT_FALSE(w.error());
  for (int i = 0; i < 5; ++i) w.push(tick(i));
  std::this_thread::sleep_for(300ms);
  lock.reset();
  const auto id = w.wait_for_run(10s);
  ASSERT_GT(id, 0);
  ASSERT_TRUE(w.finish(RunEnd{kT0 + 9'000'000'000, "exited", 3, {}, "{}"}, 5s));
  EXPECT_TRUE(has_notice(w.take_notices(), "recording started after"));
  EXPECT_EQ(gpu_rows(path, id).size(), 5u);
  auto r = Store::open(path, OpenMode::read_only)->get_run(id);
  EXPECT_EQ(r->name, "late");
  EXPECT_EQ(r->exit_code, 3);
}

TEST(StoreWriterFaults, TheEndIsRecordedWhenTheStoreComesBackOnlyAtTheEnd) {
  testing::TempDir dir;
  const auto path = dir.file("t.db");
  const auto run_id = new_run(path);
  auto s = Store::open(path, OpenMode::read_write);
  ASSERT_TRUE(s);
  StoreWriter w(std::move(*s), run_id, fast_retry());
  auto lock = std::make_unique<Locker>(path);
  for (int i = 0; i < 3; ++i) w.push(tick(i));
  std::vector<diagnose::Finding> findings(1);
  findings[0].code = "D10";
  w.request_finish(RunEnd{kT0 + 5'000'000'000, "exited", 0, {}, "{}"}, findings);
  EXPECT_FALSE(w.wait_finished(300ms));
  lock.reset();
  EXPECT_TRUE(w.wait_finished(10s));
  EXPECT_TRUE(w.end_recorded());
  auto st = Store::open(path, OpenMode::read_only);
  EXPECT_EQ(st->get_run(run_id)->status, "exited");
  EXPECT_EQ(st->findings(run_id)->size(), 1u);
  EXPECT_EQ(gpu_rows(path, run_id).size(), 3u);
}

TEST(StoreWriterFaults, LiveFindingsAreStoredWithTheNextTickAndTheNewestSetWinsAfterALock) {
  testing::TempDir dir;
  const auto path = dir.file("t.db");
  const auto run_id = new_run(path);
  auto s = Store::open(path, OpenMode::read_write);
  ASSERT_TRUE(s);
  StoreWriter w(std::move(*s), run_id, fast_retry());
  auto codes = [&] {
    std::vector<std::string> out;
    auto st = Store::open(path, OpenMode::read_only);
    if (auto f = st->findings(run_id))
      for (const auto& x : *f) out.push_back(x.code);
    return out;
  };
  std::vector<diagnose::Finding> one(1);
  one[0].code = "D23";
  w.set_live_findings(one);
  w.push(tick(0));
  ASSERT_TRUE(eventually([&] { return codes() == std::vector<std::string>{"D23"}; })) << codes().size();
  {
    // While the store refuses writes, only the newest set is kept, and written once it accepts them.
    Locker lock(path);
    w.push(tick(1));
    ASSERT_TRUE(eventually([&] { return w.retrying_error().has_value(); }));
    auto two = one;
    two.emplace_back().code = "D25";
    w.set_live_findings(two);
    two.back().code = "D24";
    w.set_live_findings(two);
  }
  w.push(tick(2));
  ASSERT_TRUE(eventually([&] {
    return codes() == std::vector<std::string>{"D23", "D24"};
  })) << codes().size();
  // The end's findings replace the live ones.
  std::vector<diagnose::Finding> end(1);
  end[0].code = "D10";
  w.request_finish(RunEnd{kT0 + 5'000'000'000, "exited", 0, {}, "{}"}, end);
  ASSERT_TRUE(w.wait_finished(10s));
  EXPECT_EQ(codes(), std::vector<std::string>{"D10"});
  EXPECT_EQ(gpu_rows(path, run_id).size(), 3u);
}

TEST(StoreWriterFaults, GivingUpSaysWhyAndLeavesTheRunRunning) {
  testing::TempDir dir;
  const auto path = dir.file("t.db");
  const auto run_id = new_run(path);
  auto s = Store::open(path, OpenMode::read_write);
  ASSERT_TRUE(s);
  StoreWriter w(std::move(*s), run_id, fast_retry());
  Locker lock(path);
  w.push(tick(0));
  auto r = w.finish(RunEnd{kT0 + 5'000'000'000, "exited", 0, {}, "{}"}, 300ms);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("locked"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("gave up"), std::string::npos) << r.error().message;
  lock.release();
  EXPECT_EQ(Store::open(path, OpenMode::read_only)->get_run(run_id)->status, "running");
}

TEST(StoreWriterFaults, ADamagedStoreStopsTheWriterAtOnce) {
  testing::TempDir dir;
  const auto path = dir.file("t.db");
  {
    std::ofstream f(path, std::ios::binary);
    f << std::string(8192, '\x17');
  }
  RunInfo run;
  run.name = "x";
  StoreWriter w(path, run, fast_retry());
  EXPECT_EQ(w.wait_for_run(5s), 0);
  ASSERT_TRUE(w.error());
  EXPECT_EQ(w.error()->name, kErrDamaged);
  w.push(tick(0));
  EXPECT_FALSE(w.finish(RunEnd{1, "exited", 0, {}, ""}, 1s));
}

TEST(StoreWriterFaults, DurableCommitsFollowTheCadence) {
  testing::TempDir dir;
  const auto path = dir.file("t.db");
  for (const auto every : {0ms, 400ms}) {
    const auto run_id = new_run(path);
    auto s = Store::open(path, OpenMode::read_write);
    ASSERT_TRUE(s);
    WriterOptions o;
    o.durable_every = every;
    StoreWriter w(std::move(*s), run_id, o);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 40; ++i) {
      w.push(tick(i));
      std::this_thread::sleep_for(30ms);
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(w.finish(RunEnd{kT0, "exited", 0, {}, "{}"}));
    const auto st = w.stats();
    if (every == 0ms) {
      EXPECT_EQ(st.durable_commits, st.transactions + 1) << "every commit, and the end";
    } else {
      // about one a 0.4 s (the first, then one per period), plus the end
      EXPECT_GE(st.durable_commits, 2u);
      EXPECT_LE(st.durable_commits, static_cast<std::uint64_t>(secs / 0.4) + 3) << st.transactions;
      EXPECT_GT(st.transactions, st.durable_commits);
    }
  }
}

/// A tmpfs of `size` mounted at a fresh directory (root only; skipped otherwise), unmounted at exit.
class SmallTmpfs {
 public:
  explicit SmallTmpfs(const std::string& dir, const char* size) : dir_(dir) {
    std::filesystem::create_directories(dir_);
    ok_ = ::geteuid() == 0 && ::mount("tmpfs", dir_.c_str(), "tmpfs", 0, size) == 0;
  }
  ~SmallTmpfs() {
    if (ok_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool ok() const { return ok_; }
  /// Fill the file system with `name` until ENOSPC.
  void fill(const std::string& name) {
    const int fd = ::open((dir_ + "/" + name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::string block(65536, 'f');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    std::string small(512, 'f');
    while (::write(fd, small.data(), small.size()) > 0) {
    }
    ::close(fd);
  }

 private:
  std::string dir_;
  bool ok_ = false;
};

TEST(StoreWriterFaults, ADiskThatFillsAndIsFreedAgainKeepsEveryRowOnce) {
  testing::TempDir dir;
  SmallTmpfs fs(dir.file("fs"), "size=3m");
  if (!fs.ok()) GTEST_SKIP() << "needs root to mount a tmpfs";
  const auto path = dir.file("fs/t.db");
  const auto run_id = new_run(path);
  auto s = Store::open(path, OpenMode::read_write);
  ASSERT_TRUE(s);
  // 4-row chunks and big process rows: the failures come in the middle of transactions, after
  // chunks were closed and series created, which must all be undone and redone.
  StoreWriter w(std::move(*s), run_id, fast_retry(1000, 4));
  for (int i = 0; i < 5; ++i) w.push(tick(i, 6));
  std::this_thread::sleep_for(300ms);
  fs.fill("filler");
  for (int i = 5; i < 40; ++i) {
    w.push(tick(i, 6 + i % 3));  // new process series appear while full
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(eventually([&] { return w.retrying_error().has_value(); }));
  EXPECT_EQ(std::string(gap_cause_of(*w.retrying_error())), kGapStoreFull);
  std::filesystem::remove(dir.file("fs/filler"));
  ASSERT_TRUE(w.finish(RunEnd{kT0 + 50'000'000'000, "exited", 0, {}, "{}"}, 10s));
  EXPECT_GT(w.stats().failed_attempts, 0u);
  const auto rows = gpu_rows(path, run_id);
  ASSERT_EQ(rows.size(), 40u);
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(rows[static_cast<std::size_t>(i)].second, i);
    EXPECT_EQ(rows[static_cast<std::size_t>(i)].first, (kT0 + i * 1'000'000'000LL) / 1'000'000);
  }
  // each process series holds its rows once
  auto st = Store::open(path, OpenMode::read_only);
  std::map<std::uint32_t, std::size_t> per_pid;
  std::map<std::uint32_t, std::size_t> series_per_pid;
  const auto series = st->list_series(run_id);
  for (const auto& si : *series) {
    if (si.kind != SeriesKind::process) continue;
    ++series_per_pid[*si.pid];
    ASSERT_TRUE(st->read_series(si.id, [&](const Chunk& c, bool) { per_pid[*si.pid] += c.rows(); }));
  }
  EXPECT_EQ(per_pid[1000], 40u);
  EXPECT_EQ(series_per_pid[1000], 1u);
  EXPECT_EQ(per_pid[1007], 12u);  // i % 3 == 2 from tick 5: 5, 8, ..., 38
  EXPECT_EQ(series_per_pid[1007], 1u);
}

}  // namespace
}  // namespace trainmon::store
