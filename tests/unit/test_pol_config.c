/*
 * policy/load: the SPEC s3 schema through the YAML walker: defaults, every key, and each
 * error with its exact FILE:LINE:COL.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pol_load_check.h"
#include "policy/load.h"

#ifndef POL_FIXTURES
#define POL_FIXTURES "tests/policy"
#endif

#define POLS	"policies:\n  p:\n    allow: [example.com]\n"
#define VM1	"vms:\n  - name: vm1\n    mac: 02:00:00:00:00:01\n    ipv4: 10.77.0.11\n" \
		"    policy: p\n"

/* The dataplane's ports, its workers and its flow table's sizes. */
static void
expect_dataplane(const struct pol_config *cfg, const char *vm_port, const char *uplink_port,
    uint32_t workers, uint32_t max_flows, uint32_t max_flows_per_vm)
{
	assert_string_equal(cfg->vm_port, vm_port);
	assert_string_equal(cfg->uplink_port, uplink_port);
	assert_int_equal(cfg->workers, workers);
	assert_int_equal(cfg->max_flows, max_flows);
	assert_int_equal(cfg->max_flows_per_vm, max_flows_per_vm);
}

/* Where the daemon listens and logs, and where it keeps its grants (always the same). */
static void
expect_files(const struct pol_config *cfg, const char *control_socket, const char *events)
{
	assert_string_equal(cfg->control_socket, control_socket);
	assert_string_equal(cfg->events, events);
	assert_string_equal(cfg->grants_state, "/var/lib/namegate/grants.json");
}

static void
test_defaults(void **state)
{
	struct pol_config *cfg = pol_check_load(POLS VM1);
	const struct pol_vm *vm;

	(void)state;
	assert_non_null(cfg);
	assert_int_equal(pol_check_errs.n, 0);
	/* no dataplane.eal: namegate derives EAL's arguments and sizes its memory */
	assert_int_equal(cfg->neal, 0);
	assert_null(cfg->eal[0]);
	assert_int_equal(cfg->eal_pos.line, 0);
	assert_null(cfg->eal_item_pos);
	assert_int_equal(cfg->max_flows_pos.line, 0);
	expect_dataplane(cfg, "net_af_packet0,iface=ng-vm", "net_af_packet1,iface=ng-up", 1,
	    1048576, 65536);
	assert_int_equal(cfg->max_bindings_per_vm, 65536);
	assert_int_equal(cfg->max_pending_per_vm, 1024);
	assert_int_equal(cfg->max_holds_per_vm, 32);
	assert_int_equal(cfg->max_fragments_per_vm, 8);
	assert_int_equal(cfg->max_bindings, 1048576);
	assert_int_equal(cfg->max_vms, 1024);	/* what DP_VM_SLOTS was before it was a key */
	assert_int_equal(cfg->mbufs, 0);
	assert_int_equal(cfg->idle_sleep_us, 1000);
	assert_int_equal(cfg->dns_ech, POL_ECH_STRIP);
	assert_true(cfg->slow_path_enabled);
	assert_string_equal(cfg->nft_table, "namegate");
	assert_int_equal(cfg->nresolvers, 1);
	assert_int_equal(cfg->resolvers[0].family, 4);
	assert_memory_equal(cfg->resolvers[0].a, "\x0a\x4d\x00\x01", 4);
	assert_int_equal(cfg->dns_min_ttl, 300);
	assert_int_equal(cfg->dns_max_ttl, 86400);
	assert_int_equal(cfg->dns_blocked_rcode, POL_RCODE_REFUSED);
	assert_int_equal(cfg->ntls_ports, 2);
	assert_int_equal(cfg->tls_ports[0], 443);
	assert_int_equal(cfg->tls_ports[1], 8443);
	assert_int_equal(cfg->sni_binding, POL_SNI_STRICT);
	assert_int_equal(cfg->quic, POL_QUIC_BLOCK);
	assert_int_equal(cfg->on_block, POL_ON_BLOCK_RESET);
	assert_string_equal(cfg->metrics, "127.0.0.1:9477");
	assert_int_equal(cfg->metrics_port, 9477);
	/* grants_state has no key: it is state, not configuration */
	expect_files(cfg, "/run/namegate/namegate.sock", "/var/log/namegate/events.jsonl");
	assert_int_equal(cfg->nvms, 1);
	vm = pol_config_vm(cfg, "vm1");
	assert_non_null(vm);
	assert_null(pol_config_vm(cfg, "vm2"));
	assert_memory_equal(vm->id.mac, "\x02\x00\x00\x00\x00\x01", 6);
	assert_true(vm->id.has4);
	assert_false(vm->id.has6);
	assert_int_equal(vm->id.vlan, 0);
	assert_int_equal(vm->mode, POL_MODE_ENFORCE);
	assert_int_equal(vm->line, 5);
	assert_int_equal(vm->col, 5);
	assert_string_equal(pol_set_policy_name(cfg->set, vm->policy), "p");
	pol_config_free(cfg);
}

