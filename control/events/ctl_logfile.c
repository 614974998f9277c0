/*
 * Whole lines to a file, stdout or a datagram socket. A file's line begins where the file
 * ended (O_APPEND, one writer), so after a short write the offset the kernel leaves us at,
 * less what was written, is where to truncate back to.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl_base.h"
#include "ctl_logfile.h"

#define LF_NS			1000000000LL	/* stat the path at most this often */
#define LF_UNIX_PREFIX		"unix:"

enum lf_kind {
	LF_FILE,
	LF_STDOUT,
	LF_UNIX,
};

struct ctl_logfile {
	char *path;		/* as given */
	enum lf_kind kind;
	int fd;
	dev_t dev;		/* of the open file, to notice a rename or removal */
	ino_t ino;
	bool regular;		/* a regular file: a torn line can be truncated away */
	bool torn;		/* part of a line stayed (a pipe): start the next on a new line */
	bool warned;		/* the current run of losses was said on stderr */
	bool checked;
	int64_t checked_ns;
	struct sockaddr_un sun;	/* LF_UNIX: the collector */
	socklen_t sunlen;
	_Atomic uint64_t lost;	/* read by a metrics thread */
};

/*
 * Opens path for appending: created with exactly CTL_LOGFILE_MODE (whatever the umask), an
 * existing file as it is. O_NONBLOCK: a FIFO without a reader fails, and a full one loses
 * the line, rather than stalling the caller's loop.
 */
static int
lf_open_file(const char *path, struct stat *st)
{
	const int flags = O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	int fd = -1, rc;

	for (int tries = 0; tries < 3 && fd < 0; tries++) {
		if ((fd = open(path, flags | O_CREAT | O_EXCL, CTL_LOGFILE_MODE)) >= 0) {
			if (fchmod(fd, CTL_LOGFILE_MODE) != 0)
				goto fail;
			break;
		}
		if (errno != EEXIST)
			return -errno;
		/* Removed between the two opens (a rotation): create it again. */
		if ((fd = open(path, flags)) < 0 && errno != ENOENT)
			return -errno;
	}
	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, st) != 0)
		goto fail;
	return fd;
fail:
	rc = -errno;
	close(fd);
	return rc;
}

/*
 * Our own descriptor for stdout. A pipe is opened again through /proc for a description of
 * our own that may be O_NONBLOCK (setting it on the shared one would make the process's
 * other writes to stdout fail with EAGAIN); anything else is a duplicate, as it is.
 */
static int
lf_open_stdout(struct stat *st)
{
	int fd;

	if (fstat(STDOUT_FILENO, st) != 0)
		return -errno;
	if (S_ISFIFO(st->st_mode) && (fd = open("/proc/self/fd/1",
	    O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) >= 0)
		return fd;
	if ((fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3)) < 0)
		return -errno;
	return fd;
}

/* An unbound datagram socket: each line names the collector, so one that restarts is found. */
static int
lf_open_unix(struct ctl_logfile *lf, const char *sock)
{
	size_t n = strlen(sock);
	int fd;

	if (n == 0 || n >= sizeof(lf->sun.sun_path))
		return -ENAMETOOLONG;
	lf->sun.sun_family = AF_UNIX;
	memcpy(lf->sun.sun_path, sock, n + 1);
	lf->sunlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
		return -errno;
	return fd;
}

bool
ctl_logfile_is_file(const char *path)
{
	return strcmp(path, "-") != 0 &&
	    strncmp(path, LF_UNIX_PREFIX, strlen(LF_UNIX_PREFIX)) != 0;
}

struct ctl_logfile *
ctl_logfile_open(const char *path, char *err, size_t errlen)
{
	struct ctl_logfile *lf;
	struct stat st = { 0 };
	int fd;

	if (errlen > 0)
		err[0] = '\0';
	if (path == NULL || path[0] == '\0') {
		ctl_err(err, errlen, "no log path");
		errno = EINVAL;
		return NULL;
	}
	if ((lf = calloc(1, sizeof(*lf))) == NULL || (lf->path = strdup(path)) == NULL) {
		ctl_err(err, errlen, "%s: %s", path, strerror(errno));
		free(lf);
		return NULL;
	}
	if (strcmp(path, "-") == 0) {
		lf->kind = LF_STDOUT;
		fd = lf_open_stdout(&st);
	} else if (!ctl_logfile_is_file(path)) {
		lf->kind = LF_UNIX;
		fd = lf_open_unix(lf, path + strlen(LF_UNIX_PREFIX));
	} else {
		lf->kind = LF_FILE;
		fd = lf_open_file(path, &st);
	}
	if (fd < 0) {
		ctl_err(err, errlen, "open %s: %s", path, strerror(-fd));
		free(lf->path);
		free(lf);
		errno = -fd;
		return NULL;
	}
	lf->fd = fd;
	lf->dev = st.st_dev;
	lf->ino = st.st_ino;
	lf->regular = lf->kind != LF_UNIX && S_ISREG(st.st_mode);
	return lf;
}

