"""A QUIC client Initial (RFC 9000 s17.2.2, RFC 9001 s5; version 2, RFC 9369; draft-29)
carrying a real TLS 1.3 ClientHello for a given SNI, built with Python's ssl and the
cryptography package: enough of a QUIC client to exercise `quic: inspect` from a VM, and
enough of a server (read_initial) for the lab's UDP listeners to log the name they read.
Run inside a VM:
    python3 quic_initial.py ADDR SNI   -> prints "echo", "unreachable" or "timeout"
    python3 quic_initial.py ADDR PORT STEP...
        -> "port N" (the client's), then the STEPs sent in turn from one socket (one
           4-tuple), a line each as above. STEP is VERSION:SNI, an Initial with a new DCID
           (VERSION v1, v2 or d29; retry: v1 with a token, as after a Retry), or KIND:SIZE, SIZE bytes that look like QUIC and are
           not: grease (a long header of version 0x1a2a3a4a), short (a short header), rtp
           (first byte 0x80, as RTP's). A STEP starting with "!" is sent without waiting
           for an answer ("sent")."""
import os
import socket
import ssl
import struct
import sys

from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from tls_start import tls_start

SALT_V1 = bytes.fromhex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a")   # RFC 9001 s5.2
# version: (salt, label prefix, first byte of an Initial with a 1-byte packet number)
VERSIONS = {
    0x00000001: (SALT_V1, b"quic ", 0xc0),
    0x6b3343cf: (bytes.fromhex("0dede3def700a6db819381be6e269dcbf9bd2ed9"), b"quicv2 ", 0xd0),
    0xff00001d: (bytes.fromhex("afbfec289993d24c9e9786f19c6111e04390a899"), b"quic ", 0xc0),
}
NAMES = {"v1": 0x00000001, "v2": 0x6b3343cf, "d29": 0xff00001d}
FAKES = {"grease": b"\xc0\x1a\x2a\x3a\x4a\x08", "short": b"\x40", "rtp": b"\x80\x60"}


def _hmac(key, data):
    h = hmac.HMAC(key, hashes.SHA256())
    h.update(data)
    return h.finalize()


def expand_label(secret, label, length):
    full = b"tls13 " + label
    info = struct.pack(">HB", length, len(full)) + full + b"\x00"
    out, t, i = b"", b"", 1
    while len(out) < length:
        t = _hmac(secret, t + info + bytes([i]))
        out, i = out + t, i + 1
    return out[:length]


def client_hello(sni):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    record = tls_start(sni, ctx)[3]
    return record[5:5 + struct.unpack(">H", record[3:5])[0]]    # the handshake message


def varint2(n):
    return struct.pack(">H", 0x4000 | n)


def keys(version, dcid):
    """The client's Initial key, iv and header protection key for version and dcid."""
    salt, prefix, _ = VERSIONS[version]
    client = expand_label(_hmac(salt, dcid), b"client in", 32)
    return [expand_label(client, prefix + w, n) for w, n in ((b"key", 16), (b"iv", 12),
                                                              (b"hp", 16))]


def initial(sni, dcid=None, scid=None, version=1, token=b""):
    dcid, scid = dcid or os.urandom(8), scid or os.urandom(8)
    key, iv, hp = keys(version, dcid)
    hello = client_hello(sni)
    frames = b"\x06\x00" + varint2(len(hello)) + hello          # CRYPTO, offset 0
    head = (bytes([VERSIONS[version][2]]) + struct.pack(">I", version) + bytes([len(dcid)]) +
            dcid + bytes([len(scid)]) + scid + bytes([len(token)]) + token)
    pn = b"\x00"
    pad = max(0, 1200 - (len(head) + 2 + len(pn) + len(frames) + 16))
    frames += b"\x00" * pad                                      # PADDING
    header = head + varint2(len(pn) + len(frames) + 16) + pn
    nonce = iv[:-1] + bytes([iv[-1] ^ 0])
    ct = AESGCM(key).encrypt(nonce, frames, header)
    sample = ct[4 - len(pn):4 - len(pn) + 16]
    enc = Cipher(algorithms.AES(hp), modes.ECB()).encryptor()
    mask = enc.update(sample) + enc.finalize()
    header = bytearray(header)
    header[0] ^= mask[0] & 0x0f
    header[-1] ^= mask[1]
    return bytes(header) + ct


