#!/usr/bin/python3
"""Which tests exercise which module, so that a module's tests can be found: few tests are
named after the module they test (tst_<module>), most test a feature across several, and
nothing said which. A module is a .cpp under engine/, probes/, gui/ or base/, named by its
stem; *_main.cpp and main.cpp are entry points, listed apart. A test is a tests/*/tst_*.cpp,
a tests/fuzz/fuzz_*.cpp (CTest's fuzz_<target>), or a Python or shell script that
tests/CMakeLists.txt runs from tests/{torch,faults,cluster,gpu,packaging,probes} (or a
test_*.py there).

A C++ test reaches module M when its sources (with the extra sources tests/CMakeLists.txt
gives it, and those of a test program it runs: $<TARGET_FILE:...>) reach M's header through
#include "...", followed through the project's headers (found beside the includer, else by
basename, as the build's many include folders find them). M's headers: its own, and the
declaration-only header (no .cpp of its name) whose functions and classes it defines most
of (cpu_blas.cpp: kernels.h); without either, the header it includes that declares most of
what it defines (main_window_jobs.cpp: main_window.h). What includes cannot show, programs
a test runs (ddpscope-cli, -worker, -collector, -lesson, the app) and libraries it loads,
tests/test_map.txt says: `module: test_a test_b  # why`.
A test that reaches M only through code (the .cpp behind a header it reaches, or a program
the map says it runs, includes M's header) reaches M too, in second rank: it runs M's code
without aiming at it (shipper.cpp, whose header only probe_session.cpp includes).

Prints a summary: modules, how many have a tst_<module>, how many some test reaches, and
each module no test reaches. A .cpp under 15 non-blank lines is trivial (a stub, a few
definitions) and is named apart. Fails (exit 1) when a module or entry point that is not
trivial is reached by no test, or when test_map.txt names a module or a test that does not
exist. With --write FILE, also writes FILE (docs/tests.md): one table per area.

Usage: test_index.py SOURCE_DIR [--write FILE]
"""
import os
import re
import sys

SOURCE_FOLDERS = ["engine", "probes", "gui", "base"]
AREAS = [
    ("engine", "engine/"),
    ("probes/runtime", "probes/runtime/"),
    ("probes/store", "probes/store/"),
    ("probes/analysis", "probes/analysis/"),
    ("probes/formats", "probes/formats/"),
    ("probes/collector", "probes/collector/"),
    ("gui/models", "gui/models/"),
    ("gui/app", "gui/app/"),
    ("base", "base/"),
]
SCRIPT_FOLDERS = ["torch", "faults", "cluster", "gpu", "packaging", "probes"]
HEADERS = (".h", ".cuh", ".hpp")
CODE = (".cpp", ".cu")
TRIVIAL_LINES = 15
SHOWN = 6
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
MAP_LINE = re.compile(r"^([A-Za-z0-9_]+)\s*:\s*([^#]*?)\s*(?:#\s*(.*))?$")


def skipped(name):
    return name in ("build", "corpus", "__pycache__") or name.startswith((".", "build-", "build_"))


def walk(src, top, exts):
    """Paths (relative to src, with /) of the files under top ending in exts, sorted."""
    found = []
    for folder, dirs, names in os.walk(os.path.join(src, top)):
        dirs[:] = [d for d in dirs if not skipped(d)]
        rel = os.path.relpath(folder, src).replace(os.sep, "/")
        found += [rel + "/" + n for n in names if n.endswith(exts)]
    return sorted(found)


