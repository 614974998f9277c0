#!/usr/bin/python3
"""A stand-in for the namegate daemon, to prove the lab's namegate mode before the daemon
exists: it reads the config file the lab wrote, opens the two gateway ports with AF_PACKET
(as DPDK's net_af_packet does) and forwards every frame unchanged between them, counts
frames, serves those counts at the config's metrics address, prints them on SIGUSR1 and
stops on SIGTERM. It decides nothing. `--fail-start MSG` exits 1 at once with MSG, like a
daemon refusing a bad configuration.
"""

import re
import select
import signal
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

ETH_P_ALL = 0x0003
counts = {("vm", "rx"): 0, ("vm", "tx"): 0, ("uplink", "rx"): 0, ("uplink", "tx"): 0}


def metrics_text():
    return "".join(f'namegate_port_packets_total{{port="{p}",dir="{d}"}} {n}\n'
                   for (p, d), n in counts.items())


class Metrics(BaseHTTPRequestHandler):
    def do_GET(self):
        body = metrics_text().encode()
        self.send_response(200 if self.path == "/metrics" else 404)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def main(argv):
    if "--fail-start" in argv:
        print(f"namegate: {argv[argv.index('--fail-start') + 1]}", file=sys.stderr)
        return 1
    cfg = open(argv[argv.index("-c") + 1]).read()
    vm_if = re.search(r"vm_port:\s*\"?net_af_packet\d*,iface=([^\",\s]+)", cfg).group(1)
    up_if = re.search(r"uplink_port:\s*\"?net_af_packet\d*,iface=([^\",\s]+)", cfg).group(1)
    m = re.search(r"metrics:\s*\"?([\d.]+):(\d+)", cfg)
    ports = {}
    for name, ifname in (("vm", vm_if), ("uplink", up_if)):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)   # no frames before bind
        s.bind((ifname, ETH_P_ALL))
        ports[name] = s
    if m:
        srv = HTTPServer((m.group(1), int(m.group(2))), Metrics)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGUSR1, lambda *_: print(metrics_text(), end="", flush=True))
    print(f"fake namegate: forwarding {vm_if} <-> {up_if}", flush=True)
    other = {"vm": "uplink", "uplink": "vm"}
    by_fd = {s.fileno(): n for n, s in ports.items()}
    while True:
        try:
            ready, _, _ = select.select(list(ports.values()), [], [])
        except InterruptedError:
            continue
        for s in ready:
            name = by_fd[s.fileno()]
            data, addr = s.recvfrom(65535)
            if addr[2] == socket.PACKET_OUTGOING:     # our own transmissions, seen again
                continue
            counts[(name, "rx")] += 1
            ports[other[name]].send(data)
            counts[(other[name], "tx")] += 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
