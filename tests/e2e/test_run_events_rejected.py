# SPDX-License-Identifier: Apache-2.0
"""What the event socket refuses is counted and said, never dropped silently: a training process that
floods it past the rate limit and sends malformed and empty messages sees `trainmon run` name the
rejections once while it runs and count them by reason in the summary and in `show`."""

import json
import re
import subprocess

from test_run_helpers import PY, env, run, trainmon_bin

JOB = r"""
import json, os, socket, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(os.environ["TRAINMON_EVENTS_SOCKET"])
ok = json.dumps({"v": 1, "type": "epoch_end", "t": time.time(), "epoch": 0}).encode()
s.send(b"not json at all")
s.send(b"")          # an empty message: malformed, and not the end of the stream
s.send(b"{\"v\": 1}")
for _ in range(9000):  # past the burst of 4000 at 2000/s
    try:
        s.send(ok, socket.MSG_DONTWAIT)
    except BlockingIOError:
        time.sleep(0.001)
time.sleep(1.5)
s.send(ok)              # still connected: arrives
time.sleep(1)
"""


def test_rejected_events_are_counted_by_reason(tmp_path):
    db = tmp_path / "e.db"
    p = subprocess.run([trainmon_bin(), "run", "--db", str(db), "--interval", "0.2", "--no-report", "--",
                        PY, "-c", JOB], env=env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "events from the training process are being rejected" in p.stderr, p.stderr
    m = re.search(r"^  training events: (\d+) received, (\d+) accepted, (\d+) rejected \(([^)]*)\)$", p.stderr, re.M)
    assert m, p.stderr
    received, accepted, rejected = map(int, m.group(1, 2, 3))
    reasons = dict((k, int(v)) for k, v in (x.split() for x in m.group(4).split(", ")))
    assert received == accepted + rejected
    assert reasons.get("not_json", 0) >= 2, reasons  # the garbage and the empty message
    assert reasons.get("rate_limited", 0) > 0, reasons
    show = run(["show", "last"], db)
    assert "events:   training events: %d received" % received in show.stdout, show.stdout
    summary = json.loads(run(["show", "last", "--json"], db).stdout)["summary"]
    assert summary["train_events"]["rejected"]["rate_limited"] == reasons["rate_limited"]
