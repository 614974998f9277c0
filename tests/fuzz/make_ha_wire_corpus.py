#!/usr/bin/python3
"""Seeds for fuzz_ha_wire (tests/fuzz/corpus/ha_wire): one file per record type, and
frame sequences for each channel mode. Run from tests/fuzz: ./make_ha_wire_corpus.py"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'corpus', 'ha_wire')


def s(b):
    return bytes([len(b)]) + b


def frame(kind, body):
    return struct.pack('>HB', len(body) + 1, kind) + body


RECORDS = {
    'bind4': b'\x01' + s(b'vm1') + b'\x04' + bytes([192, 0, 2, 7]) + struct.pack('>I', 300)
    + s(b'example.com'),
    'bind6': b'\x01' + s(b'v') + b'\x06' + bytes(range(16)) + struct.pack('>I', 60) + s(b'a.b'),
    'budget': b'\x02' + s(b'vm1') + s(b'10.77.0.4') + struct.pack('>IIQB', 3600, 0, 123456, 0),
    'budget_max': b'\x02' + s(b'vm1') + s(b'*.example.org') + struct.pack('>IIQB', 60, 30, 9, 1),
    'grant': b'\x03' + s(b'vm1') + s(b'*.example.org') + struct.pack('>I', 60),
    'revoke': b'\x09' + s(b'vm1') + s(b'*.example.org'),
    'names': b'\x0a' + s(b'vm1') + struct.pack('>HB', 1, 9) + s(b'n5.sync.test'),
    'ack': b'\x04' + struct.pack('>Q', 7),
    'begin': b'\x05',
    'end': b'\x06' + struct.pack('>Q', 1000),
}

SEEDS = {'rec_' + k: b'\x00' + v for k, v in RECORDS.items()}
SEEDS['server_hello_confirm'] = (b'\x01' + frame(1, bytes(range(32)))
                                 + frame(3, bytes(24) + bytes(32)))
SEEDS['server_data_early'] = b'\x01' + frame(4, bytes(40))
SEEDS['client_reply'] = b'\x02' + frame(2, bytes(range(32)) + bytes(24) + bytes(32))
SEEDS['open_forged_data'] = b'\x03' + frame(4, RECORDS['bind4'] + bytes(17))

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), 'wb') as f:
        f.write(data)
