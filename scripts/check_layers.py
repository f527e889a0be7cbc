#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Check that every module includes only the modules below it (docs/architecture.md).

The allowed dependencies and today's known exceptions are read from the two tables of
docs/architecture.md ("Allowed dependencies" and "Known exceptions"), so the picture and the check
cannot drift apart. A module is a folder of src/ (and include/trainmon/ of the same name); an
include of another module's header ("trainmon/<module>/..." or "<module>/...") is a dependency.
An include with '..' or an absolute path is a violation whatever it names: it is how a file would
step out of the include directory the build gives its module (cmake/modules.cmake).

    /usr/bin/python3 scripts/check_layers.py [REPO]      exit 0: clean; 1: a violation; 2: bad table

A violation names the file, the line and the include. An exception that no longer occurs is
reported too (remove it from the table), so the list only shrinks.
"""

import os
import re
import sys

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)
ANY_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+["<]([^">]+)[">]', re.M)


def table_rows(text, heading):
    """The rows of the first Markdown table after `heading`, as lists of cell strings."""
    start = text.find(heading)
    if start < 0:
        return None
    rows, seen_table = [], False
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            seen_table = True
            cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            if all(set(c) <= set("-: ") for c in cells):
                continue  # the separator row
            rows.append(cells)
        elif seen_table:
            break
    return rows[1:] if rows else []  # without the header row


def names(cell):
    return {n.strip().strip("`") for n in re.split(r"[,\s]+", cell) if n.strip().strip("`") not in ("", "-")}


def read_rules(doc_path):
    text = open(doc_path, encoding="utf-8").read()
    allowed_rows = table_rows(text, "## Allowed dependencies")
    exception_rows = table_rows(text, "## Known exceptions")
    if not allowed_rows or exception_rows is None:
        raise ValueError(f"{doc_path}: the 'Allowed dependencies' / 'Known exceptions' tables are missing")
    allowed = {}
    for row in allowed_rows:
        if len(row) < 2:
            raise ValueError(f"{doc_path}: bad row {row}")
        allowed[row[0]] = names(row[1])
    exceptions = set()
    for row in exception_rows:
        if len(row) < 2:
            raise ValueError(f"{doc_path}: bad exception row {row}")
        exceptions.add((row[0], row[1]))  # (file, included module)
    return allowed, exceptions


def module_of(rel):
    parts = rel.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[:2] == ["include", "trainmon"] and len(parts) > 3:
        return parts[2]
    return None


def check(repo):
    allowed, exceptions = read_rules(os.path.join(repo, "docs", "architecture.md"))
    modules = set(allowed)
    violations, used_exceptions = [], set()
    for top in ("src", os.path.join("include", "trainmon")):
        for dirpath, _, files in os.walk(os.path.join(repo, top)):
            for f in sorted(files):
                if not f.endswith((".cpp", ".h", ".hpp")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, repo)
                mod = module_of(rel)
                if mod is None:
                    continue
                if mod not in modules:
                    violations.append(f"{rel}: module '{mod}' is not in docs/architecture.md's table")
                    continue
                text = open(path, encoding="utf-8", errors="replace").read()
                for m in ANY_INCLUDE.finditer(text):
                    if m.group(1).startswith("/") or ".." in m.group(1).split("/"):
                        # "trainmon/store/../recorder/x.h" or "../cli/output.h" would step out of
                        # the module's include directory (its links resolve '..' in the source tree)
                        # or out of the file's own folder: the build could not stop it, so this does.
                        line = text.count("\n", 0, m.start()) + 1
                        violations.append(f"{rel}:{line}: {m.group(1)}: an include names a header from the "
                                          f"include root (trainmon/<module>/... or <module>/...), "
                                          f"without '..' or an absolute path")
                for m in INCLUDE.finditer(text):
                    if m.group(1).startswith("/") or ".." in m.group(1).split("/"):
                        continue  # reported above
                    inc = m.group(1).split("/")
                    target = inc[1] if inc[0] == "trainmon" and len(inc) > 2 else inc[0]
                    if len(inc) < 2 or target == mod or target not in modules:
                        continue
                    if target in allowed[mod]:
                        continue
                    if (rel, target) in exceptions:
                        used_exceptions.add((rel, target))
                        continue
                    line = text.count("\n", 0, m.start()) + 1
                    violations.append(f"{rel}:{line}: {mod} may not include {m.group(1)} ({target} is not below {mod})")
    for rel, target in sorted(exceptions - used_exceptions):
        violations.append(f"docs/architecture.md: the exception {rel} -> {target} no longer occurs: remove it")
    return violations


def main(argv):
    repo = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    try:
        violations = check(repo)
    except (OSError, ValueError) as e:
        print(f"check_layers: {e}", file=sys.stderr)
        return 2
    for v in violations:
        print(v)
    print(f"check_layers: {len(violations)} violation(s)")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