static void
test_full(void **state)
{
	struct pol_config *cfg;
	const struct pol_vm *vm;

	(void)state;
	pol_errs_free(&pol_check_errs);
	cfg = pol_load_file(POL_FIXTURES "/full.yaml", &pol_check_errs);
	if (cfg == NULL)
		fail_msg("%s", pol_check_err(0));
	assert_int_equal(cfg->neal, 6);
	assert_string_equal(cfg->eal[2], "256");
	/* where namegate points when the tables cannot fit: the -m value, the list, the key */
	assert_int_equal(cfg->eal_pos.line, 3);
	assert_int_equal(cfg->eal_pos.col, 8);
	assert_int_equal(cfg->eal_item_pos[2].line, 3);	/* "256" */
	assert_int_equal(cfg->eal_item_pos[2].col, 24);
	assert_int_equal(cfg->eal_item_pos[5].col, 56);	/* ngtest */
	assert_true(cfg->max_flows_pos.line > 3);
	expect_dataplane(cfg, "net_tap0,iface=vmtap", "0000:03:00.0", 4, 2000, 100);
	assert_int_equal(cfg->max_bindings, 3000);
	assert_int_equal(cfg->mbufs, 131072);
	assert_false(cfg->slow_path_enabled);
	assert_string_equal(cfg->nft_table, "ng_test");
	assert_int_equal(cfg->nresolvers, 2);
	assert_int_equal(cfg->resolvers[1].family, 6);
	assert_int_equal(cfg->dns_min_ttl, 60);
	assert_int_equal(cfg->dns_max_ttl, 3600);
	assert_int_equal(cfg->dns_blocked_rcode, POL_RCODE_NXDOMAIN);
	assert_int_equal(cfg->dns_ech, POL_ECH_PASS);
	assert_int_equal(cfg->ntls_ports, 1);
	assert_int_equal(cfg->sni_binding, POL_SNI_LOOSE);
	assert_int_equal(cfg->quic, POL_QUIC_INSPECT);
	assert_int_equal(cfg->on_block, POL_ON_BLOCK_DROP);
	assert_int_equal(cfg->metrics_addr.family, 6);
	assert_int_equal(cfg->metrics_port, 9100);
	expect_files(cfg, "/tmp/ng.sock", "/tmp/ng-events.jsonl");
	vm = pol_config_vm(cfg, "a");
	assert_non_null(vm);
	assert_memory_equal(vm->id.mac, "\x02\x00\x00\x00\x00\x0a", 6);
	pol_config_free(cfg);

	/* The SPEC example with imports, as fixtures. */
	cfg = pol_load_file(POL_FIXTURES "/ng.yaml", &pol_check_errs);
	if (cfg == NULL)
		fail_msg("%s", pol_check_err(0));
	assert_int_equal(cfg->nvms, 4);
	assert_int_equal(pol_set_policies(cfg->set), 4);
	vm = pol_config_vm(cfg, "vm2");
	assert_int_equal(vm->id.vlan, 12);
	assert_int_equal(vm->mode, POL_MODE_AUDIT);
	vm = pol_config_vm(cfg, "vm4");
	assert_false(vm->id.has4);
	assert_true(vm->id.has6);
	pol_config_free(cfg);
}

static void
test_yaml_errors(void **state)
{
	(void)state;
	pol_refused("policies: [\n", "ng.yaml:2:1: YAML syntax error: did not find expected "
	    "node content while parsing a flow node");
	pol_refused("a: b\n c: d\n", "ng.yaml:2:3: YAML syntax error: mapping values are not "
	    "allowed in this context");
	pol_refused("", "ng.yaml:1:1: empty file");
	pol_refused("# only a comment\n", "ng.yaml:1:1: empty file");
	pol_refused(POLS VM1 "---\n" POLS, "ng.yaml:9:1: a second YAML document: the file must "
	    "hold one");
	pol_refused("- a\n- b\n", "ng.yaml:1:1: top level: expected a mapping, got a list");
	pol_refused(POLS "x: \xc3\x28\n", "ng.yaml:4:5: YAML syntax error: invalid trailing "
	    "UTF-8 octet");
	pol_refused(POLS VM1 "dataplane:\n  vm_port: \"a\\0b\"\n",
	    "ng.yaml:10:12: dataplane.vm_port: contains a NUL character");
	pol_refused(POLS VM1 "? [a, b]\n: c\n", "ng.yaml:9:3: top level: expected a scalar, "
	    "got a list");
}

