#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What a recorder loses when things go wrong, measured on real processes, one table:

* SIGKILL: `trainmon record --interval 1` killed with SIGKILL at a random moment, TRIALS times:
  seconds between the kill and the newest stored sample (what a crash costs).
* A 7 s lock: another connection holds BEGIN EXCLUSIVE on the store from 5 s to 12 s of a 20 s
  `record --interval 1` (a long `trainmon rm`, a backup): rows lost, gaps recorded, whether the run
  got its end.
* The durability cadence: under strace, every pwrite64 and fdatasync of the -wal file while
  `record` runs at 1 s and at 0.1 s: WAL fsyncs per second, their mean duration, and the power-loss
  window (the longest time a written WAL frame waited for its fdatasync: what a cut page cache
  loses; the recorder is ended by SIGKILL, as a cut would; ">= N s (no WAL sync)" when only
  checkpoints sync, and then the kernel's writeback, about 30 s, decides).
  Plus the recorder's CPU time over 20 s at 1 s without strace.

Usage: bench/recorder_faults.py BUILD_DIR [BASELINE_TRAINMON]   (TRIALS=5 by default)
With BASELINE_TRAINMON (another build's binary, e.g. main's), each figure is measured for both.
"""

import glob
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")


def env(build):
    fake = (glob.glob(os.path.join(build, "fake_nvml", "libnvidia-ml.so.1"))
            or glob.glob(os.path.join(build, "**", "libnvidia-ml.so.1"), recursive=True))
    e = dict(os.environ)
    e["TRAINMON_NVML_LIBRARY"] = fake[0]
    e["TRAINMON_FAKE_NVML_SCENARIO"] = os.path.join(SRC, "tests", "scenarios", "healthy-1gpu.json")
    e.pop("TRAINMON_DB", None)
    return e


def rows(db):
    """Stored GPU sample times (s) of the newest run, read with SQLite's own decoder-free view: the
    chunk's t0/t1 and row count are enough for the newest time; the full list comes from export."""
    con = sqlite3.connect(db)
    try:
        r = con.execute("SELECT max(c.t1_ms) FROM chunks c JOIN series s ON s.id = c.series_id "
                        "WHERE s.kind = 1").fetchone()
        return r[0] / 1000 if r and r[0] else None
    finally:
        con.close()


def gpu_times(trainmon, e, db):
    p = subprocess.run([trainmon, "export", "last", "--db", db, "--format", "csv", "--series", "gpu"],
                       env=e, capture_output=True, text=True)
    return [float(line.split(",")[0]) for line in p.stdout.splitlines()[1:] if line]


def sigkill_loss(trainmon, e, trials):
    losses, lost_runs = [], 0
    rng = random.Random(7)
    for _ in range(trials):
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "k.db")
            p = subprocess.Popen([trainmon, "record", "--db", db, "--interval", "1", "-q"], env=e,
                                 stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(3.2, 5.8))
            t_kill = time.time()
            p.kill()
            p.wait()
            newest = rows(db) if os.path.exists(db) else None
            if newest is None:
                lost_runs += 1
                continue
            losses.append(t_kill - newest)
    return losses, lost_runs


def lock_loss(trainmon, e, duration=20, lock_from=5, lock_for=7):
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "l.db")
        subprocess.run([trainmon, "run", "--db", db, "-q", "--no-report", "--", "true"], env=e,
                       capture_output=True)
        p = subprocess.Popen([trainmon, "record", "--db", db, "--interval", "1", "--duration", str(duration)],
                             env=e, stderr=subprocess.PIPE, text=True)

        def hold():
            time.sleep(lock_from)
            con = sqlite3.connect(db, isolation_level=None, timeout=60)
            con.execute("BEGIN EXCLUSIVE")
            time.sleep(lock_for)
            con.execute("COMMIT")
            con.close()

        t = threading.Thread(target=hold)
        t.start()
        _, err = p.communicate(timeout=duration + 120)
        t.join()
        times = gpu_times(trainmon, e, db)
        con = sqlite3.connect(db)
        try:
            status = con.execute("SELECT status FROM runs ORDER BY id DESC LIMIT 1").fetchone()[0]
            try:
                gaps = con.execute("SELECT count(*), coalesce(sum(ticks), 0) FROM gaps").fetchone()
            except sqlite3.OperationalError:
                gaps = None  # a store without the gaps table (schema < 3)
        finally:
            con.close()
        expected = duration  # one tick per second
        return {"rows": len(times), "lost": max(0, expected - len(times)), "status": status, "gaps": gaps,
                "stopped": "recording stopped:" in err}


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def recorder_cpu(trainmon, e, seconds=20):
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.Popen([trainmon, "record", "--db", os.path.join(tmp, "c.db"), "--interval", "1", "-q"],
                             env=e, stderr=subprocess.DEVNULL)
        time.sleep(seconds)
        c = cpu_s(p.pid)
        p.terminate()
        p.wait()
        return c


