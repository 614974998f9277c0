/*
 * Offline explanations: namegatectl check (one decision and the rule behind it) and the
 * namegate --check summary. Both read the compiled set through the same lookups the
 * dataplane calls, so what they print is what the fast path decides.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "pol_load_int.h"

/*
 * policies.dev.allow[0] "pypi.org", or for an imported pattern
 * policies.sb.import sandbox.network.allowedDomains[0] "pypi.org".
 */
void
pol_rule_where(FILE *out, const struct pol_rule *r)
{
	if (r->grant)
		fputs(r->key, out);
	else if (r->imported)
		fprintf(out, "policies.%s.import %s[%u] \"%s\"", r->policy, r->key, r->index,
		    r->pattern);
	else
		fprintf(out, "%s[%u] \"%s\"", r->key, r->index, r->pattern);
}

/* The host as check shows it: canonical name or address, then the port if given. */
static void
pol_host_str(const struct pol_pattern *p, bool has_port, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (p->kind == POL_NAME_EXACT) {
		snprintf(buf, len, has_port ? "%s:%u" : "%s", p->name, p->port);
		return;
	}
	inet_ntop(p->kind == POL_ADDR4 ? AF_INET : AF_INET6, p->addr, a, sizeof(a));
	if (!has_port)
		snprintf(buf, len, "%s", a);
	else if (p->kind == POL_ADDR4)
		snprintf(buf, len, "%s:%u", a, p->port);
	else
		snprintf(buf, len, "[%s]:%u", a, p->port);
}

int
pol_explain(const struct pol_config *cfg, const char *vmname, const char *host, FILE *out,
    FILE *err)
{
	char why[POL_WHY_MAX], shown[POL_NAME_MAX + 64];
	const struct pol_rule *rule = NULL;
	const struct pol_vm *vm;
	struct pol_pattern p;
	enum pol_verdict v;
	uint8_t proto;
	bool has_port;

	if ((vm = pol_config_vm(cfg, vmname)) == NULL) {
		fprintf(err, "unknown VM '%s' in %s\n", vmname, cfg->path);
		return 2;
	}
	if (pol_host_parse(host, &p, &has_port, why, sizeof(why)) < 0) {
		fprintf(err, "bad host \"%s\": %s\n", host, why);
		return 2;
	}
	/* Without a port: may the name be resolved at all (SPEC s4 step 2). */
	proto = has_port ? POL_PROTO_TCP : POL_PROTO_ANY;
	if (p.kind == POL_NAME_EXACT)
		v = pol_match_name(cfg->set, vm->policy, p.name, strlen(p.name), proto, p.port,
		    &rule);
	else
		v = pol_match_addr(cfg->set, vm->policy, p.addr, p.kind == POL_ADDR4 ? 4 : 16,
		    proto, p.port, &rule);
	pol_host_str(&p, has_port, shown, sizeof(shown));
	/* nothing decides: an ask pattern may leave it to the operator (until approved, block) */
	if (v == POL_NO_MATCH && p.kind == POL_NAME_EXACT && cfg->ask != NULL &&
	    pol_match_name(cfg->ask, vm->ask_policy, p.name, strlen(p.name), POL_PROTO_ANY, 0,
	    &rule) == POL_ALLOW) {
		fprintf(out, "ask %s for %s: ", shown, vm->name);
		pol_rule_where(out, rule);
		fprintf(out, " (%s:%u): its DNS query waits for namegatectl approve, at most %us "
		    "(approval.timeout)%s\n", rule->file, rule->line, cfg->approval_timeout,
		    vm->mode == POL_MODE_AUDIT ? "; in audit mode it never waits" : "");
		return 1;
	}
	fprintf(out, "%s %s for %s", v == POL_ALLOW ? "allow" : "block", shown, vm->name);
	if (rule != NULL && rule->grant) {
		/* "by grant 3 until 14:05Z, "why"": an operator's decision, not a file's line */
		fprintf(out, " by %s", rule->key);
	} else if (rule != NULL) {
		fputs(": ", out);
		pol_rule_where(out, rule);
		fprintf(out, " (%s:%u)", rule->file, rule->line);
	} else {
		fprintf(out, ": no pattern of policy '%s' matches (default deny)",
		    pol_set_policy_name(cfg->set, vm->policy));
	}
	if (v == POL_ALLOW && !has_port && rule != NULL && rule->kind == POL_NAME_WILD) {
		char per[32];
		size_t n = strlen(p.name);

		/* resolving it spends the suffix's name budget: say so where operators look */
		pol_duration_str(cfg->dns_names_per, per, sizeof(per));
		if (cfg->dns_names_count == 0)
			fputs("; no budget of new names under the wildcard (dns.max_names_per_suffix "
			    "count 0)", out);
		else if (rule->name_len < n)
			fprintf(out, "; at most %u new names under %s per %s "
			    "(dns.max_names_per_suffix)", cfg->dns_names_count,
			    p.name + n - rule->name_len, per);
	}
	if (v == POL_ALLOW)
		pol_budget_explain(cfg, vm->policy, &p, out);
	if (v != POL_ALLOW && vm->mode == POL_MODE_AUDIT)
		fprintf(out, "; %s is in audit mode: counted as would_block, traffic passes",
		    vm->name);
	fputc('\n', out);
	return v == POL_ALLOW ? 0 : 1;
}