#define VM2	"  - name: vm2\n    mac: 02:00:00:00:00:02\n    ipv4: 10.77.0.12\n    policy: p\n"

/* dataplane.max_vms: the most there is, and VMs past it wherever the key is written. */
static void
test_max_vms(void **state)
{
	struct pol_config *cfg;

	(void)state;
	cfg = pol_check_load(POLS VM1 VM2 "dataplane:\n  max_vms: 65535\n");
	assert_non_null(cfg);
	assert_int_equal(cfg->max_vms, 65535);
	pol_config_free(cfg);
	cfg = pol_check_load("dataplane:\n  max_vms: 2\n" POLS VM1 VM2);
	assert_non_null(cfg);
	assert_int_equal(cfg->max_vms, 2);
	assert_int_equal(cfg->nvms, 2);
	pol_config_free(cfg);
	/* said at the first VM past it, whether dataplane comes after vms or before */
	pol_refused(POLS VM1 VM2 "dataplane:\n  max_vms: 1\n", "ng.yaml:9:5: vms[1]: 2 VMs, "
	    "more than dataplane.max_vms (1)");
	pol_refused("dataplane:\n  max_vms: 1\n" POLS VM1 VM2, "ng.yaml:11:5: vms[1]: 2 VMs, "
	    "more than dataplane.max_vms (1)");
}

