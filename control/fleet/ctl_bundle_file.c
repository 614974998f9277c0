/*
 * Bundles on disk: the configured keys (inline or minisign.pub files), the cached bundle's
 * serial, and namegate --check --bundle FILE.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl_bundle.h"

#define CB_PATH_MAX	4096

int
ctl_bundle_read(const char *path, size_t max, char **buf, size_t *len)
{
	struct stat st;
	size_t got = 0;
	char *b;
	int fd, err;

	*buf = NULL;
	*len = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		err = errno;
		close(fd);
		return -err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return -EFBIG;
	}
	/* one more byte than the file had: a file that grew past max is seen to */
	if ((b = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n = read(fd, b + got, (size_t)st.st_size + 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			free(b);
			close(fd);
			return -err;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > (size_t)st.st_size) {	/* it grew while read */
			free(b);
			close(fd);
			return -EAGAIN;
		}
	}
	close(fd);
	*buf = b;
	*len = got;
	return 0;
}

/*
 * A relative key path is the configuration's neighbour, as import: paths are. 0, or
 * -ENAMETOOLONG: a path cut short would name another file.
 */
static int
cb_resolve(const struct pol_config *cfg, const char *p, char *out, size_t len)
{
	const char *slash = cfg->path != NULL ? strrchr(cfg->path, '/') : NULL;
	int n;

	if (p[0] == '/' || slash == NULL)
		n = snprintf(out, len, "%s", p);
	else
		n = snprintf(out, len, "%.*s/%s", (int)(slash - cfg->path), cfg->path, p);
	return n >= 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

int
ctl_bundle_keys_load(const struct pol_config *cfg, struct ctl_bundle_key *keys, char *why,
    size_t whylen)
{
	for (size_t i = 0; i < cfg->nfleet_bundle_keys && i < POL_FLEET_KEYS_MAX; i++) {
		const char *s = cfg->fleet_bundle_keys[i];
		char path[CB_PATH_MAX], kwhy[160], fwhy[160];
		size_t len;
		char *buf;
		int rc;

		if (ctl_bundle_key_parse(s, strlen(s), &keys[i], kwhy, sizeof(kwhy)) == 0)
			continue;
		if ((rc = cb_resolve(cfg, s, path, sizeof(path))) != 0 ||
		    (rc = ctl_bundle_read(path, CTL_BUNDLE_SIG_FILE_MAX, &buf, &len)) != 0) {
			snprintf(why, whylen, "fleet.bundle_keys[%zu]: \"%s\" is neither a key "
			    "(%s) nor a file (%s)", i, s, kwhy, strerror(-rc));
			return -1;
		}
		rc = ctl_bundle_key_parse(buf, len, &keys[i], fwhy, sizeof(fwhy));
		free(buf);
		if (rc != 0) {
			snprintf(why, whylen, "fleet.bundle_keys[%zu]: %s: %s", i, path, fwhy);
			return -1;
		}
	}
	return 0;
}

/* FILE and FILE.minisig; 0, or -errno with which one failed in why. */
static int
cb_read_pair(const char *path, char **file, size_t *flen, char **sig, size_t *slen, char *why,
    size_t whylen)
{
	char sigpath[CB_PATH_MAX];
	int rc, n;

	*sig = NULL;
	if ((rc = ctl_bundle_read(path, CTL_BUNDLE_FILE_MAX, file, flen)) != 0) {
		snprintf(why, whylen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	/* cut short, FILE.minisig would name another file */
	n = snprintf(sigpath, sizeof(sigpath), "%s.minisig", path);
	rc = n >= 0 && (size_t)n < sizeof(sigpath) ? 0 : -ENAMETOOLONG;
	if (rc != 0 || (rc = ctl_bundle_read(sigpath, CTL_BUNDLE_SIG_FILE_MAX, sig, slen)) != 0) {
		/* the path is the caller's: the reason may be cut short, never the name read */
		if (snprintf(why, whylen, "%s.minisig: %s", path, strerror(-rc)) < 0)
			why[0] = '\0';
		free(*file);
		*file = NULL;
		return rc;
	}
	return 0;
}

int
ctl_bundle_cache_serial(const struct pol_config *cfg, const struct ctl_bundle_key *keys,
    size_t nkeys, uint64_t *serial, char *why, size_t whylen)
{
	struct ctl_bundle_meta meta;
	char *file, *sig, vwhy[CTL_BUNDLE_REASON_MAX];
	size_t flen, slen;
	int rc;

	if (cfg->fleet_cache == NULL || access(cfg->fleet_cache, F_OK) != 0)
		return 0;
	if (cb_read_pair(cfg->fleet_cache, &file, &flen, &sig, &slen, why, whylen) != 0)
		return -1;
	rc = ctl_bundle_verify(keys, nkeys, file, flen, sig, slen, &meta, vwhy, sizeof(vwhy));
	free(file);
	free(sig);
	if (rc != 0) {
		snprintf(why, whylen, "%s: %s", cfg->fleet_cache, vwhy);
		return -1;
	}
	*serial = meta.serial;
	return 1;
}

int
ctl_bundle_check_file(const struct pol_config *cfg, const char *path, time_t now, FILE *out)
{
	struct ctl_bundle_key keys[POL_FLEET_KEYS_MAX];
	struct ctl_bundle_want want = { .keys = keys, .nkeys = cfg->nfleet_bundle_keys,
		.fleet = cfg->fleet_name, .shard = cfg->fleet_shard, .now = now };
	struct ctl_bundle_result res;
	char why[CTL_BUNDLE_REASON_MAX], when[32];
	char *file, *sig;
	size_t flen, slen;
	int rc;

	if (cfg->fleet_name == NULL) {
		fprintf(out, "refused: %s has no fleet: (name, shard, bundle_keys)\n", cfg->path);
		return 1;
	}
	if (ctl_bundle_keys_load(cfg, keys, why, sizeof(why)) != 0) {
		fprintf(out, "refused: %s\n", why);
		return 1;
	}
	rc = ctl_bundle_cache_serial(cfg, keys, want.nkeys, &want.running, why, sizeof(why));
	if (rc < 0)	/* the daemon would not start from it either */
		fprintf(out, "note: the cache does not count: %s\n", why);
	want.have_running = rc > 0;
	if (cb_read_pair(path, &file, &flen, &sig, &slen, why, sizeof(why)) != 0) {
		fprintf(out, "refused: %s\n", why);
		return 1;
	}
	ctl_bundle_judge(&want, file, flen, path, sig, slen, false, &res);
	free(file);
	free(sig);
	if (res.verdict != CTL_BUNDLE_ACCEPTED) {
		fprintf(out, "refused: %s\n", res.reason);
		return 1;
	}
	ctl_bundle_time_str(res.meta.not_after, when, sizeof(when));
	fprintf(out, "accepted: fleet %s shard %s serial %llu, valid until %s", res.meta.fleet,
	    res.meta.shard, (unsigned long long)res.meta.serial, when);
	if (want.have_running)
		fprintf(out, " (the cache's is %llu)\n", (unsigned long long)want.running);
	else
		fputs(" (no cached bundle: any serial)\n", out);
	return 0;
}
