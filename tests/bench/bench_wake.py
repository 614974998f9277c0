#!/usr/bin/python3
"""What idling costs the first frame after it: the round trip of a DNS query from a lab VM
through namegate to the lab's resolver and back, sent after the gateway has been idle long
enough for its worker to nap at its longest (dataplane.idle_sleep_us), against the same
with idle_sleep_us: 0 (the worker polls without rest). Both labs run in this one process,
rounds interleaved, so the figures are a same-run comparison.

Prints RESULT wake_rtt_ms_p50= / _p99= (default naps) and busy_rtt_ms_p50= / _p99=
(polling), and RESULT wake_added_ms_p99= (the difference of the p99s).

Run: meson test -C build --benchmark -v wake   (root; about a minute)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../e2e"))

from lab import Lab  # noqa: E402

NAMEGATE = os.environ.get("NAMEGATE_BIN", "build/dataplane/namegate")
SAMPLES = int(os.environ.get("WAKE_SAMPLES", "40"))
IDLE_S = 0.25          # long past DP_IDLE_SPINS polls: the nap has grown to its cap

# In the VM: one query for pypi.org at a time, each after IDLE_S of silence; prints the
# round trips in milliseconds.
RTT_CODE = r"""
import socket, struct, sys, time
server, samples, idle = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
name = b"".join(bytes([len(l)]) + l for l in b"pypi.org".split(b".")) + b"\0"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2.0)
out = []
for i in range(samples):
    time.sleep(idle)
    q = struct.pack("!HHHHHH", i + 1, 0x0100, 1, 0, 0, 0) + name + struct.pack("!HH", 1, 1)
    t0 = time.perf_counter()
    s.sendto(q, (server, 53))
    try:
        while s.recv(4096)[:2] != q[:2]:
            pass
    except socket.timeout:
        continue
    out.append((time.perf_counter() - t0) * 1000)
print(" ".join(f"{v:.4f}" for v in out))
"""


def quantile(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))] if v else float("nan")


def rtts(lab, n):
    cp = lab.vm_exec("vm1", ["/usr/bin/python3", "-c", RTT_CODE, "10.77.0.1", str(n),
                             str(IDLE_S)], timeout=n * (IDLE_S + 2) + 10)
    if cp.returncode != 0:
        raise RuntimeError(f"rtt probe failed: {cp.stderr}")
    return [float(x) for x in cp.stdout.split()]


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (namespaces)")
        return 77
    results = {"wake": [], "busy": []}
    labs = {"wake": Lab(mode="namegate", namegate_cmd=[NAMEGATE]),
            "busy": Lab(mode="namegate", namegate_cmd=[NAMEGATE],
                        config={"dataplane": {"idle_sleep_us": 0}})}
    try:
        for lab in labs.values():
            lab.setup()
        for _ in range(4):              # interleaved, so drift hits both alike
            for kind, lab in labs.items():
                results[kind] += rtts(lab, SAMPLES // 4)
    finally:
        for lab in labs.values():
            lab.teardown()
    for kind, v in results.items():
        print(f"{kind}: {len(v)} answers of {SAMPLES}")
        if len(v) < SAMPLES // 2:
            print(f"FAIL: {kind}: too few answers")
            return 1
        print(f"RESULT {kind}_rtt_ms_p50={quantile(v, 0.5):.3f}")
        print(f"RESULT {kind}_rtt_ms_p99={quantile(v, 0.99):.3f}")
    print(f"RESULT wake_added_ms_p99="
          f"{quantile(results['wake'], 0.99) - quantile(results['busy'], 0.99):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
