"""QUIC version 1 packets: Initials protected for real (RFC 9001 s5: keys from the client's
Destination Connection ID, AES-128-GCM, header protection), so that any reader holding
the RFC can recover the ClientHello; Handshake and 1-RTT packets are opaque, as they are to
anyone but the endpoints."""
import hashlib
import hmac
import struct

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

VERSION_1 = 0x00000001
INITIAL_SALT_V1 = bytes.fromhex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a")   # RFC 9001 s5.2
PACKET_INITIAL, PACKET_HANDSHAKE = 0, 2
FRAME_PADDING, FRAME_ACK, FRAME_CRYPTO = 0x00, 0x02, 0x06
MIN_CLIENT_DATAGRAM = 1200      # RFC 9000 s14.1: a client's Initial datagram, padded
PN_LEN = 2
TAG_LEN = 16


def varint(v):
    """RFC 9000 s16: the shortest of the 1, 2, 4 and 8-byte forms."""
    for prefix, size in ((0, 1), (1, 2), (2, 4), (3, 8)):
        if v < 1 << (8 * size - 2):
            return (prefix << (8 * size - 2) | v).to_bytes(size, "big")
    raise ValueError(v)


def expand_label(secret, label, length):
    """HKDF-Expand-Label (RFC 8446 s7.1) with an empty context, SHA-256."""
    info = struct.pack("!H", length) + bytes([6 + len(label)]) + b"tls13 " + label + b"\x00"
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(secret, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def initial_keys(dcid, sender):
    """(key, iv, hp) of the Initial packets sent by sender, b"client" or b"server" (s5.2)."""
    initial_secret = hmac.new(INITIAL_SALT_V1, dcid, hashlib.sha256).digest()
    secret = expand_label(initial_secret, sender + b" in", 32)
    return (expand_label(secret, b"quic key", 16), expand_label(secret, b"quic iv", 12),
            expand_label(secret, b"quic hp", 16))


def header_mask(hp, sample):
    """AES-ECB of the sample under the hp key (s5.4.3); its first five bytes are used."""
    encryptor = Cipher(algorithms.AES(hp), modes.ECB()).encryptor()
    return encryptor.update(sample) + encryptor.finalize()


def protect(keys, header, pn, plaintext):
    """Seal the payload with AEAD (s5.3), then mask the first byte's low bits and the packet
    number with a sample taken 4 bytes past the number's start (s5.4.2)."""
    key, iv, hp = keys
    nonce = (int.from_bytes(iv, "big") ^ pn).to_bytes(12, "big")
    sealed = AESGCM(key).encrypt(nonce, plaintext, header)
    mask = header_mask(hp, sealed[4 - PN_LEN:20 - PN_LEN])
    pn_at = len(header) - PN_LEN
    first = header[0] ^ (mask[0] & 0x0F)                    # long header: 4 bits
    number = bytes(b ^ m for b, m in zip(header[pn_at:], mask[1:]))
    return bytes([first]) + header[1:pn_at] + number + sealed


def long_header(packet_type, dcid, scid, token, payload_len, pn):
    """Long header with a 2-byte packet number; Length covers the number and the sealed
    payload."""
    first = 0xC0 | packet_type << 4 | (PN_LEN - 1)
    head = bytes([first]) + struct.pack("!I", VERSION_1) + bytes([len(dcid)]) + dcid + \
        bytes([len(scid)]) + scid
    if packet_type == PACKET_INITIAL:
        head += varint(len(token)) + token
    return head + struct.pack("!H", 0x4000 | (PN_LEN + payload_len + TAG_LEN)) + \
        struct.pack("!H", pn)


def crypto_frame(offset, data):
    return bytes([FRAME_CRYPTO]) + varint(offset) + varint(len(data)) + data


def initial(keys, dcid, scid, pn, frames, pad_to=0):
    """One protected Initial packet carrying frames, padded with PADDING frames so the whole
    packet is at least pad_to bytes."""
    overhead = len(long_header(PACKET_INITIAL, dcid, scid, b"", len(frames), pn)) + TAG_LEN
    payload = frames + bytes(max(0, pad_to - overhead - len(frames)))
    return protect(keys, long_header(PACKET_INITIAL, dcid, scid, b"", len(payload), pn), pn,
                   payload)


def client_initials(dcid, hello, first_chunk):
    """The client's first flight: hello's first first_chunk bytes in Initial 0, the rest in
    Initial 1, each alone in a datagram padded to 1200 bytes (Chrome pads to 1250)."""
    keys = initial_keys(dcid, b"client")
    cuts = [(0, hello[:first_chunk])]
    if len(hello) > first_chunk:
        cuts.append((first_chunk, hello[first_chunk:]))
    return [initial(keys, dcid, b"", pn, crypto_frame(offset, data), 1250)
            for pn, (offset, data) in enumerate(cuts)]


def server_initial(client_dcid, server_cid, server_hello):
    """The server's Initial: an ACK of the client's packets and its ServerHello. Sealed with
    the server keys from the client's original DCID, addressed to the client's (empty) CID."""
    ack = bytes([FRAME_ACK]) + varint(1) + varint(0) + varint(0) + varint(1)
    keys = initial_keys(client_dcid, b"server")
    return initial(keys, b"", server_cid, 0, ack + crypto_frame(0, server_hello))


def opaque_handshake(rng, dcid, scid, size):
    """A Handshake packet whose payload only the endpoints could read."""
    head = long_header(PACKET_HANDSHAKE, dcid, scid, b"", size, rng.randrange(1 << 16))
    return bytes([head[0] | rng.randrange(4) << 2]) + head[1:-PN_LEN] + \
        rng.randbytes(PN_LEN + size + TAG_LEN)


def short_packet(rng, dcid, size):
    """A 1-RTT packet (s17.3.1): fixed bit, masked bits random, then opaque bytes."""
    return bytes([0x40 | rng.randrange(0x40)]) + dcid + rng.randbytes(size)
