# SPDX-License-Identifier: Apache-2.0
"""Step timing of the Python package (python/trainmon/_timing.py and its callers), without the
trainmon binary: the timer driven with exact times, the loop API, the framework callbacks driven by
stand-ins that call the hooks in the libraries' order on a fake clock (exact figures), windows and
their statistics, the heartbeat, thread and fork safety of the client, identity and hello, the
training part of the resource line. Every message received is checked against the protocol."""

import io
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import types

import pytest

from test_python_helpers import (PYTHON_DIR, Clock, HFStandIn, LightningStandIn, Receiver,
                                 UltralyticsStandIn, check_all, check_message, of_type, reset_package,
                                 window_totals, windows)

import trainmon  # noqa: E402
from trainmon import _auto, _client, _format, _identity, _monitor, _timing, hf, lightning, ultralytics  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_package():
    reset_package()
    yield
    reset_package()


@pytest.fixture
def recorder(tmp_path, monkeypatch):
    rx = Receiver(tmp_path / "events.sock")
    monkeypatch.setenv("TRAINMON_EVENTS_SOCKET", rx.path)
    monkeypatch.setenv("TRAINMON_RUN_ID", "7")
    monkeypatch.setenv("TRAINMON_NO_AGENT", "1")
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK", "NODE_RANK", "SLURM_NODEID"):
        monkeypatch.delenv(name, raising=False)
    yield rx
    rx.close()


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    for mod in (_timing, _monitor, lightning, hf, ultralytics, _auto):
        monkeypatch.setattr(mod, "_mono", c)
    return c


class Batch:
    """A tensor-like batch: only .shape is read."""

    def __init__(self, n):
        self.shape = (n, 3, 32, 32)


# ---- the timer, driven with exact times --------------------------------------------------------

def test_loop_steps_data_wait_and_samples_exact():
    T = _timing.timer()
    T.collect = True
    key = "train"
    t = 100.0
    for i in range(4):
        T.loader_batch(key, 1, t, t + 0.25, (Batch(32), None))   # 0.25 s in next()
        t += 0.25 + 0.75                                          # 0.75 s of compute
        assert T.loop_step(t)
    w = T.take_window()
    # The first step starts at the first next(); the others at the previous step end.
    assert w["n"] == 4 and w["samples"] == 128
    assert w["step_s"] == {"sum": 4.0, "min": 1.0, "max": 1.0, "p50": 1.0, "p90": 1.0, "p99": 1.0}
    assert w["data_s"]["sum"] == 1.0 and w["data_s"]["p50"] == 0.25
    assert w["span_s"] == 4.0
    assert w["total"] == {"steps": 4, "samples": 128, "step_s": 4.0, "data_s": 1.0}
    assert w["last_step_mt"] == 104.0 and w["phase"] == "compute"
    empty = T.take_window()
    assert empty["n"] == 0 and "step_s" not in empty and empty["total"]["steps"] == 4


def test_gradient_accumulation_sums_micro_batches():
    T = _timing.timer()
    T.collect = True
    t = 0.0
    T.arm(t)
    for step in range(3):
        for micro in range(4):
            T.loader_batch("tr", 9, t, t + 0.1, [Batch(8), Batch(8)])
            t += 0.1 + 0.2
        T.loop_step(t)
    w = T.take_window()
    assert w["n"] == 3 and w["samples"] == 3 * 4 * 8
    assert w["step_s"]["min"] == pytest.approx(1.2) and w["step_s"]["max"] == pytest.approx(1.2)
    assert w["data_s"]["sum"] == pytest.approx(3 * 0.4)


