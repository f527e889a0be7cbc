#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in `nvidia-smi` that replays one state of a real capture (tests/captures), for testing
scripts/gpu-check.sh where there is no GPU. $REPLAY_CAPTURE is the capture file, $REPLAY_STATE
"idle" or "load". It answers what the capture recorded and nothing else: --version, -h,
--help-query-gpu, -L, --query-gpu=FIELDS (any of the fields of the capture's CSV, in any order,
--format=csv[,noheader]), dmon / pmon -c N (N <= 5, the capture's samples). Anything else (-q -x
among them: the captures hold no XML) prints an error and exits 2, as nvidia-smi does for an option
it does not know."""
import os
import re
import sys


def sections(text):
    """{heading: [body lines]} of a capture."""
    out, lines = {}, text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("# ") and " :: " in line and i + 2 < len(lines) and lines[i + 2].startswith("####"):
            body = []
            for l in lines[i + 3:]:
                if l.startswith("####"):
                    break
                body.append(l)
            while body and not body[-1].strip():
                body.pop()
            out[line[2:].strip()] = body
    return out


def find(secs, start):
    for k, v in secs.items():
        if k.startswith(start):
            return v
    return None


def fail(msg, rc=2):
    print(msg)
    sys.exit(rc)


def samples(body, pmon):
    header, rows, out, seen = body[:2], [l for l in body[2:] if l.strip()], [], set()
    for row in rows:
        cols = row.split()
        key = (cols[0], cols[1]) if pmon else cols[0]
        if not out or key in seen:
            out.append([])
            seen = set()
        seen.add(key)
        out[-1].append(row)
    return header, out


def main(argv):
    secs = sections(open(os.environ["REPLAY_CAPTURE"]).read())
    state = os.environ.get("REPLAY_STATE", "idle")
    if argv in (["--version"], ["-h"], ["--help-query-gpu"], ["-L"]):
        what = {"--version": "capabilities :: version", "-h": "capabilities :: help (-h)",
                "--help-query-gpu": "capabilities :: help-query-gpu", "-L": "capabilities :: list (-L)"}[argv[0]]
        print("\n".join(find(secs, what)))
        return
    if argv and argv[0] in ("dmon", "pmon"):
        n = 5
        if "-c" in argv:
            n = int(argv[argv.index("-c") + 1])
        if n > 5 or len(argv) not in (1, 3):
            fail("stand-in: only `%s [-c N<=5]` is replayed" % argv[0])
        header, smp = samples(find(secs, "%s :: %s" % (state, argv[0])), argv[0] == "pmon")
        print("\n".join(header + [r for s in smp[:n] for r in s]))
        return
    q = [a for a in argv if a.startswith("--query-gpu=")]
    f = [a for a in argv if a.startswith("--format=")]
    if q and len(argv) == 2 and f:
        body = [l for l in find(secs, "%s :: query-gpu (csv" % state) if l.strip()]
        header = body[0].split(", ")
        names = [re.sub(r" \[.*\]$", "", h) for h in header]
        opts = f[0].split("=", 1)[1].split(",")
        wanted = q[0].split("=", 1)[1].split(",")
        for w in wanted:
            if w not in names:
                fail('Field "%s" is not a valid field to query.\n' % w)
        idx = [names.index(w) for w in wanted]
        if "noheader" not in opts:
            print(", ".join(header[i] for i in idx))
        for line in body[1:]:
            cells = line.split(", ")
            print(", ".join(cells[i] for i in idx))
        return
    fail("stand-in nvidia-smi: %s is not in the capture" % " ".join(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
