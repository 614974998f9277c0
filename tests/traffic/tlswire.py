"""TLS 1.3 ClientHellos (RFC 8446 s4.1.2) in the shapes real clients send, and the server's
side of a handshake as a middlebox sees it (a ServerHello, then opaque records).

Styles: "chrome" (GREASE, extensions in a new order every time, ECH GREASE, BoringSSL's
padding), "firefox" (fixed order, two key shares), "openssl" (curl, pip, python) and "go"
(crypto/tls). A post-quantum hello adds an X25519MLKEM768 key share (1,216 bytes), which
takes the record past one TCP segment.
"""
import struct

GREASE = [0x0A0A + 0x1010 * i for i in range(16)]          # RFC 8701
X25519, SECP256R1, SECP384R1, SECP521R1, X25519MLKEM768 = 0x001D, 0x0017, 0x0018, 0x0019, 0x11EC
FFDHE2048 = 0x0100
MLKEM768_CLIENT_SHARE = 1184 + 32    # ML-KEM-768 encapsulation key, then the X25519 share
MLKEM768_SERVER_SHARE = 1088 + 32    # ML-KEM-768 ciphertext, then the X25519 share
TLS13_SUITES = [0x1301, 0x1302, 0x1303]
ECDHE_SUITES = [0xC02B, 0xC02F, 0xC02C, 0xC030, 0xCCA9, 0xCCA8]
LEGACY_SUITES = [0xC013, 0xC014, 0x009C, 0x009D, 0x002F, 0x0035]
CHROME_SIGALGS = [0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601]
FIREFOX_SIGALGS = [0x0403, 0x0503, 0x0603, 0x0804, 0x0805, 0x0806, 0x0401, 0x0501, 0x0601,
                   0x0203, 0x0201]
OPENSSL_SIGALGS = [0x0905, 0x0906, 0x0904, 0x0403, 0x0503, 0x0603, 0x0807, 0x0808, 0x0804,
                   0x0805, 0x0806, 0x0401, 0x0501, 0x0601, 0x0303, 0x0203, 0x0301, 0x0201]
GO_SIGALGS = [0x0804, 0x0403, 0x0807, 0x0805, 0x0806, 0x0401, 0x0501, 0x0601, 0x0503, 0x0603]

HANDSHAKE, CHANGE_CIPHER_SPEC, ALERT, APPLICATION_DATA = 22, 20, 21, 23


def u16(v):
    return struct.pack("!H", v)


def vec8(b):
    return bytes([len(b)]) + b


def vec16(b):
    return u16(len(b)) + b


def u16s(values):
    return b"".join(u16(v) for v in values)


def ext(ext_type, body):
    return u16(ext_type) + vec16(body)


def server_name(host):
    """RFC 6066 s3: one host_name entry."""
    return ext(0x0000, vec16(b"\x00" + vec16(host.encode())))


def alpn(protocols):
    return ext(0x0010, vec16(b"".join(vec8(p.encode()) for p in protocols)))


def groups(values):
    return ext(0x000A, vec16(u16s(values)))


def key_shares(shares):
    return ext(0x0033, vec16(b"".join(u16(g) + vec16(k) for g, k in shares)))


def versions(values):
    return ext(0x002B, vec8(u16s(values)))


def ech_grease(rng, payload_sizes):
    """An outer ECH extension with no real config behind it (draft-ietf-tls-esni s6.2)."""
    body = b"\x00" + u16(0x0001) + u16(0x0001) + bytes([rng.randrange(256)]) + \
        vec16(rng.randbytes(32)) + vec16(rng.randbytes(rng.choice(payload_sizes)))
    return ext(0xFE0D, body)


def quic_transport_parameters():
    """RFC 9000 s18: a few varint parameters, as a browser sends them."""
    def varint(v):
        return bytes([v]) if v < 0x40 else u16(0x4000 | v) if v < 0x4000 else \
            struct.pack("!I", 0x80000000 | v)
    params = [(0x04, 15728640), (0x05, 6291456), (0x06, 6291456), (0x07, 6291456),
              (0x08, 100), (0x09, 103), (0x01, 30000), (0x03, 1472)]
    body = b"".join(varint(k) + varint(len(varint(v))) + varint(v) for k, v in params)
    return ext(0x0039, body + varint(0x0F) + varint(0))     # initial_source_connection_id: empty