def test_evaluation_loader_between_steps_is_neither_step_nor_data():
    T = _timing.timer()
    T.collect = True
    t = 0.0
    # sanity evaluation before training: the val loader delivers batches, no step follows them
    T.loader_iter("val", t, t + 0.5)
    t += 0.5
    for i in range(3):
        T.loader_batch("val", 2, t, t + 0.1, Batch(64))
        t += 0.3
    T.loader_stop("val", t, t + 0.01)
    t += 5.0  # metrics, logging: not step time
    steps = []
    for epoch in range(2):
        T.loader_iter("train", t, t + 0.2)  # workers start: data wait of the epoch's first step
        t += 0.2
        for i in range(3):
            T.loader_batch("train", 10 + epoch, t, t + 0.05, Batch(16))
            t += 0.05 + 0.45
            assert T.loop_step(t)
            steps.append(T.take_window())
        T.loader_stop("train", t, t + 0.01)
        t += 0.01
        # evaluation at the epoch end: 4 batches and 3 s of work
        T.loader_iter("val", t, t + 0.5)
        t += 0.5
        for i in range(4):
            T.loader_batch("val", 20 + epoch, t, t + 0.1, Batch(64))
            t += 0.75
        T.loader_stop("val", t, t + 0.01)
        t += 0.01
    durations = [w["step_s"]["sum"] for w in steps]
    datas = [w["data_s"]["sum"] for w in steps]
    # first step of each epoch: iter (0.2) + next (0.05) + compute (0.45); others 0.5
    assert durations == pytest.approx([0.7, 0.5, 0.5, 0.7, 0.5, 0.5])
    assert datas == pytest.approx([0.25, 0.05, 0.05, 0.25, 0.05, 0.05])
    assert all(w["samples"] == 16 for w in steps)
    assert not T._loaders["val"].training and T._loaders["train"].training
    assert T.training_epochs() == 2 and T.current_epoch() == 1  # the last epoch, finished
    assert T.phase == "idle"  # evaluation after the last step


def test_several_loaders_in_one_step_are_all_training():
    T = _timing.timer()
    T.collect = True
    t = 0.0
    for i in range(3):
        T.loader_batch("labelled", 1, t, t + 0.1, Batch(4))
        T.loader_batch("unlabelled", 2, t + 0.1, t + 0.3, Batch(12))
        t += 1.0
        T.loop_step(t)
    T.take_window()
    T.loader_batch("labelled", 1, t, t + 0.1, Batch(4))
    T.loader_batch("unlabelled", 2, t + 0.1, t + 0.3, Batch(12))
    T.loop_step(t + 1.0)
    w = T.take_window()
    # from the second batch of each iterator on, a step ended between its batches: both credited
    assert T._loaders["labelled"].training and w["samples"] == 16 and w["data_s"]["sum"] == pytest.approx(0.3)


def test_two_optimizers_per_iteration_count_once():
    T = _timing.timer()
    t = 0.0
    counted = []
    for i in range(5):  # GAN: one batch, D.step then G.step
        T.loader_batch("d", 1, t, t + 0.1, Batch(8))
        counted.append(T.optimizer_step("D", t + 0.5))
        counted.append(T.optimizer_step("G", t + 0.9))
        t += 1.0
    assert counted == [True, False] * 5 and T.steps == 5
    T2 = _timing.StepTimer()  # no loader at all: the first optimizer's steps are the iterations
    got = [T2.optimizer_step(name, float(i)) for i, name in enumerate("DGDGDG")]
    assert got == [False, False, True, False, True, False]  # the first D starts the clock
    assert T2.steps == 2 and T2.step_s == pytest.approx(4.0)


def test_levels_framework_outranks_loop_and_auto():
    T = _timing.timer()
    T.claim(_timing.FRAMEWORK, "lightning")
    T.loader_batch("x", 1, 0.0, 1.0, Batch(2))
    assert not T.loop_step(2.0) and not T.optimizer_step("o", 2.0) and T.steps == 0
    T.batch_start(3.0, 8)  # no resumption before it: the wait is unknown, counted as none
    T.batch_end(4.0)
    T.drain()
    assert T.steps == 1 and T.step_s == 1.0 and T.data_s == 0.0
    assert T.framework == "lightning"
    T.release(_timing.FRAMEWORK)
    assert T.level == _timing.AUTO and T.framework is None
    T.claim(_timing.LOOP, "loop")
    assert not T.optimizer_step("o", 5.0)  # loop marks only
    assert not T.loop_step(6.0)  # nothing to time the first loop step from: it starts the clock
    assert T.loop_step(6.5) and T.steps == 2 and T.step_s == 1.5


