#!/usr/bin/env python3
"""Independent reference for package wire's test vectors.

Builds RoCEv2, native InfiniBand, IB link flow-control and PFC packets byte by
byte with struct.pack and computes their checksums with zlib.crc32 and a
bit-serial CRC-16, sharing no code with the Go package. The Go test
(TestIndependentVectors in crc_test.go) builds the same packets with the Go
API and requires identical bytes.

Self-checks first reproduce values computed by other parties:
  * a RoCEv2 CNP captured on a Mellanox ConnectX-4 Lx whose ICRC bytes are
    82 fd 00 2a (quoted in scapy's test/contrib/roce.uts, "RoCE CNP captured
    on ConnectX-4 Lx"), and its IPv4 header checksum 0x9161;
  * scapy's UC SEND Only example packet (same file): IPv4 checksum 0xb4d5,
    UDP checksum 0xaca2, ICRC bytes 78 f3 53 f3.

Regenerate with:  python3 wire/testdata/vectors.py > wire/testdata/vectors.txt
"""
import ipaddress
import struct
import sys
import zlib

FF8 = b"\xff" * 8


def ip4_checksum(hdr):
    s = 0
    for i in range(0, len(hdr), 2):
        if i == 10:
            continue
        s += (hdr[i] << 8) | hdr[i + 1]
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ones_sum(data):
    if len(data) % 2:
        data += b"\x00"
    s = 0
    for i in range(0, len(data), 2):
        s += (data[i] << 8) | data[i + 1]
    return s


def udp_checksum(src, dst, seg):
    seg = seg[:6] + b"\x00\x00" + seg[8:]
    s = ones_sum(src) + ones_sum(dst) + 17 + len(seg) + ones_sum(seg)
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    c = (~s) & 0xFFFF
    return c or 0xFFFF


def roce_icrc(ip_pkt):
    """ICRC over 8x0xFF + IP..pad with the RoCEv2 annex A17 masks."""
    b = bytearray(ip_pkt)
    if b[0] >> 4 == 4:
        hl = (b[0] & 0xF) * 4
        b[1] = 0xFF  # TOS
        b[8] = 0xFF  # TTL
        b[10:12] = b"\xff\xff"  # header checksum
    else:
        hl = 40
        b[0] |= 0x0F  # traffic class, high nibble
        b[1:4] = b"\xff\xff\xff"  # traffic class low nibble + flow label
        b[7] = 0xFF  # hop limit
    b[hl + 6:hl + 8] = b"\xff\xff"  # UDP checksum
    b[hl + 8 + 4] = 0xFF  # BTH FECN/BECN/resv6
    return zlib.crc32(FF8 + bytes(b)) & 0xFFFFFFFF


def ib_icrc(pkt):
    """ICRC of a native IB packet, LRH..pad (IBA 7.8.1 masks)."""
    b = bytearray(pkt)
    lnh = b[1] & 3
    if lnh == 2:
        b[0] |= 0xF0  # VL
        bth = 8
    elif lnh == 3:
        b[0:8] = FF8  # whole LRH
        b[8] |= 0x0F  # TClass high nibble
        b[9:12] = b"\xff\xff\xff"  # TClass low nibble + FlowLabel
        b[15] = 0xFF  # HopLmt
        bth = 48
    else:
        raise ValueError("raw packet")
    b[bth + 4] = 0xFF  # resv8a
    return zlib.crc32(bytes(b)) & 0xFFFFFFFF


def rev(v, width):
    r = 0
    for _ in range(width):
        r = (r << 1) | (v & 1)
        v >>= 1
    return r


def crc16_ib(data):
    """IBA VCRC: poly 0x100B, init 0xFFFF, complemented, LSB-first bit order.

    Computed MSB-first on bit-reversed input bytes (the textbook shift
    register), then bit-reversed: a different path from the Go table.
    """
    c = 0xFFFF
    for byte in data:
        c ^= rev(byte, 8) << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x100B) & 0xFFFF if c & 0x8000 else (c << 1) & 0xFFFF
    return rev(c, 16) ^ 0xFFFF


def le32(v):
    return struct.pack("<I", v)


def bth(op, pkey, dqp, psn, pad=0, se=0, m=0, fecn=0, becn=0, ackreq=0):
    return struct.pack(">BBHII", op, (se << 7) | (m << 6) | (pad << 4), pkey,
                       (fecn << 31) | (becn << 30) | dqp, (ackreq << 31) | psn)


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def eth_frame(body):
    if len(body) < 60:
        body += b"\x00" * (60 - len(body))
    return body + le32(zlib.crc32(body) & 0xFFFFFFFF)


def payload(n):
    return bytes((i * 7 + 1) & 0xFF for i in range(n))


