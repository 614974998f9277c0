"""Unused includes, found by a tool rather than by eye: Debian's include-what-you-use
(iwyu) analyses every C file of the folders named on the command line as the build
compiles it (compile_commands.json), and each include it calls superfluous (its "should
remove these lines": nothing in the file, or in the file's own header, uses it) is listed;
the test fails if there is one. Its "should add" advice is not checked: for C it asks for
the private headers behind every umbrella (json-c, DPDK), which is noise.

A false positive is met where it stands, never by ignoring a file or a header wholesale:
a library's private headers are mapped to the one the code includes in iwyu.imp, and an
include kept for a reason iwyu cannot see says so on its line (`// IWYU pragma: keep`,
then why).

Run with the source root, the build root and the folders; --self-test plants unused
includes in scratch copies of real files and fails unless each is caught, and fails too if
an unplanted copy is not clean. A header is checked with the C file of its name (iwyu's
"associated header"); one that no C file is named after is not checked on its own.
Two iwyu processes take about 5 s for sni/, policy/ and control/ on the 2-core build
machine, and about 20 s with dataplane/.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from layout_main import planted

HERE = os.path.dirname(os.path.abspath(__file__))
MAPPING = os.path.join(HERE, "iwyu.imp")
IWYU_ARGS = [
    "-Xiwyu", "--mapping_file=" + MAPPING,
    # a header that names a struct by pointer is not asked to forward-declare it instead
    "-Xiwyu", "--no_fwd_decls",
]
# iwyu_tool -o clang: "FILE:LINE:COL: error: superfluous '#include <x.h>'"
FINDING_RE = re.compile(r"^(.+?):(\d+):\d+: error: superfluous '(#include [^']+)'$")
OTHER_RE = re.compile(r"^(.+?):(\d+):\d+: (fatal error|error): (.*)$")
# Output files the build writes, which iwyu needs none of, and -Werror: clang's warnings
# are not this test's business.
OUTPUT_FLAGS = {"-o", "-MQ", "-MF", "-MT"}
DROPPED = {"-MD", "-MMD", "-Werror"}


def arguments(entry):
    """The entry's compile command as a list, without what it would write or -Werror."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in OUTPUT_FLAGS:
            skip = True
        elif a not in DROPPED:
            out.append(a)
    return out


def entries(source_root, build_root, folders):
    """One compile command per C file under folders (not tests/), as the library builds it."""
    with open(os.path.join(build_root, "compile_commands.json")) as f:
        db = json.load(f)
    chosen = {}
    for e in db:
        path = os.path.normpath(os.path.join(e["directory"], e["file"]))
        rel = os.path.relpath(path, source_root)
        if not any(rel == d or rel.startswith(d.rstrip("/") + "/") for d in folders):
            continue
        # the unit tests compile some sources again; the library's own command comes first
        in_tests = e.get("output", "").startswith("tests/")
        if rel not in chosen or (chosen[rel][1] and not in_tests):
            chosen[rel] = ({"directory": e["directory"], "file": path,
                            "arguments": arguments(e)}, in_tests)
    return [e for e, _ in sorted(chosen.values(), key=lambda c: c[0]["file"])]


def run_iwyu(db, source_root):
    """(findings, problems) for the entries of db: 'path:line: #include <x>' strings."""
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "compile_commands.json"), "w") as f:
            json.dump(db, f)
        if shutil.which("iwyu_tool") is None:
            return [], ["iwyu_tool is not installed: tests/install-deps.sh installs iwyu"]
        res = subprocess.run(["iwyu_tool", "-p", tmp, "-j", "2", "-o", "clang", "--"]
                             + IWYU_ARGS, capture_output=True, text=True, check=False)
    findings, problems = set(), []
    for line in (res.stdout + res.stderr).splitlines():
        m = FINDING_RE.match(line)
        if m:
            path = os.path.normpath(os.path.join(db[0]["directory"], m.group(1)))
            findings.add((os.path.relpath(path, source_root), int(m.group(2)), m.group(3)))
            continue
        m = OTHER_RE.match(line)
        if m and not m.group(4).startswith(("add '", "superfluous '")):
            problems.append(line)   # a file iwyu could not compile is a file not checked
    if not db:
        problems.append("no C file to check: is compile_commands.json the build's?")
    return [f"{p}:{n}: {inc}" for p, n, inc in sorted(findings)], problems


def check(source_root, build_root, folders):
    findings, problems = run_iwyu(entries(source_root, build_root, folders), source_root)
    for p in problems + findings:
        print(p)
    print(f"{len(findings)} unused include(s) in {' '.join(folders)}")
    return 1 if findings or problems else 0


# Lines planted after the includes of scratch copies of real files: a libc header, one of
# ours, and a library umbrella that iwyu.imp must not hide when nothing uses it.
PLANTS = [
    ("sni/dns_case.c", "#include <ctype.h>"),
    ("sni/dns_case.c", '#include "sni/tls.h"'),
    ("control/nft/nft_obj.c", "#include <json-c/json.h>"),
]


def scratch_entry(source_root, build_root, path, tmp):
    """path's compile command, compiling a copy of it in tmp instead; None without one."""
    db = entries(source_root, build_root, [path])
    if len(db) != 1:
        return None
    e, real = db[0], db[0]["file"]
    copy = os.path.join(tmp, os.path.basename(real))
    shutil.copy(real, copy)
    args = [copy if os.path.normpath(os.path.join(e["directory"], a)) == real else a
            for a in e["arguments"]]
    # the real file's folder, where its quoted includes are found
    e["arguments"] = args[:1] + ["-I" + os.path.dirname(real)] + args[1:]
    e["file"] = copy
    return e


def plant(copy, line):
    """Inserts line after copy's last #include; returns its line number."""
    with open(copy) as f:
        lines = f.read().split("\n")
    at = max(i for i, text in enumerate(lines) if text.startswith("#include")) + 1
    with open(copy, "w") as f:
        f.write("\n".join(lines[:at] + [line] + lines[at:]))
    return at + 1


def self_test(source_root, build_root):
    failures = 0
    for path, line in PLANTS:
        with tempfile.TemporaryDirectory() as tmp:
            e = scratch_entry(source_root, build_root, path, tmp)
            if e is None:
                print(f"self-test: {path} has no compile command")
                return 1
            before, problems = run_iwyu([e], tmp)
            if before or problems:
                print(f"self-test: the unplanted copy of {path} is not clean:", *problems,
                      *before, sep="\n  ")
                return 1
            n = plant(e["file"], line)
            found, problems = run_iwyu([e], tmp)
        if problems:
            print(f"self-test: iwyu failed on the copy of {path}:", *problems, sep="\n  ")
        failures += planted(f"{path}: {line}",
                            f"{os.path.basename(path)}:{n}: {line}" in found)
    return 1 if failures else 0


def main():
    args = sys.argv[1:]
    if args and args[0] == "--self-test":
        return self_test(os.path.abspath(args[1]), os.path.abspath(args[2]))
    if len(args) < 3:
        print("usage: check_unused_includes.py [--self-test] SOURCE_ROOT BUILD_ROOT FOLDER...")
        return 2
    return check(os.path.abspath(args[0]), os.path.abspath(args[1]), args[2:])


if __name__ == "__main__":
    sys.exit(main())