def test_framework_pause_and_resume():
    T = _timing.timer()
    T.collect = True
    T.resume(0.0)
    T.batch_start(0.3, 8)
    T.batch_end(1.0)
    assert T.phase == "data" and T.phase_mt == 1.0  # the phase is current before any drain
    T.pause(1.0)            # validation
    assert T.phase == "idle"
    T.resume(11.0)          # 10 s later
    T.batch_start(11.2, 8)
    T.batch_end(12.0)
    T.pause(12.0)
    T.batch_end(13.0)  # a batch end while paused (no start hook): no step
    w = T.take_window()
    assert w["n"] == 2 and w["samples"] == 16
    # each step runs from the resumption to the batch end; the 10 s of validation are in none
    assert w["step_s"]["min"] == pytest.approx(1.0) and w["step_s"]["max"] == pytest.approx(1.0)
    assert w["data_s"]["min"] == pytest.approx(0.2) and w["data_s"]["max"] == pytest.approx(0.3)


def test_window_percentiles_are_exact_nearest_rank():
    T = _timing.timer()
    T.collect = True
    t = 0.0
    durations = [0.01 * (i % 17 + 1) for i in range(101)]
    T.resume(t)
    for d in durations:
        T.batch_start(t + d / 4, 1)
        t += d
        T.batch_end(t)
    w = T.take_window()
    s = sorted(durations)

    def rank(q):
        return s[max(0, math.ceil(q * len(s)) - 1)]

    assert w["n"] == 101 and w["samples"] == 101
    assert w["step_s"]["sum"] == pytest.approx(sum(durations), abs=1e-5)
    for name, q in (("p50", .5), ("p90", .9), ("p99", .99)):
        assert w["step_s"][name] == pytest.approx(rank(q), abs=1e-6)
    assert w["step_s"]["min"] == pytest.approx(s[0]) and w["step_s"]["max"] == pytest.approx(s[-1])
    assert w["data_s"]["sum"] == pytest.approx(sum(durations) / 4, abs=1e-5)
    check_message({"v": 3, "type": "batch_end", "t": time.time(), "mt": 1.0, "steps": w})


def test_line_figures():
    T = _timing.timer()
    T.line_wanted = True
    T.resume(0.0)
    t = 0.0
    for d in (0.4, 0.5, 0.6):
        T.batch_start(t + 0.1, 100)
        t += d
        T.batch_end(t)
    rate, median, share = T.take_line()
    assert rate == pytest.approx(300 / 1.5) and median == pytest.approx(0.5) and share == pytest.approx(20.0)
    assert T.take_line() is None


# ---- the loop API and the line ----------------------------------------------------------------

def test_loader_and_step_with_a_real_iterable(recorder, clock):
    class Slow:
        """An iterable whose next() takes 0.2 s of the fake clock."""

        def __init__(self, n):
            self.n = n

        def __len__(self):
            return self.n

        def __iter__(self):
            for i in range(self.n):
                clock.sleep(0.2)
                yield (Batch(10), i)

    out = io.StringIO()
    data = Slow(5)
    wrapped = trainmon.loader(data)
    assert len(wrapped) == 5 and wrapped.n == 5
    with trainmon.session(interval=3600, stream=out, batch_events_per_s=0):
        for epoch in range(2):
            for x, i in trainmon.loader(trainmon.loader(data)):  # nested wrappers count once
                clock.sleep(0.3)
                trainmon.step(epoch=epoch, loss=0.5)
    msgs = check_all(recorder.messages())
    n, step, wait = window_totals(msgs)
    assert n == 10
    assert step == pytest.approx(10 * 0.5, abs=1e-4) and wait == pytest.approx(10 * 0.2, abs=1e-4)
    end = of_type(msgs, "train_end")[0]["steps"]
    assert end["total"] == {"steps": 10, "samples": 100, "step_s": pytest.approx(5.0), "data_s": pytest.approx(2.0)}
    assert [m["epoch"] for m in of_type(msgs, "epoch_end")] == [0, 1]
    hello = of_type(msgs, "hello")[0]
    assert hello["framework"] == "loop" and hello["lines"] == 3600 and "stack_signal" in hello


def test_step_keeps_its_arguments_and_batch_size_without_loader(recorder, clock):
    with trainmon.session(interval=None, batch_events_per_s=0):
        for i in range(3):
            clock.sleep(0.1)
            trainmon.step(epoch=0, batch_size=4, loss=float("nan"), lr=1e9, step=10 ** 20)
    msgs = check_all(recorder.messages())
    b = of_type(msgs, "batch_end")
    assert [m["batch"] for m in b] == [0, 1, 2]
    assert all("loss" not in m and "lr" not in m and "step" not in m for m in b)  # out of range: left out
    assert b[-1]["steps"]["total"] == {"steps": 3, "samples": 12, "step_s": pytest.approx(0.3)}
    assert "data_s" not in b[-1]["steps"]["total"]  # no loader: data wait unknown, not zero
    assert "lines" not in of_type(msgs, "hello")[0]


