"""The repository is the whole product: no tracked file may name a path outside it.
Run with the source root as its argument; exits 1 and lists every path that reaches out.
--self-test plants such paths (and legitimate ones) in a scratch tree and fails unless
each bad one is caught and no good one is.

What counts as reaching out, however it is spelled:
- a relative path with "..", resolved against the directory of the file that names it;
- a ".." followed by SIBLING, the folder that sits beside every checkout here, in any
  spelling: one slash path, meson's / operator, the arguments of os.path.join;
- an absolute path under ABS_ROOT, the machine's folder of checkouts;
- meson path expressions: a source root or a string, then / and strings;
- Python path expressions, followed through module-level names: Path(__file__).parents[N],
  .parent chains, os.path.dirname, os.path.join and / with "..".
The fuzz corpora are parser inputs, not paths, and binary files are skipped. This file
spells the outside only in pieces, so that it passes its own check.
"""
import ast
import os
import re
import subprocess
import sys
import tempfile

from layout_main import planted, run

SKIP_PREFIXES = ("tests/fuzz/corpus/",)
OUTSIDE = None          # resolve(): the path left the repository
OUT = "outside"         # PyPaths: the value is a path outside the repository
SIBLING = "sha" + "red"
ABS_ROOT = "/" + "work"
UP_PATH_RE = re.compile(r"(?<![\w/.$~-])\.\.(?!\.)(?:/[\w.*-]+)*/(?:[\w.*-]+)?")
SIBLING_RE = re.compile(r"['\"]?\.\.['\"]?\s*(?:/|,|\+)\s*['\"]?/?" + SIBLING + r"\b")
ABS_RE = re.compile(r"(?<![\w.-])" + ABS_ROOT + r"/[\w.-]*")
MESON_TOKEN_RE = re.compile(r"'(?:[^'\\]|\\.)*'|[A-Za-z_][\w.]*\(\s*\)|/|[A-Za-z_]\w*|\S")
MESON_ROOTS = ("meson.project_source_root()", "meson.source_root()",
               "meson.global_source_root()")


def resolve(base, rel):
    """base: components relative to the root; rel: a relative path. The components of the
    result, or OUTSIDE when a ".." climbs above the root."""
    parts = list(base)
    for c in rel.split("/"):
        if c in ("", "."):
            continue
        if c == "..":
            if not parts:
                return OUTSIDE
            parts.pop()
        else:
            parts.append(c)
    return parts


def dir_of(path):
    return path.split("/")[:-1]


def text_problems(path, text):
    """The rules any file is held to: relative ".." paths, the sibling, ABS_ROOT."""
    problems = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in UP_PATH_RE.finditer(line):
            if resolve(dir_of(path), m.group(0)) is OUTSIDE:
                problems.append((lineno, m.group(0), "climbs out of the repository"))
        for m in SIBLING_RE.finditer(line):
            problems.append((lineno, m.group(0), "names the folder beside the repository"))
        for m in ABS_RE.finditer(line):
            problems.append((lineno, m.group(0), "an absolute path outside the repository"))
    return problems


def meson_tokens(text):
    """(line, token) of a meson file, comments left out; a chain may span lines."""
    for lineno, line in enumerate(text.splitlines(), 1):
        for token in MESON_TOKEN_RE.findall(line.split("#", 1)[0]):
            yield lineno, token


def meson_problems(path, text):
    """Chains of operand / operand / ...: a source root or a string first, then strings."""
    tokens = list(meson_tokens(text))
    words = [t for _, t in tokens]
    problems = []
    i = 0
    while i < len(words):
        j = i
        while j + 2 < len(words) and words[j + 1] == "/" and words[j + 2][0] == "'":
            j += 2
        if words[i] in MESON_ROOTS:
            base = []
        elif words[i] == "meson.current_source_dir()" or words[i][0] == "'":
            base = dir_of(path)
        else:
            base = None
        if j > i and base is not None:
            rel = "/".join(w[1:-1] for w in words[i:j + 1:2] if w[0] == "'")
            if resolve(base, rel) is OUTSIDE:
                problems.append((tokens[i][0], " ".join(words[i:j + 1]),
                                 "climbs out of the repository"))
        i = j + 1
    return problems