def _varint(b, i):
    n = 1 << (b[i] >> 6)
    v = b[i] & 0x3f
    for k in range(1, n):
        v = v << 8 | b[i + k]
    return v, i + n


def _sni(hello):
    """The host_name of a ClientHello (its handshake header included), or ""."""
    i = 4 + 2 + 32
    i += 1 + hello[i]                                           # session id
    i += 2 + struct.unpack_from(">H", hello, i)[0]              # cipher suites
    i += 1 + hello[i]                                           # compression
    end = i + 2 + struct.unpack_from(">H", hello, i)[0]
    i += 2
    while i + 4 <= end:
        typ, n = struct.unpack_from(">HH", hello, i)
        if typ == 0:
            return hello[i + 9:i + 9 + struct.unpack_from(">H", hello, i + 7)[0]].decode()
        i += 4 + n
    return ""


def read_initial(data):
    """What a server that does not know the DCID reads from the datagram's first packet:
    (version, SNI) when it is an Initial of a version known here whose CRYPTO data from
    offset 0 holds a whole ClientHello, else None."""
    try:
        version = struct.unpack_from(">I", data, 1)[0]
        if data[0] & 0xc0 != 0xc0 or version not in VERSIONS or \
                (data[0] >> 4 & 3) != (VERSIONS[version][2] >> 4 & 3):
            return None
        i = 5
        dcid = data[i + 1:i + 1 + data[i]]
        i += 1 + data[i]
        i += 1 + data[i]                                        # scid
        token, i = _varint(data, i)
        length, i = _varint(data, i + token)
        key, iv, hp = keys(version, dcid)
        enc = Cipher(algorithms.AES(hp), modes.ECB()).encryptor()
        mask = enc.update(data[i + 4:i + 20]) + enc.finalize()
        first = data[0] ^ (mask[0] & 0x0f)
        pn_len = (first & 3) + 1
        pn = bytes(b ^ m for b, m in zip(data[i:i + pn_len], mask[1:]))
        header = bytes([first]) + data[1:i] + pn
        nonce = bytearray(iv)
        for k, b in enumerate(reversed(pn)):
            nonce[11 - k] ^= b
        plain = AESGCM(key).decrypt(bytes(nonce), data[i + pn_len:i + length], header)
        j, crypto = 0, {}
        while j < len(plain):
            if plain[j] in (0, 1):
                j += 1
                continue
            if plain[j] != 6:
                return None
            off, j = _varint(plain, j + 1)
            n, j = _varint(plain, j)
            crypto[off], j = plain[j:j + n], j + n
        stream = b""
        while len(stream) in crypto:
            stream += crypto[len(stream)]
        return version, _sni(stream) if len(stream) >= 4 and stream[0] == 1 else None
    except Exception:       # anything else is nothing a server opens a connection with
        return None


def _send(s, data):
    s.send(data)
    try:
        s.recv(4096)
        return "echo"
    except ConnectionRefusedError:
        return "unreachable"
    except socket.timeout:
        return "timeout"


def main(argv):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(20)            # a cap: an echo or a port unreachable is expected
    if len(argv) == 2:
        s.connect((argv[0], 443))
        print(_send(s, initial(argv[1]) if argv[1] != "-" else
                    b"\x40" + os.urandom(1199)))                # "-": not QUIC
        return
    s.connect((argv[0], int(argv[1])))
    print("port", s.getsockname()[1], flush=True)
    for step in argv[2:]:
        kind, arg = step.lstrip("!").split(":", 1)
        if kind == "retry":     # as after a Retry: a token and the DCID the server chose
            data = initial(arg, token=os.urandom(32))
        elif kind in NAMES:
            data = initial(arg, version=NAMES[kind])
        else:
            data = (FAKES[kind] + bytes(int(arg)))[:int(arg)]
        if step.startswith("!"):
            s.send(data)
            print("sent", flush=True)
        else:
            print(_send(s, data), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
