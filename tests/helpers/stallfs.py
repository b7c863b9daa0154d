#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""stallfs: a FUSE file system whose server never answers FLUSH (tests only).

    stallfs.py MOUNTPOINT [--stall-read] [--pid-file FILE]

A requester who runs a FUSE server can make any close() of a file on it wait for ever: the
kernel sends FUSE_FLUSH and waits for the answer. launcherd must never close such an fd itself
(tests/integration/launcherd-fdscreen.sh). This server talks to /dev/fuse directly (no libfuse),
mounts itself on MOUNTPOINT (needs root) and serves a root directory holding one regular file
"f" ("hello\\n") and one empty directory "d". It answers INIT, LOOKUP, GETATTR, OPEN, OPENDIR,
READ, RELEASE, RELEASEDIR and DESTROY, ENOSYS to everything else, and never FLUSH (with
--stall-read, never READ either). It prints "mounted" on stdout once the mount is there.

Killing the server (SIGTERM) closes /dev/fuse, which aborts the connection: every request still
waiting fails with ENOTCONN, so whatever was stuck goes on. Then `umount -l MOUNTPOINT`.
"""
import ctypes
import errno
import os
import struct
import sys

# Opcodes (linux/fuse.h).
LOOKUP, FORGET, GETATTR, OPEN, READ, RELEASE = 1, 2, 3, 14, 15, 18
FLUSH, INIT, OPENDIR, RELEASEDIR, INTERRUPT = 25, 26, 27, 29, 36
DESTROY, NOTIFY_REPLY, BATCH_FORGET = 38, 41, 42
NO_REPLY = (FORGET, NOTIFY_REPLY, BATCH_FORGET)

ROOT, FILE, DIR = 1, 2, 3
DATA = b"hello\n"
MS_NOSUID, MS_NODEV = 2, 4
IN_HEADER = struct.Struct("<IIQQIIII")  # len, opcode, unique, nodeid, uid, gid, pid, pad


def fuse_attr(ino):
    """struct fuse_attr: ino, size, blocks, a/m/ctime, their nsecs, mode, nlink, uid, gid,
    rdev, blksize, flags."""
    mode, size = {ROOT: (0o40755, 0), FILE: (0o100644, len(DATA)), DIR: (0o40755, 0)}[ino]
    return struct.pack("<QQQQQQIIIIIIIIII", ino, size, 1, 0, 0, 0, 0, 0, 0, mode,
                       2 if mode & 0o40000 else 1, 0, 0, 0, 4096, 0)


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def main():
    args = sys.argv[1:]
    stall_read = "--stall-read" in args
    pid_file = None
    if "--pid-file" in args:
        pid_file = args[args.index("--pid-file") + 1]
        args.remove("--pid-file")
        args.remove(pid_file)
    args = [a for a in args if a != "--stall-read"]
    if len(args) != 1:
        sys.exit("usage: stallfs.py MOUNTPOINT [--stall-read] [--pid-file FILE]")
    mnt = args[0]

    if pid_file:
        with open(pid_file, "w") as f:
            f.write(f"{os.getpid()}\n")
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
    opts = f"fd={fd},rootmode=40000,user_id=0,group_id=0,allow_other".encode()
    if libc.mount(b"stallfs", mnt.encode(), b"fuse", MS_NOSUID | MS_NODEV, opts) != 0:
        sys.exit(f"stallfs: mount {mnt}: {os.strerror(ctypes.get_errno())}")
    print("mounted", flush=True)

    def reply(unique, err=0, payload=b""):
        try:
            os.write(fd, struct.pack("<IiQ", 16 + len(payload), -err, unique) + payload)
        except OSError as e:
            # ENOENT: the request was interrupted or aborted meanwhile.
            if e.errno != errno.ENOENT:
                raise

    while True:
        try:
            buf = os.read(fd, 1 << 20)
        except OSError as e:
            if e.errno == errno.EINTR or e.errno == errno.EAGAIN:
                continue
            if e.errno == errno.ENODEV:  # unmounted or aborted
                break
            raise
        _, op, unique, nodeid, _, _, pid, _ = IN_HEADER.unpack_from(buf)
        body = buf[IN_HEADER.size:]
        if op in NO_REPLY:
            continue
        if op == INIT:
            # fuse_init_out for 7.31: major, minor, max_readahead, flags, max_background,
            # congestion_threshold, max_write, time_gran, max_pages, map_alignment, flags2,
            # unused; no optional feature.
            reply(unique, 0, struct.pack("<IIIIHHIIHHII", 7, 31, 0, 0, 1, 1, 65536, 1, 0, 0, 0,
                                         0) + b"\0" * 24)
        elif op == LOOKUP:
            name = body.split(b"\0")[0]
            ino = {b"f": FILE, b"d": DIR}.get(name) if nodeid == ROOT else None
            if ino is None:
                reply(unique, errno.ENOENT)
            else:
                # fuse_entry_out: nodeid, generation, entry/attr valid (s, ns), attr.
                reply(unique, 0, struct.pack("<QQQQII", ino, 0, 0, 0, 0, 0) + fuse_attr(ino))
        elif op == GETATTR:
            if nodeid not in (ROOT, FILE, DIR):
                reply(unique, errno.ENOENT)
            else:
                reply(unique, 0, struct.pack("<QII", 0, 0, 0) + fuse_attr(nodeid))
        elif op in (OPEN, OPENDIR):
            reply(unique, 0, struct.pack("<QII", 1, 0, 0))  # fh, open_flags, padding
        elif op == READ:
            if stall_read:
                print(f"read from pid {pid} ({comm(pid)}): not answered", file=sys.stderr,
                      flush=True)
                continue
            off, size = struct.unpack_from("<QQI", body)[1:]
            reply(unique, 0, DATA[off:off + size] if nodeid == FILE else b"")
        elif op == FLUSH:
            print(f"flush from pid {pid} ({comm(pid)}): not answered", file=sys.stderr,
                  flush=True)
        elif op in (RELEASE, RELEASEDIR, DESTROY):
            reply(unique)
        else:
            # INTERRUPT too: ENOSYS tells the kernel not to send more of them.
            reply(unique, errno.ENOSYS)


if __name__ == "__main__":
    main()
