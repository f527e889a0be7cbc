# SPDX-License-Identifier: Apache-2.0
"""`trainmon serve` against hostile clients: request bodies refused before they are read (a 500 MB
body on a GET, with a length or chunked), the Host header checked (DNS rebinding), hundreds of idle
and slow connections that cannot starve /metrics, a connection cap, and tokens: warnings for a token
file others can read or a short token, repeated 401s slowed down per client."""

import os
import re
import socket
import subprocess
import time
import urllib.request

import pytest

from test_serve import Served
from test_run_helpers import kill_quietly


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def request(port, raw, timeout=10):
    """Sends raw bytes, returns what comes back until the server closes or `timeout`."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(raw)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            out += chunk
            if b"\r\n\r\n" in out and b"Connection: close" not in out:
                break
        return out
    finally:
        s.close()


def status_of(reply):
    m = re.match(rb"HTTP/1\.[01] (\d+)", reply)
    return int(m.group(1)) if m else None


@pytest.fixture
def served(tmp_path):
    s = Served(str(tmp_path), "healthy-1gpu.json")
    yield s
    s.stop()


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_500_mb_body_is_refused_before_it_is_read(served, chunked):
    before = rss_kib(served.proc.pid)
    s = socket.create_connection(("127.0.0.1", served.port), timeout=10)
    head = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    head += b"Transfer-Encoding: chunked\r\n\r\n" if chunked else b"Content-Length: 500000000\r\n\r\n"
    s.sendall(head)
    sent = 0
    piece = b"x" * 65536
    try:
        while sent < 500_000_000:
            s.sendall((b"10000\r\n" + piece + b"\r\n") if chunked else piece)
            sent += len(piece)
    except OSError:
        pass  # closed by the server after its answer: the body was not read
    try:
        reply = s.recv(4096)
    except OSError:
        reply = b""
    s.close()
    assert sent < 50_000_000, f"the server read {sent} bytes of a body it refuses"
    assert reply == b"" or status_of(reply) == 413, reply[:200]
    assert rss_kib(served.proc.pid) - before < 20 * 1024
    assert status_of(request(served.port, b"POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                          b"Content-Length: 5\r\n\r\nhello")) == 413
    assert status_of(request(served.port, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                          b"Expect: 100-continue\r\nContent-Length: 99\r\n\r\n")) == 413


def test_host_header_must_name_the_server(served):
    get = lambda host: status_of(request(served.port, b"GET /api/v1/snapshot HTTP/1.1\r\nHost: " + host +
                                         b"\r\nConnection: close\r\n\r\n"))
    assert get(b"127.0.0.1:%d" % served.port) == 200
    assert get(b"localhost:%d" % served.port) == 200
    assert get(b"evil.example:%d" % served.port) == 421  # DNS rebinding
    assert get(b"127.0.0.1.nip.io") == 421
    metrics = urllib.request.urlopen(served.base + "/metrics", timeout=10).read().decode()
    assert re.search(r'trainmon_http_refused_total\{Hostname="[^"]*",reason="bad_host"\} 2\b', metrics), metrics[-2000:]


def test_idle_and_slow_connections_do_not_starve_metrics(served):
    idle = [socket.create_connection(("127.0.0.1", served.port)) for _ in range(400)]
    slow = []
    for _ in range(50):  # slowloris: a head that never ends
        c = socket.create_connection(("127.0.0.1", served.port))
        c.sendall(b"GET / HTTP/1.1\r\nX-a: ")
        slow.append(c)
    times = []
    for _ in range(20):
        t = time.monotonic()
        reply = request(served.port, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        times.append(time.monotonic() - t)
        assert status_of(reply) == 200
    for c in idle + slow:
        c.close()
    assert max(times) < 1.0, times  # 16 workers; each idle connection used to hold one for seconds


def test_connection_cap_closes_the_longest_idle(tmp_path):
    served = Served(str(tmp_path), "healthy-1gpu.json", "--max-connections", "8")
    try:
        idle = [socket.create_connection(("127.0.0.1", served.port)) for _ in range(8)]
        time.sleep(0.3)
        reply = request(served.port, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert status_of(reply) == 200, "a scraper gets in even when the cap is reached"
        idle[0].settimeout(5)
        assert idle[0].recv(1) == b"", "the longest idle connection made room"
        for c in idle:
            c.close()
    finally:
        served.stop()


def test_token_warnings_and_401s_slowed_down(tmp_path):
    token = tmp_path / "token"
    token.write_text("hunter2\n")
    os.chmod(token, 0o644)
    served = Served(str(tmp_path), "healthy-1gpu.json", "--token-file", str(token))
    try:
        err = open(served.err_path).read()
        assert "can be read or written by other users (mode 644)" in err, err
        assert "the token is 7 characters long" in err, err
        bad = lambda: status_of(request(served.port, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                                     b"Authorization: Bearer wrong\r\nConnection: close\r\n\r\n"))
        statuses = [bad() for _ in range(12)]
        assert statuses[:5] == [401] * 5, statuses
        assert 429 in statuses[5:], statuses
        # While it waits, even the right token is not looked at (guessing gains nothing) ...
        good = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer hunter2\r\nConnection: close\r\n\r\n"
        reply = request(served.port, good)
        assert status_of(reply) == 429 and b"Retry-After:" in reply, reply[:300]
        wait = int(re.search(rb"Retry-After: (\d+)", reply).group(1))
        # ... and after the wait it is.
        time.sleep(wait + 0.2)
        assert status_of(request(served.port, good)) == 200
    finally:
        served.stop()
