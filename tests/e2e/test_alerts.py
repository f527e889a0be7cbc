# SPDX-License-Identifier: Apache-2.0
"""Alerts end to end: fake-GPU scenarios -> rules -> a real local HTTP receiver and a real SMTP server
(aiosmtpd) on 127.0.0.1; receiver down then up; flapping under a cooldown; alerts check / test."""

import email
import email.header
import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_run_helpers import env, trainmon_bin, wait_for  # noqa: E402

SCENARIO = "alerts-mixed.json"  # GPU0 10 % util, GPU1 97 % memory, GPU2 Xid 79 at 3 s, GPU3 flaps 90/10 % per second


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Receiver:
    """A webhook receiver on 127.0.0.1 collecting JSON bodies."""

    def __init__(self, port=0):
        self.bodies = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                outer.bodies.append(json.loads(self.rfile.read(n)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), H)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Smtp:
    """aiosmtpd on 127.0.0.1 collecting messages."""

    def __init__(self):
        from aiosmtpd.controller import Controller
        self.messages = []
        outer = self

        class Handler:
            async def handle_DATA(self, server, session, envelope):
                outer.messages.append((envelope.rcpt_tos, email.message_from_bytes(envelope.content)))
                return "250 OK"

        self.port = free_port()
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def close(self):
        self.controller.stop()


@pytest.fixture
def smtp():
    s = Smtp()
    yield s
    s.close()


def rules_file(tmp_path, hook_port, smtp_port=None, extra=""):
    mail = ""
    sinks = '"hook"'
    if smtp_port:
        sinks = '"hook", "mail"'
        mail = f'''
[sinks.mail]
type = "email"
url = "smtp://127.0.0.1:{smtp_port}"
starttls = "off"
from = "trainmon@localhost"
to = ["ops@localhost"]
timeout = "5s"
'''
    p = tmp_path / "alerts.toml"
    p.write_text(f'''
[delivery]
spool_dir = "{tmp_path / 'spool'}"
retry_initial = "0.3s"
retry_max = "1s"
finish_grace = "1s"

[defaults]
sinks = [{sinks}]

[sinks.hook]
type = "webhook"
url = "http://127.0.0.1:{hook_port}/hook"
timeout = "3s"
{mail}
[[rule]]
name = "gpu-bottleneck"
metric = "utilization.gpu"
condition = "< 30"
for = "2s"
gpus = [0, 1, 2]
message = "GPU {{target}} utilization {{value}}% < 30% for {{for}}"

[[rule]]
name = "oom-risk"
metric = "memory.used_pct"
condition = "> 95"
severity = "critical"

[[rule]]
name = "flap"
metric = "utilization.gpu"
condition = "< 50"
gpus = [3]
cooldown = "4s"
{extra}
''')
    return p


def record(rules, seconds, tmp_path, timeout=120):
    return subprocess.run([trainmon_bin(), "record", "--db", str(tmp_path / "t.db"), "--interval", "0.2",
                           "--duration", str(seconds), "-q", "--alerts", str(rules)],
                          env=env(SCENARIO), capture_output=True, text=True, timeout=timeout)


def key(b):
    return (b["rule"], b["target"], b["state"])


