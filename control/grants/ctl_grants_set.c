/*
 * The overlay: cfg's policies as compiled, plus one policy per VM with live grants (its
 * configured policy's patterns and its grants'). Every VM keeps its own policy: two VMs
 * that share "python" never share a grant. Rebuilt whole on every change, which costs a
 * copy of the patterns: grants change at an operator's pace, lookups stay one probe per
 * label. deny still beats allow: a grant only adds allow patterns to the same policy.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_grants_int.h"

#define CTL_RULE_KEY_MAX	(CTL_GRANT_REASON_MAX + 96)

/* "grant 3 until 14:05Z, "why"": the day too when it is not within the next 24 hours. */
static void
ctl_overlay_key(const struct ctl_grant *gr, int64_t now, char *buf, size_t len)
{
	char t[32];
	int n;

	ctl_grant_time(gr->expires, t, sizeof(t));	/* 2026-12-01T14:05:00Z */
	if (t[17] == '0' && t[18] == '0')
		memmove(t + 16, t + 19, 2);		/* 2026-12-01T14:05Z */
	n = snprintf(buf, len, "grant %llu until %s", (unsigned long long)gr->id,
	    gr->expires - now < 86400 ? t + 11 : t);
	if (gr->reason[0] != '\0' && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ", \"%s\"", gr->reason);
}

/* The VM's policy and its live grants, as policy index to. */
static int
ctl_overlay_vm(struct pol_builder *b, const struct ctl_grants *g, const struct pol_config *cfg,
    const struct pol_vm *vm, int64_t now)
{
	char name[POL_NAME_MAX + POL_VM_NAME_MAX + 32], key[CTL_RULE_KEY_MAX];
	int to, rc;

	snprintf(name, sizeof(name), "%s (with %s's grants)",
	    pol_set_policy_name(cfg->set, vm->policy), vm->name);
	if ((to = pol_builder_policy(b, name)) < 0)
		return to;
	if ((rc = pol_builder_copy_policy(b, (uint32_t)to, cfg->set, vm->policy)) < 0)
		return rc;
	for (size_t i = 0; i < g->n; i++) {
		const struct ctl_grant *gr = &g->v[i];
		struct pol_rule origin = {
			.key = key, .pattern = gr->host, .file = g->path,
			.index = (uint32_t)gr->id, .list = POL_LIST_ALLOW, .grant = true,
		};

		if (gr->expires <= now || strcmp(gr->vm, vm->name) != 0)
			continue;
		ctl_overlay_key(gr, now, key, sizeof(key));
		if ((rc = pol_builder_add(b, (uint32_t)to, &gr->pattern, &origin)) < 0)
			return rc;
	}
	return to;
}

int
ctl_overlay_build(const struct ctl_grants *g, const struct pol_config *cfg, int64_t now,
    struct ctl_overlay *ov)
{
	struct pol_builder *b = NULL;
	uint32_t npol = pol_set_policies(cfg->set);
	bool any = false;
	int rc = -ENOMEM;

	memset(ov, 0, sizeof(*ov));
	ov->view = *cfg;
	for (size_t i = 0; g != NULL && i < g->n; i++)
		any = any || (g->v[i].expires > now && pol_config_vm(cfg, g->v[i].vm) != NULL);
	if (!any)
		return 0;		/* the view is cfg itself */
	if ((ov->vms = calloc(cfg->nvms + 1, sizeof(ov->vms[0]))) == NULL ||
	    (b = pol_builder_new()) == NULL)
		goto fail;
	/* cfg's policies first, at the same indices */
	for (uint32_t p = 0; p < npol; p++) {
		if ((rc = pol_builder_policy(b, pol_set_policy_name(cfg->set, p))) < 0 ||
		    (rc = pol_builder_copy_policy(b, p, cfg->set, p)) < 0)
			goto fail;
	}
	for (size_t i = 0; i < cfg->nvms; i++) {
		ov->vms[i] = cfg->vms[i];
		if (ctl_grants_count_vm(g, cfg->vms[i].name) == 0)
			continue;
		if ((rc = ctl_overlay_vm(b, g, cfg, &cfg->vms[i], now)) < 0)
			goto fail;
		ov->vms[i].policy = (uint32_t)rc;
	}
	if ((ov->set = pol_builder_build(b)) == NULL) {
		rc = -errno;
		goto fail;
	}
	pol_builder_free(b);
	ov->view.set = ov->set;
	ov->view.vms = ov->vms;
	return 0;
fail:
	pol_builder_free(b);
	free(ov->vms);
	memset(ov, 0, sizeof(*ov));
	return rc < 0 ? rc : -ENOMEM;
}

void
ctl_overlay_free(struct ctl_overlay *ov)
{
	pol_set_free(ov->set);
	free(ov->vms);
	memset(ov, 0, sizeof(*ov));
}
