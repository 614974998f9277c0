"""The house's boundaries, checked: every #include of every C file outside tests/ is
resolved to the room it names, and the room a file lives in must be allowed to use it
(SPEC s1, refined into rooms in the README's layout table). Run with the source root as
its argument; exits 1 and lists every violation. --self-test plants violations in a
scratch tree and fails unless each one is caught, so the check itself cannot rot into
one that passes everything.
"""
import os
import re
import shutil
import sys
import tempfile

from layout_main import planted, run

# C11 and the POSIX headers every room may use; "sni is libc only" means this list.
LIBC = {
    "assert.h", "ctype.h", "errno.h", "inttypes.h", "limits.h", "stdarg.h", "stdatomic.h",
    "stdbool.h", "stddef.h", "stdint.h", "stdio.h", "stdlib.h", "string.h", "strings.h",
    "time.h",
}


# The POSIX and Linux system headers the rooms that may use "posix" use. A header in no
# list is "unknown", which no room may use: a new library is a decision, taken here.
POSIX = {
    "arpa/inet.h", "dirent.h", "endian.h", "fcntl.h", "getopt.h", "grp.h", "libgen.h", "net/if.h",
    "netdb.h", "netinet/in.h", "netinet/tcp.h", "poll.h", "pthread.h", "pwd.h", "signal.h", "sys/eventfd.h",
    "sys/ioctl.h", "sys/mman.h",
    "sys/random.h", "sys/socket.h", "sys/stat.h", "sys/syscall.h", "sys/time.h", "sys/types.h",
    "sys/un.h", "unistd.h",
}


def system_lib(header):
    """The library a <header> belongs to: the unit rooms are allowed by."""
    prefixes = [
        ("rte_", "dpdk"), ("yaml.h", "yaml"), ("ldns/", "ldns"), ("pcap/", "pcap"),
        ("openssl/", "libcrypto"), ("libmnl/", "netlink"), ("libnftnl/", "netlink"),
        ("linux/", "netlink"), ("json-c/", "json"), ("microhttpd.h", "mhd"),
        ("emmintrin.h", "simd"), ("smmintrin.h", "simd"), ("immintrin.h", "simd"), ("curl/", "curl"),
        ("systemd/", "systemd"),
        ("sodium", "sodium"),
    ]
    if header in LIBC:
        return "libc"
    if header in POSIX:
        return "posix"
    for prefix, lib in prefixes:
        if header.startswith(prefix):
            return lib
    return "unknown"


# Rooms, most specific first: (folder, libraries it may include, rooms it may include).
# A room may always include its own headers.
ROOMS = [
    ("sni/dump", {"libc", "posix", "pcap"}, {"sni"}),
    # the compiler's vector intrinsics link nothing: the checksum's vectorised sum
    ("sni", {"libc", "simd"}, set()),
    ("policy/match", {"libc"}, {"sni"}),
    ("policy/load", {"libc", "posix", "yaml", "ldns"}, {"sni", "policy/match"}),
    ("dataplane/api", {"libc"}, set()),
    ("dataplane/quic", {"libc", "libcrypto"}, {"sni"}),
    # the workers never read a configuration: the main lcore builds their generations
    ("dataplane/worker", {"libc", "posix", "dpdk", "simd"},
     {"sni", "policy/match", "dataplane/api", "dataplane/quic"}),
    ("dataplane/main", {"libc", "posix", "dpdk", "json"},
     {"sni", "policy/match", "policy/load", "dataplane/api", "dataplane/worker:public",
      "control:public"}),
    # sodium: the fleet's bundle signatures (control/fleet)
    ("control", {"libc", "posix", "netlink", "json", "mhd", "curl", "systemd", "sodium"},
     {"policy/match", "policy/load", "dataplane/api"}),
]

# What the workers show the main lcore (dataplane/worker/include: shared types, the tables
# it sizes, sweeps and counts, the event rings it drains, worker start/stop) and what
# control shows the daemon (each concern's control/NAME/include). The build puts only those folders on the
# other room's include path; this check also catches a path spelled around it.
def public(target):
    return "/include/" in target
# Where a quoted "dir/x.h" include is found, beyond the including file's own folder.
INCLUDE_ROOTS = ["sni/include", "policy/match/include", "policy/load/include", "dataplane",
                 "dataplane/worker", "dataplane/worker/include", "dataplane/quic",
                 "dataplane/main"]