static void
test_schema_errors(void **state)
{
	(void)state;
	pol_refused(POLS VM1 "colour: blue\n", "ng.yaml:9:1: unknown key 'colour' (expected "
	    "dataplane, slow_path, resolvers, dns, tls_ports, sni_binding, quic, on_block, "
	    "metrics, control_socket, control_socket_group, control_socket_readonly, "
	    "control_socket_readonly_group, events, flow_log, flow_log_interval, grants, approval, "
	    "fleet, ha, policies, vms)");
	pol_refused(POLS VM1 "dataplane:\n  worker: 2\n", "ng.yaml:10:3: unknown key 'worker' "
	    "in dataplane (expected eal, vm_port, uplink_port, workers, max_vms, max_flows, "
	    "max_flows_per_vm, max_bindings, max_bindings_per_vm, max_pending_per_vm, "
	    "max_holds_per_vm, max_fragments_per_vm, mbufs, idle_sleep_us, flow_log_ring)");
	pol_refused(POLS VM1 "dataplane: 5\n", "ng.yaml:9:12: dataplane: expected a mapping, "
	    "got a scalar");
	pol_refused(POLS VM1 "dataplane:\n", "ng.yaml:9:11: dataplane: expected a mapping, "
	    "got an empty value");
	pol_refused(POLS VM1 "resolvers: 10.77.0.1\n", "ng.yaml:9:12: resolvers: expected a "
	    "list, got a scalar");
	pol_refused(POLS VM1 "dataplane:\n  workers: [1]\n", "ng.yaml:10:12: dataplane.workers: "
	    "expected a scalar, got a list");
	pol_refused(POLS VM1 "dataplane:\n  workers: two\n", "ng.yaml:10:12: "
	    "dataplane.workers: expected an integer, got \"two\"");
	pol_refused(POLS VM1 "dataplane:\n  workers: -1\n", "ng.yaml:10:12: "
	    "dataplane.workers: expected an integer, got \"-1\"");
	pol_refused(POLS VM1 "dataplane:\n  workers: 0\n", "ng.yaml:10:12: "
	    "dataplane.workers: 0 is out of range (1..128)");
	pol_refused(POLS VM1 "dataplane:\n  max_flows: 99999999999999999999999\n",
	    "ng.yaml:10:14: dataplane.max_flows: 99999999999999999999999 is out of range "
	    "(1..268435456)");
	pol_refused(POLS VM1 "dataplane:\n  max_flows: 10\n  max_flows_per_vm: 20\n",
	    "ng.yaml:11:21: dataplane.max_flows_per_vm: 20 is more than max_flows (10)");
	pol_refused(POLS VM1 "dataplane:\n  max_vms: 0\n", "ng.yaml:10:12: "
	    "dataplane.max_vms: 0 is out of range (1..65535)");
	pol_refused(POLS VM1 "dataplane:\n  max_vms: 65536\n", "ng.yaml:10:12: "
	    "dataplane.max_vms: 65536 is more than 65535: a VM's slot is a 16-bit number, and "
	    "one is kept for frames from no VM");
	pol_refused(POLS VM1 "dataplane:\n  max_vms: 99999999999999999999999\n",
	    "ng.yaml:10:12: dataplane.max_vms: 99999999999999999999999 is more than 65535: a "
	    "VM's slot is a 16-bit number, and one is kept for frames from no VM");
	pol_refused(POLS VM1 "dataplane:\n  max_vms: many\n", "ng.yaml:10:12: "
	    "dataplane.max_vms: expected an integer, got \"many\"");
	pol_refused(POLS VM1 "dataplane:\n  max_holds_per_vm: 0\n", "ng.yaml:10:21: "
	    "dataplane.max_holds_per_vm: 0 is out of range (1..268435456)");
	pol_refused(POLS VM1 "dataplane:\n  idle_sleep_us: 10001\n", "ng.yaml:10:18: "
	    "dataplane.idle_sleep_us: 10001 is out of range (0..10000)");
	pol_refused(POLS VM1 "dataplane:\n  eal: [a, {b: c}]\n", "ng.yaml:10:12: "
	    "dataplane.eal[1]: expected a scalar, got a mapping");
	pol_refused(POLS VM1 "dataplane:\n  vm_port: \"\"\n", "ng.yaml:10:12: "
	    "dataplane.vm_port: must not be empty");
	pol_refused(POLS VM1 "slow_path:\n  enabled: maybe\n", "ng.yaml:10:12: "
	    "slow_path.enabled: expected true or false, got \"maybe\"");
	pol_refused(POLS VM1 "slow_path:\n  nft_table: \"my table\"\n", "ng.yaml:10:14: "
	    "slow_path.nft_table: \"my table\" is not a table name (letters, digits, _, at "
	    "most 32, not starting with a digit)");
	pol_refused(POLS VM1 "resolvers: [10.77.0.1, 10.77.0.300]\n", "ng.yaml:9:24: "
	    "resolvers[1]: bad address \"10.77.0.300\" (an IPv4 or IPv6 address)");
	pol_refused(POLS VM1 "dns:\n  min_ttl: 600\n  max_ttl: 60\n", "ng.yaml:11:12: dns: "
	    "min_ttl 600 is more than max_ttl 60");
	pol_refused(POLS VM1 "dns:\n  blocked_rcode: servfail\n", "ng.yaml:10:18: "
	    "dns.blocked_rcode: expected refused or nxdomain, got \"servfail\"");
	pol_refused(POLS VM1 "tls_ports: [443, 70000]\n", "ng.yaml:9:18: tls_ports[1]: port "
	    "\"70000\" out of range (1..65535)");
	pol_refused(POLS VM1 "tls_ports: [443, 0]\n", "ng.yaml:9:18: tls_ports[1]: port "
	    "\"0\" out of range (1..65535)");
	pol_refused(POLS VM1 "tls_ports: [443, 443]\n", "ng.yaml:9:18: tls_ports[1]: "
	    "duplicate port 443");
	pol_refused(POLS VM1 "sni_binding: lax\n", "ng.yaml:9:14: sni_binding: expected strict "
	    "or loose, got \"lax\"");
	pol_refused(POLS VM1 "quic: allow\n", "ng.yaml:9:7: quic: expected block or inspect, "
	    "got \"allow\"");
	pol_refused(POLS VM1 "on_block: ignore\n", "ng.yaml:9:11: on_block: expected reset or "
	    "drop, got \"ignore\"");
	pol_refused(POLS VM1 "metrics: 127.0.0.1\n", "ng.yaml:9:10: metrics: expected "
	    "ADDRESS:PORT, got \"127.0.0.1\"");
	pol_refused(POLS VM1 "metrics: 127.0.0.1:99999\n", "ng.yaml:9:10: metrics: port "
	    "\"99999\" out of range (1..65535)");
	pol_refused(POLS VM1 "metrics: \"::1:9477\"\n", "ng.yaml:9:10: metrics: bad address "
	    "\"::1\"");
	pol_refused(POLS VM1 "quic: block\nquic: inspect\n", "ng.yaml:10:1: duplicate key "
	    "'quic'");
	pol_refused(VM1, "ng.yaml:1:1: missing key 'policies'");
	pol_refused(POLS, "ng.yaml:1:1: missing key 'vms'");
}

