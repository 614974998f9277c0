"""A QUIC v1 client Initial (RFC 9000 s17.2.2, RFC 9001 s5) carrying a real TLS 1.3
ClientHello for a given SNI, built with Python's ssl and the cryptography package: enough
of a QUIC client to exercise `quic: inspect` from a VM. Run inside a VM:
    python3 quic_initial.py ADDR SNI   -> prints "echo", "unreachable" or "timeout"."""
import os
import socket
import ssl
import struct
import sys

from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SALT_V1 = bytes.fromhex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a")   # RFC 9001 s5.2


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
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    t = ctx.wrap_bio(inc, out, server_hostname=sni)
    try:
        t.do_handshake()
    except ssl.SSLWantReadError:
        pass
    record = out.read()
    return record[5:5 + struct.unpack(">H", record[3:5])[0]]    # the handshake message


def varint2(n):
    return struct.pack(">H", 0x4000 | n)


def initial(sni, dcid=None, scid=None):
    dcid, scid = dcid or os.urandom(8), scid or os.urandom(8)
    client = expand_label(_hmac(SALT_V1, dcid), b"client in", 32)
    key, iv = expand_label(client, b"quic key", 16), expand_label(client, b"quic iv", 12)
    hp = expand_label(client, b"quic hp", 16)
    hello = client_hello(sni)
    frames = b"\x06\x00" + varint2(len(hello)) + hello          # CRYPTO, offset 0
    head = (b"\xc0" + struct.pack(">I", 1) + bytes([len(dcid)]) + dcid +
            bytes([len(scid)]) + scid + b"\x00")                 # no token
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


def main(addr, sni):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(20)            # a cap: an echo or a port unreachable is expected
    s.connect((addr, 443))
    s.send(initial(sni) if sni != "-" else b"\x40" + os.urandom(1199))   # "-": not QUIC
    try:
        s.recv(2048)
        print("echo")
    except ConnectionRefusedError:
        print("unreachable")
    except socket.timeout:
        print("timeout")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
