# SPDX-License-Identifier: Apache-2.0
"""Sending events to the recorder: one JSON object per Unix SOCK_SEQPACKET message, never waiting.

Why a non-blocking SOCK_SEQPACKET connection: each send is a single system call that either
queues the whole message in the kernel or fails at once (message boundaries are kept, so there is
no framing and no partial write to finish later). A recorder that is slow (our socket buffer is
full: EAGAIN), gone (EPIPE, ECONNREFUSED, ENOENT) or never existed costs one failed call; the
event is dropped and counted, and training carries on. There is no in-process queue that could
grow. (Datagrams would be simpler still, but Linux lets a datagram receiver queue only
net.unix.max_dgram_qlen = 10 messages, too few when our recorder thread is not scheduled.)
The connect is non-blocking too: on a Unix socket it completes at once or fails with EAGAIN.
The protocol is in docs/python.md.
"""

import json
import os
import socket
import threading
import time
import weakref

__all__ = ["EventClient", "process_client", "PROTOCOL_VERSION", "MAX_MESSAGE_BYTES"]

PROTOCOL_VERSION = 3
# The event types the recorder accepts (src/diagnose/train_message.cpp; docs/python.md): any other is
# dropped here rather than sent to be rejected as unknown_type.
EVENT_TYPES = frozenset(("hello", "train_start", "epoch_start", "batch_end", "epoch_end", "val_end", "memory",
                         "train_end", "heartbeat"))
#: The recorder refuses longer messages; we do not even send them.
MAX_MESSAGE_BYTES = 64 * 1024
_RETRY_AFTER_S = 5.0
_SEND_FLAGS = getattr(socket, "MSG_NOSIGNAL", 0) | getattr(socket, "MSG_DONTWAIT", 0)
_dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
_mono = time.monotonic
_wall = time.time

# Every client of this process, so that a fork can give each a fresh lock (a lock held by another
# thread at fork time would stay locked forever in the child).
_clients = weakref.WeakSet()