def include_roots(root):
    """INCLUDE_ROOTS and each control concern's folder and its include/ (control/NAME)."""
    roots = list(INCLUDE_ROOTS)
    control = os.path.join(root, "control")
    for name in sorted(os.listdir(control)) if os.path.isdir(control) else []:
        if os.path.isdir(os.path.join(control, name)):
            roots += [f"control/{name}", f"control/{name}/include"]
    return roots
NO_DPDK_IN_CONTROL = "control"

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def room_of(path):
    for folder, _, _ in ROOMS:
        if path == folder or path.startswith(folder + "/"):
            return folder
    return None


def resolve(root, including, name):
    """The source-relative path a quoted include names, or None if it is not ours."""
    here = os.path.dirname(including)
    for base in [here] + include_roots(root):
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


# Inside control/, each concern (control/NAME) is a room of its own toward the others: it
# may use another concern's include/ only, never the headers behind it.
def concern(path):
    """The control concern a path is in (control/NAME/...), or None."""
    parts = path.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "control" else None


def allowed_quoted(room, target, including=None):
    target_room = room_of(target)
    if target_room == room == "control" and concern(target) != concern(including or target):
        return public(target)       # another concern's header: only what its include/ shows
    if target_room is None or target_room == room:
        return target_room == room
    rooms = dict((r[0], r[2]) for r in ROOMS)[room]
    if target_room in rooms:
        return True
    if target_room == "dataplane/worker" and "dataplane/worker:public" in rooms:
        return public(target)
    if target_room == "control" and "control:public" in rooms:
        return public(target)
    return False


def sources(root):
    for top in ("sni", "policy", "dataplane", "control"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(dirpath, n), root)


def check(root):
    problems = []
    for path in sources(root):
        room = room_of(path)
        if room is None:
            problems.append(f"{path}: in no room of the layout")
            continue
        libs = dict((r[0], r[1]) for r in ROOMS)[room]
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for m in INCLUDE_RE.finditer(text):
            kind, name = m.group(1), m.group(2)
            line = text.count("\n", 0, m.start()) + 1
            where = f"{path}:{line}: #include {kind}{name}"
            if kind == "<":
                lib = system_lib(name)
                if lib not in libs:
                    problems.append(f"{where}: {room} may not use {lib}")
                continue
            target = resolve(root, path, name)
            if target is None:
                problems.append(f"{where}: names no header in the tree")
            elif not allowed_quoted(room, target, path):
                problems.append(f"{where}: {room} may not include {target}")
    return problems


def self_test(root):
    """Each planted include must be reported; the real tree must be clean first."""
    plants = [
        ("sni/planted.c", '#include <rte_mbuf.h>\n'),
        ("sni/planted.c", '#include <yaml.h>\n'),
        ("policy/match/planted.c", '#include "policy/load.h"\n'),
        ("dataplane/worker/planted.c", '#include "nft.h"\n'),
        ("dataplane/worker/planted.c", '#include <libnftnl/set.h>\n'),
        ("dataplane/main/planted.c", '#include "dp_out.h"\n'),
        ("dataplane/main/planted.c", '#include "nft_int.h"\n'),
        ("dataplane/main/planted.c", '#include "worker/dp_tls.h"\n'),
        ("control/planted.c", '#include "dp_flow.h"\n'),
        ("control/planted.c", '#include <rte_ring.h>\n'),
        ("dataplane/api/planted.h", '#include "dp.h"\n'),
        ("dataplane/worker/planted.c", '#include <zlib.h>\n'),
        ("dataplane/worker/planted.c", '#include "policy/load.h"\n'),
        ("control/planted.c", '#include <sys/zone_of_no_list.h>\n'),
        ("dataplane/main/planted.c", '#include <curl/curl.h>\n'),
        ("control/nft/planted.c", '#include "ctl_grants_int.h"\n'),
        ("control/cli/planted.c", '#include "ctl_sock_int.h"\n'),
    ]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for top in ("sni", "policy", "dataplane", "control"):
            shutil.copytree(os.path.join(root, top), os.path.join(tmp, top),
                            ignore=shutil.ignore_patterns("*.o", "*.a"))
        before = check(tmp)
        if before:
            print("self-test: the unplanted tree is not clean:", *before, sep="\n  ")
            return 1
        for path, line in plants:
            full = os.path.join(tmp, path)
            with open(full, "w") as f:
                f.write(line)
            found = check(tmp)
            os.remove(full)
            failures += planted(f"{path}: {line.strip()}",
                                any(p.startswith(path + ":1:") for p in found))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(run(check, self_test, "include(s) outside the layout"))