def test_resource_line_has_the_training_part_and_only_rank_zero_prints(recorder, clock, monkeypatch):
    out = io.StringIO()
    mon = trainmon.Monitor(interval=0, stream=out, start_agent=False)
    T = mon.timer
    T.resume(clock())
    for i in range(4):
        clock.sleep(0.1)
        T.batch_start(clock(), 32)
        clock.sleep(0.3)
        T.batch_end(clock())
    line = mon.maybe_print()
    assert line.endswith(" | train: 80.0 samples/s step 0.400s data 25.0%"), line
    assert trainmon.RESOURCE_LINE_RE.match(line)
    msgs = check_all(recorder.messages())
    assert of_type(msgs, "memory") and of_type(msgs, "hello")[0]["lines"] == 0


def test_other_ranks_print_no_line_and_say_so(recorder, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    out = io.StringIO()
    mon = trainmon.Monitor(interval=0, stream=out)
    assert mon.maybe_print() is None and mon.lines_printed == 0 and out.getvalue() == ""
    mon.send("epoch_end", epoch=0)
    hello = of_type(check_all(recorder.messages()), "hello")
    assert len(hello) == 1 and hello[0]["rank"] == 1 and "lines" not in hello[0]


def test_resource_line_regex_forms():
    ok = ["Resource @ epoch 45/200: GPU0(V100): 94.2%/87.1% GPU1(V100): 12.3%/15.6% | Mem: 62.3%(38.2G/61.4G) "
          "| CPU: 42.1%",
          "Resource @ 00:12:30: GPU0(H100): 93.0%/76.2% | Mem: 62.3%(38.2G/61.4G) | CPU: 42.1% "
          "| train: 1234.5 samples/s step 0.412s data 12.3%",
          "Resource @ 123:00:05: Mem: 1.0%(1.0G/64.0G) | train: step 0.412s",
          "Resource @ step 9: Mem: 1.0%(1.0G/64.0G) | RSS: 5.1G | train: step 1.000s data 0.0%"]
    for line in ok:
        assert trainmon.RESOURCE_LINE_RE.match(line), line
    for bad in ("Resource @ 0:1:2: Mem: 1.0%(1.0G/64.0G)", "Resource: Mem: 1.0%(1.0G/64.0G) | train: 12 samples/s",
                "Resource: Mem: 1.0%(1.0G/64.0G) | train: step 1.0s"):
        assert not trainmon.RESOURCE_LINE_RE.match(bad), bad
    assert _format.format_progress(elapsed_s=45030) == " @ 12:30:30"
    assert _format.format_train(None, 0.5, None) == "train: step 0.500s"
    assert _format.format_train(10, float("nan"), 5) is None


# ---- framework callbacks on a fake clock ------------------------------------------------------

def _work(clock, fetch_s, compute_s, val_s):
    return (lambda i: (clock.sleep(fetch_s), Batch(8))[1],
            lambda batch: (clock.sleep(compute_s), 0.5)[1],
            lambda: clock.sleep(val_s))


def test_lightning_order_excludes_validation(recorder, clock):
    cb = lightning.TrainmonCallback(interval=None, batch_events_per_s=0)
    fetch, compute, validate = _work(clock, 0.05, 0.15, 2.0)
    LightningStandIn(cb, epochs=2, batches=6, fetch=fetch, compute=compute, validate=validate, val_every=3).fit()
    msgs = check_all(recorder.messages())
    ws = windows(msgs)
    steps = [w for w in ws if w["n"]]
    assert sum(w["n"] for w in steps) == 12
    assert all(w["step_s"]["min"] == pytest.approx(0.2) and w["step_s"]["max"] == pytest.approx(0.2) for w in steps)  # validation never in a step
    assert all(w["data_s"]["min"] == pytest.approx(0.05) and w["data_s"]["max"] == pytest.approx(0.05) for w in steps)
    assert of_type(msgs, "train_end")[0]["steps"]["total"]["samples"] == 96
    assert len(of_type(msgs, "val_end")) == 4  # mid-epoch and epoch-end validations, no sanity check
    assert of_type(msgs, "hello")[0]["framework"] == "lightning"
    assert _timing.timer().level == _timing.AUTO  # released at on_train_end


def test_hf_order_counts_updates_and_excludes_evaluation(recorder, clock):
    cb = hf.TrainmonCallback(interval=None, batch_events_per_s=0)
    fetch, compute, validate = _work(clock, 0.02, 0.1, 1.0)
    HFStandIn(cb, epochs=2, updates=5, fetch=fetch, compute=compute, validate=validate, per_device=8, gas=2,
              eval_steps=3, save_steps=4).train()
    msgs = check_all(recorder.messages())
    steps = [w for w in windows(msgs) if w["n"]]
    assert sum(w["n"] for w in steps) == 10
    # get_batch_samples fetches both micro-batches before on_step_begin
    assert all(w["data_s"]["min"] == pytest.approx(0.04) and w["data_s"]["max"] == pytest.approx(0.04) for w in steps)
    assert all(w["step_s"]["min"] == pytest.approx(0.24) and w["step_s"]["max"] == pytest.approx(0.24) for w in steps)
    assert all(w["samples"] == 16 for w in steps)
    assert len(of_type(msgs, "val_end")) == 3


def test_ultralytics_order_world_size_and_validation(recorder, clock):
    fetch, compute, validate = _work(clock, 0.03, 0.07, 5.0)
    t = UltralyticsStandIn(epochs=3, batches=4, fetch=fetch, compute=compute, validate=validate,
                           batch_size=32, world_size=2)
    rm = ultralytics.register(t, interval=None, batch_events_per_s=0)
    t.train()
    msgs = check_all(recorder.messages())
    steps = [w for w in windows(msgs) if w["n"]]
    assert sum(w["n"] for w in steps) == 12 and all(w["samples"] == 16 for w in steps)
    assert all(w["step_s"]["min"] == pytest.approx(0.1) and w["step_s"]["max"] == pytest.approx(0.1) for w in steps)
    assert all(w["data_s"]["min"] == pytest.approx(0.03) and w["data_s"]["max"] == pytest.approx(0.03) for w in steps)
    assert all(m["batch_size"] == 16 for m in of_type(msgs, "batch_end"))
    assert rm.monitor.dropped == 0


def test_ultralytics_article_form_times_steps_without_data_wait(recorder, clock):
    fetch, compute, validate = _work(clock, 0.03, 0.07, 5.0)
    t = UltralyticsStandIn(epochs=2, batches=4, fetch=fetch, compute=compute, validate=validate)
    mon = ultralytics.ResourceMonitor(interval=None, batch_events_per_s=0)
    for hook in ("on_train_epoch_end", "on_train_batch_end", "on_fit_epoch_end"):
        t.add_callback(hook, mon)
    t.train()
    msgs = check_all(recorder.messages())
    steps = [w for w in windows(msgs) if w["n"]]
    # epoch 0's first batch has no start (no epoch-start hook); epoch 1 starts at on_fit_epoch_end
    assert sum(w["n"] for w in steps) == 7
    assert all(w["step_s"]["min"] == pytest.approx(0.1) and w["step_s"]["max"] == pytest.approx(0.1) for w in steps)
    assert all("data_s" not in w for w in steps)


def test_explicit_callback_outranks_the_zero_code_hook(recorder, clock):
    auto = trainmon.Monitor(interval=None, framework="torch")
    auto.report_level = _timing.AUTO
    T = auto.timer
    cb = lightning.TrainmonCallback(interval=None, batch_events_per_s=0)
    T.loader_batch("dl", 1, clock(), clock() + 0.1, Batch(4))
    assert not T.optimizer_step("opt", clock() + 1)  # the hook's marks are ignored
    fetch, compute, validate = _work(clock, 0.05, 0.15, 2.0)
    LightningStandIn(cb, epochs=1, batches=3, fetch=fetch, compute=compute, validate=validate).fit()
    assert T.steps == 3


# ---- heartbeat, threads, fork ------------------------------------------------------------------

def test_heartbeat_after_a_second_of_silence(recorder):
    mon = trainmon.Monitor(interval=None, batch_events_per_s=0)
    T = mon.timer
    t = time.monotonic()
    T.resume(t)
    T.batch_start(t + 0.01, 4)
    T.batch_end(t + 0.02)
    mon.batch_end(epoch=0, batch=0)
    sent_at = time.monotonic()
    deadline = sent_at + 5
    beats = []
    while time.monotonic() < deadline and len(beats) < 2:
        time.sleep(0.05)
        beats += of_type(recorder.messages(), "heartbeat")
    assert len(beats) >= 2, "no heartbeat"
    check_all(beats)
    assert beats[0]["mt"] - sent_at >= 0.95
    assert beats[1]["mt"] - beats[0]["mt"] == pytest.approx(1.0, abs=0.5)
    hb = beats[0]["steps"]
    assert hb["n"] == 0 and hb["total"]["steps"] == 1 and hb["last_step_mt"] == pytest.approx(t + 0.02)
    assert hb["phase"] == "data"
    threads = [th for th in threading.enumerate() if th.name == "trainmon-heartbeat"]
    assert len(threads) == 1 and threads[0].daemon


def test_client_send_is_safe_from_two_threads(recorder):
    c = _client.EventClient(recorder.path)
    got = []

    def drain():
        while len(got) < 4000:
            got.extend(recorder.messages())
            time.sleep(0.001)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()

    def blast(tag):
        for i in range(2000):
            while not c.send("memory", {"framework": tag}):
                time.sleep(0.0005)  # our buffer is full: let the reader catch up

    threads = [threading.Thread(target=blast, args=(k,)) for k in ("a", "b")]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    reader.join(timeout=10)
    assert sorted(m["seq"] for m in got if "dropped" not in m or True)[-1] >= 3999
    sent = [m for m in got]
    assert len(sent) == 4000 and len({m["seq"] for m in sent}) == 4000


def test_fork_gives_the_child_a_fresh_lock_and_timer(recorder):
    mon = trainmon.Monitor(interval=None, batch_events_per_s=0)
    T = mon.timer
    T.resume(time.monotonic())
    T.batch_start(time.monotonic(), 2)
    T.batch_end(time.monotonic())
    mon.send("epoch_end", epoch=0)
    mon.client._lock.acquire()  # as if the heartbeat thread held it at fork time
    pid = os.fork()
    if pid == 0:  # child: must not deadlock, must not claim the parent's steps
        code = 1
        try:
            ok = mon.client.send("epoch_end", {"epoch": 5})
            code = 0 if ok and _timing.timer().steps == 0 and mon.client.sent == 1 else 2
        finally:
            os._exit(code)
    mon.client._lock.release()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    msgs = check_all(recorder.messages())
    child = [m for m in msgs if m["pid"] == pid]
    assert [m["epoch"] for m in child] == [5] and child[0]["seq"] == 0


# ---- identity ----------------------------------------------------------------------------------

def test_hello_identity_from_environment_and_a_new_hello_on_change(recorder, monkeypatch, clock):
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("GROUP_RANK", "2")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-aaaa,GPU-bbbb")
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    monkeypatch.setenv("RANK", "99999999")  # out of range: left out
    mon = trainmon.Monitor(interval=None)
    mon.send("train_start")
    fake = types.ModuleType("torch.distributed")
    fake.is_available = lambda: True
    fake.is_initialized = lambda: True
    fake.get_rank = lambda: 3
    fake.get_world_size = lambda: 4
    monkeypatch.setitem(sys.modules, "torch.distributed", fake)  # init_process_group happened
    clock.sleep(1.5)
    mon.send("epoch_start", epoch=0)
    msgs = check_all(recorder.messages())
    hellos = of_type(msgs, "hello")
    assert len(hellos) == 2
    first, second = hellos
    assert "rank" not in first and first["local_rank"] == 1 and first["world_size"] == 4
    assert first["node_rank"] == 2 and first["cuda_visible_devices"] == "GPU-aaaa,GPU-bbbb"
    assert first["cuda_device_order"] == "PCI_BUS_ID" and first["host"]
    assert second["rank"] == 3
    assert of_type(msgs, "epoch_start")[0]["rank"] == 3  # every later message names its rank


def test_cuda_device_and_uuid_from_a_torch_that_uses_cuda(recorder, monkeypatch):
    """Read only when the script initialised CUDA (a stand-in torch: this machine has no GPU)."""
    from trainmon import _torch
    fake = types.ModuleType("torch")
    props = types.SimpleNamespace(uuid="8f3b2c1d-0000-1111-2222-333344445555")
    fake.cuda = types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 1,
                                      get_device_properties=lambda i: props,
                                      is_available=lambda: (_ for _ in ()).throw(AssertionError("asked the driver")))
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setattr(_torch, "_uuids", {})
    fields = _identity.identity(framework="torch")
    assert fields["gpu"] == 1 and fields["gpu_uuid"] == "GPU-8f3b2c1d-0000-1111-2222-333344445555"
    fake.cuda.is_initialized = lambda: False  # not initialised: nothing read, nothing initialised
    assert "gpu" not in _identity.identity()