def hello_shares(rng, pq, extra=()):
    shares = [(X25519MLKEM768, rng.randbytes(MLKEM768_CLIENT_SHARE))] if pq else []
    return shares + [(X25519, rng.randbytes(32))] + list(extra)


def chrome_extensions(rng, host, pq, quic):
    grease = rng.sample(GREASE, 3)
    pq_group = [X25519MLKEM768] if pq else []
    shares = hello_shares(rng, pq)
    if not quic:
        shares.insert(0, (grease[0], b"\x00"))
    exts = [
        server_name(host),
        ext(0x0017, b""),                                   # extended_master_secret
        ext(0xFF01, b"\x00"),                               # renegotiation_info
        groups(([] if quic else [grease[0]]) + pq_group + [X25519, SECP256R1, SECP384R1]),
        ext(0x000B, b"\x01\x00"),                           # ec_point_formats
        ext(0x0023, b""),                                   # session_ticket
        alpn(["h3"] if quic else ["h2", "http/1.1"]),
        ext(0x0005, b"\x01\x00\x00\x00\x00"),               # status_request
        ext(0x000D, vec16(u16s(CHROME_SIGALGS))),
        ext(0x0012, b""),                                   # signed_certificate_timestamp
        key_shares(shares),
        ext(0x002D, b"\x01\x01"),                           # psk_key_exchange_modes
        versions(([] if quic else [grease[1]]) + [0x0304] + ([] if quic else [0x0303])),
        ext(0x001B, b"\x02\x00\x02"),                       # compress_certificate: brotli
        ext(0x44CD, vec16(vec8(b"h3" if quic else b"h2"))),  # application_settings
        ech_grease(rng, [144, 176, 208, 240]),
    ]
    if quic:
        exts.append(quic_transport_parameters())
    rng.shuffle(exts)                 # Chrome 110 on: a new extension order every hello
    if quic:
        return exts
    return [ext(grease[2], b"")] + exts + [ext(grease[2] ^ 0x1010, b"\x00")]


def firefox_extensions(rng, host, pq):
    shares = hello_shares(rng, pq, [(SECP256R1, b"\x04" + rng.randbytes(64))])
    return [
        server_name(host), ext(0x0017, b""), ext(0xFF01, b"\x00"),
        groups(([X25519MLKEM768] if pq else []) + [X25519, SECP256R1, SECP384R1, SECP521R1,
                                                   FFDHE2048]),
        ext(0x000B, b"\x01\x00"), ext(0x0023, b""), alpn(["h2", "http/1.1"]),
        ext(0x0005, b"\x01\x00\x00\x00\x00"),
        ext(0x0022, vec16(u16s([0x0403, 0x0503, 0x0603, 0x0203]))),  # delegated_credentials
        key_shares(shares), versions([0x0304, 0x0303]),
        ext(0x000D, vec16(u16s(FIREFOX_SIGALGS))), ext(0x002D, b"\x01\x01"),
        ext(0x001C, u16(0x4001)),                           # record_size_limit
        ech_grease(rng, [239, 271]),
    ]


def openssl_extensions(rng, host, pq):
    exts = [server_name(host), ext(0x000B, b"\x03\x00\x01\x02"),
            groups(([X25519MLKEM768] if pq else []) + [X25519, SECP256R1, SECP384R1,
                                                       SECP521R1, FFDHE2048]),
            ext(0x0023, b"")]
    if rng.random() < 0.7:            # curl asks for h2; pip and python's urllib do not
        exts.append(alpn(rng.choice([["h2", "http/1.1"], ["http/1.1"]])))
    return exts + [ext(0x0016, b""), ext(0x0017, b""), ext(0x000D, vec16(u16s(OPENSSL_SIGALGS))),
                   versions([0x0304, 0x0303]), ext(0x002D, b"\x01\x01"),
                   key_shares(hello_shares(rng, pq))]