static void
test_vm_errors(void **state)
{
	(void)state;
	pol_refused(POLS "vms:\n  - name: vm1\n    mac: 02:00:00:00:00:0g\n    ipv4: 10.0.0.1\n"
	    "    policy: p\n", "ng.yaml:6:10: vms[0].mac: bad MAC \"02:00:00:00:00:0g\" (six hex "
	    "pairs: 02:00:00:00:00:01)");
	pol_refused(POLS "vms:\n  - name: vm1\n    mac: 02-00-00-00-00-01\n    ipv4: 10.0.0.1\n"
	    "    policy: p\n", "ng.yaml:6:10: vms[0].mac: bad MAC \"02-00-00-00-00-01\" (six hex "
	    "pairs: 02:00:00:00:00:01)");
	pol_refused(POLS "vms:\n  - name: vm1\n    mac: 01:00:5e:00:00:01\n    ipv4: 10.0.0.1\n"
	    "    policy: p\n", "ng.yaml:6:10: vms[0].mac: 01:00:5e:00:00:01 is a multicast MAC, "
	    "not a VM's");
	pol_refused(POLS "vms:\n  - name: vm1\n    mac: 02:00:00:00:00:01\n    ipv4: 10.0.0.256\n"
	    "    policy: p\n", "ng.yaml:7:11: vms[0].ipv4: bad IPv4 address \"10.0.0.256\"");
	pol_refused(POLS "vms:\n  - name: vm1\n    mac: 02:00:00:00:00:01\n    ipv4: 224.0.0.1\n"
	    "    policy: p\n", "ng.yaml:7:11: vms[0].ipv4: 224.0.0.1 is not a unicast host "
	    "address");
	pol_refused(POLS "vms:\n  - name: vm1\n    mac: 02:00:00:00:00:01\n    ipv6: fd77::1::2\n"
	    "    policy: p\n", "ng.yaml:7:11: vms[0].ipv6: bad IPv6 address \"fd77::1::2\"");
	pol_refused(POLS "vms:\n  - name: vm1\n    mac: 02:00:00:00:00:01\n    ipv4: 10.0.0.1\n"
	    "    vlan: 4095\n    policy: p\n", "ng.yaml:8:11: vms[0].vlan: 4095 is out of range "
	    "(0..4094)");
	pol_refused(POLS "vms:\n  - name: vm1\n    mac: 02:00:00:00:00:01\n    ipv4: 10.0.0.1\n"
	    "    mode: permissive\n    policy: p\n", "ng.yaml:8:11: vms[0].mode: expected enforce "
	    "or audit, got \"permissive\"");
	pol_refused(POLS "vms:\n  - name: 1vm\n    mac: 02:00:00:00:00:01\n    ipv4: 10.0.0.1\n"
	    "    policy: p\n", "ng.yaml:5:11: vms[0].name: bad VM name \"1vm\" (a letter, then "
	    "letters, digits, '_' or '-', at most 32)");
	pol_refused(POLS "vms:\n  - name: a_in\n    mac: 02:00:00:00:00:01\n    ipv4: 10.0.0.1\n"
	    "    policy: p\n", "ng.yaml:5:11: vms[0].name: \"a_in\" ends in \"_in\", which "
	    "namegate appends to VM names for its nft objects: choose another");
	pol_refused(POLS "vms:\n  - name: web_v6addr\n    mac: 02:00:00:00:00:01\n"
	    "    ipv4: 10.0.0.1\n    policy: p\n", "ng.yaml:5:11: vms[0].name: \"web_v6addr\" "
	    "ends in \"_v6addr\", which namegate appends to VM names for its nft objects: "
	    "choose another");
	pol_refused("resolvers: [10.0.0.1, 10.0.0.2, 10.0.0.3, 10.0.0.4, 10.0.0.5, 10.0.0.6, "
	    "10.0.0.7, 10.0.0.8, 10.0.0.9]\n" POLS VM1, "ng.yaml:1:12: resolvers: 9 resolvers, at "
	    "most 8");
	pol_refused("tls_ports: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]\n" POLS VM1,
	    "ng.yaml:1:12: tls_ports: 17 ports, at most 16");
	pol_refused(POLS "vms:\n  - name: unknown\n    mac: 02:00:00:00:00:01\n    ipv4: 10.0.0.1\n"
	    "    policy: p\n", "ng.yaml:5:11: vms[0].name: \"unknown\" is the name namegate gives "
	    "frames from no VM: choose another");
	pol_refused(POLS "vms:\n  - name: vm1\n    mac: 02:00:00:00:00:01\n    policy: p\n",
	    "ng.yaml:5:5: vms[0]: needs ipv4 or ipv6 (or both)");
	pol_refused(POLS "vms:\n  - name: vm1\n    ipv4: 10.0.0.1\n    policy: p\n",
	    "ng.yaml:5:5: vms[0]: missing key 'mac'");
	pol_refused(POLS "vms:\n  - name: vm1\n    mac: 02:00:00:00:00:01\n    ipv4: 10.0.0.1\n"
	    "    policy: q\n", "ng.yaml:8:13: vms[0].policy: unknown policy 'q'");
	pol_refused(POLS "vms:\n  - vm1\n", "ng.yaml:5:5: vms[0]: expected a mapping, got a "
	    "scalar");
	pol_refused(POLS VM1 "  - name: vm1\n    mac: 02:00:00:00:00:02\n    ipv4: 10.77.0.12\n"
	    "    policy: p\n", "ng.yaml:9:11: vms[1].name: duplicate VM name (also vms[0] at line "
	    "5)");
	pol_refused(POLS VM1 "  - name: vm2\n    mac: 02:00:00:00:00:01\n    ipv4: 10.77.0.12\n"
	    "    policy: p\n", "ng.yaml:10:10: vms[1].mac: duplicate VM MAC (also vms[0] at line "
	    "5)");
	pol_refused(POLS VM1 "  - name: vm2\n    mac: 02:00:00:00:00:02\n    ipv4: 10.77.0.11\n"
	    "    policy: p\n", "ng.yaml:11:11: vms[1].ipv4: duplicate VM IPv4 address (also "
	    "vms[0] at line 5)");
	pol_refused(POLS "vms:\n  - {name: a, mac: \"02:00:00:00:00:01\", ipv6: \"fd::1\", "
	    "policy: p}\n  - {name: b, mac: \"02:00:00:00:00:02\", ipv6: \"fd:0::1\", policy: p}\n",
	    "ng.yaml:6:47: vms[1].ipv6: duplicate VM IPv6 address (also vms[0] at line 5)");
}

