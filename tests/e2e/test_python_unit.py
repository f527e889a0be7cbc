# SPDX-License-Identifier: Apache-2.0
"""Unit tests of the Python package (python/trainmon): line format, /proc readers, snapshot file,
the datagram client (delivery, dropping when the recorder is slow or gone), and the framework
callbacks driven by stand-in trainers into a socket the test reads. No trainmon binary needed."""

import io
import json
import os
import socket
import sys
import time
import types

import pytest

SOURCE_DIR = os.environ.get("TRAINMON_SOURCE_DIR",
                            os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))

import trainmon  # noqa: E402
from trainmon import _client, _format, _proc, _snapshot  # noqa: E402
from test_python_helpers import check_all, reset_package  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_package():
    reset_package()  # each test starts as a fresh process would (one step timer per process)
    yield
    reset_package()

GIB = 1 << 30

MEMINFO = """MemTotal:       65929596 kB
MemFree:         1234567 kB
MemAvailable:   24851208 kB
Buffers:          100000 kB
Cached:          9000000 kB
SwapTotal:             0 kB
"""
STAT_1 = "cpu  1000 0 500 8000 500 0 0 0 0 0\ncpu0 500 0 250 4000 250 0 0 0 0 0\nintr 1\n"
STAT_2 = "cpu  1300 0 600 8500 600 0 0 0 0 0\ncpu0 650 0 300 4250 300 0 0 0 0 0\nintr 2\n"


# ---- line format ------------------------------------------------------------------------------

def test_article_example_line_is_reproduced_exactly():
    gpus = [{"index": 0, "name": "Tesla V100-SXM2-32GB", "util_pct": 94.2, "mem_used_bytes": 871,
             "mem_total_bytes": 1000},
            {"index": 1, "name": "Tesla V100-SXM2-32GB", "util_pct": 12.3, "mem_used_bytes": 156,
             "mem_total_bytes": 1000}]
    total = int(61.4 * GIB)
    used = int(38.2 * GIB)
    line = _format.format_resource_line(gpus=gpus, memory=(total, total - used, used), cpu_pct=42.1,
                                        epoch=44, epochs=200)
    assert line == ("Resource @ epoch 45/200: GPU0(V100): 94.2%/87.1% GPU1(V100): 12.3%/15.6% "
                    "| Mem: 62.2%(38.2G/61.4G) | CPU: 42.1%")
    assert _format.RESOURCE_LINE_RE.match(line)


def test_line_with_rss_and_torch_and_missing_gpu_values():
    gpus = [{"index": 3, "name": "NVIDIA H200", "util_pct": None, "mem_used_bytes": 10,
             "mem_total_bytes": 40}]
    line = _format.format_resource_line(
        gpus=gpus, memory=(64 * GIB, 32 * GIB, 32 * GIB), cpu_pct=0.0, rss_bytes=int(5.1 * GIB),
        torch_mem={"allocated_bytes": int(3.1 * GIB), "reserved_bytes": 4 * GIB, "peak_bytes": int(3.6 * GIB),
                   "num_alloc_retries": 2, "num_ooms": 1}, step=1200)
    assert line == ("Resource @ step 1200: GPU3(H200): N/A%/25.0% | Mem: 50.0%(32.0G/64.0G) | CPU: 0.0% "
                    "| RSS: 5.1G | torch: alloc 3.1G reserved 4.0G peak 3.6G retries 2 ooms 1")
    assert _format.RESOURCE_LINE_RE.match(line)
    # host only: no GPU part, no progress
    host_only = _format.format_resource_line(memory=(8 * GIB, 6 * GIB, 2 * GIB))
    assert host_only == "Resource: Mem: 25.0%(2.0G/8.0G)"
    assert _format.RESOURCE_LINE_RE.match(host_only)
    assert not _format.RESOURCE_LINE_RE.match("Resource @ 00:12:30: GPU0 94.2%/87.1% | Mem 62.3% (38.2G/61.4G)")