class EventClient:
    """Sends protocol-v2 events to the recorder's socket ``path`` (TRAINMON_EVENTS_SOCKET).

    ``send()`` never raises and never blocks, and may be called from several threads (the training
    loop and the heartbeat thread): a lock orders the sequence numbers and the socket writes. A
    forked child (DataLoader worker) opens its own connection and gets a fresh lock.

    Counters: ``sent`` (accepted by the kernel), ``dropped`` (not sent: recorder busy or gone,
    message too large or not serialisable). After a failure that means "recorder gone" the socket
    is not retried for 5 seconds, so a vanished recorder costs well under a microsecond per call.
    ``last_send_mt``: time.monotonic() of the last attempt (the heartbeat waits for 1 s of silence).
    ``common``: fields added to every message (the rank once known).
    """

    def __init__(self, path, run_id=None):
        self.path = path
        self.run_id = run_id or None
        self.sent = 0
        self.dropped = 0
        self.last_error = None
        self.last_send_mt = 0.0
        self.common = {}
        self.hello_fields = None  # what the last hello said (see _identity.announce)
        self.hello_check_mt = 0.0
        self._seq = 0
        self._sock = None
        self._retry_at = 0.0
        self._pid = os.getpid()
        self._lock = threading.Lock()
        _clients.add(self)

    def _after_fork(self):
        self._lock = threading.Lock()
        self._sock = None  # the parent's connection; never written from the child
        self._pid = os.getpid()
        self.hello_fields = None
        self.hello_check_mt = 0.0
        self.sent = self.dropped = self._seq = 0  # a new sender: its own sequence
        self._retry_at = 0.0

    def _socket(self):
        if self._pid != os.getpid():  # forked without the at-fork hook (os.fork from C code)
            self._after_fork()
        if self._sock is None:
            if _mono() < self._retry_at:
                return None
            s = None
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                s.setblocking(False)
                s.connect(self.path)
            except OSError as e:
                if s is not None:
                    s.close()
                self._fail(e)
                return None
            self._sock = s
        return self._sock

    def _fail(self, error):
        self.last_error = "%s: %s" % (type(error).__name__, error)
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None
        self._retry_at = _mono() + _RETRY_AFTER_S

    def available(self):
        """False while the recorder is known to be gone (the 5 s retry gate): callers then skip
        building the message at all, and keep what it would have carried for a later one."""
        return self._sock is not None or _mono() >= self._retry_at or self._pid != os.getpid()

    def drop(self):
        """Count a message the caller did not even build (recorder gone)."""
        self.dropped += 1
        self._seq += 1

    def send(self, event_type, fields=None):
        """Send one event of ``event_type`` with ``fields`` (None values are left out).

        Adds ``v``, ``type``, ``t`` (time.time()), ``mt`` (time.monotonic()), ``seq``, ``pid``,
        ``run_id``, ``dropped`` and ``common``. Returns True when the kernel accepted the message,
        False when it was dropped (also an ``event_type`` not in EVENT_TYPES). Never raises.
        """
        try:
            if event_type not in EVENT_TYPES:  # (an unhashable one raises: dropped below too)
                self.last_error = "not an event type: %r" % (event_type,)
                self.dropped += 1
                return False
            with self._lock:
                return self._send_locked(event_type, fields)
        except Exception as e:  # a surprising failure (a field whose __eq__ raises ...): drop it
            self.last_error = "%s: %s" % (type(e).__name__, e)
            self.dropped += 1
            return False

    def _send_locked(self, event_type, fields):
        mt = _mono()
        self.last_send_mt = mt
        if self._sock is None and mt < self._retry_at and self._pid == os.getpid():
            self.dropped += 1  # recorder known to be gone: do not even encode
            self._seq += 1
            return False
        msg = {"v": PROTOCOL_VERSION, "type": event_type, "t": _wall(), "mt": mt, "seq": self._seq,
               "pid": os.getpid()}
        self._seq += 1
        if self.run_id:
            msg["run_id"] = self.run_id
        if self.dropped:
            msg["dropped"] = self.dropped
        if self.common:
            msg.update(self.common)
        if fields:
            for k, v in fields.items():
                if v is not None:
                    msg[k] = v
        try:
            data = _dumps(msg).encode("utf-8")
        except (TypeError, ValueError, OverflowError) as e:  # NaN loss, an object that is not JSON
            self.last_error = "%s: %s" % (type(e).__name__, e)
            self.dropped += 1
            return False
        if len(data) > MAX_MESSAGE_BYTES:
            self.dropped += 1
            return False
        sock = self._socket()
        if sock is None:
            self.dropped += 1
            return False
        try:
            sock.send(data, _SEND_FLAGS)  # non-blocking: EAGAIN raises at once
        except BlockingIOError:
            self.dropped += 1  # recorder busy: drop this one, keep the socket
            return False
        except OSError as e:  # EPIPE, ECONNRESET, ...: recorder gone
            self._fail(e)
            self.dropped += 1
            return False
        self.sent += 1
        return True

    def close(self):
        """Close the socket (a later send() reopens it). Never raises."""
        try:
            with self._lock:
                if self._sock is not None:
                    try:
                        self._sock.close()
                    except OSError:
                        pass
                    self._sock = None
        except Exception:
            pass


_process_client = None


def process_client(path, run_id=None):
    """The one EventClient of this process for ``path`` (so that every Monitor and the zero-code
    hook share one connection, one sequence and one hello). A different path or run id, or a
    forked child, gets a new client. None when ``path`` is empty."""
    global _process_client
    if not path:
        return None
    c = _process_client
    if c is None or c.path != path or c.run_id != (run_id or None) or c._pid != os.getpid():
        c = _process_client = EventClient(path, run_id)
    return c


def _reset_after_fork():
    for c in list(_clients):
        try:
            c._after_fork()
        except Exception:
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