static void
test_policy_errors(void **state)
{
	(void)state;
	pol_refused("policies:\n  p:\n    allow: [pypi.org, \"*.com\"]\n" VM1, "ng.yaml:3:23: "
	    "policies.p.allow[1]: \"*.com\": a wildcard over a one-label suffix (*.com) would "
	    "allow a whole top-level domain");
	pol_refused("policies:\n  p:\n    allow:\n      - pypi.org:70000\n" VM1, "ng.yaml:4:9: "
	    "policies.p.allow[0]: \"pypi.org:70000\": port 70000 out of range (1..65535)");
	pol_refused("policies:\n  p:\n    deny: [\"*\"]\n" VM1, "ng.yaml:3:12: "
	    "policies.p.deny[0]: \"*\": '*' would allow every host");
	pol_refused("policies:\n  p:\n    allow: [bücher.de]\n" VM1, "ng.yaml:3:13: "
	    "policies.p.allow[0]: \"bücher.de\": non-ASCII host name: write an IDN in its "
	    "punycode form (xn--...)");
	pol_refused("policies:\n  p:\n    allow: [a..b]\n" VM1, "ng.yaml:3:13: "
	    "policies.p.allow[0]: \"a..b\": empty label");
	pol_refused("policies:\n  p:\n    allow: [[a]]\n" VM1, "ng.yaml:3:13: "
	    "policies.p.allow[0]: expected a scalar, got a list");
	pol_refused("policies:\n  p:\n    allow: pypi.org\n" VM1, "ng.yaml:3:12: "
	    "policies.p.allow: expected a list, got a scalar");
	pol_refused("policies:\n  p:\n    allowed: [pypi.org]\n" VM1, "ng.yaml:3:5: unknown key "
	    "'allowed' in policies.p (expected allow, deny, ask, import, budgets)");
	pol_refused("policies:\n  p:\n" VM1, "ng.yaml:2:5: policies.p: expected a mapping "
	    "(allow, deny, ask, import, budgets), got an empty value");
	pol_refused("policies:\n  p: {}\n  p: {}\n" VM1, "ng.yaml:3:3: policies: duplicate "
	    "policy 'p'");
	pol_refused("policies:\n  \"p q\": {}\n" VM1, "ng.yaml:2:3: policies: bad policy name "
	    "\"p q\" (letters, digits, '_', '.', '-', at most 64)");
	pol_refused("policies: []\n" VM1, "ng.yaml:1:11: policies: expected a mapping, got a "
	    "list");
}

