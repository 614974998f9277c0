#!/usr/bin/python3
"""Instructions per packet and per connection: bench_full under callgrind.

Runs `bench_full MODE` with BENCH_INSTR=1 under `valgrind --tool=callgrind
--collect-atstart=no`: bench_full toggles collection on around each dp_worker_poll() call
only (CALLGRIND_TOGGLE_COLLECT), over a short fixed workload after a warm-up pass (the
first 20,000 frames of small64 and of mix, 1,000 of hello.pcap's connections), and prints
`INSTR MODE frames=N conns=N`. Callgrind's total Ir over those frames (or connections) is
the figure. Instruction counts do not drift with the machine as rates do.

Prints RESULT instr_per_pkt_small64=, instr_per_pkt_mix_full=, instr_mix_1000vms_vs_16vms=
(the mix's instructions per packet with 1,000 VMs configured, BENCH_VMS: the manifest's 16
and idle ones, over those with the manifest's 16, the same frames; what the VMs that are not
talking cost the ones that are; goal <= 1.02), instr_mix_4096vms_vs_16vms= (the same with
4,096 VMs, bench_full setting dataplane.max_vms to match; goal <= 1.02), instr_per_conn= (a
connection's opening: SYN, SYN-ACK, the hello judged, the server's ACK), and beside it
instr_per_conn_lifecycle= (the same connections lived whole: also the server's data, FIN
both ways, the last ACK, and the sweep that ages each out; `bench_full lifecycle` dumps
callgrind's counts before its sweep, so the sweep's share is instr_per_flow_aged=), and
instr_flow_record_per_conn= (what the flow log adds to a connection's lifecycle: its record
made by the worker, taken off the ring, built as a JSON line and written, to /dev/null).
With $BENCH_NDPI (meson sets it when nDPI is there): nDPI's instructions per hello on the
same first 1,000 hellos, collected around each flow's handling (bench_ndpi BENCH_INSTR),
and RESULT conn_vs_ndpi_instr= (nDPI's per hello over namegate's per connection).
instr_per_dns_msg= (the mix's DNS messages over UDP: the instructions spent inside the DNS
path's two entry points, callees included, per call). small64, mix, conn, the DNS message
and the lifecycle also as NAME_offload= (BENCH_CSUM_OFFLOAD: the frames marked
checksum-good, as an offloading NIC marks them; instr_per_flow_aged and the flow log's
line read no checksum). Skips with a message (exit 0) when valgrind is absent.

instr_ratio_mix_vs_csum= namegate's instructions per packet on the mix over the csum
baseline driver's (testpmd's csum engine, bench_base_csum.c) on the same frames:
`bench_full mix` with BENCH_INSTR=csum collects inside the driver's bursts only.

Run: meson test -C build --benchmark -v full_instr    (a few minutes)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from bench_traffic import TRAFFIC, traffic_file

BENCH = os.environ.get("BENCH_FULL", "")
NDPI = os.environ.get("BENCH_NDPI", "")
NDPI_FLOWS = 1000       # bench_full's BENCH_INSTR_CONNS: the same first hellos


def total(path):
    """Callgrind's Ir total in one of its output files."""
    with open(path) as f:
        m = re.search(r"^(?:summary|totals):\s+(\d+)", f.read(), re.M)
    if m is None:
        raise SystemExit(f"no total in {path}")
    return int(m.group(1))


