#!/usr/bin/env python3
# A loopback fake of the Daytona service for tests, Python standard library only.
# Control plane under /api (Bearer key, NestJS error bodies, create that becomes "started" after
# some polls, name uniqueness 409, resources without buildInfo 400, start/stop/delete,
# last-activity and autostop 201, list by labels with a cursor, a sandbox that auto-stops); the
# toolbox under /toolbox/{id} (execute, sessions whose log file holds one line per output line
# prefixed \x01\x01\x01 for stdout and \x02\x02\x02 for stderr, logs stripped by default, raw with
# X-Daytona-Split-Output, JSON with an SDK version >= 0.167.0; command status without exitCode
# while running; input with a newline appended, 410 after exit; session DELETE kills; a top-level
# `exit` leaves no exit code; files upload (multipart part "file"), download (404 with an empty
# body), folder 201). Commands run on the host with /bin/sh in a per-sandbox root whose
# home/daytona is bound at /home/daytona in a mount namespace of the command's own (unshare);
# where that is not possible (or with --no-namespace), /home/daytona in command text is
# rewritten to it. The files API maps the paths it takes the same way.
# Test hooks live under /__fake/: POST fault {path, method?, status?, count?, delay?, retryAfter?,
# message?, cutBody? (the answer's headers and half its body, then the connection closes)}, POST
# pageSize {n} (list pages of at most n), POST stop {id} (auto-stop now), POST createPolls {n},
# POST evilArchive {id, kind:
# "dotdot"|"symlink"} (the next download of a .tar/.tgz returns an escaping archive), GET log,
# GET sandboxes.
# Usage: daytona_fake.py --port-file FILE [--api-key KEY] [--dir DIR]
import argparse
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOME = "/home/daytona"
LOCK = threading.Lock()
STATE = {"sandboxes": {}, "faults": [], "log": [], "create_polls": 2, "evil": {}}
ARGS = None
PORT = 0


NS_SCRIPT = ('mount -t tmpfs tmpfs /home && mkdir /home/daytona && mount --bind "$0" /home/daytona && '
             'cd "$1" && shift && exec "$@"')
NS = {"ok": False}


def ns_wrap(home, cwd):
    user = [] if os.geteuid() == 0 else ["-r"]
    return ["unshare", "--mount", "--propagation", "private"] + user + ["--", "/bin/sh", "-c", NS_SCRIPT, home, cwd]


