"""The man pages document the contract the code has, read out of the code itself:

- every configuration key the loader accepts (man_keys walks the loader's schema tables)
  is a term of namegate.yaml(5);
- every metric family the daemon serves (the names in the string literals of control/ and
  dataplane/) is a term of METRICS in namegate(8);
- every block and drop reason (the DP_REASONS and DP_DROPS tables) is a term of BLOCK
  REASONS in namegate(8);
- every event type (what reaches ctl_events.c's "event" field) and every event field (the
  keys ctl_events.c writes) is a term of EVENT LOG in namegate(8);
- every namegatectl command (cli.c's table) is a term of COMMANDS in namegatectl(8), and
  the long options of namegatectl, namegate and namegate-dump appear in their pages;
- every key namegate-dump writes appears in OUTPUT of namegate-dump(1);
- each page renders with groff and man without a warning and has the sections every page
  has;
- the EXAMPLE of namegate.yaml(5) loads (namegatectl check -c) and allows what it says.

Run: check_man.py --keys BUILD/tests/man/man_keys --ctl BUILD/control/namegatectl
     --man-dir BUILD SOURCE_ROOT
Exits 1 and lists everything missing. --self-test removes one item of each kind from the
rendered pages (and breaks a page's roff) and fails unless each is caught, so the check
cannot rot into one that passes everything.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

PAGES = ["namegate.8", "namegatectl.8", "namegate.yaml.5", "namegate-dump.1"]
SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "FILES", "SEE ALSO"]
TERM_INDENT = 7         # man(7) under groff: a tagged paragraph's tag, body 4 deeper


# ---- what the code says ------------------------------------------------------------------

def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def c_files(root, *dirs):
    for d in dirs:
        for base, _, names in os.walk(os.path.join(root, d)):
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(base, name), root)


def c_strings(src):
    """The contents of every string literal of C source src, comments skipped."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src[i] == "'":
            j = i + 1
            while j < n and src[j] != "'":
                j += 2 if src[j] == "\\" else 1
            i = j + 1
        elif src[i] == '"':
            j, buf = i + 1, []
            while j < n and src[j] != '"':
                if src[j] == "\\" and j + 1 < n:
                    buf.append(src[j:j + 2])
                    j += 2
                else:
                    buf.append(src[j])
                    j += 1
            out.append("".join(buf))
            i = j + 1
        else:
            i += 1
    return out


def strip_comments(src):
    src = re.sub(r"/\*.*?\*/", lambda m: " " * len(m.group(0)), src, flags=re.S)
    return re.sub(r"//[^\n]*", "", src)


def config_keys(keys_bin):
    out = subprocess.run([keys_bin], check=True, capture_output=True, text=True).stdout
    keys = [k for k in out.split("\n") if k]
    if len(keys) < 40 or "vms[].mac" not in keys or "dataplane.max_flows" not in keys:
        sys.exit(f"check_man: {keys_bin} printed no schema I recognise: {keys[:5]}")
    return keys


METRIC_RE = re.compile(r"\b((?:namegate|process)_[a-z0-9_]*[a-z0-9])\b")


def metric_families(root):
    """Metric names in the daemon's string literals, less a histogram's derived series."""
    names = set()
    for rel in c_files(root, "control", "dataplane"):
        for s in c_strings(read(root, rel)):
            names |= set(METRIC_RE.findall(s))
    families = {n for n in names
                if not (re.search(r"_(bucket|sum|count)$", n)
                        and re.sub(r"_(bucket|sum|count)$", "", n) in names)}
    if len(families) < 15 or "namegate_vm_blocked_total" not in families:
        sys.exit(f"check_man: found no metric families in control/ and dataplane/: {families}")
    return sorted(families)


def x_table(root, macro):
    """The labels of X(ID, "label", ...) rows of #define macro(X) in dataplane/."""
    for rel in c_files(root, "dataplane"):
        src = read(root, rel)
        m = re.search(r"#define\s+%s\(X\)((?:[^\n]*\\\n)*[^\n]*)" % macro, src)
        if m:
            return re.findall(r'X\(\s*\w+\s*,\s*"([^"]+)"', m.group(1))
    sys.exit(f"check_man: no #define {macro}(X) in dataplane/")


def reasons(root):
    found = x_table(root, "DP_REASONS") + x_table(root, "DP_DROPS")
    if len(found) < 20 or "no_binding" not in found:
        sys.exit(f"check_man: the reason tables look wrong: {found}")
    return found


