/*
 * libFuzzer target for the HA pair's sync stream (control/hasync/ctl_ha_wire.c and
 * ctl_ha_chan.c), whose bytes come over a network link. The first byte picks what the
 * rest is fed to; besides what ASan/UBSan catch, it abort()s when a promise breaks:
 *
 *  0  one record (FLOW and FLOW_END among them): parsed only if its encoding is those
 *     very bytes (one spelling each).
 *  1  frames to a fresh server, 2 to a fresh client: no input opens a channel or yields
 *     a record without the key, and after a failure nothing more is accepted.
 *  3  frames to the server of a pair that completed its handshake: none yields a record
 *     (only the client's key seals), and the first breaks the channel for good.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ctl_ha_wire.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t fuzz_psk[CTL_HA_PSK_BYTES] = { 0x42 };

static void
fuzz_record(const uint8_t *p, size_t len)
{
	uint8_t out[CTL_HA_REC_MAX];
	struct ctl_ha_rec r;
	size_t n;

	if (!ctl_ha_rec_parse(p, len, &r))
		return;
	n = ctl_ha_rec_encode(&r, out);
	check(n == len && memcmp(out, p, len) == 0);
}

/* Feeds in's frames to ch until they run out or one is refused. */
static void
fuzz_frames(struct ctl_ha_chan *ch, struct input *in)
{
	uint8_t out[CTL_HA_WIRE_MAX], plain[CTL_HA_REC_MAX];
	bool failed = false;
	struct ctl_ha_rec r;
	size_t flen, olen;

	while (in->len > 0) {
		enum ctl_ha_frame st = ctl_ha_frame_next(in->p, in->len, &flen);
		enum ctl_ha_chan_rc rc;

		if (st != CTL_HA_FRAME_OK)
			break;
		check(flen <= in->len && flen <= CTL_HA_WIRE_MAX);
		rc = ctl_ha_chan_recv(ch, in->p, flen, out, &olen, &r, plain);
		check(rc != CTL_HA_CHAN_RECORD);
		check(olen <= CTL_HA_WIRE_MAX);
		check(!failed || rc == CTL_HA_CHAN_FAIL);
		if (rc == CTL_HA_CHAN_FAIL) {
			check(ch->state == CTL_HA_CHAN_BROKEN && olen == 0);
			failed = true;
		}
		in->p += flen;
		in->len -= flen;
	}
	check(!ctl_ha_chan_open(ch));
}

/* A client and a server through their handshake. */
static void
fuzz_open_pair(struct ctl_ha_chan *c, struct ctl_ha_chan *s)
{
	uint8_t a[CTL_HA_WIRE_MAX], b[CTL_HA_WIRE_MAX], plain[CTL_HA_REC_MAX];
	struct ctl_ha_rec r;
	size_t alen, blen;

	alen = ctl_ha_chan_init(c, fuzz_psk, true, a);
	ctl_ha_chan_init(s, fuzz_psk, false, b);
	check(ctl_ha_chan_recv(s, a, alen, b, &blen, &r, plain) == CTL_HA_CHAN_NONE);
	check(ctl_ha_chan_recv(c, b, blen, a, &alen, &r, plain) == CTL_HA_CHAN_NONE);
	check(ctl_ha_chan_recv(s, a, alen, b, &blen, &r, plain) == CTL_HA_CHAN_NONE);
	check(ctl_ha_chan_open(c) && ctl_ha_chan_open(s));
}

/* A frame to an open server: without the client's key, refused, and the channel broken. */
static void
fuzz_forged(struct ctl_ha_chan *s, const struct input *in)
{
	uint8_t out[CTL_HA_WIRE_MAX], plain[CTL_HA_REC_MAX];
	struct ctl_ha_rec r;
	size_t flen, olen;

	if (ctl_ha_frame_next(in->p, in->len, &flen) == CTL_HA_FRAME_OK)
		check(ctl_ha_chan_recv(s, in->p, flen, out, &olen, &r, plain) ==
		    CTL_HA_CHAN_FAIL && !ctl_ha_chan_open(s));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { .p = data, .len = size };
	struct ctl_ha_chan c, s;
	uint8_t mode, hello[CTL_HA_WIRE_MAX];

	if (!take(&in, &mode, 1))
		return 0;
	switch (mode & 3) {
	case 0:
		fuzz_record(in.p, in.len);
		break;
	case 1:
		ctl_ha_chan_init(&s, fuzz_psk, false, hello);
		fuzz_frames(&s, &in);
		break;
	case 2:
		ctl_ha_chan_init(&c, fuzz_psk, true, hello);
		fuzz_frames(&c, &in);
		break;
	case 3:
		fuzz_open_pair(&c, &s);
		fuzz_forged(&s, &in);
		break;
	}
	return 0;
}