def go_extensions(rng, host, pq):
    return [server_name(host), ext(0x0005, b"\x01\x00\x00\x00\x00"),
            groups(([X25519MLKEM768] if pq else []) + [X25519, SECP256R1, SECP384R1, SECP521R1]),
            ext(0x000B, b"\x01\x00"), ext(0x000D, vec16(u16s(GO_SIGALGS))),
            ext(0xFF01, b"\x00"), ext(0x0012, b""), alpn(["h2", "http/1.1"]),
            versions([0x0304, 0x0303]), key_shares(hello_shares(rng, pq))]


def suites_of(style, rng, quic):
    if quic:
        return TLS13_SUITES
    if style == "chrome":
        return [rng.choice(GREASE)] + TLS13_SUITES + ECDHE_SUITES + LEGACY_SUITES
    if style == "firefox":
        return [0x1301, 0x1303, 0x1302] + ECDHE_SUITES + LEGACY_SUITES
    if style == "openssl":
        return [0x1302, 0x1303, 0x1301] + ECDHE_SUITES + [0x009F, 0x009E, 0x00FF]
    return ECDHE_SUITES + LEGACY_SUITES + TLS13_SUITES


def client_hello_body(random, session_id, suites, exts):
    return u16(0x0303) + random + vec8(session_id) + vec16(u16s(suites)) + b"\x01\x00" + \
        vec16(b"".join(exts))


def boringssl_pad(exts, body_len):
    """BoringSSL pads a hello whose length would be in (255, 512) up to 512 bytes, before
    the last extension: some middleboxes hang on those lengths (RFC 7685 s3)."""
    total = body_len + 4
    if not 0xFF < total < 0x200:
        return exts
    return exts[:-1] + [ext(0x0015, bytes(max(1, 0x200 - total - 4)))] + exts[-1:]


def client_hello(rng, host, style, pq, quic=False):
    """The Handshake message (type 1, with its 4-byte header) of one ClientHello."""
    if style == "chrome" or quic:
        exts = chrome_extensions(rng, host, pq, quic)
    elif style == "firefox":
        exts = firefox_extensions(rng, host, pq)
    elif style == "openssl":
        exts = openssl_extensions(rng, host, pq)
    else:
        exts = go_extensions(rng, host, pq)
    random, session_id = rng.randbytes(32), b"" if quic else rng.randbytes(32)
    suites = suites_of(style, rng, quic)
    body = client_hello_body(random, session_id, suites, exts)
    if style == "chrome" and not quic:
        body = client_hello_body(random, session_id, suites, boringssl_pad(exts, len(body)))
    return b"\x01" + struct.pack("!I", len(body))[1:] + body


def record(content_type, body, version=0x0303):
    return bytes([content_type]) + u16(version) + vec16(body)


def hello_record(handshake):
    """A ClientHello's record: legacy_record_version 0x0301 for the first flight (s5.1)."""
    return record(HANDSHAKE, handshake, 0x0301)


def server_hello(rng, pq):
    share = (X25519MLKEM768, rng.randbytes(MLKEM768_SERVER_SHARE)) if pq else \
        (X25519, rng.randbytes(32))
    exts = ext(0x002B, u16(0x0304)) + ext(0x0033, u16(share[0]) + vec16(share[1]))
    body = u16(0x0303) + rng.randbytes(32) + vec8(rng.randbytes(32)) + u16(0x1301) + b"\x00" + \
        vec16(exts)
    return b"\x02" + struct.pack("!I", len(body))[1:] + body


def server_flight(rng, pq):
    """ServerHello, the compatibility CCS, then EncryptedExtensions to Finished as opaque
    application_data records (RFC 8446 s5.2)."""
    return record(HANDSHAKE, server_hello(rng, pq)) + record(CHANGE_CIPHER_SPEC, b"\x01") + \
        record(APPLICATION_DATA, rng.randbytes(rng.randrange(2400, 5400)))


def opaque_records(rng, size, max_record=16384):
    """size bytes of application data as TLS records of at most max_record plaintext bytes
    (each carries 17 bytes more: content type and AEAD tag)."""
    out = []
    while size > 0:
        n = min(size, max_record)
        out.append(record(APPLICATION_DATA, rng.randbytes(n + 17)))
        size -= n
    return b"".join(out)
