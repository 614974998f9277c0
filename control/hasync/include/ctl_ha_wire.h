/*
 * The HA pair's sync stream on the wire (namegate(8), HA PAIR): one connection over the HA
 * link, the active box the client (it sends what it learns), the standby the server (it
 * installs and acknowledges). No DPDK, no sockets: bytes in, bytes out, so the unit tests
 * and the fuzz target drive it whole.
 *
 * Crypto: libsodium rather than TLS 1.3 with a PSK through libssl. namegate already links
 * libsodium (the fleet's bundle signatures); the handshake below is three messages whose
 * every byte this file checks, where libssl's PSK mode needs its callbacks, a cipher
 * suite and psk_dhe_ke chosen by hand to keep forward secrecy; and secretstream gives each
 * direction an ordered stream in which a frame replayed, reordered or cut fails its tag.
 *
 * Every message is a frame: u16 len | u8 type | body (len counts type and body).
 *
 *   client -> server  HELLO   eph_c[32]
 *   server -> client  REPLY   eph_s[32] | header_s[24] | mac_s[32]
 *   client -> server  CONFIRM header_c[24] | mac_c[32]
 *   either way        DATA    secretstream ciphertext of one record (AD: the frame's
 *                             first 3 bytes)
 *
 * eph_* are X25519 keys made fresh for each connection (crypto_kx). mac_s is the keyed
 * BLAKE2b (key: the pre-shared key) of "namegate-ha-s" | eph_c | eph_s | header_s, mac_c
 * of "namegate-ha-c" | eph_c | eph_s | header_s | header_c: each side proves the key over
 * the other's fresh ephemeral, so a recorded session replayed to either fails its MAC.
 * Each direction's secretstream key is the keyed BLAKE2b (the PSK) of its crypto_kx
 * session key: a stolen ephemeral alone opens nothing, a stolen PSK no past session.
 *
 * Records (the DATA plaintext: u8 type | body; strings length-prefixed, never NUL):
 *   BIND          u8 vm_len | vm | u8 family (4, 6) | addr[4 or 16] | u32 ttl (seconds left)
 *                 | u8 name_len | name
 *   BUDGET        u8 vm_len | vm | u8 rule_len | rule | u32 per | u32 age | u64 bytes
 *                 | u8 merge: bytes the VM sent through its budget rule (the host pattern
 *                 as written) of a per-second window, counted age seconds before the
 *                 record left; merge 0: spent on the sender since its last second (added),
 *                 1: the sender's whole count at that age (a resync: kept if more)
 *   GRANT         u8 vm_len | vm | u8 pattern_len | pattern | u32 ttl (seconds left, >= 1)
 *   ACK           u64 seq (records of the other direction received and applied)
 *   RESYNC_BEGIN  (empty)  the sender's whole state follows
 *   RESYNC_END    u64 count (records between the two)
 *   FLOW          u8 vm_len | vm | u8 family | peer[4 or 16] | u16 vm_port | u16 peer_port
 *                 | u8 how (1 address, 2 name) | u8 name_bound (0, 1) | u32 isn | u32 vm_nxt
 *                 | u32 peer_ack | u32 peer_wnd | u32 peer_isn | u8 vm_wscale | u8
 *                 peer_wscale | u32 ttl (seconds left) | u8 name_len | name (none by
 *                 address; 1 to 253 by name)
 *   FLOW_END      u8 vm_len | vm | u8 family | peer[4 or 16] | u16 vm_port | u16 peer_port
 * FLOW is a TCP connection whose verdict is final (namegate(8), HA PAIR), with what the
 * peer needs to carry it on: its sequence state as it stood then, and how long the record
 * lasts unless reported again; FLOW_END its end.
 *   REVOKE (9)    u8 vm_len | vm | u8 pattern_len | pattern: the grants of vm for pattern end
 *   NAMES (10)    u8 vm_len | vm | u16 qtype | u8 suffix_len | u8 name_len | name: vm asked
 *                 a new question (name, qtype) under a wildcard whose suffix is name's last
 *                 suffix_len bytes (fewer than name_len), and the sender's name budget
 *                 admitted it
 * Records are numbered from 1 in each direction by their order: the stream is ordered and
 * lossless, so the number needs no field, and an ACK of n says the first n arrived.
 */
