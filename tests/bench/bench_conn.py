#!/usr/bin/python3
"""New-connection rate: namegate (bench_full conn) against nDPI 4.2 (bench_ndpi) in the same
rounds, so the ratio holds while the machine drifts 1.3-1.7x between minutes.

Each round runs both programs one after the other, the order alternating between rounds
so neither always gets the warmer or the cooler machine. Prints every round's figures,
the medians, and RESULT conn_vs_ndpi= (the median of the per-round ratios
namegate/nDPI). When bench_full is not there, says so, prints nDPI's figures alone and
exits 77 (meson's "skipped"): without it there is no ratio to report.

Environment: BENCH_NDPI_BIN, BENCH_FULL_BIN (default build/tests/bench/bench_full),
BENCH_FULL_ARGS (extra arguments after "conn"), TRAFFIC_DIR, BENCH_ROUNDS (default 5).
Run: meson test -C build --benchmark -v conn_vs_ndpi
"""
import os
import re
import shlex
import statistics
import subprocess
import sys

from bench_traffic import ROOT, TRAFFIC, traffic_file

NDPI = os.environ.get("BENCH_NDPI_BIN", os.path.join(ROOT, "build/tests/bench/bench_ndpi"))
FULL = os.environ.get("BENCH_FULL_BIN", os.path.join(ROOT, "build/tests/bench/bench_full"))
FULL_ARGS = shlex.split(os.environ.get("BENCH_FULL_ARGS", ""))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
SKIP = 77
RESULT = re.compile(r"^RESULT (\w+)=(\S+)$", re.M)


def run(cmd, show_stderr=True):
    """Run one benchmark program; its RESULT lines as a dict. Its stderr is shown when
    asked or when it fails."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       check=False)
    if show_stderr or p.returncode != 0:
        sys.stderr.write(p.stderr)
    if p.returncode != 0:
        sys.exit(f"bench_conn: {' '.join(cmd)} exited {p.returncode}:\n{p.stdout}")
    return dict(RESULT.findall(p.stdout))


def rate(results, name, cmd):
    if name not in results:
        sys.exit(f"bench_conn: {cmd[0]} printed no RESULT {name}=")
    return float(results[name])


def main():
    ndpi_cmd = [NDPI, traffic_file("hello.pcap")]
    os.environ["TRAFFIC_DIR"] = TRAFFIC        # bench_full's, when it came from the default
    full_cmd = [FULL, "conn"] + FULL_ARGS
    have_full = os.access(FULL, os.X_OK)
    if not have_full:
        print(f"bench_conn: no bench_full at {FULL} (not built on this branch, or set "
              "BENCH_FULL_BIN): conn_vs_ndpi is not measured, nDPI alone follows", flush=True)
    ndpi_rates, full_rates, ratios = [], [], []
    last_ndpi = {}
    for r in range(ROUNDS):
        order = ["ndpi", "full"] if r % 2 == 0 else ["full", "ndpi"]
        got = {}
        for which in order:
            if which == "ndpi":
                # its name mismatches are the same every round: show them once
                last_ndpi = run(ndpi_cmd, show_stderr=r == 0)
                got["ndpi"] = rate(last_ndpi, "ndpi_conn_per_s", ndpi_cmd)
            elif have_full:
                got["full"] = rate(run(full_cmd), "conn_per_s", full_cmd)
        ndpi_rates.append(got["ndpi"])
        line = f"round {r + 1}: ndpi {got['ndpi']:.0f} conn/s"
        if have_full:
            full_rates.append(got["full"])
            ratios.append(got["full"] / got["ndpi"])
            line += f", namegate {got['full']:.0f} conn/s, ratio {ratios[-1]:.2f}"
        print(line, flush=True)

    for k in ("ndpi_flows", "namegate_sni_found", "ndpi_sni_found", "ndpi_sni_mismatch",
              "ndpi_sni_missed", "ndpi_sni_truncated"):
        if k in last_ndpi:
            print(f"RESULT {k}={last_ndpi[k]}")
    print(f"RESULT conn_rounds={ROUNDS}")
    print(f"RESULT ndpi_conn_per_s={statistics.median(ndpi_rates):.0f}")
    if not have_full:
        return SKIP
    print(f"RESULT conn_per_s={statistics.median(full_rates):.0f}")
    print(f"RESULT conn_vs_ndpi={statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
