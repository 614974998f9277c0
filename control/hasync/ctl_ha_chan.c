/*
 * The sync stream's handshake and its sealed frames (ctl_ha_wire.h draws them). Nothing a
 * peer sends is acted on before its MAC over this connection's fresh ephemeral keys is
 * checked; after the first failure the channel is broken for good, so the connection's
 * owner drops it instead of reading on past a frame it could not authenticate.
 */
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sodium/core.h>
#include <sodium/crypto_generichash.h>
#include <sodium/utils.h>

#include "ctl_ha_wire.h"

enum ha_msg {
	HA_MSG_HELLO = 1,
	HA_MSG_REPLY = 2,
	HA_MSG_CONFIRM = 3,
	HA_MSG_DATA = 4,
};

#define HA_HELLO_LEN	(crypto_kx_PUBLICKEYBYTES)
#define HA_REPLY_LEN	(crypto_kx_PUBLICKEYBYTES + CTL_HA_HDR_BYTES + CTL_HA_MAC_BYTES)
#define HA_CONFIRM_LEN	(CTL_HA_HDR_BYTES + CTL_HA_MAC_BYTES)

_Static_assert(3 + HA_REPLY_LEN <= CTL_HA_WIRE_MAX, "a handshake message is a frame");
_Static_assert(crypto_kx_SESSIONKEYBYTES ==
    crypto_secretstream_xchacha20poly1305_KEYBYTES, "a kx key keys a stream");

/* The frame's header: u16 len (type and body) | u8 type. */
static size_t
ha_frame_head(uint8_t *out, enum ha_msg type, size_t body)
{
	out[0] = (uint8_t)((body + 1) >> 8);
	out[1] = (uint8_t)(body + 1);
	out[2] = (uint8_t)type;
	return 3 + body;
}

/* The keyed BLAKE2b of label | eph_c | eph_s | hdr_s [| hdr_c]: each side's proof. */
static void
ha_mac(const struct ctl_ha_chan *ch, const char *label, const uint8_t *hdr_c, uint8_t *mac)
{
	const uint8_t *c = ch->client ? ch->pk : ch->peer_pk;
	const uint8_t *s = ch->client ? ch->peer_pk : ch->pk;
	crypto_generichash_state st;

	crypto_generichash_init(&st, ch->psk, CTL_HA_PSK_BYTES, CTL_HA_MAC_BYTES);
	crypto_generichash_update(&st, (const uint8_t *)label, strlen(label));
	crypto_generichash_update(&st, c, crypto_kx_PUBLICKEYBYTES);
	crypto_generichash_update(&st, s, crypto_kx_PUBLICKEYBYTES);
	crypto_generichash_update(&st, ch->hdr_s, CTL_HA_HDR_BYTES);
	if (hdr_c != NULL)
		crypto_generichash_update(&st, hdr_c, CTL_HA_HDR_BYTES);
	crypto_generichash_final(&st, mac, CTL_HA_MAC_BYTES);
}

/* The session keys kx gives, each rekeyed with the PSK. -1: the peer's key is unusable. */
static int
ha_session_keys(struct ctl_ha_chan *ch, uint8_t *rx, uint8_t *tx)
{
	uint8_t k[2][crypto_kx_SESSIONKEYBYTES];
	int rc = ch->client ?
	    crypto_kx_client_session_keys(k[0], k[1], ch->pk, ch->sk, ch->peer_pk) :
	    crypto_kx_server_session_keys(k[0], k[1], ch->pk, ch->sk, ch->peer_pk);

	if (rc == 0) {
		crypto_generichash(rx, crypto_kx_SESSIONKEYBYTES, k[0], sizeof(k[0]), ch->psk,
		    CTL_HA_PSK_BYTES);
		crypto_generichash(tx, crypto_kx_SESSIONKEYBYTES, k[1], sizeof(k[1]), ch->psk,
		    CTL_HA_PSK_BYTES);
	}
	sodium_memzero(k, sizeof(k));
	return rc;
}

