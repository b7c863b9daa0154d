#!/usr/bin/env python3
# A loopback fake of the E2B service for the E2B pack's tests (Python standard library only).
#
# One HTTP/1.1 server (keep-alive, chunked streams) serves both parts of the service:
#   control plane  requests without E2b-Sandbox-Id: X-API-Key checked, POST /sandboxes (201),
#                  GET/DELETE /sandboxes/{id} (DELETE 204 then 404), POST /sandboxes/{id}/timeout
#                  (204), GET /v2/sandboxes?metadata=k%3Dv&state=…&limit=&nextToken= (filtered,
#                  paged list: X-Next-Token names the next page)
#   envd           requests with E2b-Sandbox-Id and E2b-Sandbox-Port: 49983: X-Access-Token checked
#                  first (401 plain JSON), an unknown or dead sandbox 502 JSON;
#                  /process.Process/Start (Connect server stream: 5-byte envelopes, JSON, base64
#                  data, the end event omitting default fields, the 0x02 end-of-stream envelope),
#                  /process.Process/Connect (a running process by pid or tag: its start event, then
#                  its output from then on, then its end; processes outlive their streams, and
#                  output no stream follows is dropped),
#                  SendInput, CloseStdin, SendSignal (unary JSON), POST/GET /files (octet-stream),
#                  GET /health (204)
# Commands run for real, in a private directory per sandbox, seen at /home/user: each command in a
# mount namespace of its own with the directory bound there (unshare); where that is not possible
# (or with --no-namespace), "/home/user" in a cwd or an argument is rewritten to the directory.
# The files API always rewrites it.
#
# Test hooks, under /__fake/ only (no key needed):
#   POST /__fake/fault {"route", "status"?, "message"?, "retryAfter"?, "kind"?, "delayMs"?, "count"?}
#        route: create|kill|timeout|list|start|connect|files-get|files-post|any; kind: status (default),
#        cut (a stream cut mid-output), error-frame (an error inside a 200 stream), delay (then
#        normal), evil-archive (files-get answers a tar with ../ and a symlink escape), cut-body
#        (files-get sends half the file, then closes)
#   POST /__fake/config {"pageSize": N}: list pages of at most N (X-Next-Token for the next)
#   POST /__fake/die {"sandbox"}: the sandbox dies (API 404, envd 502)
#   GET  /__fake/state: {"sandboxes": {...}, "log": [{method, path, keyHeader}...]}
# Usage: e2b_fake.py --port-file FILE [--api-key KEY] [--dir DIR]
import argparse
import base64
import io
import json
import os
import random
import shutil
import signal
import socket
import string
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOME = "/home/user"
INVALID_KEY = "Invalid API key, please visit https://e2b.dev/docs/api-key for more information."
SIGNAMES = {signal.SIGKILL: "killed", signal.SIGTERM: "terminated", signal.SIGINT: "interrupt",
            signal.SIGHUP: "hangup", signal.SIGABRT: "aborted", signal.SIGSEGV: "segmentation fault",
            signal.SIGPIPE: "broken pipe", signal.SIGUSR1: "user defined signal 1"}

lock = threading.Lock()
sandboxes = {}   # id -> dict
faults = []      # list of dicts
log = []
cfg = {}


def new_id():
    return "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(20))


def take_fault(route):
    with lock:
        for f in faults:
            if f["route"] in (route, "any") and f.get("count", 1) > 0:
                f["count"] = f.get("count", 1) - 1
                if f["count"] <= 0:
                    faults.remove(f)
                return dict(f)
    return None


def envelope(obj, flags=0):
    data = json.dumps(obj, separators=(",", ":")).encode()
    return struct.pack(">BI", flags, len(data)) + data


def map_path(sb, p):
    if p == HOME or p.startswith(HOME + "/"):
        return sb["root"] + p
    return p


