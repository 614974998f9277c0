"""Reading namegate's counters in a lab: SIGUSR1 makes the daemon print them (Prometheus
text, SPEC s6 names) on stdout; this asks for a fresh block and parses it."""
import re
import signal

from lab_net import WAIT, wait_until

_LINE = re.compile(r"^(namegate_\w+(?:\{[^}]*\})?) (\d+)$")    # samples; not # HELP/TYPE
# The sample that ends a dump; the family's # HELP and # TYPE lines name it too.
_END = re.compile(r"^namegate_policy_generation \d+\n", re.M)


def read(lab, timeout=WAIT):
    """{'name{labels}': value} as of now."""
    before = len(lab.namegate_output()[0])
    lab.daemon.signal(signal.SIGUSR1)

    def block():
        out = lab.namegate_output()[0][before:]
        ends = list(_END.finditer(out))
        return out[:ends[-1].end()] if ends else None
    text = wait_until(block, timeout, "namegate to print its counters after SIGUSR1")
    return {m.group(1): int(m.group(2)) for m in map(_LINE.match, text.splitlines()) if m}


class Delta:
    """Counters moved between two reads: with Delta(lab) as d: ...; d['name{...}'].

    d.wait({key: n}) polls until each key has moved by at least n since the block began:
    the counter a test expects to move is its proof that namegate has judged what was
    sent (and, for a drop, that it will never arrive anywhere). Reads after it (d[key]
    inside or after the block) see at least that state."""

    def __init__(self, lab):
        self.lab = lab

    def __enter__(self):
        self.before = read(self.lab)
        self.after = self.before
        return self

    def __exit__(self, *exc):
        self.after = read(self.lab)

    def __getitem__(self, key):
        if key not in self.after:
            raise KeyError(f"namegate has no counter {key}")
        return self.after[key] - self.before.get(key, 0)

    def refresh(self):
        """Read the counters again as the block's after (for a poll of its own)."""
        self.after = read(self.lab)
        return self

    def wait(self, expect, timeout=WAIT):
        """expect: {key: n}. Returns self."""
        def moved(now):
            return {k: now.get(k, 0) - self.before.get(k, 0) for k in expect}

        def moved_enough():
            now = read(self.lab)
            missing = [k for k in expect if k not in now]
            if missing:
                raise KeyError(f"namegate has no counter {missing}")
            self.after = now
            return all(m >= expect[k] for k, m in moved(now).items())
        try:
            wait_until(moved_enough, timeout, "namegate's counters to move by at least "
                       + str(expect), step=0.1)
        except AssertionError as e:
            raise AssertionError(f"{e}; they moved by {moved(self.after)}") from None
        return self


def vm_key(metric, vm, **labels):
    inner = ",".join([f'vm="{vm}"'] + [f'{k}="{v}"' for k, v in labels.items()])
    return f"{metric}{{{inner}}}"


def blocked(vm, reason):
    return vm_key("namegate_vm_blocked_total", vm, reason=reason)


def egress(vm, verdict):
    return vm_key("namegate_vm_egress_packets_total", vm, verdict=verdict)


def dns(vm, verdict):
    return vm_key("namegate_vm_dns_queries_total", vm, verdict=verdict)
