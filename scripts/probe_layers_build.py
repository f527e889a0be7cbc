#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prove that the build enforces the module layers (docs/architecture.md, cmake/modules.cmake).

For every module, takes the compile command of one of its files from BUILD/compile_commands.json
and compiles two probes with exactly those flags (-fsyntax-only):
  - a header of each module it may NOT include, directly or through the modules it may include:
    must fail, with "No such file or directory";
  - a header of its own: must compile (the build compiles every allowed include already).

    /usr/bin/python3 scripts/probe_layers_build.py REPO BUILD_DIR
    exit 0: enforced; 1: a probe went the wrong way (named); 2: no compile commands

Probes are small (one header each), so the check takes seconds, not a build.
"""

import json
import os
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_layers import read_rules  # noqa: E402  the same table the build reads


def a_header(repo, module):
    """One public header of `module` (the smallest: cheap to parse), or None."""
    d = os.path.join(repo, "include", "trainmon", module)
    if not os.path.isdir(d):
        return None
    headers = sorted((os.path.getsize(os.path.join(d, f)), f) for f in os.listdir(d) if f.endswith(".h"))
    return f"trainmon/{module}/{headers[0][1]}" if headers else None


def flags_of(entry):
    """The compiler and its flags of one compile command, without the input, output and depfile."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    # Drop a launcher (ccache through `cmake -E env ...`): start at the compiler itself.
    start = next(i for i, a in enumerate(args) if os.path.basename(a).endswith(("c++", "g++", "clang++")))
    out, skip = [], False
    for a in args[start:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-c", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-MD", "-MMD") or a == entry["file"] or a.endswith(entry["file"]):
            continue
        if a.startswith("-include") or a.endswith(".hxx") or a == "-Winvalid-pch":
            continue  # the precompiled header: not needed for a probe
        out.append(a)
    return out


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    repo, build = argv[1], argv[2]
    try:
        allowed, exceptions = read_rules(os.path.join(repo, "docs", "architecture.md"))
        commands = json.load(open(os.path.join(build, "compile_commands.json"), encoding="utf-8"))
    except (OSError, ValueError) as e:
        print(f"probe_layers_build: {e}", file=sys.stderr)
        return 2
    excepted_files = {f for f, _ in exceptions}
    by_module = {}
    for entry in commands:
        rel = os.path.relpath(entry["file"], repo)
        parts = rel.split(os.sep)
        if parts[0] == "src" and len(parts) > 2 and parts[1] in allowed and "/serve/http/" not in rel \
                and rel not in excepted_files:  # a file an exception opens more to
            by_module.setdefault(parts[1], entry)

    def visible(module):
        seen, todo = {module}, list(allowed[module])
        while todo:  # the closure of the table (cmake/modules.cmake)
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo.extend(allowed.get(m, ()))
        return seen

    # A header's exception opens its dependency to its module and the modules that see it.
    header_grants = {}
    for f, dep in exceptions:
        parts = f.split("/")
        if f.endswith((".h", ".hpp")) and len(parts) > 3:
            owner = parts[2] if parts[0] == "include" else parts[1]
            for m in allowed:
                if owner in visible(m):
                    header_grants.setdefault(m, set()).update(visible(dep))
    failures, probes = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for module, entry in sorted(by_module.items()):
            flags = flags_of(entry)
            below = visible(module) | header_grants.get(module, set())
            forbidden = [m for m in sorted(allowed) if m not in below and a_header(repo, m)]
            # Every module it may not see (each probe stops at its one include: milliseconds), and
            # one header of its own, parsed with its flags (the build itself compiles the rest).
            cases = [(m, False) for m in forbidden] + ([(module, True)] if a_header(repo, module) else [])
            for target, ok in cases:
                probe = os.path.join(tmp, f"{module}_{target}.cpp")
                with open(probe, "w", encoding="utf-8") as f:
                    f.write(f'#include "{a_header(repo, target)}"\n')
                r = subprocess.run(flags + ["-fsyntax-only", probe], cwd=entry["directory"],
                                   capture_output=True, text=True)
                probes += 1
                if ok and r.returncode != 0:
                    failures.append(f"{module} may include {target}, but the probe failed:\n{r.stderr[:600]}")
                if not ok and (r.returncode == 0 or "No such file" not in r.stderr):
                    failures.append(f"{module} may not include {target}, but the probe "
                                    f"{'compiled' if r.returncode == 0 else 'failed otherwise: ' + r.stderr[:300]}")
    missing = sorted(m for m in allowed if m != "cli" and m not in by_module and os.path.isdir(os.path.join(repo, "src", m)))
    for m in missing:
        failures.append(f"{m}: no compile command in {build}/compile_commands.json")
    for f in failures:
        print(f)
    print(f"probe_layers_build: {len(by_module)} modules, {probes} probes, {len(failures)} wrong")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