/* Several mistakes are all reported, in file order; past POL_ERRS_MAX only counted. */
static void
test_many_errors(void **state)
{
	char *text, *p;
	struct pol_config *cfg;
	char *out = NULL;
	size_t outlen = 0;
	FILE *f;

	(void)state;
	cfg = pol_check_load("dataplane:\n  workers: 0\n  colour: blue\npolicies:\n  p:\n"
	    "    allow: [\"*.com\", \"a:0\"]\n"
	    "vms:\n  - name: vm1\n    mac: 02:00:00:00:00:0g\n    ipv4: 10.0.0.1\n"
	    "    policy: nope\n");
	assert_null(cfg);
	assert_int_equal(pol_check_errs.n, 6);
	assert_string_equal(pol_check_err(0), "ng.yaml:2:12: dataplane.workers: 0 is out of range "
	    "(1..128)");
	assert_int_equal(pol_check_errs.v[1].line, 3);
	assert_int_equal(pol_check_errs.v[2].line, 6);
	assert_int_equal(pol_check_errs.v[2].col, 13);
	assert_int_equal(pol_check_errs.v[3].col, 22);
	assert_int_equal(pol_check_errs.v[4].line, 9);
	assert_string_equal(pol_check_err(5),
	    "ng.yaml:11:13: vms[0].policy: unknown policy 'nope'");

	text = p = malloc(64 * 1024);
	assert_non_null(text);
	p += sprintf(p, "policies:\n  p:\n    allow:\n");
	for (int i = 0; i < 40; i++)
		p += sprintf(p, "      - \"*.tld%d\"\n", i);
	strcpy(p, VM1);
	assert_null(pol_check_load(text));
	free(text);
	assert_int_equal(pol_check_errs.n, POL_ERRS_MAX);
	assert_int_equal(pol_check_errs.dropped, 8);
	f = open_memstream(&out, &outlen);
	pol_errs_print(f, &pol_check_errs);
	fclose(f);
	assert_non_null(strstr(out, "ng.yaml:4:9: policies.p.allow[0]: \"*.tld0\""));
	assert_non_null(strstr(out, "\n... and 8 more errors\n"));
	free(out);
}

/*
 * Aliases let a small file describe a big tree: a list aliased from many places is walked
 * each time. The walk has a node budget; a cycle can't loop because the schema's depth
 * is fixed.
 */
static void
test_alias_budget(void **state)
{
	char *text = malloc(64 * 1024), *p = text;

	(void)state;
	assert_non_null(text);
	p += sprintf(p, "policies:\n  p0: {allow: &l [[]");
	for (int i = 1; i < 1000; i++)
		p += sprintf(p, ",[]");
	p += sprintf(p, "]}\n");
	for (int i = 1; i < 1100; i++)
		p += sprintf(p, "  p%d: {allow: *l}\n", i);
	strcpy(p, VM1);
	assert_null(pol_check_load(text));
	free(text);
	assert_int_equal(pol_check_errs.n, POL_ERRS_MAX);
	assert_non_null(strstr(pol_check_err(pol_check_errs.n - 1),
	    ": too many nodes to walk: aliases expanding without bound?"));
	pol_refused("policies: &p\n  p:\n    allow: []\n  q: *p\n" VM1, "ng.yaml:2:3: unknown "
	    "key 'p' in policies.q (expected allow, deny, ask, import, budgets)");
}

static void
test_files(void **state)
{
	(void)state;
	pol_errs_free(&pol_check_errs);
	assert_null(pol_load_file(POL_FIXTURES "/nonexistent.yaml", &pol_check_errs));
	assert_string_equal(pol_check_err(0), POL_FIXTURES "/nonexistent.yaml:1:1: cannot read: No "
	    "such file or directory");
	pol_errs_free(&pol_check_errs);
	assert_null(pol_load_file(POL_FIXTURES, &pol_check_errs));
	assert_string_equal(pol_check_err(0), POL_FIXTURES ":1:1: cannot read: Is a directory");
	pol_errs_free(&pol_check_errs);
	assert_null(pol_load_file("/dev/zero", &pol_check_errs));
	assert_string_equal(pol_check_err(0), "/dev/zero:1:1: cannot read: not a regular file");
	pol_errs_free(&pol_check_errs);
	assert_null(pol_load_file(POL_FIXTURES "/bad.yaml", &pol_check_errs));
	assert_int_equal(pol_check_errs.n, 9);
}

/* The control sockets' groups are looked up at load: a name, a number, or an error. */
static void
test_control_sockets(void **state)
{
	struct pol_config *cfg;

	(void)state;
	assert_non_null(cfg = pol_check_load(POLS VM1));
	assert_int_equal(cfg->control_socket_gid, POL_GROUP_NONE);
	assert_int_equal(cfg->control_socket_readonly_gid, POL_GROUP_NONE);
	assert_null(cfg->control_socket_readonly);	/* none unless asked for */
	pol_config_free(cfg);
	assert_non_null(cfg = pol_check_load(POLS VM1 "control_socket_group: root\n"
	    "control_socket_readonly: /run/namegate/namegate-ro.sock\n"
	    "control_socket_readonly_group: 4242\n"));
	assert_int_equal(cfg->control_socket_gid, 0);
	assert_string_equal(cfg->control_socket_readonly, "/run/namegate/namegate-ro.sock");
	assert_int_equal(cfg->control_socket_readonly_gid, 4242);
	pol_config_free(cfg);
	pol_refused(POLS VM1 "control_socket_group: no-such-group-ng\n", "ng.yaml:9:23: "
	    "control_socket_group: no group \"no-such-group-ng\" on this host");
	pol_refused(POLS VM1 "control_socket_group: 99999999999\n", "ng.yaml:9:23: "
	    "control_socket_group: no group \"99999999999\" on this host");
	pol_refused(POLS VM1 "control_socket_readonly: /r.sock\n"
	    "control_socket_readonly_group: ''\n", "ng.yaml:10:32: "
	    "control_socket_readonly_group: no group \"\" on this host");
	pol_refused(POLS VM1 "control_socket_readonly_group: root\n", "ng.yaml:9:32: "
	    "control_socket_readonly_group: there is no control_socket_readonly to give it to");
	pol_refused(POLS VM1 "control_socket: /run/ng.sock\ncontrol_socket_readonly: "
	    "/run/ng.sock\n", "ng.yaml:10:26: control_socket_readonly: \"/run/ng.sock\" is "
	    "control_socket too");
}

