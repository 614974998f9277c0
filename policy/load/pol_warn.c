/*
 * Broad-host warnings for --check: allow patterns that open a way out to anyone. Each
 * entry is probed through the compiled set as the dataplane would, so a wide wildcard
 * (*.githubusercontent.com, *.amazonaws.com) is caught by what it covers, not by its text.
 * Wildcard risks use a probe name below the risky suffix; a policy that names one bucket
 * or one account (mybucket.s3.amazonaws.com) is not warned about.
 */
#include <stdio.h>
#include <string.h>

#include "pol_load_int.h"

#define WHY_ACCOUNT	"anyone can open an account there and receive uploads: data can leave " \
			"to an attacker's account"
#define WHY_PASTE	"anonymous paste/file drop: anything posted is readable by whoever " \
			"knows the URL"
#define WHY_HOOK	"request collector/tunnel: anyone can create an endpoint that records " \
			"what is sent"
#define WHY_STORAGE	"cloud storage: any bucket/account, including an attacker's, is " \
			"reachable under this name"
#define WHY_DOH		"public DNS-over-HTTPS resolver: lookups bypass namegate's DNS filter " \
			"and can carry data in query names"

struct pol_risk {
	const char *probe;	/* a host to decide; wildcard risks use a made-up label */
	const char *shown;	/* what the warning names */
	const char *why;
};