#ifndef CTL_HA_WIRE_H
#define CTL_HA_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sodium/crypto_kx.h>
#include <sodium/crypto_secretstream_xchacha20poly1305.h>

#define CTL_HA_PSK_BYTES	32
#define CTL_HA_MAC_BYTES	32
#define CTL_HA_HDR_BYTES	crypto_secretstream_xchacha20poly1305_HEADERBYTES
#define CTL_HA_ABYTES		crypto_secretstream_xchacha20poly1305_ABYTES
#define CTL_HA_VM_MAX		64	/* bytes of a VM's name */
#define CTL_HA_NAME_MAX		253	/* a DNS name's text */
/* the longest record, a FLOW: a type, both strings at their limits, an address, ports... */
#define CTL_HA_REC_MAX		(1 + 1 + CTL_HA_VM_MAX + 1 + 16 + 4 + 2 + 20 + 2 + 4 + 1 + \
				    CTL_HA_NAME_MAX)
#define CTL_HA_WIRE_MAX	(3 + CTL_HA_REC_MAX + CTL_HA_ABYTES)	/* any frame, whole */

enum ctl_ha_rec_type {
	CTL_HA_REC_BIND = 1,
	CTL_HA_REC_BUDGET = 2,
	CTL_HA_REC_GRANT = 3,
	CTL_HA_REC_ACK = 4,
	CTL_HA_REC_RESYNC_BEGIN = 5,
	CTL_HA_REC_RESYNC_END = 6,
	CTL_HA_REC_FLOW = 7,
	CTL_HA_REC_FLOW_END = 8,
	CTL_HA_REC_REVOKE = 9,
	CTL_HA_REC_NAMES = 10,
};

/* What let a FLOW open: its peer's address, or a name (which the record then carries). */
enum ctl_ha_flow_how {
	CTL_HA_FLOW_BY_ADDR = 1,
	CTL_HA_FLOW_BY_NAME = 2,
};

/* A FLOW's connection and its state (FLOW_END: the ports only). */
struct ctl_ha_flow {
	uint16_t vm_port, peer_port;
	uint8_t how;			/* enum ctl_ha_flow_how */
	uint8_t name_bound;		/* the name was bound to the peer when judged */
	uint8_t vm_wscale, peer_wscale;
	uint32_t isn, vm_nxt, peer_ack, peer_wnd, peer_isn;
};

#define CTL_HA_MERGE_ADD	0	/* BUDGET: spent since the sender's last second */
#define CTL_HA_MERGE_MAX	1	/* BUDGET: the sender's count at that age (a resync) */

/* A record; the strings point into the buffer it was parsed from, or the caller's. */
struct ctl_ha_rec {
	enum ctl_ha_rec_type type;
	const char *vm;			/* BIND, BUDGET, GRANT, REVOKE, FLOW, FLOW_END */
	uint8_t vm_len;
	const char *name;		/* BIND, FLOW: name; BUDGET: rule; GRANT, REVOKE: pattern */
	uint8_t name_len;
	uint8_t family;			/* BIND, FLOW, FLOW_END */
	uint8_t addr[16];		/* BIND: 4 bytes used for IPv4; FLOW: the peer's */
	uint32_t ttl;			/* BIND, GRANT, FLOW */
	uint32_t per, age;		/* BUDGET: the window, and how long ago */
	uint64_t bytes;			/* BUDGET */
	uint8_t merge;			/* BUDGET: CTL_HA_MERGE_* */
	uint16_t qtype;			/* NAMES */
	uint8_t suffix_len;		/* NAMES: < name_len */
	uint64_t seq;			/* ACK; RESYNC_END: the count */
	struct ctl_ha_flow flow;	/* FLOW, FLOW_END */
};

/*
 * Writes r's plaintext into buf (at least CTL_HA_REC_MAX bytes): its length, or 0 when r
 * is not one a peer would accept (a length past its limit, a family not 4 or 6, a BUDGET
 * window of 0 or merge past MAX, a GRANT of 0 seconds, a NAMES suffix not shorter than its
 * name).
 */
