"""Reading namegate's counters in a lab: SIGUSR1 makes the daemon print them (Prometheus
text, SPEC s6 names) on stdout; this asks for a fresh block and parses it."""
import re
import signal
import time

_LINE = re.compile(r"^(namegate_\w+(?:\{[^}]*\})?) (\d+)$")    # samples; not # HELP/TYPE
# The sample that ends a dump; the family's # HELP and # TYPE lines name it too.
_END = re.compile(r"^namegate_policy_generation \d+\n", re.M)


def read(lab, timeout=5.0):
    """{'name{labels}': value} as of now."""
    before = len(lab.namegate_output()[0])
    lab.daemon.signal(signal.SIGUSR1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = lab.namegate_output()[0][before:]
        ends = list(_END.finditer(out))
        if ends:
            block = out[:ends[-1].end()]
            return {m.group(1): int(m.group(2))
                    for m in map(_LINE.match, block.splitlines()) if m}
        time.sleep(0.05)
    raise AssertionError("namegate printed no counters after SIGUSR1")


class Delta:
    """Counters moved between two reads: with Delta(lab) as d: ...; d['name{...}']."""

    def __init__(self, lab):
        self.lab = lab

    def __enter__(self):
        self.before = read(self.lab)
        return self

    def __exit__(self, *exc):
        self.after = read(self.lab)

    def __getitem__(self, key):
        if key not in self.after:
            raise KeyError(f"namegate has no counter {key}")
        return self.after[key] - self.before.get(key, 0)


def vm_key(metric, vm, **labels):
    inner = ",".join([f'vm="{vm}"'] + [f'{k}="{v}"' for k, v in labels.items()])
    return f"{metric}{{{inner}}}"


def blocked(vm, reason):
    return vm_key("namegate_vm_blocked_total", vm, reason=reason)


def egress(vm, verdict):
    return vm_key("namegate_vm_egress_packets_total", vm, verdict=verdict)


def dns(vm, verdict):
    return vm_key("namegate_vm_dns_queries_total", vm, verdict=verdict)