def test_scenarios_reach_webhook_and_smtp_and_flapping_is_limited(tmp_path, smtp):
    rx = Receiver()
    try:
        rules = rules_file(tmp_path, rx.port, smtp.port)
        p = record(rules, 9, tmp_path)
        assert p.returncode == 0, p.stderr
        assert wait_for(lambda: len(smtp.messages) >= 3 and len(rx.bodies) >= 3, 20)
    finally:
        rx.close()
    got = [key(b) for b in rx.bodies]
    # the article's bottleneck rule: GPU0 below 30 % for the `for` duration; GPU1 at 97 % memory; Xid 79
    assert got.count(("gpu-bottleneck", "gpu0", "firing")) == 1, got
    assert not any(k[0] == "gpu-bottleneck" and k[1] != "gpu0" for k in got), got
    assert got.count(("oom-risk", "gpu1", "firing")) == 1, got
    xid = [b for b in rx.bodies if b["rule"] == "xid"]
    assert [(b["target"], b["value"]) for b in xid] == [("gpu2", 79)], xid
    bott = next(b for b in rx.bodies if b["rule"] == "gpu-bottleneck")
    assert bott["message"].startswith("GPU gpu0 utilization 10% < 30% for 2s"), bott
    assert bott["for_s"] == 2 and bott["value"] == 10
    assert next(b for b in rx.bodies if b["rule"] == "oom-risk")["value"] > 95
    # flapping GPU3 (below 50 % every other second): at most one firing per 4 s cooldown
    flaps = sorted(b["time_unix_ns"] for b in rx.bodies if b["rule"] == "flap" and b["state"] == "firing")
    assert 1 <= len(flaps) <= 3, flaps
    assert all(b - a >= 4e9 - 1e6 for a, b in zip(flaps, flaps[1:])), flaps
    # the same alerts by e-mail
    subjects = [m["Subject"] for _, m in smtp.messages]
    assert any("gpu-bottleneck gpu0" in s for s in subjects), subjects
    assert any("oom-risk gpu1" in s and "critical" in s for s in subjects), subjects
    assert any("xid gpu2" in s for s in subjects), subjects
    assert all(r == ["ops@localhost"] for r, _ in smtp.messages)
    assert len(smtp.messages) == len(rx.bodies)
    # nothing left in the spool
    assert not list((tmp_path / "spool").rglob("*.json"))


def test_receiver_down_then_up_every_alert_once_late(tmp_path):
    port = free_port()
    rules = rules_file(tmp_path, port)
    # the receiver is down for the whole run: everything stays spooled
    p = record(rules, 5, tmp_path)
    assert p.returncode == 0, p.stderr
    assert "not delivered yet" in p.stderr and "127.0.0.1" in p.stderr, p.stderr
    spooled = list((tmp_path / "spool" / "hook").glob("*.json"))
    want = {("gpu-bottleneck", "gpu0", "firing"), ("oom-risk", "gpu1", "firing"), ("xid", "gpu2", "firing")}
    assert want <= {key(json.loads(f.read_text())) for f in spooled}
    # flushing while it is still down leaves them (status 1) and says so once-prefixed
    f = subprocess.run([trainmon_bin(), "alerts", "flush", str(rules), "--wait", "0.5"], capture_output=True,
                       text=True, timeout=60)
    assert f.returncode == 1 and "trainmon alerts: " in f.stderr and "alerts: alerts:" not in f.stderr, f.stderr
    # a receiver comes back; a second trainmon with the same spool delivers them, in order, once
    rx = Receiver(port)
    try:
        q = record(rules, 2, tmp_path)
        assert q.returncode == 0, q.stderr
        assert wait_for(lambda: len(rx.bodies) >= len(spooled), 20)
        f = subprocess.run([trainmon_bin(), "alerts", "flush", str(rules)], capture_output=True, text=True, timeout=60)
        assert f.returncode == 0, f.stderr
    finally:
        rx.close()
    ids = [b["id"] for b in rx.bodies]
    assert len(ids) == len(set(ids)), "an alert arrived twice"
    first_run = [b for b in rx.bodies if b["run_id"] == 1]
    assert {key(b) for b in first_run} >= want
    assert sorted(b["time_unix_ns"] for b in first_run) == [b["time_unix_ns"] for b in first_run]
    for k in want:
        assert [key(b) for b in first_run].count(k) == 1
    assert not list((tmp_path / "spool").rglob("*.json"))