static void
pol_addr_print(FILE *out, const struct pol_addr *a)
{
	char s[INET6_ADDRSTRLEN];

	inet_ntop(a->family == 4 ? AF_INET : AF_INET6, a->a, s, sizeof(s));
	fputs(s, out);
}

void
pol_config_summary(const struct pol_config *cfg, FILE *out)
{
	uint32_t npol = pol_set_policies(cfg->set), total = 0;
	char per[32], names[64];

	for (uint32_t i = 0; i < npol; i++) {
		struct pol_policy_stats st = pol_set_policy_stats(cfg->set, i);

		total += st.allow + st.deny;
	}
	fprintf(out, "%s: OK: %zu VM%s, %u polic%s, %u pattern%s\n", cfg->path, cfg->nvms,
	    cfg->nvms == 1 ? "" : "s", npol, npol == 1 ? "y" : "ies", total,
	    total == 1 ? "" : "s");
	fprintf(out, "dataplane: vm_port %s, uplink_port %s, %u worker%s, max_flows %u "
	    "(%u per VM), max_bindings %u\n", cfg->vm_port, cfg->uplink_port, cfg->workers,
	    cfg->workers == 1 ? "" : "s", cfg->max_flows, cfg->max_flows_per_vm,
	    cfg->max_bindings);
	fputs("resolvers:", out);
	for (size_t i = 0; i < cfg->nresolvers; i++) {
		fputc(' ', out);
		pol_addr_print(out, &cfg->resolvers[i]);
	}
	fputs(cfg->nresolvers == 0 ? " none\ntls_ports:" : "\ntls_ports:", out);
	for (size_t i = 0; i < cfg->ntls_ports; i++)
		fprintf(out, " %u", cfg->tls_ports[i]);
	pol_duration_str(cfg->dns_names_per, per, sizeof(per));
	if (cfg->dns_names_count == 0)
		snprintf(names, sizeof(names), "off");
	else
		snprintf(names, sizeof(names), "%u per %s", cfg->dns_names_count, per);
	fprintf(out, "%s\nsni_binding %s, quic %s, on_block %s, dns ttl %u..%u, blocked "
	    "rcode %s, ech %s, new names per wildcard suffix %s, slow path %s (table bridge "
	    "%s)\n", cfg->ntls_ports == 0 ? " none" : "",
	    cfg->sni_binding == POL_SNI_STRICT ? "strict" : "loose",
	    cfg->quic == POL_QUIC_BLOCK ? "block" : "inspect",
	    cfg->on_block == POL_ON_BLOCK_RESET ? "reset" : "drop", cfg->dns_min_ttl,
	    cfg->dns_max_ttl, cfg->dns_blocked_rcode == POL_RCODE_REFUSED ? "refused" :
	    "nxdomain", cfg->dns_ech == POL_ECH_STRIP ? "strip" : "pass", names,
	    cfg->slow_path_enabled ? "on" : "off", cfg->nft_table);
	for (uint32_t i = 0; i < npol; i++) {
		struct pol_policy_stats st = pol_set_policy_stats(cfg->set, i);

		fprintf(out, "policy %s: %u allow, %u deny (%u name%s, %u wildcard%s, "
		    "%u address%s)", pol_set_policy_name(cfg->set, i), st.allow, st.deny,
		    st.names, st.names == 1 ? "" : "s", st.wildcards, st.wildcards == 1 ? "" : "s",
		    st.addrs, st.addrs == 1 ? "" : "es");
		if (cfg->ask != NULL && pol_set_policy_stats(cfg->ask, i).allow > 0)
			fprintf(out, ", %u ask (approval.timeout %us)",
			    pol_set_policy_stats(cfg->ask, i).allow, cfg->approval_timeout);
		if (cfg->imports != NULL && cfg->imports[i] != NULL)
			fprintf(out, ", imports %s", cfg->imports[i]);
		if (st.allow == 0)
			fputs(": offline, DNS answers are refused", out);
		fputc('\n', out);
	}
	for (size_t i = 0; i < cfg->nvms; i++) {
		const struct pol_vm *vm = &cfg->vms[i];

		fprintf(out, "vm %s: mac %02x:%02x:%02x:%02x:%02x:%02x vlan %u", vm->name,
		    vm->id.mac[0], vm->id.mac[1], vm->id.mac[2], vm->id.mac[3], vm->id.mac[4], vm->id.mac[5],
		    vm->id.vlan);
		if (vm->id.has4) {
			struct pol_addr a = { .family = 4 };

			memcpy(a.a, vm->id.ip4, 4);
			fputs(" ipv4 ", out);
			pol_addr_print(out, &a);
		}
		if (vm->id.has6) {
			struct pol_addr a = { .family = 6 };

			memcpy(a.a, vm->id.ip6, 16);
			fputs(" ipv6 ", out);
			pol_addr_print(out, &a);
		}
		fprintf(out, " policy %s (%s)\n", pol_set_policy_name(cfg->set, vm->policy),
		    vm->mode == POL_MODE_AUDIT ? "audit" : "enforce");
	}
}
