/*
 * The approval webhook on libcurl's multi interface: every transfer non-blocking, driven
 * by ctl_webhook_poll() from the caller's loop.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "ctl_webhook.h"

struct ctl_transfer {
	CURL *easy;		/* NULL: free slot */
	char *body;
};

struct ctl_webhook {
	char *url;
	CURLM *multi;
	struct curl_slist *headers;
	struct ctl_transfer t[CTL_WEBHOOK_INFLIGHT];
	unsigned int running;
	/* read by the metrics thread while the loop writes */
	_Atomic uint64_t sent, failed;
};

/* The receiver's reply is not ours to read: swallow it. */
static size_t
ctl_webhook_discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

struct ctl_webhook *
ctl_webhook_new(const char *url)
{
	struct ctl_webhook *w;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		errno = EIO;
		return NULL;
	}
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	if ((w->url = strdup(url)) == NULL || (w->multi = curl_multi_init()) == NULL ||
	    (w->headers = curl_slist_append(NULL, "Content-Type: application/json")) == NULL) {
		ctl_webhook_free(w);
		errno = ENOMEM;
		return NULL;
	}
	return w;
}

static void
ctl_transfer_end(struct ctl_webhook *w, struct ctl_transfer *t)
{
	curl_multi_remove_handle(w->multi, t->easy);
	curl_easy_cleanup(t->easy);
	free(t->body);
	t->easy = NULL;
	t->body = NULL;
}

int
ctl_webhook_post(struct ctl_webhook *w, const char *body)
{
	struct ctl_transfer *t = NULL;

	for (unsigned int i = 0; i < CTL_WEBHOOK_INFLIGHT && t == NULL; i++)
		if (w->t[i].easy == NULL)
			t = &w->t[i];
	if (t == NULL) {
		atomic_fetch_add(&w->failed, 1);
		return -EBUSY;
	}
	if ((t->body = strdup(body)) == NULL || (t->easy = curl_easy_init()) == NULL) {
		free(t->body);
		t->body = NULL;
		atomic_fetch_add(&w->failed, 1);
		return -ENOMEM;
	}
	/* COPYPOSTFIELDS is not needed: body lives until the transfer ends */
	if (curl_easy_setopt(t->easy, CURLOPT_URL, w->url) != CURLE_OK ||
	    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, t->body) != CURLE_OK ||
	    curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, w->headers) != CURLE_OK ||
	    curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, (long)CTL_WEBHOOK_TIMEOUT_MS) !=
	    CURLE_OK ||
	    /* no signals from curl's resolver in a daemon with its own handlers */
	    curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
	    curl_easy_setopt(t->easy, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
	    curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, ctl_webhook_discard) != CURLE_OK ||
	    curl_multi_add_handle(w->multi, t->easy) != CURLM_OK) {
		curl_easy_cleanup(t->easy);
		free(t->body);
		t->easy = NULL;
		t->body = NULL;
		atomic_fetch_add(&w->failed, 1);
		return -EINVAL;
	}
	w->running++;
	return 0;
}

unsigned int
ctl_webhook_poll(struct ctl_webhook *w)
{
	int still = 0, left;
	CURLMsg *m;

	if (w == NULL || w->running == 0)
		return 0;
	curl_multi_perform(w->multi, &still);
	while ((m = curl_multi_info_read(w->multi, &left)) != NULL) {
		long status = 0;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
		if (m->data.result == CURLE_OK && status >= 200 && status < 300)
			atomic_fetch_add(&w->sent, 1);
		else
			atomic_fetch_add(&w->failed, 1);
		for (unsigned int i = 0; i < CTL_WEBHOOK_INFLIGHT; i++)
			if (w->t[i].easy == m->easy_handle) {
				ctl_transfer_end(w, &w->t[i]);
				w->running--;
				break;
			}
	}
	return w->running;
}

void
ctl_webhook_counters(const struct ctl_webhook *w, struct ctl_webhook_counters *out)
{
	out->sent = w != NULL ? atomic_load(&w->sent) : 0;
	out->failed = w != NULL ? atomic_load(&w->failed) : 0;
}

void
ctl_webhook_free(struct ctl_webhook *w)
{
	if (w == NULL)
		return;
	for (unsigned int i = 0; i < CTL_WEBHOOK_INFLIGHT; i++)
		if (w->t[i].easy != NULL)
			ctl_transfer_end(w, &w->t[i]);
	curl_slist_free_all(w->headers);
	if (w->multi != NULL)
		curl_multi_cleanup(w->multi);
	free(w->url);
	free(w);
	curl_global_cleanup();
}
