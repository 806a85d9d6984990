#!/usr/bin/python3
"""probes/ is five rooms, one library each, with dependencies one way (DESIGN.md):
runtime, store, analysis, formats, collector; a room includes only its own headers and
those of the rooms above it. The engine (engine/, less its apps) includes the runtime's
alone, and the runtime names no SQLite. Fails naming each include that points the wrong
way, or a header that is in no room.

Usage: check_probe_rooms.py SOURCE_DIR
"""
import os
import re
import sys

ROOMS = ["runtime", "store", "analysis", "formats", "collector"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_/]+\.h)"', re.M)


def main(src):
    probes = os.path.join(src, "probes")
    room_of = {}
    for room in ROOMS:
        for folder, _, names in os.walk(os.path.join(probes, room)):
            for name in names:
                if name.endswith(".h"):
                    room_of[name] = room
    stray = [n for n in os.listdir(probes) if n.endswith((".h", ".cpp"))]
    problems = ["probes/%s is in no room" % n for n in stray]

    def check(path, allowed, who):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for header in INCLUDE.findall(text):
            name = os.path.basename(header)
            room = room_of.get(name)
            if room is not None and room not in allowed:
                problems.append("%s (%s) includes %s of probes/%s/" % (os.path.relpath(path, src), who, name, room))
        return text

    for i, room in enumerate(ROOMS):
        for folder, _, names in os.walk(os.path.join(probes, room)):
            for name in names:
                if name.endswith((".h", ".cpp")):
                    text = check(os.path.join(folder, name), set(ROOMS[: i + 1]), "room " + room)
                    if room == "runtime" and re.search(r"<sqlite3\.h>|\bsqlite3_\w+\s*\(", text):
                        problems.append("probes/runtime/%s names SQLite: the runtime stores nothing" % name)
    engine = os.path.join(src, "engine")
    for folder, dirs, names in os.walk(engine):
        if os.path.relpath(folder, engine).split(os.sep)[0] == "apps":
            continue
        for name in names:
            if name.endswith((".h", ".cpp", ".cu")):
                check(os.path.join(folder, name), {"runtime"}, "the engine")
    for p in problems:
        print(p)
    print("check_probe_rooms: %d file(s) in %d rooms, %d problem(s)" % (len(room_of), len(ROOMS), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