class PyPaths:
    """Evaluates the path expressions of one Python file as far as they are known: a value
    is ("path", components) relative to the root, ("str", text), OUT, or None (unknown)."""

    def __init__(self, path):
        self.path = path
        self.names = {}

    @staticmethod
    def call_name(node):
        f = node.func
        parts = []
        while isinstance(f, ast.Attribute):
            parts.append(f.attr)
            f = f.value
        if isinstance(f, ast.Name):
            parts.append(f.id)
        return ".".join(reversed(parts))

    def join(self, a, b):
        if a is None or b is None or a == OUT:
            return a if a == OUT else None
        if b[0] == "str" and b[1].startswith("/"):
            return b
        if a[0] == "str" and b[0] == "str":
            return ("str", a[1].rstrip("/") + "/" + b[1])
        if a[0] == "path" and b[0] == "str":
            parts = resolve(a[1], b[1])
            return OUT if parts is OUTSIDE else ("path", parts)
        return None

    def up(self, v, n):
        if v is None or v == OUT or v[0] != "path":
            return v if v == OUT else None
        if n > len(v[1]):
            return OUT
        return ("path", v[1][:len(v[1]) - n])

    def value(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return ("str", node.value)
        if isinstance(node, ast.Name):
            if node.id == "__file__":
                return ("path", self.path.split("/"))
            return self.names.get(node.id)
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            return self.up(self.value(node.value), 1)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and \
                node.value.attr == "parents" and isinstance(node.slice, ast.Constant):
            return self.up(self.value(node.value.value), node.slice.value + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return self.join(self.value(node.left), self.value(node.right))
        if isinstance(node, ast.Call):
            return self.call_value(node)
        return None

    def call_value(self, node):
        name, args = self.call_name(node), node.args
        if name in ("os.path.abspath", "os.path.realpath", "os.path.normpath", "Path",
                    "pathlib.Path", "str") and len(args) == 1:
            return self.value(args[0])
        if name == "os.path.dirname" and len(args) == 1:
            return self.up(self.value(args[0]), 1)
        if name in ("os.path.join", "Path", "pathlib.Path") and args:
            v = self.value(args[0])
            for a in args[1:]:
                v = self.join(v, self.value(a))
            return v
        if name in ("os.environ.get", "os.getenv") and len(args) == 2:
            return self.value(args[1])
        if isinstance(node.func, ast.Attribute):
            inner = self.value(node.func.value)
            if node.func.attr in ("resolve", "absolute", "expanduser"):
                return inner
            if node.func.attr == "joinpath":
                for a in args:
                    inner = self.join(inner, self.value(a))
                return inner
        return None

    def problems(self, text):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return []
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                    isinstance(stmt.targets[0], ast.Name):
                self.names[stmt.targets[0].id] = self.value(stmt.value)
        found = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.Call, ast.BinOp, ast.Attribute, ast.Subscript)) and \
                    self.value(node) == OUT and \
                    not any(self.value(c) == OUT for c in ast.iter_child_nodes(node)):
                found.append((node.lineno, ast.get_source_segment(text, node),
                              "a path expression that climbs out of the repository"))
        return found


def tracked_files(root):
    """The files git tracks or would (new, not ignored); every file but build trees and .git
    when root is not a clone."""
    cmd = ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    try:
        out = subprocess.run(cmd, check=True, capture_output=True).stdout
        return sorted(p for p in out.decode().split("\0") if p)
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git" and not d.startswith("build"))
        found += [os.path.relpath(os.path.join(dirpath, f), root) for f in sorted(files)]
    return found