def test_receiver_up_during_the_run_gets_them_late(tmp_path):
    port = free_port()
    rules = rules_file(tmp_path, port)
    proc = subprocess.Popen([trainmon_bin(), "record", "--db", str(tmp_path / "t.db"), "--interval", "0.2",
                             "--duration", "8", "-q", "--alerts", str(rules)],
                            env=env(SCENARIO), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rx = None
    try:
        assert wait_for(lambda: len(list((tmp_path / "spool" / "hook").glob("*.json"))) >= 2, 30)
        rx = Receiver(port)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert "retrying" in err
    finally:
        if proc.poll() is None:
            proc.kill()
        if rx:
            rx.close()
    got = [key(b) for b in rx.bodies]
    assert got.count(("oom-risk", "gpu1", "firing")) == 1, got
    assert got.count(("xid", "gpu2", "firing")) == 1, got
    assert len({b["id"] for b in rx.bodies}) == len(rx.bodies)
    assert not list((tmp_path / "spool").rglob("*.json"))


def test_check_names_the_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[sinks.hook]\ntype = "webhook"\nurl = "http://127.0.0.1:9/x"\n\n[[rule]]\nname = "u"\n'
                   'metric = "utilization.gpu"\ncondition = "under 30"\n')
    p = subprocess.run([trainmon_bin(), "alerts", "check", str(bad)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert f"{bad}:8: condition 'under 30'" in p.stderr, p.stderr
    bad.write_text('[[rule]]\nname = "u"\nmetric = "utilization.gpu"\ncondition = "< 30"\nsinks = ["nope"]\n')
    p = subprocess.run([trainmon_bin(), "alerts", "check", str(bad)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and f"{bad}:5: unknown sink 'nope'" in p.stderr, p.stderr
    bad.write_text('[[rule]\nname = "u"\n')
    p = subprocess.run([trainmon_bin(), "alerts", "check", str(bad)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and f"{bad}:1:" in p.stderr, p.stderr
    # run and record refuse it before starting anything
    p = subprocess.run([trainmon_bin(), "record", "--db", str(tmp_path / "t.db"), "--duration", "1", "--alerts", str(bad)],
                       env=env(SCENARIO), capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and f"{bad}:1:" in p.stderr
    ex = os.path.join(os.environ.get("TRAINMON_SOURCE_DIR", "."), "examples", "alerts.toml")
    p = subprocess.run([trainmon_bin(), "alerts", "check", ex], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert "utilization.gpu < 30 for 60s" in p.stdout and "memory.used_pct > 95" in p.stdout


def test_alerts_test_reaches_every_sink(tmp_path, smtp):
    rx = Receiver()
    out = tmp_path / "cmd.out"
    script = tmp_path / "sink.sh"
    script.write_text(f'#!/bin/sh\necho "$TRAINMON_ALERT_STATE $TRAINMON_ALERT_TARGET" >> {out}\n')
    script.chmod(0o755)
    try:
        rules = rules_file(tmp_path, rx.port, smtp.port,
                           extra=f'\n[sinks.script]\ntype = "command"\ncommand = ["{script}"]\n')
        # the [sinks.script] table must come before the rules: rewrite in order
        text = rules.read_text().replace(f'\n[sinks.script]\ntype = "command"\ncommand = ["{script}"]\n', "")
        rules.write_text(f'[sinks.script]\ntype = "command"\ncommand = ["{script}"]\n' + text)
        p = subprocess.run([trainmon_bin(), "alerts", "test", str(rules)], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        assert wait_for(lambda: len(smtp.messages) >= 1 and len(rx.bodies) >= 1, 10)
    finally:
        rx.close()
    for s in ("hook", "mail", "script", "log"):
        assert f"sink {s} (" in p.stdout and "delivered" in p.stdout
    assert rx.bodies[0]["state"] == "test"
    assert "TEST" in smtp.messages[0][1]["Subject"]
    assert out.read_text().strip() == "test sink script"
    assert "alert: [info] TEST test sink log" in p.stderr
    # a sink that is down fails the test command
    rules.write_text(rules.read_text().replace(f"127.0.0.1:{rx.port}", f"127.0.0.1:{free_port()}"))
    p = subprocess.run([trainmon_bin(), "alerts", "test", str(rules)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "sink hook (webhook): FAILED" in p.stdout


def test_defaults_without_a_file_go_to_the_log_and_the_config_file_is_found(tmp_path):
    cfg = tmp_path / "config"
    e = env(SCENARIO, XDG_CONFIG_HOME=cfg, XDG_STATE_HOME=tmp_path / "state")
    p = subprocess.run([trainmon_bin(), "run", "--db", str(tmp_path / "t.db"), "--interval", "0.2", "--no-report",
                        "--", "sleep", "4"], env=e, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = [x for x in p.stderr.splitlines() if "alert:" in x]
    assert lines == ["trainmon run: alert: [critical] FIRING gpu-memory-full gpu1: "
                     "GPU gpu1 memory 97% used (> 95%): out-of-memory risk"], p.stderr
    # $XDG_CONFIG_HOME/trainmon/alerts.toml is the default rules file
    (cfg / "trainmon").mkdir(parents=True)
    rx = Receiver()
    try:
        (cfg / "trainmon" / "alerts.toml").write_text(
            f'[sinks.hook]\ntype = "webhook"\nurl = "http://127.0.0.1:{rx.port}/"\n\n'
            '[[rule]]\nname = "mem"\nmetric = "memory.used_pct"\ncondition = "> 95"\n')
        p = subprocess.run([trainmon_bin(), "record", "--db", str(tmp_path / "t.db"), "--interval", "0.2",
                            "--duration", "5", "-q"], env=e, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert wait_for(lambda: {"mem", "xid"} <= {b["rule"] for b in rx.bodies}, 20)
    finally:
        rx.close()
    assert [(b["rule"], b["target"]) for b in rx.bodies if b["rule"] == "mem"] == [("mem", "gpu1")]
    assert ("xid", "gpu2", 79) in [(b["rule"], b["target"], b["value"]) for b in rx.bodies]  # built in with a file
    assert not list((tmp_path / "state").rglob("*.json"))


def test_smtp_starttls_with_credentials(tmp_path):
    import ssl
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult
    cert, key_ = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key_), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(cert), str(key_))
    got, logins = [], []

    class Handler:
        async def handle_DATA(self, server, session, envelope):
            got.append((session.ssl is not None, email.message_from_bytes(envelope.content)))
            return "250 OK"

    def auth(server, session, envelope, mechanism, data):
        logins.append((data.login, data.password))
        return AuthResult(success=data.login == b"ops" and data.password == b"s3cret")

    port = free_port()
    c = Controller(Handler(), hostname="127.0.0.1", port=port, tls_context=ctx, require_starttls=True,
                   authenticator=auth, auth_require_tls=True)
    c.start()
    try:
        rules = tmp_path / "tls.toml"
        cred = tmp_path / "cred"
        cred.write_text("ops:s3cret\n")
        rules.write_text(f'[sinks.mail]\ntype = "email"\nurl = "smtp://127.0.0.1:{port}"\nfrom = "t@localhost"\n'
                         f'to = "ops@localhost"\nca_file = "{cert}"\ncredentials_file = "{cred}"\ntimeout = "10s"\n')
        e = dict(os.environ)
        e.pop("TRAINMON_SMTP_USER", None)
        cred.chmod(0o644)  # readable by others: refused, nothing sent
        p = subprocess.run([trainmon_bin(), "alerts", "test", str(rules)], env=e, capture_output=True, text=True, timeout=60)
        assert p.returncode == 1 and "refused" in p.stdout and "chmod 600" in p.stdout, p.stdout
        assert not logins
        cred.chmod(0o600)
        p = subprocess.run([trainmon_bin(), "alerts", "test", str(rules)], env=e, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        assert wait_for(lambda: got, 10)
        # the environment wins over the file
        e.update(TRAINMON_SMTP_USER="ops", TRAINMON_SMTP_PASSWORD="wrong")
        p = subprocess.run([trainmon_bin(), "alerts", "test", str(rules)], env=e, capture_output=True, text=True, timeout=60)
        assert p.returncode == 1 and "sink mail (email): FAILED" in p.stdout
    finally:
        c.stop()
    assert got[0][0] is True  # delivered inside STARTTLS
    assert "TEST" in got[0][1]["Subject"]
    assert logins[0] == (b"ops", b"s3cret")


def test_numeric_options_refuse_nan_infinite_and_negative(tmp_path):
    # NaN compares false with every limit: `flush --wait nan` and `agent --duration nan` never ended.
    rules = tmp_path / "r.toml"
    rules.write_text('[sinks.c]\ntype = "command"\ncommand = ["true"]\n')
    for args in (["alerts", "flush", str(rules), "--wait", v] for v in ("nan", "-1", "inf", "1e9", "x")):
        p = subprocess.run([trainmon_bin(), *args], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and "--wait" in p.stderr and "seconds" in p.stderr, (args, p.stderr)
        assert len(p.stderr) < 400
    for v in ("nan", "inf", "-1", "-inf"):
        p = subprocess.run([trainmon_bin(), "agent", "--snapshot-file", str(tmp_path / "a.json"), "--duration", v],
                           env=env(SCENARIO), capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and "--duration" in p.stderr and "seconds" in p.stderr, (v, p.stderr)
        assert len(p.stderr) < 400, p.stderr
    p = subprocess.run([trainmon_bin(), "alerts", "flush", str(rules), "--wait", "0", "--alerts-spool",
                        str(tmp_path / "spool")], capture_output=True,
                       text=True, timeout=30, env=env(SCENARIO, XDG_STATE_HOME=str(tmp_path / "state")))
    assert p.returncode == 0, p.stderr


def test_alerts_speak_the_senders_language_and_keep_their_machine_fields(tmp_path, smtp):
    """TRAINMON_LANG=zh_CN: the log line, the built-in and default templates, the webhook's message and
    Slack-style text and the e-mail's subject are Chinese; the JSON keys and the machine fields (rule,
    state, severity, target, metric, value, condition) are the English run's (docs/language.md)."""
    bodies = {}
    for lang in ("en", "zh_CN"):
        rx = Receiver()
        try:
            d = tmp_path / lang
            d.mkdir()
            rules = rules_file(d, rx.port, smtp.port)
            p = subprocess.run([trainmon_bin(), "record", "--db", str(d / "t.db"), "--interval", "0.2",
                                "--duration", "2", "-q", "--alerts", str(rules)],
                               env=env(SCENARIO, TRAINMON_LANG=lang), capture_output=True, text=True, timeout=120)
            assert p.returncode == 0, p.stderr
            assert wait_for(lambda: any(b["rule"] == "oom-risk" for b in rx.bodies), 10), rx.bodies
            bodies[lang] = next(b for b in rx.bodies if b["rule"] == "oom-risk" and b["state"] == "firing")
        finally:
            rx.close()
    en, zh = bodies["en"], bodies["zh_CN"]
    assert sorted(en) == sorted(zh)
    for k in ("rule", "state", "severity", "target", "metric", "value", "condition", "tool"):
        assert zh[k] == en[k], k
    assert en["message"] == "oom-risk: gpu1 memory.used_pct = 97 (> 95 for 0s)", en["message"]
    assert zh["message"] == "oom-risk：gpu1 memory.used_pct = 97（> 95，持续 0s）", zh["message"]
    subjects = [m[1]["Subject"] for m in smtp.messages]
    assert any(s.startswith("[trainmon] critical oom-risk gpu1 on ") for s in subjects), subjects
    zh_subjects = [str(email.header.make_header(email.header.decode_header(s))) for s in subjects]
    assert any(s.startswith("[trainmon] 严重 oom-risk gpu1（主机 ") for s in zh_subjects), zh_subjects
    # the built-in rules (no rules file) in the log line of `trainmon run`
    e = env(SCENARIO, TRAINMON_LANG="zh_CN", XDG_CONFIG_HOME=tmp_path / "none", XDG_STATE_HOME=tmp_path / "state")
    p = subprocess.run([trainmon_bin(), "run", "--db", str(tmp_path / "r.db"), "--interval", "0.2", "--no-report",
                        "--", "sleep", "3"], env=e, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = [x for x in p.stderr.splitlines() if "alert:" in x]
    assert lines == ["trainmon run: alert: [严重] 告警中 gpu-memory-full gpu1: "
                     "GPU gpu1 显存已用 97%（> 95%）：有 OOM（显存溢出）风险"], p.stderr