def call_args(src, start):
    """The top-level arguments of the call whose '(' is at start, as source text."""
    depth, args, cur, i = 0, [], [], start
    while i < len(src):
        ch = src[i]
        if ch == '"':
            j = i + 1
            while src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            cur.append(src[i:j + 1])
            i = j + 1
            continue
        if ch in "([{":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return args
        elif ch == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(ch)
        i += 1
    return args


def event_types(root):
    """Event types: the literals ctl_events.c begins a line with, and every literal passed
    where a function takes `const char *event` (followed through functions that pass it on)."""
    srcs = {rel: strip_comments(read(root, rel)) for rel in c_files(root, "control", "dataplane")}
    events = set()
    for m in re.finditer(r"\bev_begin\s*\(", srcs["control/events/ctl_events.c"]):
        args = call_args(srcs["control/events/ctl_events.c"], m.end() - 1)
        if len(args) == 4 and re.fullmatch(r'"\w+"', args[3]):
            events.add(args[3].strip('"'))
    # functions with an `event` parameter, and its position
    takers = {}
    for src in srcs.values():
        for m in re.finditer(r"^(\w+)\s*\(([^)]*)\)\s*\{", src, re.M):
            params = [p.strip() for p in m.group(2).split(",")]
            for k, p in enumerate(params):
                if re.fullmatch(r"const\s+char\s*\*\s*event", p):
                    takers[m.group(1)] = k
    for src in srcs.values():
        for name, k in takers.items():
            for m in re.finditer(r"\b%s\s*\(" % name, src):
                args = call_args(src, m.end() - 1)
                if len(args) > k and re.fullmatch(r'"\w+"', args[k]):
                    events.add(args[k].strip('"'))
    if not {"block", "policy", "start", "stop", "grant"} <= events:
        sys.exit(f"check_man: the event types found look wrong: {sorted(events)}")
    return sorted(events)


def json_keys(src):
    """Keys the C source writes as \\"key\\": in its string literals."""
    return set(re.findall(r'\\"([A-Za-z_][A-Za-z0-9_]*)\\":', strip_comments(src)))


def event_fields(root):
    fields = json_keys(read(root, "control/events/ctl_events.c"))
    if not {"ts", "vm", "event", "reason"} <= fields:
        sys.exit(f"check_man: the event fields found look wrong: {sorted(fields)}")
    return sorted(fields)


def ctl_commands(root):
    src = strip_comments(read(root, "control/cli/cli.c"))
    m = re.search(r"ctl_cmds\[\]\s*=\s*\{(.*?)\n\};", src, re.S)
    cmds = re.findall(r'\{\s*"([a-z][a-z0-9_-]*)",\s*"', m.group(1)) if m else []
    if len(cmds) < 10 or "check" not in cmds:
        sys.exit(f"check_man: no command table in control/cli/cli.c: {cmds}")
    return cmds


def long_options(root, rels):
    """--name of every struct option row, and every "--name" namegate compares by hand."""
    opts = set()
    for rel in rels:
        src = strip_comments(read(root, rel))
        opts |= {"--" + o for o in re.findall(r'\{\s*"([a-z][a-z0-9-]*)",\s*\w+_argument', src)}
        opts |= set(re.findall(r'str(?:n?)cmp\(\s*\w+\s*,\s*"(--?[A-Za-z][a-z0-9-]*)=?"', src))
    return sorted(opts)


def dump_keys(root):
    keys = set()
    for rel in c_files(root, "sni/dump"):
        keys |= json_keys(read(root, rel))
    if not {"frame", "sni", "qname", "host"} <= keys:
        sys.exit(f"check_man: namegate-dump's JSON keys look wrong: {sorted(keys)}")
    return sorted(keys)


# ---- what the pages say ------------------------------------------------------------------

def render(page):
    """Plain text of a page as man shows it, without hyphenation and wide enough that no
    term is wrapped."""
    r = subprocess.run(["groff", "-man", "-Tutf8", "-rHY=0", "-rLL=200n", "-P-cbou", page],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"check_man: groff cannot render {page}: {r.stderr}")
    return r.stdout


