#!/usr/bin/python3
"""Boot agent VMs built by vm-images/agent/build.sh, and read what they print.

A VM is the shared kernel and initramfs plus a per-VM seed: a small cpio archive with the
commands to run and the CAs to trust, put in front of the initramfs (the kernel unpacks
every archive of the initrd in turn). Its network settings go on the kernel command line;
see vm-images/agent/init for both, and for the console lines parsed here.

As a program, for an operator's lab (the TAP must already be attached to the VM bridge):

    agentvm.py boot --image DIR --tap TAP --name vm1 --mac 02:00:00:00:00:01 \\
        --ip 10.77.0.11/24 --gw 10.77.0.1 --dns 10.77.0.1 [--ca lab-ca.pem] \\
        [--commands FILE] [--console FILE]

With no --commands the VM gives a shell on the terminal (Ctrl-A X quits qemu).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

# TCG unless asked otherwise: /dev/kvm can be present where KVM guests make no progress
# (nested virtualisation in a sandbox), and a VM that hangs is worse than a slow one.
ACCEL_ENV = "NAMEGATE_VM_ACCEL"


@dataclass
class AgentVM:
    name: str
    mac: str
    ip: str                     # address/prefix, e.g. 10.77.0.11/24
    gw: str = None
    dns: str = None
    ip6: str = None
    gw6: str = None
    commands: list = field(default_factory=list)
    ca_pem: str = None          # PEM text to trust besides the Debian bundle
    cmd_timeout: int = 20

    def cmdline(self):
        args = ["console=ttyS0", "quiet", "loglevel=3", "panic=-1",
                f"ng.name={self.name}", f"ng.mac={self.mac}", f"ng.ip={self.ip}",
                f"ng.timeout={self.cmd_timeout}"]
        for key in ("gw", "dns", "ip6", "gw6"):
            if getattr(self, key):
                args.append(f"ng.{key}={getattr(self, key)}")
        if not self.commands:
            args.append("ng.keep=1")
        return " ".join(args)


def write_seed(vm, path):
    """The seed archive for vm, in the newc format the kernel unpacks, via cpio(1)."""
    if any("\n" in c for c in vm.commands):
        raise ValueError("a seed command is one line")
    with tempfile.TemporaryDirectory() as d:
        os.mkdir(os.path.join(d, "seed"))
        if vm.commands:
            with open(os.path.join(d, "seed", "commands"), "w") as f:
                f.write("\n".join(vm.commands) + "\n")
        if vm.ca_pem:
            with open(os.path.join(d, "seed", "ca.pem"), "w") as f:
                f.write(vm.ca_pem)
        names = "\n".join(["seed"] + [f"seed/{n}" for n in sorted(os.listdir(
            os.path.join(d, "seed")))]) + "\n"
        with open(path, "wb") as out:
            subprocess.run(["cpio", "-o", "-H", "newc", "--quiet", "-R", "0:0"], cwd=d,
                           input=names.encode(), stdout=out, check=True)


def make_initrd(image_dir, vm, path):
    """Seed first, then the shared initramfs: the kernel unpacks an uncompressed archive
    followed by a compressed one; in the other order this kernel rejected the seed
    ("invalid magic at start of compressed archive")."""
    seed = path + ".seed"
    write_seed(vm, seed)
    with open(path, "wb") as out:
        for part in (seed, os.path.join(image_dir, "initramfs.cpio.gz")):
            with open(part, "rb") as f:
                shutil.copyfileobj(f, out)
    os.unlink(seed)
    return path


def qemu_argv(image_dir, vm, initrd, *, tap, console=None, memory_mb=256, accel=None):
    """qemu for one VM: one virtio NIC on an existing TAP, the console on a file (or the
    terminal), no display, no disks; it exits when the VM powers off."""
    accel = accel or os.environ.get(ACCEL_ENV, "tcg")
    argv = ["qemu-system-x86_64", "-accel", accel, "-m", str(memory_mb), "-nodefaults",
            "-no-reboot", "-display", "none",
            "-kernel", os.path.join(image_dir, "vmlinuz"), "-initrd", initrd,
            "-append", vm.cmdline(),
            "-netdev", f"tap,id=n0,ifname={tap},script=no,downscript=no",
            "-device", f"virtio-net-pci,netdev=n0,mac={vm.mac}",
            "-device", "virtio-rng-pci"]
    if accel == "kvm":
        argv += ["-cpu", "host"]
    argv += ["-serial", f"file:{console}"] if console else ["-serial", "mon:stdio"]
    return argv


@dataclass
class CommandResult:
    command: str
    output: str
    rc: int


@dataclass
class Console:
    up: dict = None             # name, mac, ip, once the network is configured
    results: list = field(default_factory=list)
    ended: bool = False
    errors: list = field(default_factory=list)

    def result(self, n):
        """The n-th command's result (1-based), as numbered on the console."""
        return self.results[n - 1]


_LINE = re.compile(r"^NGVM (up|cmd|rc|end|error)\b ?(.*)$")


def parse_console(text):
    """What a VM reported on its console; kernel messages and blank lines are skipped."""
    con, current, output = Console(), None, []
    for raw in text.replace("\r", "").split("\n"):
        m = _LINE.match(raw)
        if not m:
            if current is not None and not re.match(r"^\[\s*\d+\.\d+\] ", raw):
                output.append(raw)
            continue
        kind, rest = m.groups()
        if kind == "up":
            name, mac, ip = (rest.split() + ["", "", ""])[:3]
            con.up = {"name": name, "mac": mac, "ip": ip}
        elif kind == "cmd":
            current, output = rest.split(" ", 1)[1] if " " in rest else "", []
        elif kind == "rc" and current is not None:
            n, rc = rest.split()
            con.results.append(CommandResult(current, "\n".join(output).strip(), int(rc)))
            if int(n) != len(con.results):
                con.errors.append(f"result {n} arrived as number {len(con.results)}")
            current = None
        elif kind == "end":
            con.ended = True
        elif kind == "error":
            con.errors.append(rest)
    return con


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("boot", help="boot one agent VM on a TAP")
    b.add_argument("--image", default="/var/tmp/namegate-agent-vm")
    b.add_argument("--tap", required=True)
    for opt in ("name", "mac", "ip"):
        b.add_argument(f"--{opt}", required=True)
    for opt in ("gw", "dns", "ip6", "gw6", "ca", "commands", "console"):
        b.add_argument(f"--{opt}")
    b.add_argument("--accel", choices=["tcg", "kvm"])
    a = ap.parse_args(argv)
    vm = AgentVM(a.name, a.mac, a.ip, a.gw, a.dns, a.ip6, a.gw6)
    if a.commands:
        with open(a.commands) as f:
            vm.commands = [ln.rstrip("\n") for ln in f if ln.strip()]
    if a.ca:
        with open(a.ca) as f:
            vm.ca_pem = f.read()
    with tempfile.TemporaryDirectory() as d:
        initrd = make_initrd(a.image, vm, os.path.join(d, "initrd"))
        return subprocess.call(qemu_argv(a.image, vm, initrd, tap=a.tap, console=a.console,
                                         accel=a.accel))


if __name__ == "__main__":
    sys.exit(main())
