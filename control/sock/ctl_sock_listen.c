/*
 * The control socket's listeners: each a Unix socket at its path (its directories made,
 * a live socket there never taken over, a stale one replaced), owned by root and a group,
 * and removed at close only while it is still the file this process made. The clients
 * and the poll loop are ctl_sock.c's.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl_base.h"
#include "ctl_sock_int.h"

/* mkdir -p for the directory part of path; only the directories we create get mode. */
static int
ctl_mkdir_parents(const char *path, mode_t mode)
{
	char *dir, *p;
	struct stat st;
	int rc = 0;

	if ((dir = strdup(path)) == NULL)
		return -errno;
	if ((p = strrchr(dir, '/')) == NULL || p == dir)
		goto out;
	*p = '\0';
	if (stat(dir, &st) == 0) {
		rc = S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
		goto out;
	}
	for (p = dir + 1; ; p++) {
		bool last = *p == '\0';

		if (*p != '/' && !last)
			continue;
		*p = '\0';
		if (mkdir(dir, mode) == 0) {
			/* mkdir honours the umask; the mode is the contract. */
			if (chmod(dir, mode) < 0) {
				rc = -errno;
				goto out;
			}
		} else if (errno != EEXIST) {
			rc = -errno;
			goto out;
		}
		if (last)
			break;
		*p = '/';
	}
out:
	free(dir);
	return rc;
}

static int
ctl_sun_set(struct sockaddr_un *sun, const char *path)
{
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(sun->sun_path))
		return -ENAMETOOLONG;
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path, path, n + 1);
	return 0;
}

/*
 * Is a daemon listening on path? A refused connection means a socket left by one that
 * died; a full backlog (EAGAIN) still means someone is there.
 */
static bool
ctl_sock_live(const struct sockaddr_un *sun)
{
	int fd, rc;

	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
		return false;
	rc = connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	rc = rc == 0 || errno == EAGAIN || errno == EINPROGRESS;
	close(fd);
	return rc;
}

/*
 * Binds l to path: under a temporary name, chmod'ed (and chown'ed to gid), then renamed
 * over path, so the socket never appears at path with the umask's mode or without its
 * group, and a stale socket is replaced atomically. 0, or -errno with the reason in err.
 */
static int
ctl_listener_open(struct ctl_listener *l, const char *path, uint32_t gid, char *err,
    size_t errlen)
{
	struct sockaddr_un sun, tmp_sun;
	char tmp[sizeof(sun.sun_path) + 32];
	bool bound = false;
	struct stat st;
	int rc;

	*l = (struct ctl_listener){ .fd = -1 };
	snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)getpid());
	if (ctl_sun_set(&sun, path) < 0 || ctl_sun_set(&tmp_sun, tmp) < 0) {
		ctl_err(err, errlen, "%s: path too long for a UNIX socket", path);
		return -ENAMETOOLONG;
	}
	if ((l->path = strdup(path)) == NULL) {
		rc = -errno;
		ctl_err(err, errlen, "%s: %s", path, strerror(-rc));
		goto fail;
	}
	if ((rc = ctl_mkdir_parents(path, CTL_SOCK_DIR_MODE)) < 0) {
		ctl_err(err, errlen, "%s: cannot create its directory: %s", path, strerror(-rc));
		goto fail;
	}
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			rc = -EEXIST;
			ctl_err(err, errlen, "%s: exists and is not a socket", path);
			goto fail;
		}
		if (ctl_sock_live(&sun)) {
			rc = -EADDRINUSE;
			ctl_err(err, errlen, "%s: another namegate is listening there", path);
			goto fail;
		}
	}
	if ((l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) {
		rc = -errno;
		ctl_err(err, errlen, "%s: socket: %s", path, strerror(-rc));
		goto fail;
	}
	unlink(tmp);		/* left by a crashed daemon that had our pid */
	if (bind(l->fd, (struct sockaddr *)&tmp_sun, sizeof(tmp_sun)) < 0) {
		rc = -errno;
		ctl_err(err, errlen, "%s: bind: %s", tmp, strerror(-rc));
		goto fail;
	}
	bound = true;
	if (gid != CTL_SOCK_GROUP_NONE && chown(tmp, (uid_t)-1, (gid_t)gid) < 0) {
		rc = -errno;
		ctl_err(err, errlen, "%s: cannot give it group %u: %s", path, gid, strerror(-rc));
		goto fail;
	}
	if (chmod(tmp, CTL_SOCK_MODE) < 0 || listen(l->fd, CTL_SOCK_CLIENTS_MAX) < 0 ||
	    rename(tmp, path) < 0 || stat(path, &st) < 0) {
		rc = -errno;
		ctl_err(err, errlen, "%s: %s", path, strerror(-rc));
		goto fail;
	}
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	return 0;
fail:
	if (bound)
		unlink(tmp);
	if (l->fd >= 0)
		close(l->fd);
	free(l->path);
	*l = (struct ctl_listener){ .fd = -1 };
	return rc;
}

/* Closes l and removes its path if it is still the socket we created. */
void
ctl_listener_close(struct ctl_listener *l)
{
	struct stat st;

	close(l->fd);
	/* A newer daemon may have taken the path over; its socket is not ours to remove. */
	if (stat(l->path, &st) == 0 && st.st_dev == l->dev && st.st_ino == l->ino)
		unlink(l->path);
	free(l->path);
}

struct ctl_sock *
ctl_sock_open(const char *path, int timeout_ms, char *err, size_t errlen)
{
	struct ctl_sock *s;
	int rc;

	if ((s = calloc(1, sizeof(*s))) == NULL) {
		rc = errno;
		ctl_err(err, errlen, "%s: %s", path, strerror(rc));
		errno = rc;
		return NULL;
	}
	s->timeout_ms = timeout_ms > 0 ? timeout_ms : CTL_SOCK_TIMEOUT_MS;
	if ((rc = ctl_listener_open(&s->lis[0], path, CTL_SOCK_GROUP_NONE, err, errlen)) < 0) {
		free(s);
		errno = -rc;
		return NULL;
	}
	s->nlis = 1;
	return s;
}

int
ctl_sock_listen(struct ctl_sock *s, const char *path, uint32_t gid, bool readonly, char *err,
    size_t errlen)
{
	int rc;

	if (s->nlis == CTL_SOCK_LISTENERS_MAX) {
		ctl_err(err, errlen, "%s: more than %d control sockets", path,
		    CTL_SOCK_LISTENERS_MAX);
		return -ENOSPC;
	}
	if ((rc = ctl_listener_open(&s->lis[s->nlis], path, gid, err, errlen)) < 0)
		return rc;
	s->lis[s->nlis++].readonly = readonly;
	return 0;
}

int
ctl_sock_chgrp(struct ctl_sock *s, uint32_t gid, char *err, size_t errlen)
{
	const struct ctl_listener *l = &s->lis[0];
	struct stat st;
	int rc;

	/* Root's group until here: the socket was never open wider than it will be. */
	if (lchown(l->path, (uid_t)-1, (gid_t)gid) < 0 || lstat(l->path, &st) < 0) {
		rc = -errno;
		ctl_err(err, errlen, "%s: cannot give it group %u: %s", l->path, gid,
		    strerror(-rc));
		return rc;
	}
	if (st.st_dev != l->dev || st.st_ino != l->ino) {
		ctl_err(err, errlen, "%s: replaced by another file meanwhile", l->path);
		return -ESTALE;
	}
	return 0;
}