def lint(page):
    """Warnings groff and man have for page, as a list of lines; empty when clean."""
    out = []
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", page],
                       capture_output=True, text=True)
    if r.returncode != 0 or r.stderr.strip():
        out += [f"groff: {line}" for line in (r.stderr.strip() or "failed").split("\n")]
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
    r = subprocess.run(["man", "--warnings=all", "-l", page], capture_output=True, text=True,
                       env=env)
    if r.returncode != 0 or r.stderr.strip():
        out += [f"man: {line}" for line in (r.stderr.strip() or "failed").split("\n")]
    return out


def sections(text):
    """{heading: text} of a rendered page; a section runs to the next column-0 line."""
    out, name = {}, None
    for line in text.split("\n"):
        if line and not line[0].isspace():
            name = line.strip()
            out.setdefault(name, [])
        elif name is not None:
            out[name].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def terms(text):
    """The entries of every tagged paragraph's tag in text: "grant, grant_revoked (x)" gives
    grant and grant_revoked. A tag sits at TERM_INDENT with its body deeper on the next line."""
    lines = text.split("\n")
    out = set()
    for i, line in enumerate(lines[:-1]):
        body = lines[i + 1]
        indent = len(line) - len(line.lstrip(" "))
        if indent != TERM_INDENT or not line.strip():
            continue
        if len(body) - len(body.lstrip(" ")) <= TERM_INDENT or not body.strip():
            continue
        head = re.split(r"\s\(", line.strip(), maxsplit=1)[0]
        for entry in re.split(r",\s+", head):
            word = entry.split()[0] if entry.split() else ""
            out.add(word)
            out.add(re.split(r"[{=]", word)[0])     # metric{labels}, --opt=VALUE
    return out


def words(text):
    return set(re.findall(r"[A-Za-z0-9_.\-]+", text))


# ---- the check ---------------------------------------------------------------------------

def gather(root, keys_bin):
    return {
        "keys": config_keys(keys_bin),
        "metrics": metric_families(root),
        "reasons": reasons(root),
        "events": event_types(root),
        "event_fields": event_fields(root),
        "commands": ctl_commands(root),
        "ctl_options": long_options(root, ["control/cli/cli.c", "control/cli/ctl_args.c"]),
        "daemon_options": long_options(root, ["dataplane/main/main.c"]),
        "dump_options": long_options(root, ["sni/dump/namegate_dump.c"]),
        "dump_keys": dump_keys(root),
    }


def check(code, texts):
    """Everything the code has that the rendered pages (texts: {page: text}) lack."""
    missing = []
    sec = {p: sections(t) for p, t in texts.items()}

    def need(what, items, page, section, how):
        body = texts[page] if section is None else sec[page].get(section)
        if body is None:
            missing.append(f"{page}: no section {section}")
            return
        have = terms(body) if how == "term" else words(body)
        for item in items:
            if item not in have:
                where = page + (f" {section}" if section else "")
                missing.append(f"{where}: {what} {item}")

    need("configuration key", code["keys"], "namegate.yaml.5", None, "term")
    need("metric family", code["metrics"], "namegate.8", "METRICS", "term")
    need("reason", code["reasons"], "namegate.8", "BLOCK REASONS", "term")
    need("event type", code["events"], "namegate.8", "EVENT LOG", "term")
    need("event field", code["event_fields"], "namegate.8", "EVENT LOG", "term")
    need("command", code["commands"], "namegatectl.8", "COMMANDS", "term")
    need("option", code["ctl_options"], "namegatectl.8", "OPTIONS", "word")
    need("option", code["daemon_options"], "namegate.8", "OPTIONS", "word")
    need("option", code["dump_options"], "namegate-dump.1", "OPTIONS", "word")
    need("JSON key", code["dump_keys"], "namegate-dump.1", "OUTPUT", "term")
    for page, s in sec.items():
        for name in SECTIONS:
            if name not in s:
                missing.append(f"{page}: no section {name}")
    return missing


