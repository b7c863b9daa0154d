#!/usr/bin/env python3
"""A launcher-channel client for tests/integration/denials.sh (docs/PROTOCOL.md section 1).

    denials.py SOCKET PLAN.json [--fd N=PATH]... [--linger SECONDS]
    denials.py --audit [ENABLED BACKLOG-LIMIT]

The second form reads (and with both values first sets) the kernel's audit_enabled and
audit_backlog_limit over NETLINK_AUDIT (AUDIT_GET, AUDIT_SET: root) and prints them as
"ENABLED BACKLOG-LIMIT LOST"; exit status 2 when the kernel has no audit.

Says hello, spawns PLAN (fds 0-2 are our stdin, stdout and stderr; --fd N=PATH opens PATH with
O_PATH as message fd N), reads every message until the sandbox's "exit" and LINGER seconds
after it (denials may trail the exit), and prints each "denial" message, then the "exit" (or
"error") message, one JSON object per line on stdout. Exit status 0 when the spawn got an
answer, 1 otherwise.
"""
import json
import os
import socket
import struct
import sys
import time

MAGIC = 0x31445243


def send(s, msg, fds=()):
    body = json.dumps(msg).encode()
    frame = struct.pack("<II", MAGIC, len(body)) + body
    if fds:
        socket.send_fds(s, [frame], list(fds))
    else:
        s.send(frame)


def recv(s):
    rec, fds, _flags, _addr = socket.recv_fds(s, 1 << 20, 64)
    for fd in fds:
        os.close(fd)
    if len(rec) == 0:
        return None
    magic, n = struct.unpack("<II", rec[:8])
    if magic != MAGIC or n != len(rec) - 8:
        raise ValueError("bad frame")
    return json.loads(rec[8:])


NETLINK_AUDIT = 9
AUDIT_GET = 1000
AUDIT_SET = 1001
NLMSG_ERROR = 2


def audit(value, backlog):
    """The kernel's (audit_enabled, audit_backlog_limit, lost), after setting the first two
    unless value is None."""
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_AUDIT)
    s.settimeout(5)
    if value is not None:
        # struct audit_status: mask (AUDIT_STATUS_ENABLED | AUDIT_STATUS_BACKLOG_LIMIT),
        # enabled, failure, pid, rate_limit, backlog_limit, then zeros
        body = struct.pack("=10I", 1 | 16, value, 0, 0, 0, backlog, 0, 0, 0, 0)
        s.sendto(struct.pack("=IHHII", 16 + len(body), AUDIT_SET, 1 | 4, 1, 0) + body, (0, 0))
        ack = s.recv(8192)
        _n, t, _f, _seq, _pid = struct.unpack_from("=IHHII", ack)
        if t == NLMSG_ERROR and struct.unpack_from("=i", ack, 16)[0] != 0:
            raise OSError(-struct.unpack_from("=i", ack, 16)[0], "AUDIT_SET")
    s.sendto(struct.pack("=IHHII", 16, AUDIT_GET, 1, 2, 0), (0, 0))
    while True:
        ans = s.recv(8192)
        _n, t, _f, _seq, _pid = struct.unpack_from("=IHHII", ans)
        if t == NLMSG_ERROR and struct.unpack_from("=i", ans, 16)[0] != 0:
            raise OSError(-struct.unpack_from("=i", ans, 16)[0], "AUDIT_GET")
        if t == AUDIT_GET:
            st = struct.unpack_from("=8I", ans, 16)
            return st[1], st[5], st[6]


def emit(m):
    """One JSON line in one write(): the sandboxed command writes to the same file (our stdout
    is its stdout), and a line written in two parts could be split by its output."""
    os.write(1, (json.dumps(m, sort_keys=True) + "\n").encode())


def main():
    args = sys.argv[1:]
    if args and args[0] == "--audit":
        try:
            v = audit(int(args[1]), int(args[2])) if len(args) > 2 else audit(None, None)
            print("%d %d %d" % v)
        except OSError as e:
            print("denials.py: audit: %s" % e, file=sys.stderr)
            return 2
        return 0
    path, plan_path = args[0], args[1]
    linger = 1.0
    fds = [0, 1, 2]
    i = 2
    while i < len(args):
        if args[i] == "--fd":
            n, p = args[i + 1].split("=", 1)
            if int(n) != len(fds):
                print("denials.py: --fd indices must be contiguous", file=sys.stderr)
                return 1
            fds.append(os.open(p, os.O_PATH | os.O_CLOEXEC))
            i += 2
        elif args[i] == "--linger":
            linger = float(args[i + 1])
            i += 2
        else:
            print("denials.py: unknown option " + args[i], file=sys.stderr)
            return 1
    with open(plan_path) as f:
        plan = json.load(f)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(60)
    s.connect(path)
    send(s, {"type": "hello", "seq": 1, "version": 1})
    hello = recv(s)
    if not hello or hello.get("type") != "hello":
        print("denials.py: no hello: %r" % hello, file=sys.stderr)
        return 1
    send(s, {"type": "spawn", "seq": 2, "plan": plan}, fds)
    end = None
    final = None
    while True:
        if end is not None:
            left = end - time.monotonic()
            if left <= 0:
                break
            s.settimeout(left)
        try:
            m = recv(s)
        except socket.timeout:
            break
        if m is None:
            break
        t = m.get("type")
        if t == "denial":
            emit(m)
        elif t in ("exit", "error"):
            final = m
            end = time.monotonic() + linger
    if final is None:
        print("denials.py: no exit", file=sys.stderr)
        return 1
    emit(final)
    return 0


if __name__ == "__main__":
    sys.exit(main())
