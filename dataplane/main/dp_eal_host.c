/*
 * The host's hugepages as EAL will find them: see dp_eal_host.h. Read with stdio and EAL's
 * size parser, with no EAL running, so that --check (no root) judges what the daemon's
 * start will find.
 */
#include <ctype.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_common.h>

#include "dp_eal_host.h"

#define DP_MIB		(UINT64_C(1024) * 1024)
#define DP_EAL_SYS	"/sys/kernel/mm/hugepages"

/* One number from file root/dir/name, or 0 when it cannot be read. */
static uint64_t
dp_eal_host_number(const char *root, const char *dir, const char *name)
{
	char path[512];
	unsigned long long v = 0;
	FILE *f;

	if (snprintf(path, sizeof(path), "%s%s/%s/%s", root, DP_EAL_SYS, dir, name) >=
	    (int)sizeof(path) || (f = fopen(path, "r")) == NULL)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/*
 * A size as EAL reads it, with EAL's own parser: a "hugepages-2048kB" directory's after
 * its prefix, a mount's pagesize= ("2M", "1G"). 0 if unreadable.
 */
static uint64_t
dp_eal_host_size(const char *s)
{
	return isdigit((unsigned char)*s) ? rte_str_to_size(s) : 0;
}

/* The default page size (/proc/meminfo's Hugepagesize), bytes; 0 if none is told. */
static uint64_t
dp_eal_host_default(const char *root)
{
	char path[512], line[128];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/meminfo", root);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Hugepagesize: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb <= UINT64_MAX / 1024 ? kb * 1024 : 0;
}

static struct dp_eal_host_size *
dp_eal_host_find(struct dp_eal_host *h, uint64_t bytes)
{
	for (unsigned int i = 0; i < h->nsizes; i++)
		if (h->size[i].bytes == bytes)
			return &h->size[i];
	return NULL;
}

/* Mark the sizes root's hugetlbfs mounts serve: each mount's pagesize=, else the default. */
static void
dp_eal_host_mounts(struct dp_eal_host *h, const char *root)
{
	uint64_t fallback = dp_eal_host_default(root);
	char path[512], line[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/mounts", root);
	if ((f = fopen(path, "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		char dev[256], dir[512], type[64], opts[512];
		struct dp_eal_host_size *s;
		const char *ps;
		uint64_t bytes;

		if (sscanf(line, "%255s %511s %63s %511s", dev, dir, type, opts) != 4 ||
		    strcmp(type, "hugetlbfs") != 0)
			continue;
		ps = strstr(opts, "pagesize=");
		bytes = ps != NULL ? dp_eal_host_size(ps + strlen("pagesize=")) : fallback;
		if ((s = dp_eal_host_find(h, bytes)) != NULL)
			s->mounted = true;
	}
	fclose(f);
}

void
dp_eal_host_read(struct dp_eal_host *h, const char *root)
{
	char path[512];
	struct dirent *d;
	DIR *dir;

	memset(h, 0, sizeof(*h));
	snprintf(path, sizeof(path), "%s%s", root, DP_EAL_SYS);
	if ((dir = opendir(path)) == NULL)
		return;
	while ((d = readdir(dir)) != NULL && h->nsizes < DP_EAL_HOST_SIZES) {
		uint64_t bytes = strncmp(d->d_name, "hugepages-", 10) == 0 ?
		    dp_eal_host_size(d->d_name + 10) : 0;
		struct dp_eal_host_size *s = &h->size[h->nsizes];
		uint64_t free_pages, resv;

		if (bytes == 0)
			continue;
		s->bytes = bytes;
		s->reserved = dp_eal_host_number(root, d->d_name, "nr_hugepages");
		free_pages = dp_eal_host_number(root, d->d_name, "free_hugepages");
		resv = dp_eal_host_number(root, d->d_name, "resv_hugepages");
		s->free = free_pages > resv ? free_pages - resv : 0;
		h->nsizes++;
	}
	closedir(dir);
	dp_eal_host_mounts(h, root);
}

uint64_t
dp_eal_host_reserved(const struct dp_eal_host *h)
{
	uint64_t sum = 0;

	for (unsigned int i = 0; i < h->nsizes; i++)
		sum += h->size[i].reserved * h->size[i].bytes;
	return sum;
}

uint64_t
dp_eal_host_usable(const struct dp_eal_host *h)
{
	uint64_t sum = 0;

	for (unsigned int i = 0; i < h->nsizes; i++)
		if (h->size[i].mounted)
			sum += h->size[i].free * h->size[i].bytes;
	return sum;
}

const char *
dp_eal_host_short(const struct dp_eal_host *h, uint64_t need, char *why, size_t cap)
{
	uint64_t reserved = dp_eal_host_reserved(h), usable = dp_eal_host_usable(h);
	bool mounted = false;

	for (unsigned int i = 0; i < h->nsizes; i++)
		mounted |= h->size[i].reserved != 0 && h->size[i].mounted;
	if (reserved == 0)
		snprintf(why, cap, "this host has no hugepages reserved");
	else if (!mounted)
		snprintf(why, cap, "this host has %" PRIu64 " MiB of hugepages reserved and no "
		    "hugetlbfs mount for them", reserved / DP_MIB);
	else if (usable < need)
		snprintf(why, cap, "this host has %" PRIu64 " MiB of hugepages free in hugetlbfs "
		    "mounts and EAL needs %" PRIu64 " MiB", usable / DP_MIB,
		    (need + DP_MIB - 1) / DP_MIB);
	else
		return NULL;
	return why;
}