def ns_works():
    """Whether commands can see the sandbox's home at /home/daytona (else paths are rewritten)."""
    d = tempfile.mkdtemp(prefix="daytona-fake-ns-")
    try:
        r = subprocess.run(ns_wrap(d, HOME) + ["/bin/sh", "-c", "test \"$(pwd)\" = /home/daytona"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
        return r.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(d, ignore_errors=True)


def sandbox_argv(root, cwd, argv):
    """argv run in the sandbox: its home at /home/daytona (a mount namespace), else rewritten."""
    home = os.path.join(root, HOME.lstrip("/"))
    if NS["ok"]:
        return ns_wrap(home, cwd) + argv, None
    return [a.replace(HOME, home) for a in argv], os.path.join(root, cwd.lstrip("/"))


def sandbox_env(sb):
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": HOME, "USER": "daytona", "LOGNAME": "daytona"}
    env.update(sb.get("env") or {})
    return env


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


class Cmd:
    def __init__(self, sid, command, sb, suppress):
        self.id = str(uuid.uuid4())
        self.command = command
        self.log = bytearray()
        self.exit = None
        self.suppress = suppress
        self.lock = threading.Lock()
        self.hazard = re.match(r"\s*(exit|exec)\b", command) is not None
        argv, cwd = sandbox_argv(sb["root"], HOME, ["/bin/sh", "-c", command])
        self.proc = subprocess.Popen(argv, cwd=cwd, env=sandbox_env(sb),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True)
        self.readers = [threading.Thread(target=self.pump, args=(self.proc.stdout, b"\x01\x01\x01")),
                        threading.Thread(target=self.pump, args=(self.proc.stderr, b"\x02\x02\x02"))]
        for t in self.readers:
            t.start()
        threading.Thread(target=self.reap).start()

    def pump(self, f, marker):
        for line in iter(f.readline, b""):
            line = line.replace(b"\0", b"")
            if not line.endswith(b"\n"):
                line += b"\n"
            with self.lock:
                self.log += marker + line

    def reap(self):
        rc = self.proc.wait()
        for t in self.readers:
            t.join()
        if not self.hazard:
            self.exit = rc if rc >= 0 else 128 - rc

    def input(self, data):
        if not self.suppress:
            with self.lock:
                self.log += b"\x01\x01\x01" + data.encode() + b"\n"
        try:
            self.proc.stdin.write(data.encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            pass

    def kill(self):
        """SIGTERM to the session's process group, then SIGKILL to what is left of it."""
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except OSError:
            return
        for _ in range(20):
            try:
                os.killpg(self.proc.pid, 0)
            except OSError:
                return
            time.sleep(0.025)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass


def sandbox_dto(sb):
    d = {k: sb[k] for k in ("id", "name", "snapshot", "user", "env", "labels", "public", "target", "cpu", "gpu",
                            "memory", "disk", "state", "desiredState", "autoStopInterval", "autoArchiveInterval",
                            "autoDeleteInterval", "createdAt", "updatedAt", "lastActivityAt")}
    d.update(organizationId="org-fake", errorReason=None, recoverable=False, daemonVersion="0.0.0-dev",
             runnerId="runner-fake", toolboxProxyUrl="http://127.0.0.1:%d/toolbox" % PORT)
    return d


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    cut_body = False

    def send(self, status, body=None, ctype="application/json", headers=None):
        data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        self.send_response(status)
        if data or ctype == "application/octet-stream":
            self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.cut_body:
            self.cut_body = False
            self.wfile.write(data[:len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(data)

    def api_error(self, status, message, error):
        self.send(status, {"path": self.path.split("?")[0], "timestamp": now(), "statusCode": status,
                           "error": error, "message": message})

    def tb_error(self, status, message, code):
        self.send(status, {"statusCode": status, "message": message, "code": code, "timestamp": now(),
                           "path": self.path.split("?")[0], "method": self.command})

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def json_body(self):
        b = self.body()
        try:
            return json.loads(b) if b else {}
        except ValueError:
            return None

    def handle_any(self):
        u = urllib.parse.urlsplit(self.path)
        path, q = u.path, dict(urllib.parse.parse_qsl(u.query))
        with LOCK:
            STATE["log"].append({"method": self.command, "path": self.path, "t": time.time(),
                                 "headers": {k: v for k, v in self.headers.items()}})
        if path.startswith("/__fake/"):
            return self.hook(path[len("/__fake/"):])
        with LOCK:
            fault = None
            for f in STATE["faults"]:
                if path.startswith(f["path"]) and f.get("method", self.command) == self.command and f["count"] > 0:
                    f["count"] -= 1
                    fault = dict(f)
                    break
        if fault:
            if fault.get("delay"):
                time.sleep(fault["delay"])
            if fault.get("cutBody"):
                # The answer's headers and half its body, then the connection closes (served
                # below, cut in send).
                self.cut_body = True
            if fault.get("status"):
                self.body()
                st = fault["status"]
                h = {}
                if st == 429:
                    ra = str(fault.get("retryAfter", 1))
                    h = {"Retry-After": ra, "Retry-After-authenticated": ra, "X-RateLimit-Limit-authenticated": "10000",
                         "X-RateLimit-Remaining-authenticated": "0", "X-RateLimit-Reset-authenticated": ra}
                msg = fault.get("message") or {401: "Unauthorized", 429: "Rate limit exceeded",
                                               500: "Internal server error"}.get(st, "error")
                err = {401: "Unauthorized", 429: "Too Many Requests", 500: "Internal Server Error"}.get(st, "Error")
                return self.send(st, {"path": path, "timestamp": now(), "statusCode": st, "error": err,
                                      "message": msg}, headers=h)
        if self.headers.get("Authorization") != "Bearer " + ARGS.api_key:
            self.body()
            if path.startswith("/toolbox/"):
                return self.tb_error(401, "Unauthorized", "UNAUTHORIZED")
            return self.api_error(401, "Unauthorized", "Unauthorized")
        if path.startswith("/api/"):
            return self.api(path[len("/api"):], q)
        m = re.match(r"^/toolbox/([^/]+)(/.*)$", path)
        if m:
            return self.toolbox(m.group(1), m.group(2), q)
        self.body()
        self.api_error(404, "Cannot %s %s" % (self.command, path), "Not Found")

    do_GET = do_POST = do_DELETE = do_PUT = handle_any

    def hook(self, what):
        b = self.json_body() or {}
        with LOCK:
            if what == "fault":
                b.setdefault("count", 1)
                STATE["faults"].append(b)
            elif what == "stop":
                sb = STATE["sandboxes"].get(b.get("id"))
                if sb:
                    self.stop_sandbox(sb)
            elif what == "pageSize":
                STATE["page_size"] = int(b.get("n", 0))
            elif what == "createPolls":
                STATE["create_polls"] = int(b.get("n", 0))
            elif what == "evilArchive":
                STATE["evil"][b["id"]] = b.get("kind", "dotdot")
            elif what == "log":
                return self.send(200, STATE["log"])
            elif what == "sandboxes":
                return self.send(200, [sandbox_dto(s) for s in STATE["sandboxes"].values()])
            elif what == "reset":
                STATE["faults"].clear()
                STATE["log"].clear()
        self.send(200, {})

    def stop_sandbox(self, sb):
        for sess in sb["sessions"].values():
            for c in sess.values():
                c.kill()
        sb["sessions"].clear()
        sb["state"] = sb["desiredState"] = "stopped"

    def find(self, ref):
        for sb in STATE["sandboxes"].values():
            if sb["id"] == ref or sb["name"] == ref:
                return sb
        return None

    def api(self, path, q):
        b = self.json_body() if self.command in ("POST", "PUT") else (self.body() and None)
        if b is None and self.command in ("POST", "PUT"):
            return self.api_error(400, "Invalid JSON body", "Bad Request")
        with LOCK:
            if path == "/sandbox" and self.command == "POST":
                if self.headers.get("Content-Type", "").split(";")[0] != "application/json":
                    return self.api_error(400, "Content-Type must be application/json", "Bad Request")
                if any(k in b for k in ("cpu", "memory", "disk", "gpu")) and "buildInfo" not in b:
                    return self.api_error(400, "Cannot specify Sandbox resources when using a snapshot",
                                          "Bad Request")
                sid = str(uuid.uuid4())
                name = b.get("name") or sid
                if any(s["name"] == name for s in STATE["sandboxes"].values()):
                    return self.api_error(409, "Sandbox with name %s already exists" % name, "Conflict")
                root = tempfile.mkdtemp(prefix="sb-", dir=ARGS.dir)
                os.makedirs(os.path.join(root, HOME.lstrip("/")))
                sb = dict(id=sid, name=name, snapshot=b.get("snapshot", "daytonaio/sandbox:default"),
                          user="daytona", env=b.get("env", {}), labels=b.get("labels", {}),
                          public=b.get("public", False), target=b.get("target", "us"), cpu=1, gpu=0, memory=1,
                          disk=3, state="creating", desiredState="started",
                          autoStopInterval=b.get("autoStopInterval", 15), autoArchiveInterval=b.get(
                              "autoArchiveInterval", 10080), autoDeleteInterval=b.get("autoDeleteInterval", -1),
                          createdAt=now(), updatedAt=now(), lastActivityAt=now(), root=root, sessions={},
                          polls=STATE["create_polls"])
                if sb["polls"] <= 0:
                    sb["state"] = "started"
                STATE["sandboxes"][sid] = sb
                return self.send(200, sandbox_dto(sb))
            if path == "/sandbox" and self.command == "GET":
                labels = json.loads(q["labels"]) if "labels" in q else {}
                states = q["states"].split(",") if "states" in q else None
                items = [s for s in STATE["sandboxes"].values()
                         if all(s["labels"].get(k) == v for k, v in labels.items())
                         and (states is None or s["state"] in states) and s["state"] != "destroyed"]
                limit = int(q.get("limit", 100))
                if not 1 <= limit <= 200:
                    return self.api_error(400, "limit must not be greater than 200", "Bad Request")
                start = int(q.get("cursor") or 0)
                # Pages of at most limit, and of the fake's page size when a test sets one.
                limit = min(limit, STATE.get("page_size") or limit)
                page = items[start:start + limit]
                nxt = str(start + limit) if start + limit < len(items) else None
                return self.send(200, {"items": [sandbox_dto(s) for s in page], "nextCursor": nxt})
            m = re.match(r"^/sandbox/([^/]+)(?:/(start|stop|last-activity|toolbox-proxy-url|autostop/-?\d+|"
                         r"autodelete/-?\d+))?$", path)
            if not m:
                return self.api_error(404, "Cannot %s /api%s" % (self.command, path), "Not Found")
            sb = self.find(m.group(1))
            if sb is None or sb["state"] == "destroyed":
                return self.api_error(404, "Sandbox with ID or name %s not found" % m.group(1), "Not Found")
            op = m.group(2)
            if op is None and self.command == "GET":
                if sb["state"] in ("creating", "starting"):
                    sb["polls"] -= 1
                    if sb["polls"] <= 0:
                        sb["state"] = "started"
                return self.send(200, sandbox_dto(sb))
            if op is None and self.command == "DELETE":
                self.stop_sandbox(sb)
                sb["state"] = "destroyed"
                dto = sandbox_dto(sb)
                dto["state"] = "destroying"
                shutil.rmtree(sb["root"], ignore_errors=True)
                del STATE["sandboxes"][sb["id"]]
                return self.send(200, dto)
            if self.command != "POST":
                return self.api_error(404, "Cannot %s /api%s" % (self.command, path), "Not Found")
            if op == "start":
                sb["state"] = "started" if STATE["create_polls"] <= 0 else "starting"
                sb["polls"] = STATE["create_polls"]
                sb["desiredState"] = "started"
                return self.send(200, sandbox_dto(sb))
            if op == "stop":
                self.stop_sandbox(sb)
                return self.send(200, sandbox_dto(sb))
            if op == "last-activity":
                sb["lastActivityAt"] = now()
                return self.send(201)
            if op == "toolbox-proxy-url":
                return self.send(200, {"url": "http://127.0.0.1:%d/toolbox" % PORT})
            k, v = op.split("/")
            sb["autoStopInterval" if k == "autostop" else "autoDeleteInterval"] = int(v)
            return self.send(201)

    def toolbox(self, ref, path, q):
        with LOCK:
            sb = STATE["sandboxes"].get(ref)
        if sb is None:
            self.body()
            return self.tb_error(404, "sandbox not found", "NOT_FOUND")
        if sb["state"] != "started":
            self.body()
            return self.send(502, b"bad gateway: sandbox is not running", ctype="text/plain")
        if self.headers.get("X-Daytona-Skip-Last-Activity-Update") != "true":
            sb["lastActivityAt"] = now()
        home = os.path.join(sb["root"], HOME.lstrip("/"))

        def host(p):
            p = os.path.normpath(os.path.join(HOME, p))
            return os.path.join(sb["root"], p.lstrip("/"))

        if path == "/process/execute" and self.command == "POST":
            b = self.json_body() or {}
            argv, cwd = sandbox_argv(sb["root"], os.path.normpath(os.path.join(HOME, b.get("cwd") or HOME)),
                                     ["/bin/sh"])
            cmd = b.get("command", "") if NS["ok"] else b.get("command", "").replace(HOME, home)
            pr = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=sandbox_env(sb),
                                  stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)
            try:
                out, _ = pr.communicate(cmd.encode(), timeout=b.get("timeout") or None)
            except subprocess.TimeoutExpired:
                # The whole process group gets SIGKILL.
                try:
                    os.killpg(pr.pid, signal.SIGKILL)
                except OSError:
                    pass
                pr.communicate()
                return self.tb_error(408, "command execution timeout", "REQUEST_TIMEOUT")
            r = subprocess.CompletedProcess(argv, pr.returncode, out)
            return self.send(200, {"exitCode": r.returncode, "result": r.stdout.decode(errors="replace")})
        if path == "/process/session" and self.command == "POST":
            b = self.json_body() or {}
            s = b.get("sessionId")
            if not s:
                return self.tb_error(400, "sessionId is required", "BAD_REQUEST")
            if s in sb["sessions"]:
                return self.tb_error(409, "session already exists", "CONFLICT")
            sb["sessions"][s] = {}
            return self.send(201)
        if path == "/process/session" and self.command == "GET":
            return self.send(200, [{"sessionId": s, "commands": [{"id": c.id, "command": c.command,
                                                                   **({"exitCode": c.exit} if c.exit is not None
                                                                      else {})} for c in cs.values()]}
                                   for s, cs in sb["sessions"].items()])
        m = re.match(r"^/process/session/([^/]+)(?:/(exec|command/([^/]+)(?:/(logs|input))?))?$", path)
        if m:
            sess = sb["sessions"].get(m.group(1))
            b = self.json_body() if self.command == "POST" else self.body()
            if sess is None:
                return self.tb_error(404, "session not found", "NOT_FOUND")
            if m.group(2) is None and self.command == "DELETE":
                for c in sess.values():
                    c.kill()
                del sb["sessions"][m.group(1)]
                return self.send(204)
            if m.group(2) == "exec" and self.command == "POST":
                c = Cmd(m.group(1), b.get("command", ""), sb, b.get("suppressInputEcho", False))
                sess[c.id] = c
                if b.get("runAsync"):
                    return self.send(202, {"cmdId": c.id})
                c.proc.wait()
                for t in c.readers:
                    t.join()
                time.sleep(0.01)
                return self.send(200, {"cmdId": c.id, "output": self.render(bytes(c.log), raw=True),
                                       "exitCode": c.exit})
            c = sess.get(m.group(3))
            if c is None:
                return self.tb_error(404, "command not found", "NOT_FOUND")
            if m.group(4) is None and self.command == "GET":
                d = {"id": c.id, "command": c.command}
                if c.exit is not None:
                    d["exitCode"] = c.exit
                return self.send(200, d)
            if m.group(4) == "logs" and self.command == "GET":
                with c.lock:
                    log = bytes(c.log)
                ver = self.headers.get("X-Daytona-SDK-Version")
                if ver and tuple(int(x) for x in re.findall(r"\d+", ver)[:3]) >= (0, 167, 0):
                    out, err = self.demux(log)
                    return self.send(200, {"output": log.decode(errors="replace"), "stdout": out, "stderr": err})
                raw = self.headers.get("X-Daytona-Split-Output") == "true" and not ver
                return self.send(200, log if raw else log.replace(b"\x01\x01\x01", b"").replace(
                    b"\x02\x02\x02", b""), ctype="text/plain; charset=utf-8")
            if m.group(4) == "input" and self.command == "POST":
                if c.exit is not None or c.proc.poll() is not None:
                    return self.tb_error(410, "command has already exited", "GONE")
                c.input((b or {}).get("data", ""))
                return self.send(204)
            return self.tb_error(404, "not found", "NOT_FOUND")
        if path == "/files/upload" and self.command == "POST":
            data = self.body()
            ct = self.headers.get("Content-Type", "")
            bm = re.search(r"boundary=\"?([^\";]+)", ct)
            if not ct.startswith("multipart/form-data") or not bm:
                return self.send(400)
            content = None
            for part in data.split(b"--" + bm.group(1).encode()):
                head, _, rest = part.partition(b"\r\n\r\n")
                if b'name="file"' in head:
                    content = rest[:-2] if rest.endswith(b"\r\n") else rest
            if content is None or "path" not in q:
                return self.send(400)
            dest = host(q["path"])
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "wb") as f:
                f.write(content)
            return self.send(200)
        if path == "/files/download" and self.command == "GET":
            self.body()
            evil = STATE["evil"].pop(sb["id"], None)
            if evil:
                return self.send(200, self.evil_tar(evil, q.get("path", "").endswith("gz")),
                                 ctype="application/octet-stream")
            p = host(q.get("path", ""))
            if os.path.isdir(p):
                return self.send(400)
            if not os.path.isfile(p):
                return self.send(404)
            with open(p, "rb") as f:
                return self.send(200, f.read(), ctype="application/octet-stream")
        if path == "/files/folder" and self.command == "POST":
            self.body()
            os.makedirs(host(q.get("path", "")), mode=int(q.get("mode", "755"), 8), exist_ok=True)
            return self.send(201)
        if path == "/user-home-dir" and self.command == "GET":
            return self.send(200, {"dir": HOME})
        self.body()
        return self.tb_error(404, "not found", "NOT_FOUND")

    @staticmethod
    def demux(log):
        out, err = [], []
        for line in log.split(b"\n")[:-1]:
            if line.startswith(b"\x02\x02\x02"):
                err.append(line[3:] + b"\n")
            else:
                out.append(line[3:] + b"\n" if line.startswith(b"\x01\x01\x01") else line + b"\n")
        return b"".join(out).decode(errors="replace"), b"".join(err).decode(errors="replace")

    @staticmethod
    def render(log, raw):
        return log.decode(errors="replace")

    @staticmethod
    def evil_tar(kind, gz):
        bio = io.BytesIO()
        with tarfile.open(fileobj=bio, mode="w:gz" if gz else "w") as t:
            if kind == "symlink":
                ti = tarfile.TarInfo("esc")
                ti.type = tarfile.SYMTYPE
                ti.linkname = "/etc"
                t.addfile(ti)
                name, data = "esc/cordon-escape", b"x\n"
            else:
                name, data = "../cordon-escape", b"x\n"
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
        return bio.getvalue()


def main():
    global ARGS, PORT
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--api-key", default="dtn_" + "0" * 64)
    ap.add_argument("--dir")
    ap.add_argument("--no-namespace", action="store_true", help="rewrite /home/daytona in paths instead")
    ARGS = ap.parse_args()
    # Commands start with the signal dispositions a sandbox gives them (a shell's background job
    # hands us SIGINT and SIGQUIT ignored).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    NS["ok"] = not ARGS.no_namespace and ns_works()
    if not ARGS.dir:
        ARGS.dir = tempfile.mkdtemp(prefix="daytona-fake-")
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    PORT = srv.server_address[1]
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(PORT))
    os.rename(tmp, ARGS.port_file)
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    srv.serve_forever()


if __name__ == "__main__":
    main()