LINE = re.compile(r"^\d+\s+([\d.]+) (pwrite64|fdatasync|fsync)\((\d+)<([^>]*)>.*?<([\d.]+)>$")


def durability(trainmon, e, interval, seconds=10):
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "d.db")
        log = os.path.join(tmp, "strace.log")
        # Ended by SIGKILL, as a power cut ends it: no sync at close that a cut would not have done.
        st = subprocess.Popen(["strace", "-f", "-y", "-ttt", "-T", "-e", "trace=pwrite64,fdatasync,fsync", "-o",
                               log, trainmon, "record", "--db", db, "--interval", str(interval), "-q"],
                              env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(seconds)
        with open(f"/proc/{st.pid}/task/{st.pid}/children") as f:
            child = int(f.read().split()[0])
        os.kill(child, 9)
        st.wait(timeout=60)
        writes, syncs, sync_s = [], [], []
        end = None
        with open(log) as f:
            for line in f:
                m = LINE.match(line.strip())
                if not m or not m.group(4).endswith("-wal"):
                    continue
                t = float(m.group(1))
                end = t
                if m.group(2) == "pwrite64":
                    writes.append(t)
                else:
                    syncs.append(t)
                    sync_s.append(float(m.group(5)))
        # The longest a written frame waited for its fsync; frames never synced before the kill
        # waited at least from their write to the kill (the end of the trace).
        window = 0.0
        j = 0
        for w in writes:
            while j < len(syncs) and syncs[j] < w:
                j += 1
            window = max(window, (syncs[j] if j < len(syncs) else end) - w)
        span = (end - writes[0]) if writes and end else seconds
        # frames unsynced for (nearly) the whole run: only a checkpoint would have synced them
        unbounded = window >= 0.9 * span
        return {"fsync_per_s": len(syncs) / span if span > 0 else 0,
                "fsync_ms": 1000 * statistics.mean(sync_s) if sync_s else 0,
                "window": None if unbounded else window, "measured": window}


def fmt_window(d):
    if d["window"] is None:
        return f">= {d['measured']:.0f} s (no WAL sync)"
    return f"{d['window']:.2f} s"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    builds = [("this build", os.path.join(build, "trainmon"))]
    if len(sys.argv) > 2:
        builds.append(("baseline", os.path.abspath(sys.argv[2])))
    trials = int(os.environ.get("TRIALS", "5"))
    e = env(build)
    have_strace = subprocess.run(["which", "strace"], capture_output=True).returncode == 0
    table = []
    for label, exe in builds:
        col = {}
        losses, lost_runs = sigkill_loss(exe, e, trials)
        col["SIGKILL: samples lost, median"] = f"{statistics.median(losses):.2f} s" if losses else "-"
        col["SIGKILL: samples lost, max"] = f"{max(losses):.2f} s" if losses else "-"
        col["SIGKILL: runs lost entirely"] = f"{lost_runs}/{trials}"
        lk = lock_loss(exe, e)
        col["7 s lock: rows stored of 20"] = str(lk["rows"])
        col["7 s lock: rows lost"] = str(lk["lost"])
        col["7 s lock: gaps recorded (ticks)"] = "no gaps table" if lk["gaps"] is None else f"{lk['gaps'][0]} ({lk['gaps'][1]})"
        col["7 s lock: run status after"] = lk["status"] + (" (recording stopped)" if lk["stopped"] else "")
        if have_strace:
            for iv in (1, 0.1):
                d = durability(exe, e, iv)
                col[f"at {iv} s: WAL fsyncs per s"] = f"{d['fsync_per_s']:.2f}"
                col[f"at {iv} s: fsync mean"] = f"{d['fsync_ms']:.2f} ms"
                col[f"at {iv} s: power-loss window"] = fmt_window(d)
        col["CPU time, 20 s at 1 s"] = f"{recorder_cpu(exe, e):.2f} s"
        table.append((label, col))
    keys = list(table[0][1].keys())
    w = max(len(k) for k in keys) + 2
    print(f"{'':<{w}}" + "".join(f"{label:>30}" for label, _ in table))
    for k in keys:
        print(f"{k:<{w}}" + "".join(f"{col.get(k, '-'):>30}" for _, col in table))


if __name__ == "__main__":
    main()