# ---- stacks (issue 18) --------------------------------------------------------------------------

STACK_CHILD = textwrap.dedent("""
    import sys, threading, time
    sys.path.insert(0, sys.argv[1])
    import trainmon
    mon = trainmon.Monitor(interval=None)
    mon.send("train_start")
    lock = threading.Lock()
    lock.acquire()
    def sleeper():
        time.sleep(3.0)  # SLEEPING-LINE
    threading.Thread(target=sleeper, daemon=True).start()
    threading.Timer(2.5, lock.release).start()
    threading.Timer(0.2, lambda: print("READY", flush=True)).start()  # once the main thread waits
    lock.acquire()  # BLOCKED-LINE
    print("CONTINUED", flush=True)
""")


def test_stack_signal_dumps_every_thread_and_the_process_continues(tmp_path, monkeypatch):
    rx = Receiver(tmp_path / "events.sock", thread=True)
    env = dict(os.environ, TRAINMON_EVENTS_SOCKET=rx.path, TRAINMON_NO_AGENT="1")
    script = tmp_path / "child.py"
    script.write_text(STACK_CHILD)
    p = subprocess.Popen([sys.executable, str(script), PYTHON_DIR], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "READY"
        hello = None
        for _ in range(100):
            hellos = [m for m in rx.got + [] if m["type"] == "hello"] or of_type(rx.messages(), "hello")
            if hellos:
                hello = hellos[0]
                break
            time.sleep(0.02)
        assert hello and hello["stack_signal"] == signal.SIGRTMIN + 6
        status = open("/proc/%d/status" % p.pid).read()
        caught = int([ln for ln in status.splitlines() if ln.startswith("SigCgt:")][0].split()[1], 16)
        assert caught & (1 << (hello["stack_signal"] - 1)), "handler not installed"
        os.kill(p.pid, hello["stack_signal"])
        path = tmp_path / ("stacks-%d.txt" % p.pid)
        text = ""
        for _ in range(100):
            text = path.read_text() if path.exists() else ""
            if "in <module>" in text:  # the signalled (main) thread comes last
                break
            time.sleep(0.02)
        out, err = p.communicate(timeout=20)
        text = path.read_text()  # complete now (faulthandler writes thread by thread)
    finally:
        if p.poll() is None:
            p.kill()
        rx.close()
    assert "CONTINUED" in out and p.returncode == 0, err
    assert (path.stat().st_mode & 0o777) == 0o600
    lines = STACK_CHILD.splitlines()
    blocked = 1 + next(i for i, ln in enumerate(lines) if "BLOCKED-LINE" in ln)
    sleeping = 1 + next(i for i, ln in enumerate(lines) if "SLEEPING-LINE" in ln)
    assert 'child.py", line %d in <module>' % blocked in text, text   # lock.acquire()
    assert 'child.py", line %d in sleeper' % sleeping in text, text   # time.sleep(3.0)
    assert "Thread 0x" in text and text.count("Thread 0x") >= 2


def test_stacks_file_refuses_a_symlink(tmp_path):
    from trainmon import _stacks
    target = tmp_path / "elsewhere"
    target.write_text("")
    link = tmp_path / "stacks-1.txt"
    link.symlink_to(target)
    with pytest.raises(OSError):
        _stacks._open_private(str(link))
    own = tmp_path / "stacks-2.txt"
    own.write_text("old\n")
    os.chmod(own, 0o600)
    f = _stacks._open_private(str(own))  # a reused pid's file of ours: appended to
    f.write("new\n")
    f.close()
    assert own.read_text() == "old\nnew\n"


# ---- the drain's bulk runs apply the same rules as one entry at a time ------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_OPS = st.lists(st.tuples(st.sampled_from(["batch_a", "batch_b", "opt_d", "opt_g", "loop", "fstart", "fend",
                                            "pause", "resume", "iter_a", "stop_a", "step"]),
                          st.floats(0.0, 0.5), st.integers(-1, 64), st.integers(0, 2)),
                min_size=1, max_size=300)