def callgrind(argv, env, out_file, pattern):
    """argv under callgrind, collecting only where it toggles; its output's pattern match.
    bench_full starts the instrumentation itself at its measured pass (callgrind counts calls
    even where it collects no cost, so calls_into() would count the warm pass's too)."""
    argv = ["valgrind", "--tool=callgrind", "--collect-atstart=no",
            *(["--instr-atstart=no"] if argv[0] == BENCH else []),
            "--compress-strings=no", "--compress-pos=no",    # names and lines spelled out
            f"--callgrind-out-file={out_file}", *argv]
    p = subprocess.run(argv, env=dict(os.environ, **env), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=900)
    m = re.search(pattern, p.stdout, re.M)
    if p.returncode != 0 or m is None:
        raise SystemExit(f"{argv[4]} under callgrind failed ({p.returncode}):\n"
                         f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return m


# Where the worker hands a DNS message over UDP to the DNS path: the query from a VM, the
# answer from its resolver (dp_burst.c). Extern, so never inlined into their callers.
DNS_ENTRIES = ("dp_dns_query_udp", "dp_dns_answer_udp")


def calls_into(path, names):
    """Calls made to the functions names in a callgrind output file, and the instructions
    spent inside them, callees included (the cost lines that follow each calls= line)."""
    calls = ir = 0
    target = counting = None
    with open(path) as f:
        for line in f:
            if line.startswith("cfn="):
                target = line[4:].strip()
            elif line.startswith("calls="):
                counting = target in names
                calls += int(line[6:].split()[0]) if counting else 0
            elif counting:
                ir += int(line.split()[1])      # LINE IR: the call's inclusive cost
                counting = False
            elif line.startswith(("fn=", "fl=", "fi=", "fe=")):
                target = None
    return calls, ir


def instructions(mode, workdir, vms=0, offload=False):
    """Callgrind's Ir total inside dp_worker_poll, and the INSTR line's counts. offload:
    the frames marked checksum-good, as a NIC that verifies them marks them."""
    out_file = os.path.join(workdir, f"callgrind.{mode}.{vms}.{int(offload)}.out")
    m = callgrind([BENCH, mode, TRAFFIC], {"BENCH_INSTR": "1", "BENCH_VMS": str(vms),
                                           "BENCH_CSUM_OFFLOAD": "1" if offload else "0"},
                  out_file, r"^INSTR \S+ frames=(\d+) conns=(\d+)")
    return total(out_file), int(m.group(1)), int(m.group(2))


def offloaded(name, mode, workdir, per_conn=False):
    """The RESULT line NAME_offload: mode's instructions per frame (per connection) with
    checksum offload."""
    ir, frames, conns = instructions(mode, workdir, offload=True)
    print(f"INFO {mode} offload Ir={ir} frames={frames} connections={conns}")
    print(f"RESULT {name}_offload={ir / (conns if per_conn else frames):.0f}", flush=True)


def dns_offloaded(workdir):
    """The RESULT line instr_per_dns_msg_offload: the DNS path's instructions per message
    in offloaded()'s mix run (the output file it left)."""
    msgs, ir_dns = calls_into(os.path.join(workdir, "callgrind.mix.0.1.out"), DNS_ENTRIES)
    if msgs == 0:
        raise SystemExit("the mix with offload handed no DNS message to the DNS path")
    print(f"INFO mix offload DNS messages={msgs} Ir inside the DNS path={ir_dns}")
    print(f"RESULT instr_per_dns_msg_offload={ir_dns / msgs:.0f}", flush=True)


def lifecycle(workdir, flow_log=False, offload=False):
    """Connections lived whole: Ir up to the sweep (dumped, file .1), the sweep's, conns,
    flows the sweep aged. flow_log: with the flow log on (BENCH_FLOWLOG: to /dev/null), the
    sweep also writing the records it made. offload: the frames marked checksum-good."""
    out_file = os.path.join(workdir, "callgrind.lifecycle%s%s.out" % (
        ".fl" if flow_log else "", ".offload" if offload else ""))
    env = {"BENCH_INSTR": "1", "BENCH_CSUM_OFFLOAD": "1" if offload else "0"}
    if flow_log:
        env["BENCH_FLOWLOG"] = "1"
    m = callgrind([BENCH, "lifecycle", TRAFFIC], env, out_file,
                  r"^INSTR \S+ frames=\d+ conns=(\d+)[^\n]*\nINSTR_AGE \S+ aged=(\d+)")
    return total(out_file + ".1"), total(out_file), int(m.group(1)), int(m.group(2))


def ndpi(workdir):
    """nDPI's Ir over its first NDPI_FLOWS hellos, and how many it handled."""
    out_file = os.path.join(workdir, "callgrind.ndpi.out")
    m = callgrind([NDPI, traffic_file("hello.pcap")], {"BENCH_INSTR": str(NDPI_FLOWS)},
                  out_file, r"^INSTR ndpi flows=(\d+)")
    return total(out_file), int(m.group(1))


def csum_driver(workdir):
    """The csum baseline driver's Ir over the mix's frames, and the frames."""
    out_file = os.path.join(workdir, "callgrind.mix.csum.out")
    m = callgrind([BENCH, "mix", TRAFFIC], {"BENCH_INSTR": "csum"}, out_file,
                  r"^INSTR \S+ frames=(\d+) .*driver=csum")
    return total(out_file), int(m.group(1))


def main():
    if not os.access(BENCH, os.X_OK):
        sys.exit(f"bench_instr: $BENCH_FULL ({BENCH!r}) is not a program (meson sets it)")
    if shutil.which("valgrind") is None:
        print("SKIP bench_instr: valgrind is not installed (tests/install-deps.sh installs it)")
        return 0
    for name in ("small64.pcap", "mix.pcap", "hello.pcap", "hosts.txt", "manifest.json"):
        traffic_file(name)
    with tempfile.TemporaryDirectory(prefix="ngcallgrind") as work:
        ir, frames, _ = instructions("small64", work)
        print(f"INFO small64 Ir={ir} frames={frames}")
        print(f"RESULT instr_per_pkt_small64={ir / frames:.0f}", flush=True)
        offloaded("instr_per_pkt_small64", "small64", work)
        print("INFO goal: instr_per_pkt_small64 <= 300 (<= 250 with checksum offload)")
        ir, frames, _ = instructions("mix", work)
        print(f"INFO mix Ir={ir} frames={frames}")
        msgs, ir_dns = calls_into(os.path.join(work, "callgrind.mix.0.0.out"), DNS_ENTRIES)
        if msgs == 0:
            raise SystemExit("the mix handed no DNS message to the DNS path")
        print(f"INFO mix DNS messages={msgs} Ir inside the DNS path={ir_dns}")
        print(f"RESULT instr_per_dns_msg={ir_dns / msgs:.0f}")
        print("INFO goal: instr_per_dns_msg <= 2000")
        print(f"RESULT instr_per_pkt_mix_full={ir / frames:.0f}", flush=True)
        ir_csum, frames_csum = csum_driver(work)
        print(f"INFO mix csum driver Ir={ir_csum} frames={frames_csum}")
        print(f"RESULT instr_ratio_mix_vs_csum={(ir / frames) / (ir_csum / frames_csum):.2f}",
              flush=True)
        offloaded("instr_per_pkt_mix_full", "mix", work)
        print("INFO goal: instr_per_pkt_mix_full <= 600 (<= 500 with checksum offload)")
        dns_offloaded(work)
        ir_many, frames_many, _ = instructions("mix", work, vms=1000)
        print(f"INFO mix with 1000 VMs Ir={ir_many} frames={frames_many}")
        print("INFO goal: instr_mix_1000vms_vs_16vms <= 1.02")
        print(f"RESULT instr_mix_1000vms_vs_16vms="
              f"{(ir_many / frames_many) / (ir / frames):.3f}", flush=True)
        ir_many, frames_many, _ = instructions("mix", work, vms=4096)
        print(f"INFO mix with 4096 VMs (dataplane.max_vms 4096) Ir={ir_many} "
              f"frames={frames_many}")
        print("INFO goal: instr_mix_4096vms_vs_16vms <= 1.02")
        print(f"RESULT instr_mix_4096vms_vs_16vms="
              f"{(ir_many / frames_many) / (ir / frames):.3f}", flush=True)
        ir, frames, conns = instructions("conn", work)
        print(f"INFO conn Ir={ir} frames={frames} connections={conns}")
        print(f"RESULT instr_per_conn={ir / conns:.0f}", flush=True)
        per_conn = ir / conns
        offloaded("instr_per_conn", "conn", work, per_conn=True)
        ir, ir_age, conns, aged = lifecycle(work)
        print(f"INFO lifecycle Ir={ir} sweep_Ir={ir_age} connections={conns} aged={aged}")
        if aged < conns:
            raise SystemExit(f"the sweep aged {aged} flows of {conns} connections")
        print(f"RESULT instr_per_conn_lifecycle={(ir + ir_age) / conns:.0f}")
        print("INFO goal: instr_per_conn_lifecycle <= 3500, then 2500")
        print(f"RESULT instr_per_flow_aged={ir_age / aged:.0f}", flush=True)
        ir_off, ir_age_off, conns_off, aged_off = lifecycle(work, offload=True)
        print(f"INFO lifecycle offload Ir={ir_off} sweep_Ir={ir_age_off} "
              f"connections={conns_off} aged={aged_off}")
        if (conns_off, aged_off) != (conns, aged):
            raise SystemExit("the run with checksum offload saw other connections")
        print(f"RESULT instr_per_conn_lifecycle_offload={(ir_off + ir_age_off) / conns:.0f}",
              flush=True)
        ir_fl, ir_age_fl, conns_fl, aged_fl = lifecycle(work, flow_log=True)
        print(f"INFO lifecycle with the flow log Ir={ir_fl} sweep_Ir={ir_age_fl} "
              f"connections={conns_fl} aged={aged_fl}")
        if (conns_fl, aged_fl) != (conns, aged):
            raise SystemExit("the run with the flow log saw other connections")
        print(f"RESULT instr_flow_record_per_conn="
              f"{(ir_fl + ir_age_fl - ir - ir_age) / conns:.0f}", flush=True)
        if NDPI:
            ir, flows = ndpi(work)
            print(f"INFO ndpi Ir={ir} flows={flows}")
            print(f"RESULT ndpi_instr_per_hello={ir / flows:.0f}")
            print(f"RESULT conn_vs_ndpi_instr={ir / flows / per_conn:.2f}", flush=True)
            print("INFO goal: conn_vs_ndpi_instr >= 40")
    return 0


if __name__ == "__main__":
    sys.exit(main())
