#!/usr/bin/env python3
"""Send one `hello` to cordon-launcherd and print its reply (docs/PROTOCOL.md section 1).

    launcherd-hello.py SOCKET [TIMEOUT-SECONDS]

A frame is the magic "CRD1" (u32 LE 0x31445243), the payload length (u32 LE) and that many
bytes of JSON, one frame per SOCK_SEQPACKET record. Exit status 0 with the reply's JSON on
stdout; 1 (message on stderr) when the socket cannot be reached or the reply is not a frame.
"""
import json
import socket
import struct
import sys

MAGIC = 0x31445243


def main():
    path = sys.argv[1]
    timeout = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(timeout)
    try:
        s.connect(path)
        body = json.dumps({"type": "hello", "seq": 1, "version": 1}).encode()
        s.send(struct.pack("<II", MAGIC, len(body)) + body)
        rec = s.recv(1 << 20)
    except OSError as e:
        print("launcherd-hello: %s: %s" % (path, e), file=sys.stderr)
        return 1
    if len(rec) < 8:
        print("launcherd-hello: short record (%d bytes)" % len(rec), file=sys.stderr)
        return 1
    magic, n = struct.unpack("<II", rec[:8])
    if magic != MAGIC or n != len(rec) - 8:
        print("launcherd-hello: bad frame (magic %#x, length %d of %d)" % (magic, n, len(rec) - 8),
              file=sys.stderr)
        return 1
    print(json.dumps(json.loads(rec[8:]), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