def _journal_of(ops):
    """Journal entries as the hooks write them, on an increasing clock; "step" repeats the steady
    state (a training batch then its optimizer step) so that long bulk runs occur."""
    t = 100.0
    out = []
    for op, dt, n, it in ops:
        t += dt
        n = n if n > 0 else -1
        if op == "batch_a" or op == "batch_b":
            out.append((_timing.J_BATCH, op[-1], it, t, t + dt / 2, n))
            t += dt / 2
        elif op == "step":
            for _ in range(1 + it * 3):
                out.append((_timing.J_BATCH, "a", it, t, t + dt / 3, n))
                out.append((_timing.J_OPT, "d", t + dt))
                t += dt + 0.001
        elif op.startswith("opt_"):
            out.append((_timing.J_OPT, op[-1], t))
        elif op == "loop":
            out.append((_timing.J_LOOP, t, n if n > 0 else None))
        elif op == "fstart":
            out.append((_timing.J_FSTART, t, n if n > 0 else None))
        elif op == "fend":
            out.append((_timing.J_FEND, t, n if n > 0 else None))
        elif op == "pause":
            out.append((_timing.J_PAUSE, t))
        elif op == "resume":
            out.append((_timing.J_RESUME, t))
        elif op == "iter_a":
            out.append((_timing.J_ITER, "a", t, t + dt))
        else:
            out.append((_timing.J_STOP, "a", t, t + dt))
    return out


