# SPDX-License-Identifier: Apache-2.0
"""End to end: a real small CNN (torch, CPU) trained on synthetic images, once per integration
style (plain loop with trainmon.session/step, Ultralytics, Lightning and Hugging Face stand-in
trainers that call the callbacks exactly as those frameworks do), under `trainmon run` with the
fake NVML driver; and once outside it, where the package starts `trainmon agent` for GPU data.

This file is also the training script: `python3 test_python_training.py STYLE EPOCHS BATCHES`.
"""

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("TRAINMON_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
PYTHON_DIR = os.path.join(SOURCE_DIR, "python")
STYLES = ("loop", "ultralytics", "lightning", "hf")
EPOCHS, BATCHES = 4, 60  # 240 optimisation steps


# ---------------------------------------------------------------------------------------------
# The training script (runs in the child process)
# ---------------------------------------------------------------------------------------------

def _model_and_data(torch, n_batches, batch_size=16):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(16, 10))
    images = torch.randn(n_batches, batch_size, 3, 32, 32)
    labels = torch.randint(0, 10, (n_batches, batch_size))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    return model, images, labels, opt


def _train_step(torch, model, opt, x, y):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()


def train(style, epochs, batches, interval):
    import torch
    sys.path.insert(0, PYTHON_DIR)
    import trainmon

    model, images, labels, opt = _model_and_data(torch, batches)
    if style == "loop":
        with trainmon.session(interval=interval, epochs=epochs, batch_size=16, imgsz=32,
                              batch_events_per_s=0):
            for epoch in range(epochs):
                for i in range(batches):
                    loss = _train_step(torch, model, opt, images[i], labels[i])
                    trainmon.step(epoch=epoch, batch=i, batch_size=16, loss=loss, epochs=epochs)
    elif style == "ultralytics":
        from trainmon import ultralytics

        class Trainer:  # ultralytics 8.x BaseTrainer: callback plumbing and _do_train's hook order
            def __init__(self):
                self.callbacks = {}
                self.epoch, self.epochs, self.batch_size = 0, epochs, 16
                self.args = types.SimpleNamespace(imgsz=32)
                self.tloss = None

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
                    for i in range(batches):
                        self.run_callbacks("on_train_batch_start")  # the batch has arrived
                        loss = _train_step(torch, model, opt, images[i], labels[i])
                        self.tloss = loss if self.tloss is None else (self.tloss * i + loss) / (i + 1)
                        self.run_callbacks("on_batch_end")
                        self.run_callbacks("on_train_batch_end")
                    self.run_callbacks("on_train_epoch_end")
                    self.run_callbacks("on_model_save")
                    self.run_callbacks("on_fit_epoch_end")
                self.run_callbacks("on_train_end")

        yolo = Trainer()
        # The article's form: one callback object on the epoch hook, plus the batch and fit hooks.
        mon = ultralytics.ResourceMonitor(interval=interval, batch_events_per_s=0)
        for hook in ("on_train_epoch_end", "on_train_batch_end", "on_fit_epoch_end"):
            yolo.add_callback(hook, mon)
        yolo.train()
    elif style == "lightning":
        from trainmon import lightning
        cb = lightning.TrainmonCallback(interval=interval, batch_events_per_s=0)
        trainer = types.SimpleNamespace(current_epoch=0, max_epochs=epochs, global_step=0,
                                        num_training_batches=batches, sanity_checking=False,
                                        callback_metrics={})
        # lightning 2.x order: validation (when due) after the last batch's on_train_batch_end,
        # before on_train_epoch_end (_TrainingEpochLoop.on_advance_end)
        cb.on_train_start(trainer, model)
        for epoch in range(epochs):
            trainer.current_epoch = epoch
            cb.on_train_epoch_start(trainer, model)
            for i in range(batches):
                batch = (images[i], labels[i])
                cb.on_train_batch_start(trainer, model, batch, i)
                loss = _train_step(torch, model, opt, images[i], labels[i])
                trainer.global_step += 1
                cb.on_train_batch_end(trainer, model, {"loss": loss}, batch, i)
            cb.on_validation_start(trainer, model)
            cb.on_validation_epoch_start(trainer, model)
            cb.on_validation_epoch_end(trainer, model)
            cb.on_validation_end(trainer, model)
            trainer.callback_metrics = {"train_loss": loss}
            cb.on_train_epoch_end(trainer, model)
        cb.on_train_end(trainer, model)
    elif style == "hf":
        from trainmon import hf
        cb = hf.TrainmonCallback(interval=interval, batch_events_per_s=0)
        args = types.SimpleNamespace(num_train_epochs=float(epochs), per_device_train_batch_size=16)
        state = types.SimpleNamespace(epoch=0.0, global_step=0)
        control = types.SimpleNamespace()
        cb.on_train_begin(args, state, control)
        for epoch in range(epochs):
            cb.on_epoch_begin(args, state, control)
            for i in range(batches):  # transformers 4.x: one micro-batch per update here
                cb.on_step_begin(args, state, control)
                loss = _train_step(torch, model, opt, images[i], labels[i])
                state.global_step += 1
                state.epoch = epoch + (i + 1) / batches
                cb.on_step_end(args, state, control)
                if state.global_step % 10 == 0:
                    cb.on_log(args, state, control, logs={"loss": float(loss)})
            cb.on_epoch_end(args, state, control)
        cb.on_train_end(args, state, control)
    else:
        raise SystemExit("unknown style " + style)
    print("TRAINED %s %d epochs" % (style, epochs), flush=True)


if __name__ == "__main__":
    train(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else 0.5)
    sys.exit(0)


# ---------------------------------------------------------------------------------------------
# The tests (pytest)
# ---------------------------------------------------------------------------------------------

import pytest  # noqa: E402

