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
import time

__all__ = ["EventClient", "PROTOCOL_VERSION", "MAX_MESSAGE_BYTES"]

PROTOCOL_VERSION = 1
#: The recorder drops longer datagrams; we do not even send them.
MAX_MESSAGE_BYTES = 64 * 1024
_RETRY_AFTER_S = 5.0
_SEND_FLAGS = getattr(socket, "MSG_NOSIGNAL", 0) | getattr(socket, "MSG_DONTWAIT", 0)
_dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


class EventClient:
    """Sends protocol-v1 events to the recorder's socket ``path`` (TRAINMON_EVENTS_SOCKET).

    Use it from one thread (the training loop's); a forked child (DataLoader worker) opens its own
    connection.

    ``send()`` never raises and never blocks. Counters: ``sent`` (accepted by the kernel),
    ``dropped`` (not sent: recorder busy or gone, message too large or not serialisable).
    After a failure that means "recorder gone" the socket is not retried for 5 seconds, so a
    vanished recorder costs nothing per call.
    """

    def __init__(self, path, run_id=None):
        self.path = path
        self.run_id = run_id or None
        self.sent = 0
        self.dropped = 0
        self.last_error = None
        self._seq = 0
        self._sock = None
        self._retry_at = 0.0
        self._pid = os.getpid()

    def _socket(self):
        if self._pid != os.getpid():  # forked (DataLoader worker): do not share the parent's socket
            self.close()
            self._pid = os.getpid()
        if self._sock is None:
            if time.monotonic() < self._retry_at:
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
        self._retry_at = time.monotonic() + _RETRY_AFTER_S

    def send(self, event_type, fields=None):
        """Send one event of ``event_type`` with ``fields`` (None values are left out).

        Adds ``v``, ``type``, ``t`` (time.time()), ``seq``, ``pid``, ``run_id`` and ``dropped``.
        Returns True when the kernel accepted the datagram, False when it was dropped.
        """
        if self._sock is None and time.monotonic() < self._retry_at and self._pid == os.getpid():
            self.dropped += 1  # recorder known to be gone: do not even encode
            self._seq += 1
            return False
        msg = {"v": PROTOCOL_VERSION, "type": event_type, "t": time.time(), "seq": self._seq,
               "pid": os.getpid()}
        self._seq += 1
        if self.run_id:
            msg["run_id"] = self.run_id
        if self.dropped:
            msg["dropped"] = self.dropped
        if fields:
            for k, v in fields.items():
                if v is not None:
                    msg[k] = v
        try:
            data = _dumps(msg).encode("utf-8")
        except (TypeError, ValueError) as e:  # NaN loss, an object that is not JSON
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
        """Close the socket (a later send() reopens it)."""
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None