void
ctl_logfile_close(struct ctl_logfile *lf)
{
	if (lf == NULL)
		return;
	close(lf->fd);		/* stdout's is our own duplicate */
	free(lf->path);
	free(lf);
}

const char *
ctl_logfile_path(const struct ctl_logfile *lf)
{
	return lf->path;
}

uint64_t
ctl_logfile_lost(const struct ctl_logfile *lf)
{
	return atomic_load_explicit(&lf->lost, memory_order_relaxed);
}

/* The line is lost: counted, and said once a run of losses. Returns -1 with errno err. */
static int
lf_lost(struct ctl_logfile *lf, int err)
{
	atomic_fetch_add_explicit(&lf->lost, 1, memory_order_relaxed);
	if (!lf->warned) {
		lf->warned = true;
		fprintf(stderr, "namegate: %s: %s: lines are being lost\n", lf->path,
		    strerror(err));
	}
	errno = err;
	return -1;
}

/*
 * Part of a line reached the file and the rest cannot: take the part back (it began `wrote`
 * bytes before where the write left the offset), or, where that is impossible, make the
 * next line start on a line of its own.
 */
static void
lf_untear(struct ctl_logfile *lf, size_t wrote)
{
	off_t end;

	if (wrote == 0)
		return;
	if (lf->regular && (end = lseek(lf->fd, 0, SEEK_CUR)) >= (off_t)wrote &&
	    ftruncate(lf->fd, end - (off_t)wrote) == 0)
		return;
	lf->torn = true;
}

/* buf[0..len) appended whole: 0, or -errno with what part of it went in taken back. */
static int
lf_write_all(struct ctl_logfile *lf, const char *buf, size_t len)
{
	size_t off = 0;
	ssize_t n;
	int rc;

	while (off < len) {
		if ((n = write(lf->fd, buf + off, len - off)) < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			lf_untear(lf, off);
			return rc;
		}
		if (n == 0) {		/* no progress and no error: as good as full */
			lf_untear(lf, off);
			return -EIO;
		}
		off += (size_t)n;
	}
	return 0;
}

int
ctl_logfile_write(struct ctl_logfile *lf, const char *line, size_t len)
{
	int rc;

	if (len == 0 || line[len - 1] != '\n')
		return lf_lost(lf, EINVAL);
	if (lf->kind == LF_UNIX) {
		while (sendto(lf->fd, line, len, MSG_NOSIGNAL, (const struct sockaddr *)&lf->sun,
		    lf->sunlen) < 0) {
			if (errno != EINTR)
				return lf_lost(lf, errno);
		}
	} else {
		/* A FIFO's torn line ends first, so the next is not glued to it. */
		if (lf->torn) {
			if ((rc = lf_write_all(lf, "\n", 1)) != 0)
				return lf_lost(lf, -rc);
			lf->torn = false;
		}
		if ((rc = lf_write_all(lf, line, len)) != 0)
			return lf_lost(lf, -rc);
	}
	lf->warned = false;
	return 0;
}

int
ctl_logfile_reopen(struct ctl_logfile *lf)
{
	struct stat st;
	int fd;

	if (lf->kind != LF_FILE)
		return 0;
	if ((fd = lf_open_file(lf->path, &st)) < 0)
		return fd;
	close(lf->fd);
	lf->fd = fd;
	lf->dev = st.st_dev;
	lf->ino = st.st_ino;
	lf->regular = S_ISREG(st.st_mode);
	lf->torn = false;	/* a fresh file starts on a line boundary */
	return 0;
}

/*
 * An error other than "gone" (EACCES on the directory) proves nothing: keep the file.
 */
int
ctl_logfile_check(struct ctl_logfile *lf, int64_t now_ns)
{
	struct stat st;

	if (lf->kind != LF_FILE)
		return 0;
	if (lf->checked && now_ns >= lf->checked_ns && now_ns - lf->checked_ns < LF_NS)
		return 0;
	lf->checked = true;
	lf->checked_ns = now_ns;
	if (stat(lf->path, &st) == 0) {
		if (st.st_dev == lf->dev && st.st_ino == lf->ino)
			return 0;
	} else if (errno != ENOENT) {
		return 0;
	}
	return ctl_logfile_reopen(lf);
}

void
ctl_logfile_tick(struct ctl_logfile *lf, int64_t now_ns)
{
	(void)ctl_logfile_check(lf, now_ns);
}