sys.path.insert(0, PYTHON_DIR)
from trainmon import RESOURCE_LINE_RE  # noqa: E402

BIN = os.environ.get("TRAINMON_BIN")


def _env(tmp_path, scenario="healthy-1gpu.json"):
    env = dict(os.environ)
    env["TRAINMON_NVML_LIBRARY"] = os.environ.get("TRAINMON_FAKE_NVML_PATH", "")
    env["TRAINMON_FAKE_NVML_SCENARIO"] = os.path.join(os.environ.get("TRAINMON_SCENARIOS_DIR", ""), scenario)
    env["TRAINMON_DB"] = str(tmp_path / "runs.db")
    env["XDG_RUNTIME_DIR"] = str(tmp_path)
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    env.pop("TRAINMON_EVENTS_SOCKET", None)
    env.pop("TRAINMON_SNAPSHOT_FILE", None)
    return env


def _has_subcommand(name):
    if not BIN or not os.path.exists(BIN):
        return False
    r = subprocess.run([BIN, "--help"], capture_output=True, text=True, timeout=30)
    return re.search(r"^\s+%s\s" % re.escape(name), r.stdout, re.M) is not None


def _our_lines(text):
    # The package's lines ("Mem: " with a colon); trainmon run prints its own, differently shaped.
    return [ln for ln in text.splitlines() if ln.startswith("Resource") and "Mem: " in ln]


needs_torch = pytest.mark.skipif(subprocess.run([sys.executable, "-c", "import torch"],
                                                capture_output=True).returncode != 0,
                                 reason="python3-torch is not installed (apt-get install -y python3-torch)")


@needs_torch
@pytest.mark.parametrize("style", STYLES)
def test_training_under_trainmon_run_records_every_epoch(tmp_path, style):
    if not _has_subcommand("run"):
        pytest.skip("this build has no `trainmon run` yet")
    env = _env(tmp_path)
    t0 = time.monotonic()
    proc = subprocess.run(
        # Sample every 0.2 s and print a line at every hook call (interval 0), so the number of
        # lines and the arrival of GPU data do not depend on how fast this machine trains.
        [BIN, "run", "--interval", "0.2", "--", sys.executable, os.path.abspath(__file__), style, str(EPOCHS),
         str(BATCHES), "0"],
        capture_output=True, text=True, env=env, timeout=120)
    took = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "TRAINED %s" % style in proc.stdout
    lines = _our_lines(proc.stderr + proc.stdout)
    assert len(lines) >= 2, proc.stderr[-3000:]
    for ln in lines:
        assert RESOURCE_LINE_RE.match(ln), ln
    # The snapshot file from trainmon run gives the fake H100's numbers after its first tick.
    assert any(re.search(r"GPU0\(H100\): \d+\.\d%/\d+\.\d%", ln) for ln in lines), lines
    assert any(re.match(r"Resource @ epoch \d+/%d: " % EPOCHS, ln) for ln in lines), lines

    export = subprocess.run([BIN, "export", "last", "--format", "jsonl"], capture_output=True, text=True,
                            env=env, timeout=60)
    assert export.returncode == 0, export.stderr
    # export jsonl: {"t":..., "event":"train", "kind":"epoch_end", "data":{the stored message}}
    events = []
    for row in export.stdout.splitlines():
        doc = json.loads(row)
        if doc.get("event") == "train":
            assert doc["kind"] == doc["data"]["type"]
            events.append(doc["data"])
    ends = [e for e in events if e["type"] == "epoch_end"]
    assert [e["epoch"] for e in ends] == list(range(EPOCHS)), ends
    assert all(e.get("epochs") == EPOCHS for e in ends)
    assert all(e.get("batch_size") == 16 for e in ends)
    batch_events = [e for e in events if e["type"] == "batch_end"]
    assert len(batch_events) == EPOCHS * BATCHES
    times = [e["t"] for e in events if "t" in e]
    assert times == sorted(times)
    print("%s: %.1f s under trainmon run, %d lines, %d events" % (style, took, len(lines), len(events)))


@needs_torch
def test_outside_trainmon_run_the_package_starts_an_agent_for_gpu_data(tmp_path):
    if not _has_subcommand("agent"):
        pytest.skip("this build has no `trainmon agent`")
    env = _env(tmp_path)
    env["TRAINMON_BIN"] = BIN
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "loop", "6", "60", "0.3"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = _our_lines(proc.stderr)
    assert len(lines) >= 3, proc.stderr
    for ln in lines:
        assert RESOURCE_LINE_RE.match(ln), ln
    # The first line comes before the agent's first snapshot; later ones carry the fake GPU.
    assert any("GPU0(H100): " in ln for ln in lines[1:]), lines
    # The agent went away with us (--parent-pid) and removed its file.
    agent_file = tmp_path / "trainmon" / "agent.json"
    for _ in range(60):
        if not agent_file.exists():
            break
        time.sleep(0.1)
    assert not agent_file.exists()


@needs_torch
def test_without_any_trainmon_binary_lines_have_host_data_and_one_hint(tmp_path):
    env = _env(tmp_path)
    env["PATH"] = "/usr/bin:/bin"
    env.pop("TRAINMON_BIN", None)
    if subprocess.run(["sh", "-c", "command -v trainmon"], env=env, capture_output=True).returncode == 0:
        pytest.skip("a trainmon binary is installed on PATH")
    # interval 0: a line at every step, so the count does not depend on how fast this machine is
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "loop", "2", "10", "0"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = _our_lines(proc.stderr)
    assert len(lines) >= 2 and all(RESOURCE_LINE_RE.match(ln) and "GPU" not in ln for ln in lines), lines
    hints = [ln for ln in proc.stderr.splitlines() if "binary was not found" in ln]
    assert len(hints) == 1