static const struct pol_risk pol_risks[] = {
	{ "github.com", "github.com", WHY_ACCOUNT " (git push, gists, issues)" },
	{ "api.github.com", "api.github.com", WHY_ACCOUNT " (gists, repositories via the API)" },
	{ "uploads.github.com", "uploads.github.com", WHY_ACCOUNT " (release assets)" },
	{ "gist.github.com", "gist.github.com", WHY_ACCOUNT " (gists)" },
	{ "gist.githubusercontent.com", "gist.githubusercontent.com",
	    "serves anyone's gists: content any account publishes" },
	{ "gitlab.com", "gitlab.com", WHY_ACCOUNT },
	{ "bitbucket.org", "bitbucket.org", WHY_ACCOUNT },
	{ "codeberg.org", "codeberg.org", WHY_ACCOUNT },
	{ "huggingface.co", "huggingface.co", WHY_ACCOUNT " (models, datasets)" },
	{ "upload.pypi.org", "upload.pypi.org", WHY_ACCOUNT " (package uploads)" },
	{ "pastebin.com", "pastebin.com", WHY_PASTE },
	{ "paste.ee", "paste.ee", WHY_PASTE },
	{ "hastebin.com", "hastebin.com", WHY_PASTE },
	{ "dpaste.com", "dpaste.com", WHY_PASTE },
	{ "dpaste.org", "dpaste.org", WHY_PASTE },
	{ "paste.rs", "paste.rs", WHY_PASTE },
	{ "termbin.com", "termbin.com", WHY_PASTE },
	{ "ix.io", "ix.io", WHY_PASTE },
	{ "0x0.st", "0x0.st", WHY_PASTE },
	{ "transfer.sh", "transfer.sh", WHY_PASTE },
	{ "file.io", "file.io", WHY_PASTE },
	{ "temp.sh", "temp.sh", WHY_PASTE },
	{ "tmpfiles.org", "tmpfiles.org", WHY_PASTE },
	{ "catbox.moe", "catbox.moe", WHY_PASTE },
	{ "litterbox.catbox.moe", "litterbox.catbox.moe", WHY_PASTE },
	{ "webhook.site", "webhook.site", WHY_HOOK },
	{ "ng-probe.m.pipedream.net", "*.m.pipedream.net", WHY_HOOK },
	{ "ng-probe.ngrok.io", "*.ngrok.io", WHY_HOOK },
	{ "ng-probe.ngrok-free.app", "*.ngrok-free.app", WHY_HOOK },
	{ "ng-probe.trycloudflare.com", "*.trycloudflare.com", WHY_HOOK },
	{ "hooks.slack.com", "hooks.slack.com", WHY_HOOK },
	{ "discord.com", "discord.com", WHY_HOOK " (webhooks)" },
	{ "api.telegram.org", "api.telegram.org", WHY_HOOK " (bots)" },
	{ "s3.amazonaws.com", "s3.amazonaws.com", WHY_STORAGE " (path-style buckets)" },
	{ "ng-probe.s3.amazonaws.com", "*.s3.amazonaws.com", WHY_STORAGE },
	{ "ng-probe.s3.us-east-1.amazonaws.com", "*.s3.<region>.amazonaws.com", WHY_STORAGE },
	{ "ng-probe.blob.core.windows.net", "*.blob.core.windows.net", WHY_STORAGE },
	{ "storage.googleapis.com", "storage.googleapis.com", WHY_STORAGE },
	{ "ng-probe.storage.googleapis.com", "*.storage.googleapis.com", WHY_STORAGE },
	{ "ng-probe.r2.cloudflarestorage.com", "*.r2.cloudflarestorage.com", WHY_STORAGE },
	{ "ng-probe.digitaloceanspaces.com", "*.digitaloceanspaces.com", WHY_STORAGE },
	{ "content.dropboxapi.com", "content.dropboxapi.com", WHY_STORAGE },
	{ "dns.google", "dns.google", WHY_DOH },
	{ "dns.google.com", "dns.google.com", WHY_DOH },
	{ "cloudflare-dns.com", "cloudflare-dns.com", WHY_DOH },
	{ "mozilla.cloudflare-dns.com", "mozilla.cloudflare-dns.com", WHY_DOH },
	{ "one.one.one.one", "one.one.one.one", WHY_DOH },
	{ "dns.quad9.net", "dns.quad9.net", WHY_DOH },
	{ "doh.opendns.com", "doh.opendns.com", WHY_DOH },
	{ "dns.adguard-dns.com", "dns.adguard-dns.com", WHY_DOH },
	{ "doh.cleanbrowsing.org", "doh.cleanbrowsing.org", WHY_DOH },
	{ "dns.nextdns.io", "dns.nextdns.io", WHY_DOH },
	{ "doh.mullvad.net", "doh.mullvad.net", WHY_DOH },
	{ "1.1.1.1", "1.1.1.1", WHY_DOH },
	{ "1.0.0.1", "1.0.0.1", WHY_DOH },
	{ "8.8.8.8", "8.8.8.8", WHY_DOH },
	{ "8.8.4.4", "8.8.4.4", WHY_DOH },
	{ "9.9.9.9", "9.9.9.9", WHY_DOH },
	{ "149.112.112.112", "149.112.112.112", WHY_DOH },
	{ "208.67.222.222", "208.67.222.222", WHY_DOH },
	{ "2606:4700:4700::1111", "2606:4700:4700::1111", WHY_DOH },
	{ "2001:4860:4860::8888", "2001:4860:4860::8888", WHY_DOH },
	{ "2620:fe::fe", "2620:fe::fe", WHY_DOH },
};

size_t
pol_warn_scan(const struct pol_config *cfg, pol_warn_fn *fn, void *arg)
{
	size_t n = 0;

	for (uint32_t pol = 0; pol < pol_set_policies(cfg->set); pol++) {
		for (size_t i = 0; i < sizeof(pol_risks) / sizeof(pol_risks[0]); i++) {
			const struct pol_risk *r = &pol_risks[i];
			const struct pol_rule *rule;
			struct pol_pattern p;
			enum pol_verdict v;
			char why[POL_WHY_MAX];
			bool has_port;

			if (pol_host_parse(r->probe, &p, &has_port, why, sizeof(why)) < 0)
				continue;
			/* Any port: github.com:22 lets a push out as well as :443. */
			if (p.kind == POL_NAME_EXACT)
				v = pol_match_name(cfg->set, pol, p.name, strlen(p.name),
				    POL_PROTO_ANY, 0, &rule);
			else
				v = pol_match_addr(cfg->set, pol, p.addr,
				    p.kind == POL_ADDR4 ? 4 : 16, POL_PROTO_ANY, 0, &rule);
			if (v != POL_ALLOW)
				continue;
			fn(rule, r->shown, r->why, arg);
			n++;
		}
	}
	return n;
}

