#!/usr/bin/python3
"""Are bench_full's baseline drivers what they stand for? Each alone (bench_base_ref) beside
the real dpdk-testpmd on the same kind of ports, in the same run, rounds alternating.

The ring ports bench_full uses cannot be shared across processes, so both run here on what
bench_dataplane.py gives testpmd: net_pcap ports replaying a capture split by direction
(infinite_rx, tx frees), one forwarding core, the same EAL options, testpmd's default
mbuf pool and its stats period (a period's warm-up, a period measured; the driver waits and
measures as long). Figures: both ports' received frames per second.

  csum_driver_vs_testpmd   the csum driver's rate over `testpmd --forward-mode=csum`'s
  l3fwd_driver_vs_ref      the l3fwd driver's over `testpmd --forward-mode=mac`'s: Debian's
                           dpdk package ships no dpdk-l3fwd (examples are not built), so
                           the reference is testpmd's closest engine, which rewrites both
                           MACs of every frame as l3fwd does but looks no route up and
                           leaves the TTL alone: the l3fwd driver is expected a little
                           under it, by what its lookups and RFC 1812 update cost.

Each on the mix (the lines above) and on small64 (NAME_small64), the median of the per-round
ratios (1.0: the same rate) with their spread; INFO says whether it is within 10 %.

Run: meson test -C build --benchmark -v base_vs_testpmd   (root; about eleven minutes)
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from bench_dataplane import EAL, MEASURE, devices, split, testpmd_mpps
from bench_traffic import TRAFFIC, traffic_file

REF = os.environ.get("BENCH_BASE_REF", "")
ROUNDS = 3
# (driver, testpmd's engine, RESULT name)
PAIRS = (("csum", "csum", "csum_driver_vs_testpmd"), ("l3fwd", "mac", "l3fwd_driver_vs_ref"))


def driver_mpps(driver, devs, prefix):
    """The driver's rate on devs: a period's warm-up, a period measured, as testpmd's."""
    argv = [REF, driver, TRAFFIC, str(MEASURE), str(MEASURE), *EAL, "--file-prefix", prefix,
            "--no-shconf", "--no-telemetry"]
    for d in devs:
        argv += ["--vdev", d]
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=300)
    m = re.search(r"^RATE \S+ mpps=([\d.]+)", p.stdout, re.M)
    if p.returncode != 0 or m is None:
        raise SystemExit(f"bench_base_ref {driver} failed ({p.returncode}):\n{p.stdout[-2000:]}")
    return float(m.group(1))


def compare(name, devs, prefix):
    """Rounds of each pair, testpmd first in even rounds, the driver in odd ones (so that a
    machine drifting one way favours neither); the RESULT and INFO lines."""
    ratios = {result: [] for _, _, result in PAIRS}
    for r in range(ROUNDS):
        for driver, engine, result in PAIRS:
            if r % 2 == 0:
                ref = testpmd_mpps(devs, f"{prefix}t", engine)
            own = driver_mpps(driver, devs, f"{prefix}d")
            if r % 2 == 1:
                ref = testpmd_mpps(devs, f"{prefix}t", engine)
            ratios[result].append(own / ref if ref > 0 else 0)
            print(f"ROUND {name} {r} testpmd_{engine}_mpps={ref:.3f} {driver}_driver_mpps="
                  f"{own:.3f} ratio={ratios[result][-1]:.3f}", flush=True)
    for driver, engine, result in PAIRS:
        line = result if name == "mix" else f"{result}_{name}"
        med = statistics.median(ratios[result])
        within = abs(med - 1) <= 0.10
        print(f"RESULT {line}={med:.3f}")
        print(f"INFO {line} spread {min(ratios[result]):.3f}-{max(ratios[result]):.3f} over "
              f"{ROUNDS} rounds: the {driver} driver is {'within' if within else 'NOT within'} "
              f"10 % of testpmd --forward-mode={engine}", flush=True)


def main():
    if not os.access(REF, os.X_OK):
        sys.exit(f"bench_base_ref: $BENCH_BASE_REF ({REF!r}) is not a program (meson sets it)")
    manifest = traffic_file("manifest.json")
    with open(manifest) as f:
        vm_macs = {vm["mac"].lower() for vm in json.load(f)["vms"]}
    print("INFO no dpdk-l3fwd in Debian's dpdk package: l3fwd's reference is testpmd's mac "
          "engine (both MACs rewritten, no lookup, no TTL)")
    with tempfile.TemporaryDirectory(prefix="ngbaseref") as work:
        for name in ("mix", "small64"):
            vm_pcap, up_pcap = split(traffic_file(f"{name}.pcap"), vm_macs, work)
            compare(name, devices(vm_pcap, up_pcap), f"ngbaseref{os.getpid()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