size_t ctl_ha_rec_encode(const struct ctl_ha_rec *r, uint8_t *buf);

/* Parses one record from exactly len bytes; false if they are not one. Reads only buf. */
bool ctl_ha_rec_parse(const uint8_t *buf, size_t len, struct ctl_ha_rec *r);

enum ctl_ha_frame {
	CTL_HA_FRAME_OK,
	CTL_HA_FRAME_MORE,		/* the frame is not all there yet */
	CTL_HA_FRAME_BAD,		/* a length no frame has */
};

/* The frame at the start of buf: *flen its whole length when OK. */
enum ctl_ha_frame ctl_ha_frame_next(const uint8_t *buf, size_t len, size_t *flen);

/* One end of a connection. Zeroed by ctl_ha_chan_wipe(). */
struct ctl_ha_chan {
	bool client;
	enum {
		CTL_HA_CHAN_START,	/* client: HELLO to send; server: HELLO awaited */
		CTL_HA_CHAN_REPLY,	/* client: REPLY awaited */
		CTL_HA_CHAN_CONFIRM,	/* server: CONFIRM awaited */
		CTL_HA_CHAN_OPEN,	/* DATA both ways */
		CTL_HA_CHAN_BROKEN,	/* a check failed: nothing more is read or sent */
	} state;
	uint8_t psk[CTL_HA_PSK_BYTES];
	uint8_t pk[crypto_kx_PUBLICKEYBYTES], sk[crypto_kx_SECRETKEYBYTES];
	uint8_t peer_pk[crypto_kx_PUBLICKEYBYTES];
	uint8_t hdr_s[CTL_HA_HDR_BYTES];	/* the server's, in both MACs */
	uint8_t rx_key[crypto_kx_SESSIONKEYBYTES];	/* server: until CONFIRM */
	crypto_secretstream_xchacha20poly1305_state tx, rx;
};

enum ctl_ha_chan_rc {
	CTL_HA_CHAN_NONE,		/* a handshake frame taken; *outlen may have a reply */
	CTL_HA_CHAN_RECORD,		/* a record, in *rec (its strings in plain) */
	CTL_HA_CHAN_FAIL,		/* refused: the connection must go (the chan is BROKEN) */
};

/*
 * Makes fresh ephemeral keys. A client writes its HELLO into out (CTL_HA_WIRE_MAX): its
 * length; 0 and a BROKEN channel when libsodium cannot start (no entropy).
 */
size_t ctl_ha_chan_init(struct ctl_ha_chan *ch, const uint8_t *psk, bool client, uint8_t *out);

/*
 * Takes one whole frame (from ctl_ha_frame_next()). A reply to send goes into out
 * (CTL_HA_WIRE_MAX bytes), its length in *outlen; a DATA frame's record is parsed into
 * *rec, its strings in plain (CTL_HA_REC_MAX bytes). Any failure breaks the channel.
 */
enum ctl_ha_chan_rc ctl_ha_chan_recv(struct ctl_ha_chan *ch, const uint8_t *frame, size_t len,
    uint8_t *out, size_t *outlen, struct ctl_ha_rec *rec, uint8_t *plain);

/* Seals r into a DATA frame in out (CTL_HA_WIRE_MAX): its length, 0 if not OPEN or bad. */
size_t ctl_ha_chan_seal(struct ctl_ha_chan *ch, const struct ctl_ha_rec *r, uint8_t *out);

static inline bool
ctl_ha_chan_open(const struct ctl_ha_chan *ch)
{
	return ch->state == CTL_HA_CHAN_OPEN;
}

/* Zeroes the keys and states. */
void ctl_ha_chan_wipe(struct ctl_ha_chan *ch);

/*
 * Reads the pre-shared key from path: 64 hex digits (a trailing newline allowed), as
 * `head -c 32 /dev/urandom | xxd -p -c 64` writes. A file others may read is refused.
 * 0, or -1 with a reason in err.
 */
int ctl_ha_psk_read(const char *path, uint8_t *psk, char *err, size_t errlen);

#endif
