#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Upstream servers and special clients for tests/integration/proxy-engine.sh.

Servers (each binds 127.0.0.1:0, writes its port to PORTFILE, serves until killed):
  http PORTFILE                 HTTP/1.0; the body names the request line and the headers seen
  tls PORTFILE CERT KEY         the same over TLS
  echo PORTFILE                 raw TCP echo
  slowsink PORTFILE             reads slowly (8 KiB per 2 ms); at EOF answers "got N"
  source PORTFILE NBYTES        sends NBYTES as fast as the peer takes them, then closes
  stall PORTFILE                accepts and never reads; closes after 60 s

Clients (PROXY is the proxy's port on 127.0.0.1; print a result, exit 0 on success):
  raw PROXY DATA                send DATA (Python escapes allowed), print what comes back
  socks PROXY HOST PORT CMD     SOCKS5 greeting and request with command CMD; print the reply code
  upload PROXY HOST PORT N      CONNECT, send N bytes, half-close, print the answer
  slowread PROXY HOST PORT      CONNECT, read everything slowly, print the byte count
  push PROXY HOST PORT MAX      CONNECT, send without blocking until nothing moves for 1 s or MAX
                                bytes went: print "pushed N"
  concurrent PROXY HOST PORT N  N CONNECT tunnels to an echo server open at once, one echo each
  tunnel PROXY HOST PORT CTL    CONNECT to an echo server and keep it: each line read from the
                                FIFO CTL is echoed through the tunnel; prints "echo: LINE"
"""
import http.server
import os
import socket
import ssl
import sys
import threading
import time


def write_port(path, port):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.rename(tmp, path)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("hello from upstream\nrequest: %s\n" % self.requestline).encode()
        for k, v in self.headers.items():
            body += ("header: %s: %s\n" % (k, v)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *args):
        pass


def serve_http(portfile, wrap=None):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if wrap:
        srv.socket = wrap(srv.socket)
    write_port(portfile, srv.server_address[1])
    srv.serve_forever()


def serve_raw(portfile, handler):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(256)
    write_port(portfile, s.getsockname()[1])
    while True:
        c, _ = s.accept()
        threading.Thread(target=handler, args=(c,), daemon=True).start()


def echo(c):
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            c.sendall(d)
    except OSError:
        pass
    c.close()


def slowsink(c):
    n = 0
    try:
        while True:
            d = c.recv(8192)
            if not d:
                break
            n += len(d)
            time.sleep(0.002)
        c.sendall(b"got %d\n" % n)
    except OSError:
        pass
    c.close()


def source(nbytes):
    def run(c):
        chunk = b"x" * 65536
        left = nbytes
        try:
            while left > 0:
                k = min(left, len(chunk))
                c.sendall(chunk[:k])
                left -= k
        except OSError:
            pass
        c.close()
    return run


def stall(c):
    time.sleep(60)
    c.close()


def connect(proxy, host, port):
    s = socket.create_connection(("127.0.0.1", int(proxy)), timeout=30)
    s.sendall(b"CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (
        host.encode(), port.encode(), host.encode(), port.encode()))
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(1)
        if not d:
            raise SystemExit("proxy closed: %r" % head)
        head += d
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit("CONNECT refused: %r" % head)
    return s


def recv_all(s):
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            return out
        out += d


def main(argv):
    mode = argv[1]
    if mode == "http":
        serve_http(argv[2])
    elif mode == "tls":
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(argv[3], argv[4])
        serve_http(argv[2], lambda s: ctx.wrap_socket(s, server_side=True))
    elif mode == "echo":
        serve_raw(argv[2], echo)
    elif mode == "slowsink":
        serve_raw(argv[2], slowsink)
    elif mode == "source":
        serve_raw(argv[2], source(int(argv[3])))
    elif mode == "raw":
        s = socket.create_connection(("127.0.0.1", int(argv[2])), timeout=10)
        s.sendall(argv[3].encode().decode("unicode_escape").encode("latin-1"))
        try:
            sys.stdout.write(recv_all(s).decode("latin-1"))
        except socket.timeout:
            print("(timeout)")
    elif mode == "stall":
        serve_raw(argv[2], stall)
    elif mode == "socks":
        s = socket.create_connection(("127.0.0.1", int(argv[2])), timeout=10)
        s.sendall(b"\x05\x01\x00")
        if s.recv(2) != b"\x05\x00":
            raise SystemExit("method refused")
        host = argv[3].encode()
        s.sendall(b"\x05" + bytes([int(argv[5])]) + b"\x00\x03" + bytes([len(host)]) + host +
                  int(argv[4]).to_bytes(2, "big"))
        r = s.recv(10)
        print("reply %d" % r[1])
    elif mode == "upload":
        s = connect(argv[2], argv[3], argv[4])
        left = int(argv[5])
        chunk = b"u" * 65536
        while left > 0:
            k = min(left, len(chunk))
            s.sendall(chunk[:k])
            left -= k
        s.shutdown(socket.SHUT_WR)
        sys.stdout.write(recv_all(s).decode())
    elif mode == "slowread":
        s = connect(argv[2], argv[3], argv[4])
        n = 0
        while True:
            d = s.recv(8192)
            if not d:
                break
            n += len(d)
            time.sleep(0.002)
        print("read %d" % n)
    elif mode == "push":
        s = connect(argv[2], argv[3], argv[4])
        limit = int(argv[5])
        s.setblocking(False)
        chunk = b"p" * 65536
        n = 0
        idle_since = time.monotonic()
        while n < limit and time.monotonic() - idle_since < 1.0:
            try:
                k = s.send(chunk[:min(len(chunk), limit - n)])
                n += k
                idle_since = time.monotonic()
            except BlockingIOError:
                time.sleep(0.01)
        print("pushed %d" % n)
        sys.stdout.flush()
        s.close()
    elif mode == "concurrent":
        n = int(argv[5])
        socks = [connect(argv[2], argv[3], argv[4]) for _ in range(n)]
        good = 0
        for i, s in enumerate(socks):
            msg = b"ping %d\n" % i
            s.sendall(msg)
            got = b""
            while len(got) < len(msg):
                d = s.recv(64)
                if not d:
                    break
                got += d
            good += got == msg
        # All n were open at once; report before closing any.
        print("echoed %d of %d" % (good, n))
        sys.stdout.flush()
        time.sleep(float(os.environ.get("HOLD", "0")))
        for s in socks:
            s.close()
    elif mode == "tunnel":
        s = connect(argv[2], argv[3], argv[4])
        print("open")
        sys.stdout.flush()
        with open(argv[5]) as ctl:
            for line in ctl:
                line = line.strip()
                if line == "quit":
                    break
                try:
                    s.sendall(line.encode() + b"\n")
                    got = s.recv(4096).decode().strip()
                except OSError as e:
                    got = "error %s" % e
                print("echo: %s" % got)
                sys.stdout.flush()
    else:
        raise SystemExit("unknown mode %s" % mode)


if __name__ == "__main__":
    main(sys.argv)