def check(root):
    problems = []
    for path in tracked_files(root):
        if path.startswith(SKIP_PREFIXES):
            continue
        try:
            with open(os.path.join(root, path), "rb") as f:
                data = f.read()
        except OSError:
            continue        # deleted in the work tree, not yet in git
        if b"\0" in data:
            continue
        text = data.decode("utf-8", errors="replace")
        found = text_problems(path, text)
        if os.path.basename(path) in ("meson.build", "meson_options.txt"):
            found += meson_problems(path, text)
        if path.endswith(".py"):
            found += PyPaths(path).problems(text)
        for lineno, what, why in sorted(set(found)):
            problems.append(f"{path}:{lineno}: {' '.join(what.split())}: {why}")
    return problems


UP = ".."
# (file, text, caught?): each must be reported exactly when caught is True.
PLANTS = [
    ("tests/meson.build", f"d = meson.project_source_root() / '{UP}' / '{SIBLING}' / 't'\n", True),
    ("tests/meson.build", f"d = meson.project_source_root() / '{UP}' / 'x'\n", True),
    ("tests/meson.build", f"d = meson.current_source_dir() / '{UP}' / '{UP}' / 'x'\n", True),
    ("tests/meson.build", f"f = files('{UP}/{UP}/x.c')\n", True),
    ("tests/unit/meson.build", "a = '-DX=' + meson.project_source_root() /\n"
     f"    '{UP}/data' + ''\n", True),
    ("tests/unit/meson.build", f"f = files('{UP}/{UP}/sni/x.c')\n", False),
    ("tests/unit/meson.build", "d = meson.project_source_root() / 'tests/policy'\n", False),
    ("tests/diff/t.py", f"T = Path(__file__).parents[3] / '{SIBLING}' / 'traffic'\n", True),
    ("tests/diff/t.py", "T = Path(__file__).resolve().parents[2] / 'build'\n", False),
    ("tests/diff/t.py", "T = Path(__file__).parent.parent.parent.parent / 'x'\n", True),
    ("tests/bench/b.py", "import os\nROOT = os.path.normpath(os.path.join(os.path.dirname("
     f"__file__), '{UP}', '{UP}'))\nT = os.path.join(ROOT, '{UP}', 'data')\n", True),
    ("tests/bench/b.py", "import os\nROOT = os.path.normpath(os.path.join(os.path.dirname("
     f"__file__), '{UP}', '{UP}'))\nT = os.path.join(ROOT, 'build')\n", False),
    ("tests/bench/b.py", "import os\nT = os.environ.get('T', os.path.join(os.path.dirname("
     f"__file__), '{UP}/{UP}/{UP}/data'))\n", True),
    ("tests/bench/b.py", f"T = '{ABS_ROOT}/{SIBLING}/traffic'\n", True),
    ("tests/bench/b.py", "import os\nT = os.path.join(os.path.dirname("
     "os.path.dirname(os.path.dirname(os.path.dirname(__file__)))), 'x')\n", True),
    ("tests/bench/b.py", "import os\nT = os.path.join(os.path.dirname(os.path.dirname("
     "os.path.dirname(__file__))), 'x')\n", False),
    ("tests/bench/b.c", f"#define T \"{UP}/{SIBLING}/traffic\"\n", True),
    ("tests/bench/b.c", f"#include \"{UP}/include/x.h\"\n", False),
    ("README.md", f"The contract is in `{UP}/SPEC.md`.\n", True),
    ("README.md", "A leading dot or \"..\" is refused.\n", False),
    ("tests/e2e/x.sh", f"src=$(cd \"$here/{UP}/{UP}\" && pwd)\n", False),
]


def self_test():
    """Each planted path must be reported, and no legitimate one."""
    failures = 0
    for path, text, caught in PLANTS:
        with tempfile.TemporaryDirectory() as tmp:
            full = os.path.join(tmp, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
            found = check(tmp)
        failures += planted(f"{path}: {text.strip()!r}", bool(found), caught)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(run(check, self_test, "path(s) outside the repository"))
