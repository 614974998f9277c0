#!/usr/bin/python3
"""New-connection rate: namegate (bench_full conn) against nDPI 4.2 (bench_ndpi) in the same
rounds, so the ratio holds while the machine drifts 1.3-1.7x between minutes.

Each round runs both programs one after the other, the order alternating between rounds
so neither always gets the warmer or the cooler machine. Both report the same statistic,
the median of their own per-pass rates (bench_full: its timed rounds; bench_ndpi: its
timed passes), so a round's ratio divides like by like. Prints every round's figures,
the medians, and RESULT conn_vs_ndpi= (the median of the per-round ratios
namegate/nDPI) with their spread (conn_vs_ndpi_min=, conn_vs_ndpi_max=).

Environment (meson.build sets the first three from the build directory it runs in):
BENCH_NDPI_BIN, BENCH_FULL_BIN, TRAFFIC_DIR; BENCH_FULL_ARGS (extra arguments after
"conn"), BENCH_ROUNDS (default 5).
Run: meson test -C BUILDDIR --benchmark -v conn_vs_ndpi
"""
import os
import re
import shlex
import statistics
import subprocess
import sys

from bench_traffic import traffic_file

FULL_ARGS = shlex.split(os.environ.get("BENCH_FULL_ARGS", ""))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
RESULT = re.compile(r"^RESULT (\w+)=(\S+)$", re.M)


def program(var):
    """The program $var names: meson passes both, so a missing one is a wiring fault, and
    a guess at a build directory could time another branch's build."""
    path = os.environ.get(var, "")
    if not os.access(path, os.X_OK):
        sys.exit(f"bench_conn: ${var} ({path!r}) is not a program: run it through meson "
                 "(meson test -C BUILDDIR --benchmark conn_vs_ndpi) or set it")
    return path


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
    if "TRAFFIC_DIR" not in os.environ:
        sys.exit("bench_conn: $TRAFFIC_DIR is not set (meson sets it)")
    ndpi_cmd = [program("BENCH_NDPI_BIN"), traffic_file("hello.pcap")]
    full_cmd = [program("BENCH_FULL_BIN"), "conn"] + FULL_ARGS
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
            else:
                got["full"] = rate(run(full_cmd), "conn_per_s", full_cmd)
        ndpi_rates.append(got["ndpi"])
        full_rates.append(got["full"])
        ratios.append(got["full"] / got["ndpi"])
        print(f"round {r + 1}: ndpi {got['ndpi']:.0f} conn/s, namegate {got['full']:.0f} "
              f"conn/s, ratio {ratios[-1]:.2f}", flush=True)

    for k in ("ndpi_flows", "namegate_sni_found", "ndpi_sni_found", "ndpi_sni_mismatch",
              "ndpi_sni_missed", "ndpi_sni_truncated", "ndpi_passes"):
        if k in last_ndpi:
            print(f"RESULT {k}={last_ndpi[k]}")
    print(f"RESULT conn_rounds={ROUNDS}")
    print(f"RESULT ndpi_conn_per_s={statistics.median(ndpi_rates):.0f}")
    print(f"RESULT conn_per_s={statistics.median(full_rates):.0f}")
    print(f"RESULT conn_vs_ndpi={statistics.median(ratios):.2f}")
    print("INFO goal: conn_vs_ndpi >= 20")
    print(f"RESULT conn_vs_ndpi_min={min(ratios):.2f}")
    print(f"RESULT conn_vs_ndpi_max={max(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