def example_loads(root, ctl):
    """Problems with the EXAMPLE of namegate.yaml(5) (its source, byte for byte), as the
    daemon's loader sees them: it must load, and agent1 may reach pypi.org:443."""
    src = read(root, "policy/load/namegate.yaml.5.scd")
    m = re.search(r"^# EXAMPLE\n.*?^```\n(.*?)^```", src, re.M | re.S)
    if m is None:
        return ["namegate.yaml.5: no literal block in EXAMPLE"]
    tmp = tempfile.mkdtemp(prefix="check_man.")
    try:
        with open(os.path.join(tmp, "namegate.yaml"), "w", encoding="utf-8") as f:
            f.write(m.group(1))
        # what its import: names, in the Claude Code settings form
        with open(os.path.join(tmp, "sandbox-settings.json"), "w", encoding="utf-8") as f:
            f.write('{"sandbox": {"network": {"allowedDomains": ["example.com"]}}}\n')
        r = subprocess.run([ctl, "check", "-c", os.path.join(tmp, "namegate.yaml"), "agent1",
                            "pypi.org:443"], capture_output=True, text=True)
    finally:
        shutil.rmtree(tmp)
    if r.returncode != 0:
        return ["namegate.yaml.5: the EXAMPLE does not load or does not allow agent1 "
                f"pypi.org:443: {(r.stderr or r.stdout).strip()}"]
    return []


def load_pages(man_dir):
    paths = {p: os.path.join(man_dir, p) for p in PAGES}
    absent = [p for p, path in paths.items() if not os.path.isfile(path)]
    if absent:
        sys.exit(f"check_man: not built in {man_dir}: {absent}")
    return paths, {p: render(path) for p, path in paths.items()}


def run(args):
    code = gather(args.root, args.keys)
    paths, texts = load_pages(args.man_dir)
    problems = check(code, texts) + example_loads(args.root, args.ctl)
    for page, path in paths.items():
        problems += [f"{page}: {w}" for w in lint(path)]
    counts = ", ".join(f"{len(v)} {k}" for k, v in code.items())
    if problems:
        print("man pages and code disagree:\n  " + "\n  ".join(problems))
        return 1
    print(f"man pages: every item documented ({counts}); groff and man render them cleanly;"
          " the configuration example loads")
    return 0


def drop_term(text, item):
    """text without the tagged paragraph(s) whose tag names item."""
    lines, out, skip = text.split("\n"), [], False
    for i, line in enumerate(lines):
        indent = len(line) - len(line.lstrip(" "))
        if indent == TERM_INDENT and i + 1 < len(lines) and item in terms(
                "\n".join(lines[i:i + 2])):
            skip = True
            continue
        if skip and indent > TERM_INDENT:
            continue
        skip = False
        out.append(line)
    return "\n".join(out)


def self_test(args):
    """Each kind of item, taken out of a good page, must be reported; so must bad roff."""
    code = gather(args.root, args.keys)
    paths, texts = load_pages(args.man_dir)
    if check(code, texts):
        print("self-test: the pages must pass before anything is taken out of them")
        return 1
    cases = [
        ("namegate.yaml.5", code["keys"][len(code["keys"]) // 2], "configuration key"),
        ("namegate.yaml.5", "policies.NAME.budgets[].per", "configuration key"),
        ("namegate.8", code["metrics"][0], "metric family"),
        ("namegate.8", code["reasons"][-1], "reason"),
        ("namegate.8", code["events"][0], "event type"),
        ("namegate.8", "grant_revoked", "event type"),
        ("namegatectl.8", code["commands"][-1], "command"),
        ("namegate-dump.1", "sni", "JSON key"),
    ]
    failed = 0
    for page, item, what in cases:
        cut = dict(texts, **{page: drop_term(texts[page], item)})
        if f"{what} {item}" not in " ".join(check(code, cut)):
            print(f"self-test: {page} without {item} was not caught")
            failed += 1
    tmp = tempfile.mkdtemp(prefix="check_man.")
    try:
        bad = os.path.join(tmp, "bad.8")
        shutil.copy(paths["namegate.8"], bad)
        with open(bad, "a", encoding="utf-8") as f:
            f.write(".XQ not a macro\n\\fQbad font\\fR\n")
        if not lint(bad):
            print("self-test: a page with an unknown macro and font rendered without warning")
            failed += 1
    finally:
        shutil.rmtree(tmp)
    print(f"self-test: {len(cases) + 1 - failed} of {len(cases) + 1} planted gaps caught")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keys", required=True, help="the man_keys program")
    ap.add_argument("--ctl", required=True, help="namegatectl, to load the example")
    ap.add_argument("--man-dir", required=True, help="where the pages were built")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("root", help="the source tree")
    args = ap.parse_args()
    for tool in ("groff", "man"):
        if shutil.which(tool) is None:
            sys.exit(f"check_man: {tool} is missing (Debian: groff-base, man-db)")
    return self_test(args) if args.self_test else run(args)


if __name__ == "__main__":
    sys.exit(main())
