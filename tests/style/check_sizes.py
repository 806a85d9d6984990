#!/usr/bin/python3
"""No source file over 800 lines and no C++ function over 80, the project's rule: a file that long
holds more than one feature and a function that long more than one step, and both are
read far more often than written. Files are the *.h, *.cpp, *.cu, *.py and *.sh under
the tree's source folders (engine, probes, gui, base, tests, tools, packaging, apps, those
that exist), less tests/fuzz/corpus and build folders. Functions are measured by
universal-ctags (its line: and end: fields; length = end - line + 1), which must be
installed (packaging/install-deps.sh installs it). Fails naming each offender as
`path:line name (N lines)`, a whole file as `path:1 <file> (N lines)`.

Usage: check_sizes.py SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys

FOLDERS = ["engine", "probes", "gui", "base", "tests", "tools", "packaging", "apps"]
EXTENSIONS = (".h", ".cpp", ".cu", ".py", ".sh")
CPP = (".h", ".cpp", ".cu")
SKIPPED = {os.path.join("tests", "fuzz", "corpus")}
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 80


def is_build_folder(name):
    return name == "build" or name.startswith(("build-", "build_")) or name == "__pycache__" or name.startswith(".")


def sources(src):
    """Every source file checked, as paths relative to src, sorted."""
    found = []
    for top in FOLDERS:
        for folder, dirs, names in os.walk(os.path.join(src, top)):
            rel = os.path.relpath(folder, src)
            dirs[:] = [d for d in dirs if not is_build_folder(d) and os.path.join(rel, d) not in SKIPPED]
            found += [os.path.join(rel, n) for n in names if n.endswith(EXTENSIONS)]
    return sorted(found)


def line_count(path):
    with open(path, "rb") as f:
        data = f.read()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def functions(src, files):
    """(path, line, name, length) of each C++ function definition in files, from ctags."""
    cmd = ["ctags", "--languages=C++,CUDA", "--kinds-C++=f", "--kinds-CUDA=f", "--fields=+ne", "--excmd=number",
           "--sort=no", "-f", "-", "-L", "-"]
    p = subprocess.run(cmd, cwd=src, input="\n".join(files) + "\n", capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("check_sizes: ctags failed (exit %d): %s" % (p.returncode, p.stderr.strip()[:500]))
    found = []
    for row in p.stdout.splitlines():
        cols = row.split("\t")
        if len(cols) < 4:
            continue
        fields = dict(c.split(":", 1) for c in cols[3:] if ":" in c)
        if "line" not in fields or "end" not in fields:
            continue
        name = cols[0]
        if name.startswith("__anon"):
            continue  # a lambda, measured as part of the function around it
        for scope_kind in ("class", "struct", "union"):
            scope = fields.get(scope_kind, "").split("::")[-1]
            if scope and not scope.startswith("__anon"):
                name = scope + "::" + name
        start, end = int(fields["line"]), int(fields["end"])
        found.append((cols[1], start, name, end - start + 1))
    return found


def main(src):
    if shutil.which("ctags") is None:
        print("check_sizes: ctags is missing; install universal-ctags (apt-get install universal-ctags, "
              "which packaging/install-deps.sh installs)")
        return 1
    version = subprocess.run(["ctags", "--version"], capture_output=True, text=True).stdout
    if "Universal Ctags" not in version:
        print("check_sizes: ctags is not universal-ctags (%s); install universal-ctags (apt-get install "
              "universal-ctags, which packaging/install-deps.sh installs)" % (version.splitlines() or ["?"])[0])
        return 1
    files = sources(src)
    problems = []
    for path in files:
        n = line_count(os.path.join(src, path))
        if n > MAX_FILE_LINES:
            problems.append("%s:1 <file> (%d lines)" % (path, n))
    found = functions(src, [f for f in files if f.endswith(CPP)])
    for path, line, name, n in sorted(found):
        if n > MAX_FUNCTION_LINES:
            problems.append("%s:%d %s (%d lines)" % (path, line, name, n))
    for p in problems:
        print(p)
    if problems:
        print("check_sizes: %d problem(s): files over %d lines or C++ functions over %d, of %d files and %d functions"
              % (len(problems), MAX_FILE_LINES, MAX_FUNCTION_LINES, len(files), len(found)))
        return 1
    print("check_sizes: %d files <= %d lines, %d functions <= %d lines"
          % (len(files), MAX_FILE_LINES, len(found), MAX_FUNCTION_LINES))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