def _applied(entries, bulk):
    T = _timing.StepTimer()
    T.collect = True
    T.line_wanted = True
    windows = []
    for i, e in enumerate(entries):
        T.journal.append(e)
        if not bulk:
            T.drain()  # one entry at a time: the general rules only
        elif i % 97 == 96:
            windows.append(T.take_window())
    if not bulk:
        # the same windows, cut at the same entries
        T2 = _timing.StepTimer()
        T2.collect = True
        T2.line_wanted = True
        for i, e in enumerate(entries):
            T2.journal.append(e)
            T2.drain()
            if i % 97 == 96:
                windows.append(T2.take_window())
        T = T2
    windows.append(T.take_window())
    return T, windows, T.take_line()


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(_OPS)
def test_bulk_drain_equals_one_entry_at_a_time(ops):
    entries = _journal_of(ops)
    bulk, bw, bl = _applied(entries, True)
    one, ow, ol = _applied(entries, False)
    assert (bulk.steps, bulk.samples, bulk.samples_known, bulk.data_known) == \
        (one.steps, one.samples, one.samples_known, one.data_known)
    assert bulk.step_s == pytest.approx(one.step_s, abs=1e-9) and bulk.data_s == pytest.approx(one.data_s, abs=1e-9)
    assert bulk.last_mt == one.last_mt and bulk._prev_end == one._prev_end and bulk._f_start == one._f_start
    assert len(bw) == len(ow)
    for a, b in zip(bw, ow):
        if a is None or b is None:
            assert a is b
            continue
        assert a["n"] == b["n"] and a.get("samples") == b.get("samples") and a.get("span_s") == b.get("span_s")
        for key in ("step_s", "data_s"):
            assert (key in a) == (key in b)
            if key in a:
                for stat in ("min", "max", "p50", "p90", "p99"):
                    assert a[key][stat] == b[key][stat], (key, stat)
                assert a[key]["sum"] == pytest.approx(b[key]["sum"], abs=2e-6)
        assert a["total"]["steps"] == b["total"]["steps"]
    if bl is None or ol is None:
        assert bl is ol
    else:
        assert bl[1] == ol[1]
        for x, y in ((bl[0], ol[0]), (bl[2], ol[2])):
            assert (x is None) == (y is None) and (x is None or x == pytest.approx(y, rel=1e-9))
