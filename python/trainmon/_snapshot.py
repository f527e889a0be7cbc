# SPDX-License-Identifier: Apache-2.0
"""GPU data for the resource line, from the snapshot file that trainmon rewrites every tick.

Where the file comes from, in order:
1. ``TRAINMON_SNAPSHOT_FILE`` (set by ``trainmon run`` for its child);
2. the agent file for this user ($XDG_RUNTIME_DIR/trainmon/agent.json, else
   /tmp/trainmon-UID/agent.json) when a running ``trainmon agent`` keeps it fresh;
3. otherwise we start ``trainmon agent --parent-pid OUR_PID`` once (the binary from
   ``TRAINMON_BIN`` or PATH) and use its file from the next line on. It exits when we do.
4. No binary at all: no GPU data; ``notice`` says once how to get it.
We never run nvidia-smi: the file is a ~1 KiB read, done only when a line is printed.
"""

import json
import os
import shutil
import stat
import subprocess
import time

from ._i18n import tr, trf

__all__ = ["SnapshotSource", "default_agent_path", "read_snapshot"]


def default_agent_path():
    """The agent's snapshot path for this user (the same rule as the C++ side)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.access(runtime, os.W_OK | os.X_OK):
        return os.path.join(runtime, "trainmon", "agent.json")
    return "/tmp/trainmon-%d/agent.json" % os.geteuid()


def _read_own_file(path, limit):
    """The bytes of `path` when it is a regular file of ours, else None. Never blocks and never
    follows a link: the file may sit in a shared folder (/tmp/trainmon-UID) where another user can
    plant a FIFO (open() would wait for a writer for ever) or a symlink in its place."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError, TypeError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return None
        chunks = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(65536, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            return None
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_snapshot(path, now=None):
    """Read and check a snapshot file.

    Returns the document (dict) when it is version 1 and fresh (written within 3 intervals + 2 s
    of ``now``, seconds since the epoch); None when missing, unreadable, malformed or stale, and
    when it is not a regular file of ours (a FIFO, a link, another user's file: see _read_own_file).
    """
    data = _read_own_file(path, 1 << 20)
    if data is None:
        return None
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("v") != 1:
        return None
    try:
        written = float(doc.get("time_unix_ns", 0)) / 1e9
        interval = float(doc.get("interval_ms", 1000)) / 1e3
    except (TypeError, ValueError):
        return None
    now = time.time() if now is None else now
    if now - written > 3 * interval + 2:
        return None
    return doc


class SnapshotSource:
    """Finds the freshest snapshot for this process; starts an agent when needed and allowed.

    ``read()`` returns the snapshot dict or None (no GPU data this time). ``notice`` holds a
    one-time message for the log (None when there is nothing to say); the caller clears it.
    """

    def __init__(self, start_agent=True, env=None):
        env = os.environ if env is None else env
        self.run_file = env.get("TRAINMON_SNAPSHOT_FILE") or None
        self.agent_file = default_agent_path()
        self.start_agent = start_agent and env.get("TRAINMON_NO_AGENT") != "1"
        self.binary = env.get("TRAINMON_BIN") or shutil.which("trainmon")
        self.agent = None  # the Popen we started, if any
        self.notice = None
        self._told = False
        self._starts = 0

    def read(self):
        if self.run_file:
            return read_snapshot(self.run_file)
        doc = read_snapshot(self.agent_file)
        if doc is not None:
            return doc
        self._ensure_agent()
        return None

    def _ensure_agent(self):
        if self.agent is not None:
            if self.agent.poll() is None:
                return  # ours is running or starting (first snapshot within a second)
            if self.agent.returncode != 0 or self._starts >= 3:
                self._tell(trf("trainmon: the GPU agent exited (status {}); resource lines show host data "
                               "only", self.agent.returncode))
                return
            # Status 0: another agent held the lock (and has since stopped): try again.
        if not self.start_agent:
            return
        if not self.binary:
            self._tell(tr("trainmon: no GPU data in resource lines: the `trainmon` binary was not found "
                          "(install it or set TRAINMON_BIN), or run the job as `trainmon run -- python ...`"))
            return
        self._starts += 1
        try:
            # Once per process. The agent is a separate session so that a Ctrl-C aimed at training
            # does not kill it mid-write; it exits by itself when we are gone (--parent-pid).
            self.agent = subprocess.Popen(
                [self.binary, "agent", "--quiet", "--snapshot-file", self.agent_file,
                 "--parent-pid", str(os.getpid())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                close_fds=True, start_new_session=True)
        except OSError as e:
            self._tell(trf("trainmon: cannot start `{} agent` ({}); resource lines show host data only",
                           self.binary, e))

    def _tell(self, message):
        if not self._told:
            self._told = True
            self.notice = message

    def close(self):
        """Stop the agent we started (others' agents are left alone)."""
        if self.agent is not None and self.agent.poll() is None:
            try:
                self.agent.terminate()
                self.agent.wait(timeout=1)
            except Exception:
                pass
