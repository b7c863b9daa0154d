# Minimal JSON-RPC 2.0 client for cordon's controller socket (tests only).
import array
import json
import socket
import sys
import time
import traceback


class Conn:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""
        self.next_id = 0
        self.notes = []

    def send_raw(self, data, fds=()):
        if fds:
            self.sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        else:
            self.sock.sendall(data)

    def read_msg(self, timeout=30):
        self.sock.settimeout(timeout)
        while b"\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, method, params=None, fds=()):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send_raw((json.dumps(msg) + "\n").encode(), fds)
        return self.next_id

    def wait(self, rid, timeout=30):
        while True:
            m = self.read_msg(timeout)
            if m is None:
                return None
            if "method" in m and "id" not in m:
                self.notes.append(m)
                continue
            if m.get("id") == rid:
                return m

    def call(self, method, params=None, fds=(), timeout=30):
        return self.wait(self.request(method, params, fds), timeout)

    def wait_event(self, kind, match=lambda params: True, seconds=10):
        """On a connection subscribed to events: the params of the first event of type kind
        for which match(params) holds, within seconds; None if none came (or EOF)."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                m = self.read_msg(timeout=max(0.01, deadline - time.time()))
            except socket.timeout:
                return None
            if m is None:
                return None
            if m.get("method") == "event" and m["params"]["type"] == kind and match(m["params"]):
                return m["params"]
        return None

    def close(self):
        self.sock.close()


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0
        # An uncaught exception is one more failed test with its traceback, then the plan: the
        # report names what broke instead of "missing test plan".
        sys.excepthook = self._uncaught

    def _uncaught(self, kind, value, tb):
        self.ok(False, "uncaught %s: %s" % (kind.__name__, value),
                "".join(traceback.format_exception(kind, value, tb)))
        self.done()

    def ok(self, cond, desc, diag=None):
        self.n += 1
        print(("ok" if cond else "not ok"), self.n, "-", desc, flush=True)
        if not cond:
            self.failed += 1
            if diag is not None:
                for line in str(diag).splitlines():
                    print("#", line, flush=True)
        return cond

    def done(self):
        print("1..%d" % self.n, flush=True)
        return 0 if self.failed == 0 else 1
