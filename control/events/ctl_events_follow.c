/*
 * namegatectl events: the event log copied out as it grows (--follow), across logrotate's
 * renames: the old file is read to its end for a while after the new one appears.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl_events.h"

#define EV_FOLLOW_POLL_NS	(100 * 1000000LL)
#define EV_FOLLOW_GRACE		30		/* idle polls a rotated-away file is still read */
#define EV_READ_CHUNK		65536

/* Copies what fd has now to out: bytes copied, or -errno. */
static ssize_t
ev_copy(int fd, FILE *out, char *buf)
{
	ssize_t n, total = 0;

	for (;;) {
		if ((n = read(fd, buf, EV_READ_CHUNK)) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		errno = 0;
		if (fwrite(buf, 1, (size_t)n, out) != (size_t)n)
			return errno != 0 ? -errno : -EIO;
		total += n;
	}
	errno = 0;
	if (total > 0 && fflush(out) != 0)
		return errno != 0 ? -errno : -EIO;
	return total;
}

/* True when path names a different file than fd (rotated); false if it is absent. */
static bool
ev_replaced(const char *path, int fd)
{
	struct stat a, b;

	if (stat(path, &a) != 0 || fstat(fd, &b) != 0)
		return false;
	return a.st_dev != b.st_dev || a.st_ino != b.st_ino;
}

int
ctl_events_follow(const char *path, FILE *out, bool follow, volatile sig_atomic_t *stop)
{
	const struct timespec nap = { .tv_sec = 0, .tv_nsec = EV_FOLLOW_POLL_NS };
	int fd, oldfd = -1, old_idle = 0, nfd, rc = 0;
	char *buf = NULL;
	struct stat st;
	ssize_t n;
	off_t off;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if ((buf = malloc(EV_READ_CHUNK)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	while (stop == NULL || !*stop) {
		/*
		 * The writer may append to a renamed file until it next checks the path (within
		 * a second of its next event), so the old file is read until it has been quiet
		 * for EV_FOLLOW_GRACE polls.
		 */
		if (oldfd >= 0) {
			if ((n = ev_copy(oldfd, out, buf)) < 0) {
				rc = (int)n;
				goto out;
			}
			old_idle = n > 0 ? 0 : old_idle + 1;
			if (old_idle >= EV_FOLLOW_GRACE) {
				close(oldfd);
				oldfd = -1;
			}
		}
		if ((n = ev_copy(fd, out, buf)) < 0) {
			rc = (int)n;
			goto out;
		}
		if (!follow)
			break;
		/* copytruncate: the file shrank under us, so what is there now is new. */
		if ((off = lseek(fd, 0, SEEK_CUR)) >= 0 && fstat(fd, &st) == 0 && st.st_size < off)
			(void)lseek(fd, 0, SEEK_SET);
		if (ev_replaced(path, fd) && (nfd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			if (oldfd >= 0)
				close(oldfd);	/* rotated twice within the grace: drop it */
			oldfd = fd;
			old_idle = 0;
			fd = nfd;
			continue;
		}
		if (n == 0)
			nanosleep(&nap, NULL);		/* EINTR is fine: *stop is checked next */
	}
out:
	if (oldfd >= 0)
		close(oldfd);
	close(fd);
	free(buf);
	return rc;
}