def map_arg(sb, a):
    return a.replace(HOME, sb["root"] + HOME)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        # Small frames go out at once (a stream's envelopes, each a write of its own).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # --- plumbing
    def body(self):
        if self.headers.get("Expect", "").lower() == "100-continue":
            self.send_response_only(100)
            self.end_headers()
        n = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(n) if n else b""

    def send(self, status, obj=None, raw=None, ctype="application/json", headers=()):
        data = raw if raw is not None else (b"" if obj is None else json.dumps(obj).encode())
        self.send_response(status)
        if data or status not in (204,):
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def fault(self, route):
        f = take_fault(route)
        if not f:
            return None
        kind = f.get("kind", "status")
        if kind == "delay":
            time.sleep(f.get("delayMs", 1000) / 1000)
            return None
        if kind == "status":
            st = f.get("status", 500)
            msg = f.get("message") or {401: INVALID_KEY, 429: "Rate limit exceeded"}.get(st, "Internal error")
            hdrs = [("Retry-After", str(f["retryAfter"]))] if "retryAfter" in f else []
            self.send(st, {"code": st, "message": msg}, headers=hdrs)
            return "done"
        return kind

    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def do_DELETE(self):
        self.route("DELETE")

    def route(self, method):
        u = urllib.parse.urlsplit(self.path)
        key = self.headers.get("X-API-Key")
        with lock:
            log.append({"method": method, "path": u.path, "query": u.query, "key": key,
                        "sandbox": self.headers.get("E2b-Sandbox-Id")})
        try:
            if u.path.startswith("/__fake/"):
                return self.hooks(method, u)
            if self.headers.get("E2b-Sandbox-Id") is not None:
                return self.envd(method, u)
            return self.control(method, u, key)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # --- test hooks
    def hooks(self, method, u):
        b = self.body()
        if u.path == "/__fake/fault":
            with lock:
                faults.append(json.loads(b))
            return self.send(200, {})
        if u.path == "/__fake/config":
            with lock:
                cfg.update({k: v for k, v in json.loads(b).items() if k in ("pageSize",)})
            return self.send(200, {})
        if u.path == "/__fake/die":
            sid = json.loads(b)["sandbox"]
            with lock:
                sb = sandboxes.get(sid)
                if sb:
                    sb["alive"] = False
                    for p in sb["procs"].values():
                        p.popen.kill()
            return self.send(200, {})
        if u.path == "/__fake/state":
            with lock:
                view = {k: {kk: vv for kk, vv in v.items() if kk in ("metadata", "alive", "root", "templateID", "endAt", "timeout", "token")}
                        for k, v in sandboxes.items()}
                return self.send(200, {"sandboxes": view, "log": log})
        return self.send(404, {"code": 404, "message": "no such hook"})

    # --- control plane
    def control(self, method, u, key):
        body = self.body() if method == "POST" else b""
        if key != cfg["key"]:
            return self.send(401, {"code": 401, "message": INVALID_KEY})
        parts = [p for p in u.path.split("/") if p]
        if parts == ["sandboxes"] and method == "POST":
            if self.fault("create"):
                return
            req = json.loads(body or b"{}")
            if not req.get("templateID"):
                return self.send(400, {"code": 400, "message": "templateID is required"})
            t = req.get("timeout", 15)
            if t <= 0:
                return self.send(400, {"code": 400, "message": "Timeout must be greater than 0"})
            if t > 3600:
                return self.send(400, {"code": 400, "message": "Timeout cannot be greater than 1 hours"})
            sid = new_id()
            root = os.path.join(cfg["dir"], sid)
            os.makedirs(os.path.join(root, HOME.lstrip("/")))
            os.makedirs(os.path.join(root, "tmp"))
            sb = {"root": root, "metadata": req.get("metadata") or {}, "alive": True,
                  "templateID": req["templateID"], "timeout": t, "endAt": time.time() + t,
                  "token": "tok_" + new_id(), "procs": {}, "envVars": req.get("envVars") or {},
                  "nextPid": 400}
            with lock:
                sandboxes[sid] = sb
            return self.send(201, {"templateID": req["templateID"], "sandboxID": sid, "alias": None,
                                   "clientID": "fake", "envdVersion": "0.6.13",
                                   "envdAccessToken": sb["token"] if req.get("secure") else None,
                                   "domain": None})
        if parts == ["v2", "sandboxes"] and method == "GET":
            if self.fault("list"):
                return
            q = urllib.parse.parse_qs(u.query)
            want = dict(urllib.parse.parse_qsl(q.get("metadata", [""])[0]))
            try:
                limit = int(q.get("limit", ["100"])[0])
                off = int(base64.b64decode(q["nextToken"][0]).decode()) if "nextToken" in q else 0
            except ValueError:
                return self.send(400, {"code": 400, "message": "invalid pagination parameters"})
            if not 1 <= limit <= 100:
                return self.send(400, {"code": 400, "message": "limit must be between 1 and 100"})
            out = []
            with lock:
                for sid, sb in sandboxes.items():
                    if self.expired(sb):
                        continue
                    if all(sb["metadata"].get(k) == v for k, v in want.items()):
                        out.append({"sandboxID": sid, "templateID": sb["templateID"], "state": "running",
                                    "metadata": sb["metadata"]})
            # Pages of at most limit (and of the fake's page size, when a test sets one); a
            # further page is announced by the X-Next-Token header, an opaque token.
            n = min(limit, cfg.get("pageSize") or limit)
            hdrs = [("X-Next-Token", base64.b64encode(b"%d" % (off + n)).decode())] if off + n < len(out) else []
            return self.send(200, out[off:off + n], headers=hdrs)
        if len(parts) >= 2 and parts[0] == "sandboxes":
            sid = parts[1]
            with lock:
                sb = sandboxes.get(sid)
            gone = {"code": 404, "message": 'Sandbox "%s" doesn\'t exist or you don\'t have access to it' % sid}
            if not sb or self.expired(sb):
                return self.send(404, gone)
            if len(parts) == 2 and method == "DELETE":
                if self.fault("kill"):
                    return
                self.kill_sandbox(sid)
                return self.send(204)
            if len(parts) == 2 and method == "GET":
                return self.send(200, {"sandboxID": sid, "templateID": sb["templateID"], "state": "running",
                                       "metadata": sb["metadata"], "envdVersion": "0.6.13"})
            if parts[2:] == ["timeout"] and method == "POST":
                if self.fault("timeout"):
                    return
                t = json.loads(body)["timeout"]
                sb["endAt"] = time.time() + t
                return self.send(204)
        return self.send(404, {"code": 404, "message": "not found"})

    def expired(self, sb):
        if sb["alive"] and time.time() > sb["endAt"]:
            sb["alive"] = False
        return not sb["alive"]

    def kill_sandbox(self, sid):
        with lock:
            sb = sandboxes.pop(sid, None)
        if sb:
            for p in list(sb["procs"].values()):
                try:
                    p.popen.kill()
                except OSError:
                    pass
            shutil.rmtree(sb["root"], ignore_errors=True)

    # --- envd
    def envd(self, method, u):
        body = self.body() if method == "POST" else b""
        sid = self.headers.get("E2b-Sandbox-Id")
        if len(sid) != 20 or self.headers.get("E2b-Sandbox-Port") != "49983":
            return self.send(400, {"code": 400, "message": "invalid sandbox host"})
        with lock:
            sb = sandboxes.get(sid)
        if not sb or self.expired(sb):
            return self.send(502, {"sandboxId": sid, "message": "The sandbox was not found", "code": 502})
        if u.path == "/health":
            return self.send(204)
        if self.headers.get("X-Access-Token") != sb["token"]:
            return self.send(401, {"code": 401, "message": "unauthorized access, please provide a valid access token"})
        if u.path == "/process.Process/Start" and method == "POST":
            return self.start(sb, body)
        if u.path == "/process.Process/Connect" and method == "POST":
            return self.connect(sb, body)
        if u.path.startswith("/process.Process/") and method == "POST":
            return self.unary(sb, u.path.split("/")[-1], body)
        if u.path == "/files":
            q = dict(urllib.parse.parse_qsl(u.query))
            if "path" not in q:
                return self.send(400, {"code": 400, "message": "path is required"})
            p = map_path(sb, q["path"])
            if method == "POST":
                if self.fault("files-post"):
                    return
                os.makedirs(os.path.dirname(p), exist_ok=True)
                with open(p, "wb") as f:
                    f.write(body)
                return self.send(200, [{"path": q["path"], "name": os.path.basename(p), "type": "file"}])
            f = self.fault("files-get")
            if f == "done":
                return
            if f == "evil-archive":
                return self.send(200, raw=evil_tar(), ctype="application/octet-stream")
            if f == "cut-body" and os.path.isfile(p):
                # The answer's headers and half its body, then the connection closes.
                with open(p, "rb") as fh:
                    data = fh.read()
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[:len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if os.path.isdir(p):
                return self.send(400, {"code": 400, "message": "path '%s' is a directory" % q["path"]})
            if not os.path.exists(p):
                return self.send(404, {"code": 404, "message": "path '%s' does not exist" % q["path"]})
            with open(p, "rb") as fh:
                return self.send(200, raw=fh.read(), ctype="application/octet-stream")
        return self.send(404, {"code": "not_found", "message": "no such procedure"})

    def connect_error(self, status, code, message):
        self.send(status, {"code": code, "message": message})

    def unary(self, sb, name, body):
        if self.headers.get("Content-Type") != "application/json":
            return self.connect_error(415, "invalid_argument", "content type")
        req = json.loads(body or b"{}")
        if name == "List":
            return self.send(200, {"processes": [dict({"pid": pid}, **({"tag": p.tag} if p.tag else {}))
                                                 for pid, p in sb["procs"].items()]})
        pid = req.get("process", {}).get("pid")
        p = sb["procs"].get(pid)
        if not p:
            return self.connect_error(404, "not_found", "process with pid %s not found" % pid)
        try:
            if name == "SendInput":
                if not p.popen.stdin or p.popen.stdin.closed:
                    return self.connect_error(500, "internal", "stdin not enabled or closed")
                p.popen.stdin.write(base64.b64decode(req["input"]["stdin"]))
                p.popen.stdin.flush()
            elif name == "CloseStdin":
                if p.popen.stdin:
                    p.popen.stdin.close()
            elif name == "SendSignal":
                s = req.get("signal")
                s = {"SIGNAL_SIGKILL": 9, "SIGNAL_SIGTERM": 15, 9: 9, 15: 15}.get(s)
                if not s:
                    return self.connect_error(400, "invalid_argument", "unknown signal")
                os.killpg(p.popen.pid, s)
            else:
                return self.connect_error(501, "unimplemented", "not implemented")
        except (OSError, ValueError):
            pass
        return self.send(200, {})

    def stream_head(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/connect+json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        return Sub(self)

    def start(self, sb, body):
        if self.headers.get("Content-Type") != "application/connect+json":
            return self.connect_error(415, "invalid_argument", "content type")
        f = self.fault("start")
        if f == "done":
            return
        if len(body) < 5:
            return self.connect_error(400, "invalid_argument", "no envelope")
        flags, n = struct.unpack(">BI", body[:5])
        req = json.loads(body[5:5 + n])
        proc = req["process"]
        sub = self.stream_head()
        cwd = map_path(sb, proc.get("cwd") or HOME)
        if not os.path.isdir(cwd):
            return sub.finish(envelope({"error": {"code": "invalid_argument",
                                                  "message": "invalid cwd %s" % proc.get("cwd")}}, 2))
        if f == "error-frame":
            return sub.finish(envelope({"error": {"code": "internal", "message": "injected: envd failed"}}, 2))
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": sb["root"] + HOME, "USER": "user",
               "LOGNAME": "user"}
        env.update(sb["envVars"])
        env.update(proc.get("envs") or {})
        if cfg["ns"]:
            # The sandbox's home at /home/user itself, in a mount namespace of the command's own.
            env["HOME"] = HOME
            argv = ns_wrap(sb["root"] + HOME, proc.get("cwd") or HOME) + [proc["cmd"]] + list(proc.get("args") or [])
        else:
            argv = [proc["cmd"]] + [map_arg(sb, a) for a in proc.get("args") or []]
        try:
            popen = subprocess.Popen(argv, cwd=cwd, env=env, start_new_session=True,
                                     stdin=subprocess.PIPE if req.get("stdin", True) else subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as e:
            return sub.finish(envelope({"error": {"code": "unknown", "message": "error starting process: %s" % e}}, 2))
        if f == "cut":
            sub.cut_at_data = True
        with lock:
            pid = sb["nextPid"]
            sb["nextPid"] += 1
            p = Proc(sb, pid, req.get("tag"), popen)
            sb["procs"][pid] = p
            # The stream follows the process from its start event on; the process outlives it.
            p.subs.append(sub)
        sub.send(envelope({"event": {"start": {"pid": pid}}}))
        p.run()
        self.follow(sub)

    def connect(self, sb, body):
        """process.Process/Connect: a new stream of a running process, by pid or tag: its start
        event, then its output from now on (what came while no stream followed it is gone), then
        its end. A process that ended (or never was) is not_found, inside a 200 stream."""
        if self.headers.get("Content-Type") != "application/connect+json":
            return self.connect_error(415, "invalid_argument", "content type")
        f = self.fault("connect")
        if f == "done":
            return
        if len(body) < 5:
            return self.connect_error(400, "invalid_argument", "no envelope")
        flags, n = struct.unpack(">BI", body[:5])
        sel = json.loads(body[5:5 + n]).get("process") or {}
        sub = self.stream_head()
        if f == "cut":
            sub.cut_at_data = True
        with lock:
            if "pid" in sel:
                p = sb["procs"].get(sel["pid"])
                what = "pid %s" % sel["pid"]
            else:
                p = next((q for q in sb["procs"].values() if q.tag is not None and q.tag == sel.get("tag")), None)
                what = "tag %s" % sel.get("tag")
            if p and not p.ended:
                p.subs.append(sub)
            else:
                p = None
        if not p:
            return sub.finish(envelope({"error": {"code": "not_found",
                                                  "message": "process with %s not found" % what}}, 2))
        sub.send(envelope({"event": {"start": {"pid": p.pid}}}))
        self.follow(sub)

    def follow(self, sub):
        """Hold the connection until the stream ended (its end sent, or it was cut)."""
        sub.done.wait()
        if sub.broken:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Sub:
    """One client stream following a process (a Start's or a Connect's)."""

    def __init__(self, handler):
        self.h = handler
        self.wlock = threading.Lock()
        self.done = threading.Event()
        self.broken = False
        self.cut_at_data = False

    def send(self, *parts):
        # One envelope, possibly in several HTTP chunks (clients must keep state across reads),
        # never interleaved with another.
        with self.wlock:
            if self.broken or self.done.is_set():
                return False
            try:
                for b in parts:
                    self.h.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
                self.h.wfile.flush()
                return True
            except OSError:
                self.broken = True
                self.done.set()
                return False

    def data(self, e):
        if self.cut_at_data:
            # A stream cut mid-envelope: the client sees a truncated frame and no end.
            with self.wlock:
                try:
                    self.h.wfile.write(b"%x\r\n%s\r\n" % (3, e[:3]))
                    self.h.wfile.flush()
                    self.h.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                self.broken = True
                self.done.set()
            return False
        # A split envelope now and then: clients must keep state across reads.
        return self.send(e[:2], e[2:])

    def finish(self, b):
        if self.send(b):
            with self.wlock:
                try:
                    self.h.wfile.write(b"0\r\n\r\n")
                    self.h.wfile.flush()
                except OSError:
                    self.broken = True
        self.done.set()


class Proc:
    """A process of a sandbox: its output goes to the streams following it at the time (none:
    dropped, as envd does); it lives on when they are cut."""

    def __init__(self, sb, pid, tag, popen):
        self.sb, self.pid, self.tag, self.popen = sb, pid, tag, popen
        self.subs = []
        self.ended = False

    def run(self):
        ts = [threading.Thread(target=self.pump, args=(self.popen.stdout, "stdout"), daemon=True),
              threading.Thread(target=self.pump, args=(self.popen.stderr, "stderr"), daemon=True)]
        for t in ts:
            t.start()
        threading.Thread(target=self.reap, args=(ts,), daemon=True).start()

    def followers(self):
        with lock:
            self.subs = [x for x in self.subs if not x.done.is_set()]
            return list(self.subs)

    def pump(self, stream, name):
        while True:
            d = stream.read1(32768)
            if not d:
                return
            e = envelope({"event": {"data": {name: base64.b64encode(d).decode()}}})
            for x in self.followers():
                x.data(e)

    def reap(self, ts):
        for t in ts:
            t.join()
        rc = self.popen.wait()
        with lock:
            self.ended = True
            self.sb["procs"].pop(self.pid, None)
        subs = self.followers()
        if not self.sb["alive"]:
            for x in subs:
                x.broken = True
                x.done.set()
            return
        if rc >= 0:
            end = {"exited": True, "status": "exit status %d" % rc}
            if rc:
                end.update(exitCode=rc, error="exit status %d" % rc)
        else:
            name = SIGNAMES.get(-rc, "signal %d" % -rc)
            end = {"exitCode": -1, "status": "signal: " + name, "error": "signal: " + name}
        for x in subs:
            if x.send(envelope({"event": {"end": end}})):
                x.finish(envelope({}, 2))


NS_SCRIPT = 'mount -t tmpfs tmpfs /home && mkdir /home/user && mount --bind "$0" /home/user && cd "$1" && shift && exec "$@"'


def ns_wrap(home, cwd):
    user = [] if os.geteuid() == 0 else ["-r"]
    return ["unshare", "--mount", "--propagation", "private"] + user + ["--", "/bin/sh", "-c", NS_SCRIPT, home, cwd]


def ns_works():
    """Whether commands can see the sandbox's home at /home/user (else paths are rewritten)."""
    d = tempfile.mkdtemp(prefix="e2b-fake-ns-")
    try:
        r = subprocess.run(ns_wrap(d, HOME) + ["/bin/sh", "-c", "test \"$(pwd)\" = /home/user"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
        return r.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(d, ignore_errors=True)


def evil_tar():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        def add(name, data=b"", link=None):
            ti = tarfile.TarInfo(name)
            ti.mtime = int(time.time())
            if link:
                ti.type, ti.linkname = tarfile.SYMTYPE, link
                t.addfile(ti)
            else:
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
        add("ok.txt", b"fine\n")
        add("../escape.txt", b"escaped\n")
        add("esc", link="/tmp")
        add("esc/pwned.txt", b"pwned\n")
    return buf.getvalue()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--api-key", default="e2b_" + "0" * 40)
    ap.add_argument("--dir")
    ap.add_argument("--no-namespace", action="store_true", help="rewrite /home/user in paths instead")
    a = ap.parse_args()
    cfg["key"] = a.api_key
    cfg["dir"] = a.dir or tempfile.mkdtemp(prefix="e2b-fake-")
    cfg["ns"] = not a.no_namespace and ns_works()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, a.port_file)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # Commands start with default dispositions, as envd's do (a shell's background job would
    # hand us SIGINT and SIGQUIT ignored).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    try:
        srv.serve_forever()
    finally:
        for sid in list(sandboxes):
            Handler.kill_sandbox(None, sid)


if __name__ == "__main__":
    main()
