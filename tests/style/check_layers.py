#!/usr/bin/python3
"""The code's floors, lowest first, as docs/architecture.md states them: a file includes only
headers of its own floor and of the floors below it. Fails naming each include that points
up, a header that is on no floor, a file below the app that includes Qt, and a probes
runtime file that names SQLite (the runtime stores nothing).

    base                      (included as "ddpscope/NAME.h")
    probes/runtime            what a training process records through
    engine/tensor, autograd, nn, optim, c10d, rpc, dist_autograd, ddp
    probes/store, analysis, formats, collector
    engine/apps               the tools: worker, CLI, launchers, torchrun, collect
    gui/models, gui/app

Includes are resolved as the build resolves them: "ddpscope/NAME.h" is base's, "DIR/NAME.h"
the engine's folder DIR, a bare name the one header of that name on a floor (two floors
holding one name are an error: the build would pick one silently).

Usage: check_layers.py SOURCE_DIR
"""
import os
import re
import sys

FLOORS = ["base/ddpscope", "probes/runtime",
          "engine/tensor", "engine/autograd", "engine/nn", "engine/optim", "engine/c10d", "engine/rpc",
          "engine/dist_autograd", "engine/ddp",
          "probes/store", "probes/analysis", "probes/formats", "probes/collector",
          "engine/apps", "gui/models", "gui/app"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_/.]+\.h)"', re.M)
QT_INCLUDE = re.compile(r'^\s*#\s*include\s+<(Q[A-Za-z]+|Qt[A-Za-z]+/[A-Za-z]+)>', re.M)
SOURCES = (".h", ".cpp", ".cu")


def floor_files(src, floor):
    for folder, _, names in os.walk(os.path.join(src, floor)):
        for name in sorted(names):
            if name.endswith(SOURCES):
                yield os.path.join(folder, name)


def main(src):
    problems = []
    floor_of_name = {}  # bare header name -> floor
    for floor in FLOORS[1:]:  # base is included by its prefix only
        for path in floor_files(src, floor):
            name = os.path.basename(path)
            if not name.endswith(".h"):
                continue
            if name in floor_of_name and floor_of_name[name] != floor:
                problems.append("%s is on two floors: %s and %s" % (name, floor_of_name[name], floor))
            floor_of_name[name] = floor
    # Sources beside the floors: in no floor, so in no order.
    for top in ("engine", "probes", "gui", "base"):
        for folder, dirs, names in os.walk(os.path.join(src, top)):
            rel = os.path.relpath(folder, src)
            if any(rel == f or rel.startswith(f + os.sep) for f in FLOORS):
                continue
            dirs[:] = [d for d in dirs if d not in ("python", "__pycache__")]
            problems += ["%s is on no floor" % os.path.join(rel, n) for n in names if n.endswith(SOURCES)]

    def resolve(header):
        if header.startswith("ddpscope/"):
            return "base/ddpscope"
        if "/" in header:
            folder = "engine/" + header.split("/")[0]
            return folder if folder in FLOORS else None
        return floor_of_name.get(header)

    files = 0
    for level, floor in enumerate(FLOORS):
        allowed = set(FLOORS[: level + 1])
        for path in floor_files(src, floor):
            files += 1
            rel = os.path.relpath(path, src)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for header in INCLUDE.findall(text):
                target = resolve(header)
                if target is not None and target not in allowed:
                    problems.append("%s (%s) includes %s of %s, a floor above it" % (rel, floor, header, target))
            if not floor.startswith("gui/") and QT_INCLUDE.search(text):
                problems.append("%s includes Qt (%s): only gui/ may" % (rel, QT_INCLUDE.search(text).group(1)))
            if floor == "probes/runtime" and re.search(r"<sqlite3\.h>|\bsqlite3_\w+\s*\(", text):
                problems.append("%s names SQLite: the runtime stores nothing" % rel)
    for p in problems:
        print(p)
    print("check_layers: %d files on %d floors, %d problem(s)" % (files, len(FLOORS), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