@pytest.mark.parametrize("name,short", [
    ("Tesla V100-SXM2-32GB", "V100"), ("NVIDIA H200", "H200"), ("NVIDIA H100 80GB HBM3", "H100"),
    ("NVIDIA A100-SXM4-40GB", "A100"), ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("NVIDIA GeForce RTX 2080 Ti", "RTX 2080"), ("Quadro RTX 8000", "RTX 8000"), ("", "?"), (None, "?")])
def test_short_gpu_names(name, short):
    assert _format.short_gpu_name(name) == short


def test_progress_text():
    assert _format.format_progress(0, 10) == " @ epoch 1/10"
    assert _format.format_progress(4) == " @ epoch 5"
    assert _format.format_progress(None, None, 7) == " @ step 7"
    assert _format.format_progress() == ""


# ---- /proc readers ----------------------------------------------------------------------------

def test_parse_meminfo_uses_memavailable_and_falls_back():
    m = _proc.parse_meminfo(MEMINFO)
    assert m.total == 65929596 * 1024
    assert m.available == 24851208 * 1024
    assert m.used == (65929596 - 24851208) * 1024
    assert round(m.used_pct, 1) == 62.3
    old = _proc.parse_meminfo("MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 50 kB\nCached: 250 kB\n")
    assert old.available == 400 * 1024
    assert _proc.parse_meminfo("garbage") is None
    assert _proc.parse_meminfo("") is None


def test_parse_stat_and_statm():
    assert _proc.parse_stat_cpu(STAT_1) == (1500, 10000)
    assert _proc.parse_stat_cpu("cpu0 1 2 3 4\n") is None
    assert _proc.parse_stat_cpu("cpu  a b c d\n") is None
    assert _proc.parse_statm_rss("1000 250 30 1 0 100 0\n", page_size=4096) == 250 * 4096
    assert _proc.parse_statm_rss("1000") is None


def test_proc_reader_cpu_percent_from_deltas_never_sleeps(tmp_path):
    (tmp_path / "self").mkdir()
    (tmp_path / "stat").write_text(STAT_1)
    (tmp_path / "meminfo").write_text(MEMINFO)
    (tmp_path / "self" / "statm").write_text("1000 250 30 1 0 100 0\n")
    r = _proc.ProcReader(str(tmp_path))
    (tmp_path / "stat").write_text(STAT_2)
    # busy (user+system) 1900-1500 = 400 of total 11000-10000 = 1000 ticks
    assert r.cpu_percent() == pytest.approx(40.0)
    assert r.cpu_percent() is None  # no ticks passed since the previous call
    assert r.memory().total == 65929596 * 1024
    assert r.rss_bytes() == 250 * os.sysconf("SC_PAGE_SIZE")
    gone = _proc.ProcReader(str(tmp_path / "missing"))
    assert gone.cpu_percent() is None and gone.memory() is None and gone.rss_bytes() is None


def test_proc_reader_on_this_machine():
    r = _proc.ProcReader()
    m = r.memory()
    assert m.total > 0 and 0 <= m.available <= m.total
    assert r.rss_bytes() > 1 << 20
    sum(i * i for i in range(200000))  # burn a few ticks
    pct = r.cpu_percent()
    assert pct is None or 0.0 <= pct <= 100.0


# ---- snapshot file ----------------------------------------------------------------------------

def _snapshot_doc(age_s=0.0, interval_ms=1000):
    return {"v": 1, "source": "agent", "time_unix_ns": int((time.time() - age_s) * 1e9),
            "interval_ms": interval_ms,
            "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "util_pct": 93, "mem_used_bytes": 61 * GIB,
                      "mem_total_bytes": 80 * GIB}]}