def read(src, path):
    with open(os.path.join(src, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


class Includes:
    """The include graph of every C++ file under engine, probes, gui, base and tests."""

    def __init__(self, src):
        self.files = []
        for top in SOURCE_FOLDERS + ["tests"]:
            self.files += walk(src, top, HEADERS + CODE)
        known = set(self.files)
        by_name = {}
        for path in self.files:
            by_name.setdefault(os.path.basename(path), []).append(path)
        self.edges = {}
        for path in self.files:
            targets = []
            for inc in INCLUDE.findall(read(src, path)):
                near = os.path.normpath(os.path.join(os.path.dirname(path), inc)).replace(os.sep, "/")
                if near in known:
                    targets.append(near)
                    continue
                # Found by basename, as through the build's include folders; of several
                # files of that name, those whose path ends as the include is written.
                found = by_name.get(os.path.basename(inc), [])
                if len(found) > 1:
                    found = [p for p in found if p.endswith("/" + inc)] or found[:1]
                targets += found[:1]
            self.edges[path] = targets

    def reach(self, sources, implementers=None, runs=()):
        """{header: depth} of the headers the sources reach (a direct include is depth 1),
        following headers alone. With implementers ({header: [.cpp]}), also what the code
        behind each header reached includes, and what the .cpp files in runs (a program
        the test runs) include: the code a test links or runs. Each step costs 1."""
        implementers = implementers or {}
        depth = {}
        seen = set(sources)
        frontier = list(sources)
        later = [p for p in runs if p not in seen]  # one step from the test: it runs them
        seen.update(later)
        level = 0
        while frontier or later:
            level += 1
            nxt, later = later, []
            for path in frontier:
                for target in self.edges.get(path, []) + implementers.get(path, []):
                    if target not in seen:
                        seen.add(target)
                        nxt.append(target)
                        if target.endswith(HEADERS):
                            depth[target] = level
            frontier = nxt
        return depth


def find_modules(src):
    """(modules, entry points): {name: path} of the .cpp files under the source folders."""
    modules, entries = {}, {}
    for top in SOURCE_FOLDERS:
        for path in walk(src, top, (".cpp",)):
            name = stem(path)
            (entries if name == "main" or name.endswith("_main") else modules)[name] = path
    return modules, entries


QUALIFIED = re.compile(r"^[A-Za-z_][^;{}()\n]*?\b(\w+)::~?\w+\s*\(", re.M)
FREE = re.compile(r"^(?!namespace\b|using\b|static\b|return\b|template\b|typedef\b)"
                  r"[A-Za-z_][\w:<>,\s*&]*?[\s*&](\w+)\s*\((?![^\n]*\);\s*$)", re.M)


def declares(header_text, classes, functions):
    """How many of the classes and free functions a header declares."""
    hits = [c for c in classes if re.search(r"\b(?:class|struct)\s+%s\b[^;]" % c, header_text)]
    return len(hits) + len([f for f in functions if re.search(r"\b%s\s*\(" % f, header_text)])


def best(headers, src, classes, functions):
    """Those of the headers that declare the most of the classes and functions (none: [])."""
    score = {h: declares(read(src, h), classes, functions) for h in headers}
    top = max(score.values(), default=0)
    return [h for h in headers if top and score[h] == top]


def interface_of(src, path, graph, implemented):
    """The headers by which a test reaches the module at path: its own, and the
    declaration-only header (no .cpp of its name) whose declarations it defines most of
    (kernels.h for cpu_blas.cpp); with neither, the header it includes that declares most
    of what it defines, else the header its name begins with. Returns (headers, how it
    was found: None for its own header alone)."""
    text = read(src, path)
    classes = set(QUALIFIED.findall(text))
    functions = set(FREE.findall(text)) - {"if", "for", "while", "switch", "operator", "main"}
    included = [h for h in graph.edges[path] if h.endswith(HEADERS)]
    own = os.path.splitext(path)[0] + ".h"
    extra = best([h for h in included if os.path.splitext(h)[0] not in implemented], src, classes, functions)
    names = ", ".join(os.path.basename(h) for h in extra)
    if own in graph.edges:
        return [own] + extra, ("and what %s declares" % names) if extra else None
    if extra:
        return extra, "defines what %s declares" % names
    extra = best(included, src, classes, functions)
    if extra:
        return extra, "defines what %s declares" % ", ".join(os.path.basename(h) for h in extra)
    folder = os.path.dirname(path)
    prefixed = [h for h in graph.files if os.path.dirname(h) == folder and h.endswith(HEADERS)
                and stem(path).startswith(stem(h) + "_")]
    if prefixed:
        return [max(prefixed, key=len)], "part of " + os.path.basename(max(prefixed, key=len))
    return [], "no header"


def cmake_calls(text):
    """(command, [arguments]) of each call in a CMakeLists text, comments dropped."""
    text = re.sub(r"#[^\n]*", "", text)
    for m in re.finditer(r"\b([A-Za-z_0-9]+)\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)", text):
        yield m.group(1), m.group(2).split()


def find_tests(src):
    """{test name: [source paths]} of the C++ tests, and {script name: path} of the scripts."""
    tests = {}
    for path in walk(src, "tests", (".cpp",)):
        name = stem(path)
        if name.startswith("tst_") or (name.startswith("fuzz_") and path.startswith("tests/fuzz/")):
            tests[name] = [path]
    cmake = read(src, "tests/CMakeLists.txt") if os.path.exists(os.path.join(src, "tests/CMakeLists.txt")) else ""
    programs = {}
    for command, args in cmake_calls(cmake):
        cpp = ["tests/" + a for a in args if a.endswith(".cpp") and os.path.exists(os.path.join(src, "tests", a))]
        if command == "add_executable" and args:
            programs[args[0]] = cpp
        elif command.startswith("ddpscope_add_") and args and args[0] in tests:
            tests[args[0]] += [p for p in cpp if p not in tests[args[0]]]
    # A test program a test runs ($<TARGET_FILE:prog> in its definitions): its sources too.
    for command, args in cmake_calls(cmake):
        if command == "target_compile_definitions" and args and args[0] in tests:
            for prog in re.findall(r"\$<TARGET_FILE:([A-Za-z0-9_.-]+)>", " ".join(args)):
                for p in programs.get(prog, []):
                    if p not in tests[args[0]] and stem(p) not in tests:
                        tests[args[0]].append(p)
    scripts = {}
    registered = set()
    for command, args in cmake_calls(cmake):
        if command == "add_test":
            registered.update(re.findall(r"\$\{CMAKE_CURRENT_SOURCE_DIR\}/([A-Za-z0-9_/.-]+\.(?:py|sh))", " ".join(args)))
    for folder in SCRIPT_FOLDERS:
        for path in walk(src, "tests/" + folder, (".py", ".sh")):
            rel = path[len("tests/"):]
            if rel in registered or os.path.basename(path).startswith("test_"):
                scripts[stem(path)] = rel
    return tests, scripts


def read_map(src, modules, entries, tests, scripts, problems):
    """{module: [(test, why)]} from tests/test_map.txt, each name checked."""
    path = os.path.join(src, "tests", "test_map.txt")
    mapped = {}
    if not os.path.exists(path):
        return mapped
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            m = MAP_LINE.match(line.strip())
            if not m:
                problems.append("tests/test_map.txt:%d: not `module: tests  # why`" % number)
                continue
            module, names, why = m.group(1), m.group(2).split(), m.group(3) or ""
            if module not in modules and module not in entries:
                problems.append("tests/test_map.txt:%d: no module %s" % (number, module))
                continue
            for name in names:
                name = stem(name)
                if name not in tests and name not in scripts:
                    problems.append("tests/test_map.txt:%d: no test %s" % (number, name))
                else:
                    mapped.setdefault(module, []).append((name, why))
    return mapped


def non_blank_lines(src, path):
    return sum(1 for line in read(src, path).splitlines() if line.strip())


def words(name):
    return [w for w in name.split("_") if len(w) >= 4 and w not in ("main", "test")]


def own_tests(name, headers, how):
    """The tests named after a module: tst_<module>; for a module that only defines what
    another header declares (the CPU kernels of kernels.h, the window's parts of
    main_window.h), also tst_<that header>, as the header is the module's face."""
    if how and how.startswith("defines what ") and len(headers) == 1:
        return ["tst_" + name, "tst_" + stem(headers[0])]
    return ["tst_" + name]


def closeness(module, test, depth, scripts, named, own):
    """Sort key of a module's tests: tst_<module>, those test_map.txt names (in its order),
    those whose name shares a word with the module's (tst_launcher for job_launcher), then
    the nearest, C++ tests before scripts."""
    related = any(a.startswith(b) or b.startswith(a) for a in words(module) for b in words(test))
    return (test != own, test not in named, named.index(test) if test in named else 0,
            not related, depth, test in scripts, test)


def index(src):
    """Everything the summary and the page show."""
    graph = Includes(src)
    modules, entries = find_modules(src)
    tests, scripts = find_tests(src)
    problems = []
    mapped = read_map(src, modules, entries, tests, scripts, problems)
    implemented = {os.path.splitext(p)[0] for p in graph.files if p.endswith(CODE)}
    interface = {n: interface_of(src, p, graph, implemented) for n, p in modules.items()}
    implementers = {}
    for name, (headers, _) in interface.items():
        for h in headers:
            implementers.setdefault(h, []).append(modules[name])
    # A test the map names for a module runs that module's code (a program, a library it
    # loads): what its .cpp includes, the test reaches as it reaches what a module it
    # includes the header of includes.
    sources = {name: list(paths) for name, paths in tests.items()}
    sources.update((name, []) for name in scripts)
    runs = {name: [] for name in sources}
    for module, names in mapped.items():
        for test, _ in names:
            runs[test].append(modules.get(module) or entries[module])
    direct = {t: graph.reach(s) for t, s in sources.items()}
    linked = {t: graph.reach(s, implementers, runs[t]) for t, s in sources.items()}
    rows = {}
    for name, path in list(modules.items()) + list(entries.items()):
        headers, how = interface.get(name, ([], None))
        first, second = {}, {}
        for test in sources:
            d = min([direct[test][h] for h in headers if h in direct[test]], default=None)
            if d is not None:
                first[test] = d
                continue
            d = min([linked[test][h] for h in headers if h in linked[test]], default=None)
            if d is not None:
                second[test] = d
        named = [test for test, _ in mapped.get(name, [])]
        for test in named:
            first[test] = 0
            second.pop(test, None)
        named_after = [t for t in own_tests(name, headers, how) if t in tests]
        own = named_after[0] if named_after else "tst_" + name
        if own in tests and own not in first:
            first[own] = 0
            second.pop(own, None)
        rows[name] = {"path": path, "how": how, "own": own in tests, "entry": name in entries,
                      "first": sorted(first, key=lambda t: closeness(name, t, first[t], scripts, named, own)),
                      "second": sorted(second, key=lambda t: closeness(name, t, second[t], scripts, named, own)),
                      "trivial": non_blank_lines(src, path) < TRIVIAL_LINES}
        rows[name]["tests"] = rows[name]["first"] + rows[name]["second"]
    base_rows = {}
    for header in walk(src, "base", HEADERS):
        first = {t: d[header] for t, d in direct.items() if header in d}
        second = {t: d[header] for t, d in linked.items() if header in d and t not in first}
        base_rows[os.path.relpath(header, "base")] = {
            "first": sorted(first, key=lambda t: (first[t], t in scripts, t)),
            "second": sorted(second, key=lambda t: (second[t], t in scripts, t))}
    return {"rows": rows, "tests": tests, "scripts": scripts, "problems": problems,
            "mapped": mapped, "base": base_rows, "programs": program_names(src)}


def program_names(src):
    """{source stem: program} of the executables the CMakeLists build from one entry point."""
    names = {}
    for top in SOURCE_FOLDERS:
        for path in walk(src, top, ("CMakeLists.txt",)):
            for command, args in cmake_calls(read(src, path)):
                if command == "add_executable" and len(args) > 1:
                    for a in args[1:]:
                        if a.endswith(".cpp"):
                            names.setdefault(stem(a), args[0])
    return names


def summarize(ix):
    rows = ix["rows"]
    modules = [r for r in rows.values() if not r["entry"]]
    entries = sorted(n for n, r in rows.items() if r["entry"])
    unreached = sorted(n for n, r in rows.items() if not r["tests"] and not r["trivial"])
    trivial = sorted(n for n, r in rows.items() if r["trivial"])
    indirect = sorted(n for n, r in rows.items() if not r["first"] and r["second"])
    print("test_index: %d modules and %d entry points (%s); %d C++ tests, %d test scripts"
          % (len(modules), len(entries), " ".join(entries), len(ix["tests"]), len(ix["scripts"])))
    print("  with a tst_<module>: %d of %d" % (sum(r["own"] for r in modules), len(modules)))
    print("  reached by some test: %d of %d modules, %d of %d entry points"
          % (sum(bool(r["tests"]) for r in modules), len(modules),
             sum(bool(rows[n]["tests"]) for n in entries), len(entries)))
    print("    of these %d, through a test's includes or tests/test_map.txt (%d modules named): %d; only through "
          "code a test links or runs: %d" % (len(rows), len(ix["mapped"]), sum(bool(r["first"]) for r in rows.values()),
                                             len(indirect)))
    if indirect:
        print("    only through code: " + " ".join(indirect))
    print("  trivial (under %d non-blank lines, not required to be reached): %s" % (TRIVIAL_LINES, " ".join(trivial)))
    for name in sorted(n for n, r in rows.items() if not r["tests"] and r["trivial"]):
        print("  reached by no test, trivial: %s" % rows[name]["path"])
    for name in unreached:
        print("  reached by no test: %s (%s)" % (rows[name]["path"], rows[name]["how"] or "through its header"))
    if not unreached:
        print("  reached by no test: none")
    for p in ix["problems"]:
        print(p)
    return 1 if unreached or ix["problems"] else 0


def shown(ix, name):
    """How a test is named on the page: tst_ and fuzz_ by name, a script by its path."""
    return "`%s`" % ix["scripts"].get(name, name)


def tests_cell(ix, row):
    """The first tests of a row: those that include the module's header (or that the map
    names) as they are, those that reach it only through code they run in italics."""
    names = [shown(ix, t) for t in row["first"]] + ["*%s*" % shown(ix, t) for t in row["second"]]
    if not names:
        return "**none**"
    return ", ".join(names[:SHOWN]) + (" +%d more" % (len(names) - SHOWN) if len(names) > SHOWN else "")


INTRO = """# Where a module's tests are

Generated by `/usr/bin/python3 tests/style/test_index.py . --write docs/tests.md`; do not
edit by hand, run it again.

Look a module up in its area's table below: the tests in its row are those to read, run
or extend when you change it. A module is a `.cpp` under `engine/`, `probes/`, `gui/` or
`base/`, named by its file. A new module's own test is `tests/<area>/tst_<module>.cpp`,
registered in `tests/CMakeLists.txt`: where it exists it comes first in its row (for a
module that only defines what another header declares, `tst_<header>`). Then:

- those [`tests/test_map.txt`](../tests/test_map.txt) names for it (what includes cannot
  show: programs a test runs, libraries it loads), in its order;
- the tests that include the module's header, directly or through other headers: a test
  whose name shares a word with the module's first, then the nearest;
- *in italics*: tests that reach the module only through code they link or run (they
  include the header of a module whose `.cpp` includes this one's, or run a program whose
  `main` does). They run the module, but do not aim at it.

A module without a header of its own is found through the header whose declarations it
defines (noted in its row). C++ tests are `tests/*/tst_*.cpp` and the fuzz targets
`tests/fuzz/fuzz_*.cpp` (CTest's `fuzz_<target>`); scripts are named by their path under
`tests/`. At most %d tests are shown a row. *trivial*: under %d non-blank lines.

`tests/style/test_index.py SOURCE_DIR` without `--write` prints how many modules some test
reaches, and fails naming each module with behaviour that none does.
""" % (SHOWN, TRIVIAL_LINES)


def page(ix):
    rows = ix["rows"]
    modules = [r for r in rows.values() if not r["entry"]]
    out = [INTRO, "%d modules: %d with a `tst_<module>`, %d reached by some test (%d only through code a test "
                  "links or runs).\n" % (len(modules), sum(r["own"] for r in modules),
                                          sum(bool(r["tests"]) for r in modules),
                                          sum(bool(r["second"]) and not r["first"] for r in modules))]
    for area, prefix in AREAS:
        names = sorted((n for n, r in rows.items() if r["path"].startswith(prefix) and not r["entry"]),
                       key=lambda n: rows[n]["path"])
        out.append("## %s\n" % area)
        if area == "base":
            out.append("`base/` has no `.cpp`: it is headers alone, shown here with the tests that reach them.\n")
            out.append("| header | tests |\n|---|---|")
            for header, row in sorted(ix["base"].items()):
                out.append("| `%s` | %s |" % (header, tests_cell(ix, row)))
            out.append("")
            continue
        out.append("| module | tests |\n|---|---|")
        for n in names:
            r = rows[n]
            notes = ([r["how"]] if r["how"] else []) + (["trivial"] if r["trivial"] else [])
            label = "`%s`" % r["path"][len(prefix):-len(".cpp")]
            out.append("| %s%s | %s |" % (label, " (%s)" % "; ".join(notes) if notes else "", tests_cell(ix, r)))
        out.append("")
    out.append("## Entry points\n")
    out.append("Each program's `main`: tests reach them by running the program, as `tests/test_map.txt` says.\n")
    out.append("| entry point | program | tests |\n|---|---|---|")
    for n in sorted(n for n, r in rows.items() if r["entry"]):
        r = rows[n]
        out.append("| `%s` | `%s` | %s |" % (r["path"], ix["programs"].get(n, "?"), tests_cell(ix, r)))
    return "\n".join(out) + "\n"


def main(src, write=None):
    ix = index(src)
    status = summarize(ix)
    if write:
        with open(write, "w", encoding="utf-8") as f:
            f.write(page(ix))
        print("test_index: wrote " + write)
    return status


if __name__ == "__main__":
    args = sys.argv[1:]
    target = None
    if "--write" in args:
        i = args.index("--write")
        if i + 1 >= len(args):
            sys.exit("usage: test_index.py SOURCE_DIR [--write FILE]")
        target = args[i + 1]
        del args[i : i + 2]
    sys.exit(main(args[0] if args else ".", target))