size_t
ctl_ha_chan_init(struct ctl_ha_chan *ch, const uint8_t *psk, bool client, uint8_t *out)
{
	memset(ch, 0, sizeof(*ch));
	ch->client = client;
	if (sodium_init() < 0) {	/* once per process; later calls return at once */
		ch->state = CTL_HA_CHAN_BROKEN;
		return 0;
	}
	memcpy(ch->psk, psk, CTL_HA_PSK_BYTES);
	crypto_kx_keypair(ch->pk, ch->sk);
	if (!client)
		return 0;
	ch->state = CTL_HA_CHAN_REPLY;
	memcpy(out + 3, ch->pk, HA_HELLO_LEN);
	return ha_frame_head(out, HA_MSG_HELLO, HA_HELLO_LEN);
}

/* Server: a HELLO. Answers with its key, its stream's header and its proof. */
static bool
ha_on_hello(struct ctl_ha_chan *ch, const uint8_t *body, size_t len, uint8_t *out,
    size_t *outlen)
{
	uint8_t tx[crypto_kx_SESSIONKEYBYTES];

	if (len != HA_HELLO_LEN)
		return false;
	memcpy(ch->peer_pk, body, HA_HELLO_LEN);
	if (ha_session_keys(ch, ch->rx_key, tx) != 0)
		return false;
	crypto_secretstream_xchacha20poly1305_init_push(&ch->tx, ch->hdr_s, tx);
	sodium_memzero(tx, sizeof(tx));
	memcpy(out + 3, ch->pk, crypto_kx_PUBLICKEYBYTES);
	memcpy(out + 3 + crypto_kx_PUBLICKEYBYTES, ch->hdr_s, CTL_HA_HDR_BYTES);
	ha_mac(ch, "namegate-ha-s", NULL, out + 3 + crypto_kx_PUBLICKEYBYTES + CTL_HA_HDR_BYTES);
	*outlen = ha_frame_head(out, HA_MSG_REPLY, HA_REPLY_LEN);
	ch->state = CTL_HA_CHAN_CONFIRM;
	return true;
}

/* Client: the server's REPLY. Checks its proof, then confirms with its own. */
static bool
ha_on_reply(struct ctl_ha_chan *ch, const uint8_t *body, size_t len, uint8_t *out,
    size_t *outlen)
{
	uint8_t rx[crypto_kx_SESSIONKEYBYTES], tx[crypto_kx_SESSIONKEYBYTES];
	uint8_t mac[CTL_HA_MAC_BYTES];
	bool ok;

	if (len != HA_REPLY_LEN)
		return false;
	memcpy(ch->peer_pk, body, crypto_kx_PUBLICKEYBYTES);
	memcpy(ch->hdr_s, body + crypto_kx_PUBLICKEYBYTES, CTL_HA_HDR_BYTES);
	ha_mac(ch, "namegate-ha-s", NULL, mac);
	ok = sodium_memcmp(mac, body + crypto_kx_PUBLICKEYBYTES + CTL_HA_HDR_BYTES,
	    CTL_HA_MAC_BYTES) == 0 && ha_session_keys(ch, rx, tx) == 0 &&
	    crypto_secretstream_xchacha20poly1305_init_pull(&ch->rx, ch->hdr_s, rx) == 0;
	if (ok) {
		crypto_secretstream_xchacha20poly1305_init_push(&ch->tx, out + 3, tx);
		ha_mac(ch, "namegate-ha-c", out + 3, out + 3 + CTL_HA_HDR_BYTES);
		*outlen = ha_frame_head(out, HA_MSG_CONFIRM, HA_CONFIRM_LEN);
		ch->state = CTL_HA_CHAN_OPEN;
	}
	sodium_memzero(rx, sizeof(rx));
	sodium_memzero(tx, sizeof(tx));
	return ok;
}

/* Server: the client's CONFIRM, proof that it holds the key over this server's ephemeral. */
static bool
ha_on_confirm(struct ctl_ha_chan *ch, const uint8_t *body, size_t len)
{
	uint8_t mac[CTL_HA_MAC_BYTES];

	if (len != HA_CONFIRM_LEN)
		return false;
	ha_mac(ch, "namegate-ha-c", body, mac);
	if (sodium_memcmp(mac, body + CTL_HA_HDR_BYTES, CTL_HA_MAC_BYTES) != 0 ||
	    crypto_secretstream_xchacha20poly1305_init_pull(&ch->rx, body, ch->rx_key) != 0)
		return false;
	sodium_memzero(ch->rx_key, sizeof(ch->rx_key));
	ch->state = CTL_HA_CHAN_OPEN;
	return true;
}

