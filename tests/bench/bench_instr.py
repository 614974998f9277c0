#!/usr/bin/python3
"""Instructions per packet and per connection: bench_full under callgrind.

Runs `bench_full MODE` with BENCH_INSTR=1 under `valgrind --tool=callgrind
--collect-atstart=no`: bench_full toggles collection on around each dp_worker_poll() call
only (CALLGRIND_TOGGLE_COLLECT), over a short fixed workload after a warm-up pass (the
first 20,000 frames of small64 and of mix, 1,000 of hello.pcap's connections), and prints
`INSTR MODE frames=N conns=N`. Callgrind's total Ir over those frames (or connections) is
the figure. Instruction counts do not drift with the machine as rates do.

Prints RESULT instr_per_pkt_small64=, instr_per_pkt_mix_full=, instr_per_conn=, and
instr_mix_1000vms_vs_16vms=: the mix's instructions per packet with 1,000 VMs configured
(BENCH_VMS: the manifest's 16 and idle ones) over those with the manifest's 16, the same
frames; what the VMs that are not talking cost the ones that are (goal: <= 1.02). Skips with
a message (exit 0) when valgrind is absent.

Run: meson test -C build --benchmark -v full_instr    (a few minutes)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from bench_traffic import TRAFFIC, traffic_file

BENCH = os.environ.get("BENCH_FULL", "build/tests/bench/bench_full")


def instructions(mode, workdir, vms=0):
    """Callgrind's Ir total inside dp_worker_poll, and the INSTR line's counts."""
    out_file = os.path.join(workdir, f"callgrind.{mode}.{vms}.out")
    argv = ["valgrind", "--tool=callgrind", "--collect-atstart=no",
            f"--callgrind-out-file={out_file}", BENCH, mode, TRAFFIC]
    env = dict(os.environ, BENCH_INSTR="1", BENCH_VMS=str(vms))
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=600)
    m = re.search(r"^INSTR \S+ frames=(\d+) conns=(\d+)", p.stdout, re.M)
    if p.returncode != 0 or m is None:
        raise SystemExit(f"bench_full {mode} under callgrind failed ({p.returncode}):\n"
                         f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    with open(out_file) as f:
        total = re.search(r"^(?:summary|totals):\s+(\d+)", f.read(), re.M)
    if total is None:
        raise SystemExit(f"no total in {out_file}")
    return int(total.group(1)), int(m.group(1)), int(m.group(2))


def main():
    if shutil.which("valgrind") is None:
        print("SKIP bench_instr: valgrind is not installed (tests/install-deps.sh installs it)")
        return 0
    for name in ("small64.pcap", "mix.pcap", "hello.pcap", "hosts.txt", "manifest.json"):
        traffic_file(name)
    with tempfile.TemporaryDirectory(prefix="ngcallgrind") as work:
        ir, frames, _ = instructions("small64", work)
        print(f"INFO small64 Ir={ir} frames={frames}")
        print(f"RESULT instr_per_pkt_small64={ir / frames:.0f}", flush=True)
        ir, frames, _ = instructions("mix", work)
        print(f"INFO mix Ir={ir} frames={frames}")
        print(f"RESULT instr_per_pkt_mix_full={ir / frames:.0f}", flush=True)
        ir_many, frames_many, _ = instructions("mix", work, vms=1000)
        print(f"INFO mix with 1000 VMs Ir={ir_many} frames={frames_many}")
        print("INFO goal: instr_mix_1000vms_vs_16vms <= 1.02")
        print(f"RESULT instr_mix_1000vms_vs_16vms="
              f"{(ir_many / frames_many) / (ir / frames):.3f}", flush=True)
        ir, frames, conns = instructions("conn", work)
        print(f"INFO conn Ir={ir} frames={frames} connections={conns}")
        print(f"RESULT instr_per_conn={ir / conns:.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
