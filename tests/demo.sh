#!/usr/bin/env bash
# The README's demo command. The lab (agent VMs as network namespaces, a fake internet with
# a real resolver and HTTPS servers, namegate in between) arrives with the dataplane; until
# then this shows what namegate's parsers read from a capture of agent-VM traffic.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${NAMEGATE_BUILD:-build}
traffic=${TRAFFIC_DIR:-../shared/traffic}

bash tests/install-deps.sh
[ -f "$build/build.ninja" ] || meson setup "$build" >/dev/null
meson compile -C "$build" >/dev/null

echo "== what namegate's parsers read from $traffic/mix.pcap"
"$build/control/dump/namegate-dump" "$traffic/mix.pcap" | /usr/bin/python3 -c '
import collections, json, sys
lines = [json.loads(l) for l in sys.stdin]
tls = [x for x in lines if x["type"] == "tls"]
dns = [x for x in lines if x["type"] == "dns"]
quic = [x for x in lines if x["type"] == "quic"]
snis = collections.Counter(x.get("sni") for x in tls if x.get("sni"))
verdicts = collections.Counter(x.get("verdict", "hello") for x in tls)
answers = [x for x in dns if x.get("qr") and x.get("addrs")]
print(f"ClientHellos: {len(tls)} ({dict(verdicts)}); distinct SNIs: {len(snis)}")
for name, n in snis.most_common(5):
    print(f"  {n:5}  {name}")
print(f"DNS messages: {len(dns)}; responses with addresses on the CNAME chain: {len(answers)}")
for x in answers[:3]:
    addrs = ", ".join(f"{a[\"addr\"]} ttl {a[\"ttl\"]}" for a in x["addrs"])
    print(f"  {x[\"qname\"]} -> {addrs} (via {x[\"chain\"]} CNAMEs)")
print(f"QUIC Initials: {len(quic)}")
'
cat <<'TXT'

== the lab
Once the dataplane lands, this command builds agent VMs as network namespaces behind
namegate on net_af_packet, with a fake internet (a real resolver and HTTPS servers), runs
allowed and blocked requests from each VM, prints the per-VM counters, and cleans up.
TXT