def self_checks():
    cap = bytes.fromhex(
        "e41d2dab2bc27cfe90643b32080045c2003c718c400040119161"
        "0a0011010a001201000012b700280000" "8100ffff400001180000000000000000"
        "00000000000000000000000082fd002a")
    ip = cap[14:]
    assert ip4_checksum(ip[:20]) == 0x9161
    assert le32(roce_icrc(ip[:-4])) == bytes.fromhex("82fd002a"), "ConnectX CNP ICRC"

    pl = b"F0\x81\x8b\xe2\x895\xd9\x0e\x9a\x95PT\x01\xbe\x88^P\x00\x00"
    b = bth(0x24, 0xFFFF, 211, 13571856, pad=2, m=1)
    udp_len = 8 + len(b) + len(pl) + 4
    iph = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0x01, 20 + udp_len, 1144, 0x4000, 64, 17, 0,
                                bytes([192, 168, 0, 7]), bytes([192, 168, 0, 7])))
    iph[10:12] = struct.pack(">H", ip4_checksum(iph))
    assert bytes(iph[10:12]) == b"\xb4\xd5"
    udp = struct.pack(">HHHH", 49152, 4791, udp_len, 0)
    icrc = roce_icrc(bytes(iph) + udp + b + pl)
    assert le32(icrc) == bytes.fromhex("78f353f3"), "scapy UC ICRC"
    seg = udp + b + pl + le32(icrc)
    assert udp_checksum(iph[12:16], iph[16:20], seg) == 0xACA2

    # The shift-register CRC-16 must equal a direct reflected (0xD008) one.
    def refl(data):
        c = 0xFFFF
        for x in data:
            c ^= x
            for _ in range(8):
                c = (c >> 1) ^ 0xD008 if c & 1 else c >> 1
        return c ^ 0xFFFF
    for d in (b"", b"123456789", payload(77)):
        assert crc16_ib(d) == refl(d)


def roce_ipv6_write_first():
    src, dst = ipaddress.ip_address("fd00::1").packed, ipaddress.ip_address("fd00::2").packed
    pl = payload(29)
    pad = (-len(pl)) % 4
    b = bth(0x06, 0xFFFF, 0x11, 0x100, pad=pad)
    reth = struct.pack(">QII", 0x00007F0000001000, 0x1234ABCD, 4096)
    udp_len = 8 + len(b) + len(reth) + len(pl) + pad + 4
    tc = (26 << 2) | 2
    ip6 = struct.pack(">IHBB", (6 << 28) | (tc << 20) | 0x12345, udp_len, 17, 64) + src + dst
    udp = struct.pack(">HHHH", 0xC000, 4791, udp_len, 0)
    body = udp + b + reth + pl + b"\x00" * pad
    icrc = roce_icrc(ip6 + body)
    seg = body + le32(icrc)
    seg = seg[:6] + struct.pack(">H", udp_checksum(src, dst, seg)) + seg[8:]
    eth = mac("02:00:00:00:00:02") + mac("02:00:00:00:00:01") + struct.pack(">HHH", 0x8100, (3 << 13) | 100, 0x86DD)
    return eth_frame(eth + ip6 + seg)


def roce_ipv4_ack():
    b = bth(0x11, 0xFFFF, 0x22, 0x100)
    aeth = struct.pack(">I", (0x1F << 24) | 5)
    udp_len = 8 + len(b) + len(aeth) + 4
    iph = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 26 << 2, 20 + udp_len, 0x1234, 0x4000, 64, 17, 0,
                                bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])))
    iph[10:12] = struct.pack(">H", ip4_checksum(iph))
    udp = struct.pack(">HHHH", 0xC001, 4791, udp_len, 0)
    ip = bytes(iph) + udp + b + aeth
    eth = mac("02:00:00:00:00:01") + mac("02:00:00:00:00:02") + struct.pack(">H", 0x0800)
    return eth_frame(eth + ip + le32(roce_icrc(ip)))


def ib_local_write_first():
    pl = payload(10)
    pad = (-len(pl)) % 4
    rest = bth(0x06, 0xFFFF, 0x11, 0x100, pad=pad, ackreq=1) + struct.pack(">QII", 0x1000, 0x42, 10) + pl + b"\x00" * pad
    pktlen = (8 + len(rest) + 4) // 4
    lrh = struct.pack(">BBHHH", (0 << 4) | 0, (0 << 4) | 2, 0x0002, pktlen, 0x0001)
    p = lrh + rest
    p += le32(ib_icrc(p))
    return p + struct.pack("<H", crc16_ib(p))


def ib_global_ack():
    rest = bth(0x11, 0xFFFF, 0x22, 0x200) + struct.pack(">I", (0x1F << 24) | 7)
    paylen = len(rest) + 4
    pktlen = (8 + 40 + paylen) // 4
    lrh = struct.pack(">BBHHH", (1 << 4) | 0, (1 << 4) | 3, 0x0003, pktlen, 0x0004)
    sgid = ipaddress.ip_address("fe80::1").packed
    dgid = ipaddress.ip_address("fe80::2").packed
    grh = struct.pack(">IHBB", 6 << 28, paylen, 0x1B, 255) + sgid + dgid
    p = lrh + grh + rest
    p += le32(ib_icrc(p))
    return p + struct.pack("<H", crc16_ib(p))


def ib_flow_control():
    body = struct.pack(">HH", (0 << 12) | 0x123, (2 << 12) | 0x456)
    return body + struct.pack("<H", crc16_ib(body))


def pfc_pause():
    q = [0, 0, 0, 0xFFFF, 0, 0, 0, 0]
    body = mac("01:80:c2:00:00:01") + mac("02:00:00:00:00:01") + struct.pack(">HHH", 0x8808, 0x0101, 0x0008)
    body += struct.pack(">8H", *q)
    return eth_frame(body)


def main():
    self_checks()
    out = sys.stdout
    out.write("# generated by wire/testdata/vectors.py; name hex\n")
    for name, fn in [("roce_ipv6_write_first", roce_ipv6_write_first), ("roce_ipv4_ack", roce_ipv4_ack),
                     ("ib_local_write_first", ib_local_write_first), ("ib_global_ack", ib_global_ack),
                     ("ib_flow_control", ib_flow_control), ("pfc_pause", pfc_pause)]:
        out.write("%s %s\n" % (name, fn().hex()))


if __name__ == "__main__":
    main()