def test_read_snapshot_fresh_stale_and_broken(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps(_snapshot_doc()))
    assert _snapshot.read_snapshot(str(p))["gpus"][0]["util_pct"] == 93
    p.write_text(json.dumps(_snapshot_doc(age_s=10)))  # 3 x 1 s + 2 s = 5 s of grace
    assert _snapshot.read_snapshot(str(p)) is None
    p.write_text(json.dumps(_snapshot_doc(age_s=10, interval_ms=5000)))
    assert _snapshot.read_snapshot(str(p)) is not None
    p.write_text("{not json")
    assert _snapshot.read_snapshot(str(p)) is None
    p.write_text(json.dumps(dict(_snapshot_doc(), v=2)))
    assert _snapshot.read_snapshot(str(p)) is None
    assert _snapshot.read_snapshot(str(tmp_path / "missing.json")) is None


def test_monitor_uses_run_snapshot_file_for_gpu_part(tmp_path):
    p = tmp_path / "snapshot.json"
    p.write_text(json.dumps(_snapshot_doc()))
    out = io.StringIO()
    mon = trainmon.Monitor(interval=0, stream=out, env={"TRAINMON_SNAPSHOT_FILE": str(p)})
    mon.send("epoch_end", epoch=2, epochs=10)
    line = mon.maybe_print()
    assert line.startswith("Resource @ epoch 3/10: GPU0(H100): 93.0%/76.2% | Mem: ")
    assert trainmon.RESOURCE_LINE_RE.match(line)
    assert out.getvalue() == line + "\n"


def test_no_binary_prints_host_data_and_says_once_how_to_get_gpu_data(tmp_path):
    out = io.StringIO()
    env = {"XDG_RUNTIME_DIR": str(tmp_path), "PATH": str(tmp_path)}
    mon = trainmon.Monitor(interval=0, stream=out, env=env)
    mon.snapshots.binary = None  # as if `trainmon` were on no PATH
    for _ in range(3):
        mon.maybe_print()
    lines = out.getvalue().splitlines()
    notices = [ln for ln in lines if not ln.startswith("Resource")]
    assert len(notices) == 1 and "trainmon` binary was not found" in notices[0]
    resource = [ln for ln in lines if ln.startswith("Resource")]
    assert len(resource) == 3
    assert all(trainmon.RESOURCE_LINE_RE.match(ln) and "GPU" not in ln for ln in resource)


def test_interval_limits_lines_and_disable_switch():
    out = io.StringIO()
    mon = trainmon.Monitor(interval=3600, stream=out, start_agent=False)
    for i in range(100):
        mon.batch_end(epoch=0, batch=i)
    assert mon.lines_printed == 1
    off = trainmon.Monitor(interval=0, stream=out, env={"TRAINMON_DISABLE": "1"})
    off.batch_end(epoch=0, batch=0)
    off.epoch_end(epoch=0)
    assert off.lines_printed == 0


