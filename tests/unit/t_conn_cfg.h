/*
 * The worker configuration the flow-stage tests of the VM's frames share
 * (test_dp_conn_plain.c, test_dp_conn_open.c).
 */
#ifndef T_CONN_CFG_H
#define T_CONN_CFG_H

/*
 * A VM whose policy admits its server by address: no binding is needed to open. And one
 * whose policy has IPv6 address patterns alone (test_syn_by_address), and one with an
 * egress budget (test_syn_by_binding).
 */
static const char t_config[] =
	"dataplane: {vm_port: net_null0, uplink_port: net_null1, max_flows: 4096,\n"
	"  max_flows_per_vm: 512, max_bindings: 1024}\n"
	"slow_path: {enabled: false}\n"
	"resolvers: [10.77.0.1]\n"
	"policies: {web: {allow: [\"203.0.113.5:443\", \"a.example:443\", \"a.example:8080\"]},\n"
	"  six: {allow: [\"[2001:db8::/32]:443\", \"a.example:443\"]},\n"
	"  metered: {allow: [\"b.example:443\"],\n"
	"    budgets: [{host: b.example, upload: 1MB, per: 1h}]}}\n"
	"vms: [{name: agent1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: web},\n"
	"  {name: agent2, mac: \"02:00:00:00:00:02\", ipv4: 10.77.0.12, policy: six},\n"
	"  {name: agent3, mac: \"02:00:00:00:00:03\", ipv4: 10.77.0.13, policy: metered}]\n";

#endif
