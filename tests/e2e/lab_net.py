"""Namespaces, links and process plumbing for the e2e lab, and the registry that lets
`lab.py cleanup` find and remove what a run left behind (even one killed with SIGKILL).

Everything a run creates carries its prefix ("ng" + 4 hex digits): namespaces are
"<prefix>-<role>", links inside the switch namespace start with the prefix, files live
in /tmp/namegate-lab-<prefix>, and /run/namegate-lab/<prefix>.json records the owner.
Links are created directly inside their namespaces (`ip link add ... netns NS`), so
nothing ever appears in the root namespace, and two runs cannot collide on a name.
"""

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import time

REGISTRY = "/run/namegate-lab"
TMP_ROOT = "/tmp"
NETNS_DIR = "/run/netns"
ETC_NETNS = "/etc/netns"
DPDK_RUN = "/var/run/dpdk"
PREFIX_RE = re.compile(r"^ng[0-9a-f]{4}$")


class LabError(RuntimeError):
    pass


# How long a test waits for an event it expects (a counter moving, a log line, a packet)
# before it fails. A cap, not a wait: every wait returns as soon as the event is there, so
# this is generous for machines that run other work meanwhile.
WAIT = 30.0


def wait_until(predicate, timeout=WAIT, what=None, step=0.05, error=AssertionError):
    """Poll predicate() until it returns something true, and return that. After timeout
    seconds, raise error (AssertionError by default: a test's failure) saying what was
    awaited (`what`, or the predicate's name) and what it last returned."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise error(f"timed out after {timeout:g}s waiting for "
                        f"{what or getattr(predicate, '__name__', 'a condition')} "
                        f"(last: {value!r:.300})")
        time.sleep(step)


def run(argv, *, check=True, timeout=30, input=None, ns=None):
    """Run argv (in namespace ns if given); raise LabError with its stderr if it fails."""
    if ns:
        argv = ["ip", "netns", "exec", ns] + list(argv)
    try:
        cp = subprocess.run(argv, input=input, capture_output=True, text=True,
                            timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise LabError(f"timed out after {timeout}s: {' '.join(argv)}") from e
    if check and cp.returncode != 0:
        raise LabError(f"`{' '.join(argv)}` exited {cp.returncode}: "
                       f"{cp.stderr.strip() or cp.stdout.strip()}")
    return cp


def ip_batch(lines, ns=None):
    """Many ip(8) commands in one process: setup cost is dominated by process starts."""
    argv = ["ip"] + (["-n", ns] if ns else []) + ["-batch", "-"]
    run(argv, input="\n".join(lines) + "\n")


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def tmpdir_for(prefix):
    return os.path.join(TMP_ROOT, f"namegate-lab-{prefix}")


def registry_path(prefix):
    return os.path.join(REGISTRY, f"{prefix}.json")


def list_netns():
    try:
        return sorted(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return []


def _proc_start(pid):
    """Start time of a live pid in clock ticks (field 22 of /proc/PID/stat), to tell pid
    reuse; None if it is gone or a zombie (a container's init may never reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return None if fields[0] == "Z" else int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def claim_prefix(mode):
    """Pick an unused prefix and record this process as its owner before anything exists,
    so a crash at any later point leaves a registry entry that cleanup can act on."""
    taken = {n.split("-", 1)[0] for n in list_netns()}
    for _ in range(64):
        prefix = "ng" + secrets.token_hex(2)
        if prefix in taken or os.path.exists(tmpdir_for(prefix)):
            continue
        try:
            os.makedirs(REGISTRY, exist_ok=True)
            fd = os.open(registry_path(prefix), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        except FileNotFoundError:   # another run's cleanup removed the empty registry dir
            continue
        pid = os.getpid()
        with os.fdopen(fd, "w") as f:
            json.dump({"prefix": prefix, "pid": pid, "start": _proc_start(pid),
                       "mode": mode, "created": time.time()}, f)
        return prefix
    raise LabError("no free lab prefix after 64 tries")


def registry_entries():
    out = []
    try:
        names = sorted(os.listdir(REGISTRY))
    except FileNotFoundError:
        return out
    for n in names:
        if not n.endswith(".json"):
            continue
        try:
            with open(os.path.join(REGISTRY, n)) as f:
                out.append(json.load(f))
        except (OSError, ValueError):
            out.append({"prefix": n[:-5], "pid": None, "start": None})
    return out


def owner_alive(entry):
    pid = entry.get("pid")
    return bool(pid) and _proc_start(pid) is not None and _proc_start(pid) == entry.get("start")


def ns_pids(ns):
    cp = run(["ip", "netns", "pids", ns], check=False)
    return {int(p) for p in cp.stdout.split() if p.isdigit()}


def pids_mentioning(text):
    """Processes whose command line contains text (the run's temp dir path), not us."""
    me = os.getpid()
    found = set()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.add(int(d))
        except OSError:
            pass
    return found


def terminate(pids, timeout=3.0):
    """SIGTERM each pid, then SIGKILL whatever is still there after timeout."""
    pids = {p for p in pids if p != os.getpid()}
    for p in pids:
        try:
            os.kill(p, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:     # then SIGKILL: no error on timeout
        pids = {p for p in pids if _alive(p)}
        if pids:
            time.sleep(0.05)
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def destroy(prefix, keep_logs=None):
    """Remove every trace of a run: processes, namespaces (and the links in them), files.
    Safe to call repeatedly and on a half-built or already-removed lab."""
    if not PREFIX_RE.match(prefix):
        raise LabError(f"not a lab prefix: {prefix!r}")
    nss = [n for n in list_netns() if n.startswith(prefix + "-")]
    tmp = tmpdir_for(prefix)
    pids = set()
    for ns in nss:
        pids |= ns_pids(ns)
    pids |= pids_mentioning(tmp)
    terminate(pids)
    if keep_logs and os.path.isdir(tmp):
        _keep_logs(tmp, os.path.join(keep_logs, prefix))
    for ns in nss:
        run(["ip", "netns", "del", ns], check=False)
    # Nothing is created in the root namespace; this only catches a future mistake.
    for link in root_links_with(prefix):
        run(["ip", "link", "del", link], check=False)
    for path in [os.path.join(ETC_NETNS, f"{prefix}-{r}") for r in _etc_roles(prefix)] + [
            tmp, os.path.join(DPDK_RUN, prefix)]:
        shutil.rmtree(path, ignore_errors=True)
    try:
        os.unlink(registry_path(prefix))
    except FileNotFoundError:
        pass
    try:
        os.rmdir(REGISTRY)          # only when no other run is registered
    except OSError:
        pass


def _etc_roles(prefix):
    try:
        return [n[len(prefix) + 1:] for n in os.listdir(ETC_NETNS) if n.startswith(prefix + "-")]
    except FileNotFoundError:
        return []


def _keep_logs(src, dst):
    os.makedirs(dst, exist_ok=True)
    for n in os.listdir(src):
        if n.endswith((".log", ".jsonl", ".yaml", ".json", ".out", ".err")):
            shutil.copy2(os.path.join(src, n), dst)


def root_links_with(prefix):
    cp = run(["ip", "-o", "link", "show"], check=False)
    names = [line.split(":")[1].strip().split("@")[0] for line in cp.stdout.splitlines()
             if line.count(":") >= 2]
    return [n for n in names if n.startswith(prefix)]


def leftovers(prefix):
    """What of a run still exists, by kind; empty lists everywhere means fully removed."""
    tmp = tmpdir_for(prefix)
    return {
        "netns": [n for n in list_netns() if n.startswith(prefix)],
        "links": root_links_with(prefix),
        "pids": sorted(pids_mentioning(tmp) | pids_mentioning(prefix + "-")),
        "files": [p for p in [tmp, registry_path(prefix), os.path.join(DPDK_RUN, prefix)]
                  + [os.path.join(ETC_NETNS, f"{prefix}-{r}") for r in _etc_roles(prefix)]
                  if os.path.exists(p)],
    }


def stale_prefixes():
    """Registered runs whose owner process is gone (crashed, SIGKILLed, timed out)."""
    return [e["prefix"] for e in registry_entries()
            if PREFIX_RE.match(str(e.get("prefix"))) and not owner_alive(e)]


def cleanup_stale(log=print):
    removed = []
    for prefix in stale_prefixes():
        log(f"removing stale lab {prefix}")
        destroy(prefix)
        removed.append(prefix)
    # Namespaces that look like ours but have no registry entry are reported, not touched:
    # every run registers before creating anything, so they belong to someone else.
    registered = {e.get("prefix") for e in registry_entries()}
    for ns in list_netns():
        p = ns.split("-", 1)[0]
        if PREFIX_RE.match(p) and p not in registered and p not in removed:
            log(f"note: namespace {ns} looks like a lab's but is not registered; left alone")
    return removed