def test_lines_go_through_a_given_logger():
    import logging
    seen = []

    class H(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    lg = logging.getLogger("test_python_unit.fw")
    lg.addHandler(H())
    lg.setLevel(logging.INFO)
    out = io.StringIO()
    mon = trainmon.Monitor(interval=0, logger=lg, stream=out, start_agent=False)
    mon.maybe_print()
    assert len(seen) == 1 and seen[0].startswith("Resource: ") and out.getvalue() == ""


# ---- the datagram client ----------------------------------------------------------------------

class Receiver:
    """A test-side recorder: a listening seqpacket socket that reads on demand."""

    def __init__(self, path, rcvbuf=None):
        self.path = str(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.bind(self.path)
        self.sock.listen(16)
        self.sock.setblocking(False)
        self.rcvbuf = rcvbuf
        self.conns = []

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except BlockingIOError:
                return
            c.setblocking(False)
            self.conns.append(c)

    def messages(self):
        self._accept()
        out = []
        for c in self.conns:
            while True:
                try:
                    data = c.recv(70000)
                except BlockingIOError:
                    break
                if not data:
                    break
                out.append(json.loads(data))
        return out

    def close(self):
        for c in self.conns:
            c.close()
        self.sock.close()
        os.unlink(self.path)


def test_client_sends_versioned_messages_in_order(tmp_path):
    rx = Receiver(tmp_path / "ev.sock")
    c = _client.EventClient(rx.path, run_id="17")
    for e in range(5):
        assert c.send("epoch_end", {"epoch": e, "epochs": 5, "loss": None})
    msgs = rx.messages()
    assert [m["epoch"] for m in msgs] == [0, 1, 2, 3, 4]
    assert [m["seq"] for m in msgs] == [0, 1, 2, 3, 4]
    m = msgs[0]
    assert m["v"] == 3 and m["type"] == "epoch_end" and m["run_id"] == "17" and m["pid"] == os.getpid()
    assert abs(m["t"] - time.time()) < 60
    assert 0 <= time.monotonic() - m["mt"] < 60  # v2: the monotonic clock the recorder compares
    assert "loss" not in m  # None values are left out
    assert c.sent == 5 and c.dropped == 0


def test_client_drops_and_counts_when_recorder_is_gone(tmp_path):
    rx = Receiver(tmp_path / "ev.sock")
    c = _client.EventClient(rx.path)
    assert c.send("hello")
    rx.close()  # the recorder goes away
    t0 = time.monotonic()
    results = [c.send("batch_end", {"batch": i}) for i in range(1000)]
    elapsed = time.monotonic() - t0
    assert not any(results)
    assert c.dropped == 1000 and c.sent == 1
    assert c.last_error and any(k in c.last_error for k in ("ConnectionReset", "BrokenPipe", "ConnectionRefused"))
    print("1000 sends to a vanished recorder took %.1f us each" % (elapsed / 1000 * 1e6))
    never = _client.EventClient(str(tmp_path / "never.sock"))
    assert not never.send("hello") and never.dropped == 1
    # the next message reports the drops
    rx2 = Receiver(tmp_path / "ev.sock")
    c._retry_at = 0
    assert c.send("epoch_end", {"epoch": 1})
    assert rx2.messages()[0]["dropped"] == 1000
    rx2.close()


def test_client_drops_when_recorder_is_slow(tmp_path):
    rx = Receiver(tmp_path / "ev.sock")  # never reads while we send: our socket buffer fills up
    c = _client.EventClient(rx.path)
    t0 = time.monotonic()
    for i in range(20000):
        c.send("batch_end", {"batch": i, "framework": "x" * 100})
    print("20000 sends to a stalled recorder: %.1f us each" % ((time.monotonic() - t0) / 20000 * 1e6))
    assert c.dropped > 0 and c.sent > 10 and c.sent + c.dropped == 20000
    got = rx.messages()
    assert len(got) == c.sent
    assert [m["batch"] for m in got] == sorted(m["batch"] for m in got)
    rx.close()


def test_client_drops_unencodable_and_oversized_messages(tmp_path):
    rx = Receiver(tmp_path / "ev.sock")
    c = _client.EventClient(rx.path)
    assert not c.send("batch_end", {"loss": float("nan")})
    assert not c.send("batch_end", {"framework": "x" * (70 * 1024)})
    assert not c.send("batch_end", {"obj": object()})
    # a type the recorder does not know (it would reject it as unknown_type), of any kind
    for t in ("", "batch-end", "BATCH_END", None, ["batch_end"], 7):
        assert not c.send(t, {"epoch": 1})
    assert "not an event type" in c.last_error or "unhashable" in c.last_error
    assert c.dropped == 9 and rx.messages() == []
    assert c.send("batch_end", {"epoch": 1}) and [m["type"] for m in rx.messages()] == ["batch_end"]
    rx.close()


# ---- integrations driven by stand-in trainers -------------------------------------------------

@pytest.fixture
def recorder(tmp_path, monkeypatch):
    rx = Receiver(tmp_path / "events.sock")
    monkeypatch.setenv("TRAINMON_EVENTS_SOCKET", rx.path)
    monkeypatch.setenv("TRAINMON_RUN_ID", "5")
    monkeypatch.setenv("TRAINMON_NO_AGENT", "1")
    yield rx
    rx.close()


def _types(msgs, kind):
    return [m for m in msgs if m["type"] == kind]


class UltralyticsStandIn:
    """BaseTrainer's callback plumbing: run_callbacks(event) calls each callback(self)."""

    def __init__(self, epochs=3, batches=4):
        self.callbacks = {}
        self.epoch, self.epochs, self.batch_size = 0, epochs, 16
        self.args = types.SimpleNamespace(imgsz=[320, 640])
        self.tloss = None
        self.batches = batches

    def add_callback(self, event, fn):
        self.callbacks.setdefault(event, []).append(fn)

    def run_callbacks(self, event):
        for callback in self.callbacks.get(event, []):
            callback(self)

    def train(self):
        self.run_callbacks("on_train_start")
        for epoch in range(self.epochs):
            self.epoch = epoch
            self.run_callbacks("on_train_epoch_start")
            for i in range(self.batches):
                self.run_callbacks("on_train_batch_start")
                self.tloss = 1.0 / (1 + epoch * self.batches + i)
                self.run_callbacks("on_batch_end")
                self.run_callbacks("on_train_batch_end")
            self.run_callbacks("on_train_epoch_end")
            self.run_callbacks("on_fit_epoch_end")
        self.run_callbacks("on_train_end")


def test_ultralytics_one_instance_on_three_hooks(recorder):
    from trainmon import ultralytics
    out = io.StringIO()
    mon = ultralytics.ResourceMonitor(interval=3600, stream=out, batch_events_per_s=0, logger=None)
    t = UltralyticsStandIn()
    for hook in ("on_train_epoch_end", "on_train_batch_end", "on_fit_epoch_end"):
        t.add_callback(hook, mon)
    t.train()
    msgs = check_all(recorder.messages())
    assert [m["epoch"] for m in _types(msgs, "epoch_end")] == [0, 1, 2]
    assert [m["epoch"] for m in _types(msgs, "val_end")] == [0, 1, 2]
    batches = _types(msgs, "batch_end")
    assert [(m["epoch"], m["batch"]) for m in batches] == [(e, b) for e in range(3) for b in range(4)]
    e0 = _types(msgs, "epoch_end")[0]
    assert e0["epochs"] == 3 and e0["batch_size"] == 16 and e0["imgsz"] == 640 and e0["framework"] == "ultralytics"
    assert e0["rss_bytes"] > 0 and e0["run_id"] == "5"
    assert e0["loss"] == pytest.approx(1.0 / 4)
    assert out.getvalue().startswith("Resource @ epoch 1/3: ")  # first call prints, then 3600 s pause


def test_ultralytics_register_adds_every_hook(recorder):
    from trainmon import ultralytics
    t = UltralyticsStandIn(epochs=2, batches=2)
    rm = ultralytics.register(t, interval=3600, stream=io.StringIO(), logger=None)
    assert sorted(t.callbacks) == sorted(ultralytics.HOOKS)
    t.train()
    kinds = [m["type"] for m in recorder.messages()]
    assert kinds[:3] == ["hello", "train_start", "epoch_start"]
    assert kinds.count("epoch_end") == 2 and kinds[-1] == "train_end"
    assert rm.monitor.dropped == 0


def test_lightning_and_hf_hooks_with_stand_ins(recorder):
    from trainmon import hf, lightning
    cb = lightning.TrainmonCallback(interval=3600, stream=io.StringIO(), batch_events_per_s=0)
    trainer = types.SimpleNamespace(current_epoch=0, max_epochs=2, global_step=0, num_training_batches=3,
                                    sanity_checking=False, callback_metrics={})
    cb.on_train_start(trainer, None)
    for epoch in range(2):
        trainer.current_epoch = epoch
        cb.on_train_epoch_start(trainer, None)
        for i in range(3):
            batch = (types.SimpleNamespace(shape=(8, 3, 32, 32)), None)
            cb.on_train_batch_start(trainer, None, batch, i)
            trainer.global_step += 1
            cb.on_train_batch_end(trainer, None, {"loss": 0.5}, batch, i)
        cb.on_train_epoch_end(trainer, None)
    cb.on_train_end(trainer, None)
    msgs = recorder.messages()
    assert [m["epoch"] for m in _types(msgs, "epoch_end")] == [0, 1]
    b = _types(msgs, "batch_end")
    assert len(b) == 6 and b[-1]["step"] == 6 and b[-1]["batch_size"] == 8 and b[-1]["loss"] == 0.5
    assert all(m["framework"] == "lightning" for m in msgs if m["type"] != "hello")

    cb = hf.TrainmonCallback(interval=3600, stream=io.StringIO(), batch_events_per_s=0)
    args = types.SimpleNamespace(num_train_epochs=2.0, per_device_train_batch_size=4)
    state = types.SimpleNamespace(epoch=0.0, global_step=0)
    cb.on_train_begin(args, state, None)
    for epoch in range(2):
        cb.on_epoch_begin(args, state, None)
        for i in range(5):
            cb.on_step_begin(args, state, None)
            state.global_step += 1
            state.epoch = epoch + (i + 1) / 5
            cb.on_step_end(args, state, None)
            cb.on_log(args, state, None, logs={"loss": 2.0 - state.global_step / 10})
        cb.on_epoch_end(args, state, None)
    cb.on_train_end(args, state, None)
    msgs = recorder.messages()
    ends = _types(msgs, "epoch_end")
    assert [m["epoch"] for m in ends] == [0, 1]
    assert ends[1]["epochs"] == 2 and ends[1]["step"] == 10 and ends[1]["loss"] == pytest.approx(1.0)
    assert len(_types(msgs, "batch_end")) == 10


def test_session_and_step_infer_epoch_boundaries(recorder):
    with trainmon.session(interval=3600, epochs=3, stream=io.StringIO(), batch_events_per_s=0) as mon:
        for epoch in range(3):
            for i in range(4):
                trainmon.step(epoch=epoch, batch_size=32, loss=0.1 * i, epochs=3)
    msgs = recorder.messages()
    kinds = [m["type"] for m in msgs if m["type"] not in ("memory",)]
    assert kinds[0:2] == ["hello", "train_start"]
    assert [m["epoch"] for m in _types(msgs, "epoch_end")] == [0, 1, 2]
    assert [m["epoch"] for m in _types(msgs, "epoch_start")] == [0, 1, 2]
    assert [m["batch"] for m in _types(msgs, "batch_end")] == [0, 1, 2, 3] * 3
    assert kinds[-1] == "train_end"
    seqs = [m["seq"] for m in msgs]
    assert seqs == sorted(seqs) and mon.dropped == 0
    assert trainmon.current() is None


def test_hook_cost_is_reported(recorder):
    """10,000 batch hooks (events to a live socket, lines thinned by interval): prints the
    per-call cost (the bench script compares it with the training step; no timing assertion)."""
    mon = trainmon.Monitor(interval=30, stream=io.StringIO(), batch_events_per_s=0)
    t0 = time.perf_counter()
    for i in range(10000):
        mon.batch_end(epoch=0, batch=i, batch_size=32, loss=0.5)
        if i % 200 == 0:
            recorder.messages()  # keep the socket drained
    per_call_us = (time.perf_counter() - t0) / 10000 * 1e6
    print("hook cost: %.1f us per call (every call sends an event)" % per_call_us)
    assert mon.sent + mon.dropped == 10000 + 2  # + hello + the first line's memory event