static void
pol_warn_line(const struct pol_rule *r, const char *host, const char *why, void *arg)
{
	FILE *out = arg;

	fprintf(out, "%s:%u:%u: warning: ", r->file, r->line, r->col);
	pol_rule_where(out, r);
	fprintf(out, " allows %s: %s\n", host, why);
}

/*
 * VMs on one VLAN are told apart by MAC and IP alone, which a VM writes itself: a bump in
 * the wire cannot see one take another's whole identity on a shared segment. Warned once
 * per VLAN, at its second VM.
 */
size_t
pol_warn_vlans(const struct pol_config *cfg, FILE *out)
{
	size_t n = 0;

	for (size_t i = 0; i < cfg->nvms; i++) {
		const struct pol_vm *v = &cfg->vms[i];
		size_t first = i, seen = 0;

		for (size_t j = 0; j < i; j++)
			if (cfg->vms[j].id.vlan == v->id.vlan && seen++ == 0)
				first = j;
		if (seen != 1)
			continue;
		fprintf(out, "%s:%u:%u: warning: vms %s and %s share VLAN %u: the segment must "
		    "keep one from sending as the other (one VLAN per VM, or the hypervisor's "
		    "anti-spoofing, such as libvirt's clean-traffic filter)\n", cfg->path,
		    v->line, v->col, cfg->vms[first].name, v->name, v->id.vlan);
		n++;
	}
	return n;
}

/*
 * Is some of what r allows (a wildcard or an address range) counted by a budget of policy?
 * Probed as the dataplane matches: a name below the wildcard, the range's first address.
 */
static bool
pol_warn_budgeted(const struct pol_config *cfg, uint32_t policy, const struct pol_pattern *p)
{
	char probe[POL_NAME_MAX + 16];

	if (p->kind == POL_NAME_WILD) {
		snprintf(probe, sizeof(probe), "ng-probe.%s", p->name);
		return pol_match_name(cfg->budget_set, policy, probe, strlen(probe), POL_PROTO_ANY,
		    0, NULL) == POL_ALLOW;
	}
	return pol_match_addr(cfg->budget_set, policy, p->addr, p->kind == POL_ADDR4 ? 4 : 16,
	    POL_PROTO_ANY, 0, NULL) == POL_ALLOW;
}

size_t
pol_warn_budgets(const struct pol_config *cfg, FILE *out)
{
	size_t n = 0;

	for (uint32_t i = 0; i < pol_set_rules(cfg->set); i++) {
		const struct pol_rule *r = pol_set_rule(cfg->set, i);
		struct pol_pattern p;
		char why[POL_WHY_MAX];
		int policy;

		if (r->list != POL_LIST_ALLOW ||
		    pol_pattern_parse(r->pattern, &p, why, sizeof(why)) < 0 ||
		    (policy = pol_set_policy_find(cfg->set, r->policy)) < 0)
			continue;
		/* one name or one address is a host the operator chose; these are many */
		if (p.kind == POL_NAME_EXACT || (p.kind == POL_ADDR4 && p.plen == 32) ||
		    (p.kind == POL_ADDR6 && p.plen == 128) ||
		    pol_warn_budgeted(cfg, (uint32_t)policy, &p))
			continue;
		fprintf(out, "%s:%u:%u: warning: ", r->file, r->line, r->col);
		pol_rule_where(out, r);
		fprintf(out, " allows many hosts without an egress budget: what they receive is "
		    "unbounded (no entry of policies.%s.budgets counts it)\n", r->policy);
		n++;
	}
	return n;
}

size_t
pol_warn_print(const struct pol_config *cfg, FILE *out)
{
	return pol_warn_scan(cfg, pol_warn_line, out) + pol_warn_vlans(cfg, out) +
	    pol_warn_budgets(cfg, out);
}
