/*
 * JSON-lines log reader (ctl_logq.h). ctl_events_follow() copies the file into a stdio
 * stream whose writes land here (fopencookie): split into lines, parsed, filtered, handed
 * out or kept in a ring for --last.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl_events.h"
#include "ctl_filter.h"
#include "ctl_logq.h"
#include "ctl_tab.h"

/* The last cap lines that passed, oldest at head. */
struct lq_ring {
	char **v;
	size_t *len;
	size_t cap, n, head;
};

struct lq {
	const struct ctl_filter *f;
	const struct ctl_logq_out *out;
	struct json_tokener *tok;
	char *part;			/* a line not yet ended */
	size_t plen, pcap;
	uint64_t skip;			/* bytes to pass over: what the history showed */
	uint64_t done;			/* bytes of whole lines seen */
	struct lq_ring *ring;		/* keep lines here instead of handing them out */
	bool live;			/* flush after each write */
	size_t malformed;
};

/* Parses a line; NULL when it is not a JSON object with a "ts" (*ts its time). */
static struct json_object *
lq_parse(struct lq *q, const char *line, size_t len, int64_t *ts)
{
	struct json_object *o;

	if (len > INT32_MAX || memchr(line, '\0', len) != NULL)
		return NULL;
	json_tokener_reset(q->tok);
	o = json_tokener_parse_ex(q->tok, line, (int)len);
	if (o == NULL || json_tokener_get_parse_end(q->tok) != len ||
	    !json_object_is_type(o, json_type_object) ||
	    ctl_time_parse(ctl_jstr(o, "ts", ""), ts) < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static bool
lq_ring_push(struct lq_ring *r, const char *line, size_t len)
{
	size_t i = (r->head + r->n) % r->cap;
	char *c;

	if ((c = malloc(len + 1)) == NULL)
		return false;
	memcpy(c, line, len);
	c[len] = '\0';
	if (r->n == r->cap) {
		free(r->v[r->head]);		/* i == head: the oldest goes */
		r->head = (r->head + 1) % r->cap;
	} else {
		r->n++;
	}
	r->v[i] = c;
	r->len[i] = len;
	return true;
}

static void
lq_ring_free(struct lq_ring *r)
{
	for (size_t k = 0; k < r->n; k++)
		free(r->v[(r->head + k) % r->cap]);
	free(r->v);
	free(r->len);
	memset(r, 0, sizeof(*r));
}

static int
lq_ring_init(struct lq_ring *r, size_t cap)
{
	memset(r, 0, sizeof(*r));
	r->cap = cap;
	r->v = calloc(cap, sizeof(*r->v));
	r->len = calloc(cap, sizeof(*r->len));
	if (r->v == NULL || r->len == NULL) {
		lq_ring_free(r);
		return -ENOMEM;
	}
	return 0;
}

/* Hands out the ring's lines, oldest first. */
static void
lq_ring_emit(struct lq *q, struct lq_ring *r)
{
	for (size_t k = 0; k < r->n; k++) {
		size_t i = (r->head + k) % r->cap;
		struct json_object *o;
		int64_t ts;

		if ((o = lq_parse(q, r->v[i], r->len[i], &ts)) != NULL)
			q->out->emit(q->out->arg, r->v[i], r->len[i], o);
		json_object_put(o);
	}
}

/* One whole line; false when out of memory. */
static bool
lq_line(struct lq *q, const char *line, size_t len)
{
	struct json_object *o;
	bool ok = true;
	int64_t ts;

	q->done += len + 1;
	if (len == 0)
		return true;
	if ((o = lq_parse(q, line, len, &ts)) == NULL) {
		q->malformed++;
		return true;
	}
	if (ctl_filter_match(q->f, o, ts)) {
		if (q->ring != NULL)
			ok = lq_ring_push(q->ring, line, len);
		else
			q->out->emit(q->out->arg, line, len, o);
	}
	json_object_put(o);
	return ok;
}

static bool
lq_part_add(struct lq *q, const char *p, size_t n)
{
	if (q->plen + n + 1 > q->pcap) {
		size_t cap = q->pcap == 0 ? 4096 : q->pcap;
		char *np;

		while (cap < q->plen + n + 1)
			cap *= 2;
		if ((np = realloc(q->part, cap)) == NULL)
			return false;
		q->part = np;
		q->pcap = cap;
	}
	memcpy(q->part + q->plen, p, n);
	q->plen += n;
	return true;
}

/* What ctl_events_follow() copies: whole lines handed on, the rest kept for later. */
static ssize_t
lq_write(void *cookie, const char *buf, size_t size)
{
	struct lq *q = cookie;
	const char *p = buf, *end = buf + size, *nl;

	if (q->skip > 0) {
		size_t n = q->skip < size ? (size_t)q->skip : size;

		q->skip -= n;
		p += n;
	}
	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		bool ok;

		if (q->plen > 0) {
			ok = lq_part_add(q, p, (size_t)(nl - p)) && lq_line(q, q->part, q->plen);
			q->plen = 0;
		} else {
			ok = lq_line(q, p, (size_t)(nl - p));
		}
		if (!ok) {
			errno = ENOMEM;
			return -1;
		}
		p = nl + 1;
	}
	if (p < end && !lq_part_add(q, p, (size_t)(end - p))) {
		errno = ENOMEM;
		return -1;
	}
	if (q->live && q->out->flush != NULL)
		q->out->flush(q->out->arg);
	return (ssize_t)size;
}

/* Reads path through the filter; a line left unended is dropped (it may still be written). */
static int
lq_read(struct lq *q, const char *path, bool follow, volatile sig_atomic_t *stop)
{
	cookie_io_functions_t io = { .write = lq_write };
	FILE *c;
	int rc;

	q->plen = 0;
	q->done = 0;
	if ((c = fopencookie(q, "w", io)) == NULL)
		return -errno;
	setvbuf(c, NULL, _IONBF, 0);
	rc = ctl_events_follow(path, c, follow, stop);
	fclose(c);
	q->plen = 0;
	return rc;
}

/* The "ts" of path's first good line into *ts; false when it has none (or is unreadable). */
static bool
lq_first_ts(struct lq *q, const char *path, int64_t *ts)
{
	struct json_object *o = NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *fp;

	if ((fp = fopen(path, "re")) == NULL)
		return false;
	while (o == NULL && (n = getline(&line, &cap, fp)) > 0)
		if (line[n - 1] == '\n')
			o = lq_parse(q, line, (size_t)n - 1, ts);
	json_object_put(o);
	free(line);
	fclose(fp);
	return o != NULL;
}

/* Reads path.1, if there is one, the oldest lines first. */
static int
lq_read_rotated(struct lq *q, const char *path)
{
	char *old;
	int rc;

	if (asprintf(&old, "%s.1", path) < 0)
		return -ENOMEM;
	rc = lq_read(q, old, false, NULL);
	free(old);
	return rc == -ENOENT ? 0 : rc;
}

/* --last: the ring of path, topped up from path.1; then what comes, with follow. */
static int
lq_run_last(struct lq *q, const char *path, bool follow, volatile sig_atomic_t *stop)
{
	struct lq_ring cur, old = { 0 };
	uint64_t shown;
	int rc;

	if ((rc = lq_ring_init(&cur, q->f->last)) < 0)
		return rc;
	q->ring = &cur;
	if ((rc = lq_read(q, path, false, NULL)) < 0)
		goto out;
	shown = q->done;
	if (cur.n < cur.cap) {
		if ((rc = lq_ring_init(&old, cur.cap - cur.n)) < 0)
			goto out;
		q->ring = &old;
		if ((rc = lq_read_rotated(q, path)) < 0)
			goto out;
		lq_ring_emit(q, &old);
	}
	lq_ring_emit(q, &cur);
	q->ring = NULL;
	if (q->out->flush != NULL)
		q->out->flush(q->out->arg);
	if (follow) {
		/*
		 * The follower reads path from its first byte again: pass over what was shown.
		 * A rotation in between makes it skip that much of the new file.
		 */
		q->skip = shown;
		q->live = true;
		rc = lq_read(q, path, true, stop);
	}
out:
	q->ring = NULL;
	lq_ring_free(&cur);
	if (old.cap > 0)
		lq_ring_free(&old);
	return rc;
}

int
ctl_logq_run(const char *path, const struct ctl_filter *f, bool follow,
    const struct ctl_logq_out *out, volatile sig_atomic_t *stop, size_t *malformed)
{
	struct lq q = { .f = f, .out = out };
	int64_t first;
	int rc = 0;

	if ((q.tok = json_tokener_new()) == NULL)
		return -ENOMEM;
	if (f->last > 0) {
		rc = lq_run_last(&q, path, follow, stop);
	} else {
		/* lines older than path's first are in path.1, if anywhere */
		if (f->has_since && (!lq_first_ts(&q, path, &first) || first > f->since_ms))
			rc = lq_read_rotated(&q, path);
		q.live = follow;
		if (rc == 0)
			rc = lq_read(&q, path, follow, stop);
		if (rc == 0 && out->flush != NULL)
			out->flush(out->arg);
	}
	*malformed = q.malformed;
	free(q.part);
	json_tokener_free(q.tok);
	return rc;
}