static bool
ha_on_data(struct ctl_ha_chan *ch, const uint8_t *frame, size_t len, struct ctl_ha_rec *rec,
    uint8_t *plain)
{
	unsigned long long mlen;
	unsigned char tag;

	/* the frame's own length caps the plaintext at CTL_HA_REC_MAX */
	if (len < 3 + CTL_HA_ABYTES || len > CTL_HA_WIRE_MAX ||
	    crypto_secretstream_xchacha20poly1305_pull(&ch->rx, plain, &mlen, &tag, frame + 3,
	    len - 3, frame, 3) != 0 || tag != crypto_secretstream_xchacha20poly1305_TAG_MESSAGE)
		return false;
	return ctl_ha_rec_parse(plain, (size_t)mlen, rec);
}

enum ctl_ha_chan_rc
ctl_ha_chan_recv(struct ctl_ha_chan *ch, const uint8_t *frame, size_t len, uint8_t *out,
    size_t *outlen, struct ctl_ha_rec *rec, uint8_t *plain)
{
	const uint8_t *body;
	size_t blen;
	bool ok = false;

	*outlen = 0;
	if (len < 3 || len != 2 + ((size_t)frame[0] << 8 | frame[1]))
		goto fail;
	body = frame + 3;
	blen = len - 3;
	switch (frame[2]) {
	case HA_MSG_HELLO:
		ok = !ch->client && ch->state == CTL_HA_CHAN_START &&
		    ha_on_hello(ch, body, blen, out, outlen);
		break;
	case HA_MSG_REPLY:
		ok = ch->client && ch->state == CTL_HA_CHAN_REPLY &&
		    ha_on_reply(ch, body, blen, out, outlen);
		break;
	case HA_MSG_CONFIRM:
		ok = !ch->client && ch->state == CTL_HA_CHAN_CONFIRM &&
		    ha_on_confirm(ch, body, blen);
		break;
	case HA_MSG_DATA:
		if (ch->state == CTL_HA_CHAN_OPEN && ha_on_data(ch, frame, len, rec, plain))
			return CTL_HA_CHAN_RECORD;
		break;
	default:
		break;
	}
	if (ok)
		return CTL_HA_CHAN_NONE;
fail:
	*outlen = 0;
	ctl_ha_chan_wipe(ch);
	ch->state = CTL_HA_CHAN_BROKEN;
	return CTL_HA_CHAN_FAIL;
}

size_t
ctl_ha_chan_seal(struct ctl_ha_chan *ch, const struct ctl_ha_rec *r, uint8_t *out)
{
	uint8_t plain[CTL_HA_REC_MAX];
	size_t n;

	if (ch->state != CTL_HA_CHAN_OPEN || (n = ctl_ha_rec_encode(r, plain)) == 0)
		return 0;
	ha_frame_head(out, HA_MSG_DATA, n + CTL_HA_ABYTES);
	crypto_secretstream_xchacha20poly1305_push(&ch->tx, out + 3, NULL, plain, n, out, 3,
	    crypto_secretstream_xchacha20poly1305_TAG_MESSAGE);
	return 3 + n + CTL_HA_ABYTES;
}

void
ctl_ha_chan_wipe(struct ctl_ha_chan *ch)
{
	sodium_memzero(ch, sizeof(*ch));
}

int
ctl_ha_psk_read(const char *path, uint8_t *psk, char *err, size_t errlen)
{
	char text[2 * CTL_HA_PSK_BYTES + 3];
	const char *end;
	size_t bin = 0;
	struct stat st;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) != 0) {
		snprintf(err, errlen, "%s: not a regular file readable by its owner only", path);
		close(fd);
		return -1;
	}
	n = read(fd, text, sizeof(text));
	close(fd);
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
		n--;
	if (n != 2 * CTL_HA_PSK_BYTES || sodium_hex2bin(psk, CTL_HA_PSK_BYTES, text, (size_t)n,
	    NULL, &bin, &end) != 0 || bin != CTL_HA_PSK_BYTES) {
		sodium_memzero(text, sizeof(text));
		snprintf(err, errlen, "%s: not a key of %d bytes in %d hex digits", path,
		    CTL_HA_PSK_BYTES, 2 * CTL_HA_PSK_BYTES);
		return -1;
	}
	sodium_memzero(text, sizeof(text));
	return 0;
}