/*
 * fleet.cache is bounded so that FILE.minisig.tmp beside it fits a 4,096-byte path: the
 * longest cache is taken, one byte more refused.
 */
static void
test_fleet_cache_bound(void)
{
	static const char head[] = POLS VM1 "fleet:\n  name: prod\n  shard: s\n"
	    "  bundle_keys: [k.pub]\n  cache: /";
	char text[sizeof(head) + POL_FLEET_CACHE_MAX + 8], want[128];
	struct pol_config *cfg;
	size_t n = sizeof(head) - 1;

	memcpy(text, head, n);
	memset(text + n, 'c', POL_FLEET_CACHE_MAX - 1);
	strcpy(text + n + POL_FLEET_CACHE_MAX - 1, "\n");
	assert_non_null(cfg = pol_check_load(text));
	assert_int_equal(strlen(cfg->fleet_cache) + strlen(".minisig.tmp"), 4095);
	pol_config_free(cfg);
	strcpy(text + n + POL_FLEET_CACHE_MAX - 1, "c\n");
	assert_null(pol_check_load(text));
	snprintf(want, sizeof(want), "fleet.cache: a path of %d bytes, at most %d",
	    (int)POL_FLEET_CACHE_MAX + 1, (int)POL_FLEET_CACHE_MAX);
	if (strstr(pol_check_err(0), want) == NULL)
		fail_msg("got %s", pol_check_err(0));
}

/* fleet: none by default; given, its name, shard and keys are required and checked. */
static void
test_fleet(void **state)
{
	struct pol_config *cfg;

	(void)state;
	assert_non_null(cfg = pol_check_load(POLS VM1));
	assert_null(cfg->fleet_name);
	assert_int_equal(cfg->nfleet_bundle_keys, 0);
	assert_string_equal(cfg->fleet_cache, "/var/lib/namegate/bundle.yaml");
	pol_config_free(cfg);
	assert_non_null(cfg = pol_check_load(POLS VM1 "fleet:\n  name: prod\n  shard: rack-1.a\n"
	    "  bundle_keys: [/etc/namegate/fleet.pub, RWQPeeEQpua9EaPq]\n  cache: /c.yaml\n"));
	assert_string_equal(cfg->fleet_name, "prod");
	assert_string_equal(cfg->fleet_shard, "rack-1.a");
	assert_int_equal(cfg->nfleet_bundle_keys, 2);
	assert_string_equal(cfg->fleet_bundle_keys[1], "RWQPeeEQpua9EaPq");
	assert_string_equal(cfg->fleet_cache, "/c.yaml");
	pol_config_free(cfg);
	pol_refused(POLS VM1 "fleet:\n  name: prod\n  bundle_keys: [k.pub]\n",
	    "ng.yaml:10:3: fleet: shard is required");
	pol_refused(POLS VM1 "fleet:\n  name: prod\n  shard: s\n",
	    "ng.yaml:10:3: fleet: bundle_keys is required");
	pol_refused(POLS VM1 "fleet:\n  name: prod\n  shard: a/b\n  bundle_keys: [k.pub]\n",
	    "ng.yaml:11:10: fleet.shard: \"a/b\" is not a name (letters, digits, '.', '_', '-', "
	    "1 to 63)");
	pol_refused(POLS VM1 "fleet:\n  name: prod\n  shard: s\n  bundle_keys: []\n",
	    "ng.yaml:12:16: fleet.bundle_keys: 0 keys, 1 to 16");
	test_fleet_cache_bound();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_yaml_errors),
		cmocka_unit_test(test_schema_errors),
		cmocka_unit_test(test_max_vms),
		cmocka_unit_test(test_vm_errors),
		cmocka_unit_test(test_policy_errors),
		cmocka_unit_test(test_many_errors),
		cmocka_unit_test(test_alias_budget),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_control_sockets),
		cmocka_unit_test(test_fleet),
	};

	return cmocka_run_group_tests(tests, NULL, pol_check_teardown);
}
