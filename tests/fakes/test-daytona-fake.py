# The Daytona fake (daytona_fake.py) against the service's wire protocol, written from the
# protocol alone (not from the pack): control plane status codes and NestJS error bodies,
# create that polls to "started", name conflicts, list by labels with a cursor, session commands
# whose log holds per-line \x01\x01\x01 / \x02\x02\x02 markers (stripped by default, raw with
# X-Daytona-Split-Output, JSON with an SDK version), no exitCode while running, input with a
# newline and 410 after exit, the top-level exit hazard, files, auto-stop, and the faults.
import http.client
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse

KEY = "dtn_" + "ab" * 32
tmp = tempfile.mkdtemp(prefix="daytona-fake-test-")
portfile = os.path.join(tmp, "port")
fake = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "daytona_fake.py"),
                         "--port-file", portfile, "--api-key", KEY, "--dir", tmp])
for _ in range(100):
    if os.path.exists(portfile):
        break
    time.sleep(0.05)
PORT = int(open(portfile).read())
AUTH = {"Authorization": "Bearer " + KEY}
n = 0
failed = 0


def ok(cond, name, info=None):
    global n, failed
    n += 1
    if not cond:
        failed += 1
        print("not ok %d - %s" % (n, name))
        if info is not None:
            print("# %r" % (info,))
    else:
        print("ok %d - %s" % (n, name))


def req(method, path, body=None, headers=None, auth=True, ctype="application/json"):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    h = dict(AUTH if auth else {})
    h.update(headers or {})
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    if data is not None and "Content-Type" not in h:
        h["Content-Type"] = ctype
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    d = r.read()
    c.close()
    try:
        return r, (json.loads(d) if d else None), d
    except ValueError:
        return r, None, d


def wait_exit(tb, sid, cid, limit=10):
    end = time.time() + limit
    while time.time() < end:
        r, j, _ = req("GET", "%s/process/session/%s/command/%s" % (tb, sid, cid))
        if j and "exitCode" in j:
            return j
        time.sleep(0.05)
    return j


try:
    r, j, _ = req("POST", "/api/sandbox", {"name": "x"}, auth=False)
    ok(r.status == 401 and j["statusCode"] == 401 and j["message"] and "path" in j and "timestamp" in j,
       "no key: 401 with a NestJS body", j)
    r, j, _ = req("POST", "/api/sandbox", {"name": "x"}, headers={"Authorization": "Bearer dtn_" + "0" * 64})
    ok(r.status == 401 and j["error"] == "Unauthorized", "wrong key: 401", j)
    r, j, _ = req("GET", "/__fake/sandboxes")
    ok(j == [], "nothing created by refused calls", j)

    r, j, _ = req("POST", "/api/sandbox", {"name": "a", "cpu": 2})
    ok(r.status == 400 and "Cannot specify Sandbox resources" in j["message"], "resources without buildInfo: 400", j)
    r, sb, _ = req("POST", "/api/sandbox", {"name": "a", "labels": {"launcher": "t", "owner": "o1"},
                                             "autoStopInterval": 0, "autoDeleteInterval": 0})
    ok(r.status == 200 and sb["state"] in ("creating", "starting") and sb["toolboxProxyUrl"].endswith("/toolbox"),
       "create: 200, not yet started, toolboxProxyUrl", sb)
    sid = sb["id"]
    r, j, _ = req("POST", "/api/sandbox", {"name": "a"})
    ok(r.status == 409 and j["message"] == "Sandbox with name a already exists", "duplicate name: 409", j)
    states = []
    for _ in range(10):
        r, j, _ = req("GET", "/api/sandbox/" + sid)
        states.append(j["state"])
        if j["state"] == "started":
            break
    ok(states[-1] == "started" and len(states) > 1, "polling GET reaches started", states)
    r, j, _ = req("GET", "/api/sandbox/a")
    ok(r.status == 200 and j["id"] == sid, "GET by name", j)
    tb = urllib.parse.urlsplit(sb["toolboxProxyUrl"]).path + "/" + sid

    r, j, _ = req("POST", "/api/sandbox", {"name": "b", "labels": {"launcher": "t", "owner": "o2"}})
    r, j, _ = req("POST", "/api/sandbox", {"name": "c", "labels": {"launcher": "u"}})
    q = urllib.parse.quote(json.dumps({"launcher": "t"}))
    r, j, _ = req("GET", "/api/sandbox?limit=1&labels=" + q)
    ok(r.status == 200 and len(j["items"]) == 1 and j["nextCursor"], "list by labels, first page", j)
    r, j2, _ = req("GET", "/api/sandbox?limit=1&labels=%s&cursor=%s" % (q, j["nextCursor"]))
    names = sorted([j["items"][0]["name"], j2["items"][0]["name"]])
    ok(names == ["a", "b"] and j2["nextCursor"] is None, "list by labels, second page", names)
    req("POST", "/__fake/pageSize", {"n": 1})
    r, j, _ = req("GET", "/api/sandbox?limit=200&labels=" + q)
    ok(r.status == 200 and len(j["items"]) == 1 and j["nextCursor"] == "1",
       "a page size set by a test caps the pages below the limit asked for", j)
    req("POST", "/__fake/pageSize", {"n": 0})

    r, j, _ = req("POST", tb + "/process/execute", {"command": "echo out; echo err >&2; exit 3", "timeout": 5})
    ok(r.status == 200 and j["exitCode"] == 3 and "out" in j["result"] and "err" in j["result"],
       "execute: merged output and the exit code", j)
    r, j, _ = req("POST", tb + "/process/execute", {"command": "sleep 5", "timeout": 1})
    ok(r.status == 408 and j["code"] and j["method"] == "POST", "execute timeout: 408 ErrorResponse", j)

    r, j, d = req("POST", tb + "/process/session", {"sessionId": "s1"})
    ok(r.status == 201 and d == b"", "session create: 201, empty", d)
    r, j, _ = req("POST", tb + "/process/session", {"sessionId": "s1"})
    ok(r.status == 409, "duplicate session: 409", j)
    r, j, _ = req("POST", tb + "/process/session/s1/exec",
                  {"command": "(echo one; echo two >&2; printf tail)", "runAsync": True, "suppressInputEcho": True})
    ok(r.status == 202 and j["cmdId"], "async exec: 202 cmdId", j)
    cid = j["cmdId"]
    st = wait_exit(tb, "s1", cid)
    ok(st.get("exitCode") == 0, "command status: exitCode 0 once done", st)
    base = "%s/process/session/s1/command/%s/logs" % (tb, cid)
    r, _, raw = req("GET", base, headers={"X-Daytona-Split-Output": "true"})
    ok(set(raw.split(b"\n")[:-1]) == {b"\x01\x01\x01one", b"\x02\x02\x02two", b"\x01\x01\x01tail"}
       and raw.endswith(b"\n"), "split output: raw per-line markers, a newline added to the last line", raw)
    r, _, plain = req("GET", base)
    ok(b"\x01" not in plain and b"\x02" not in plain and b"one\n" in plain, "default: markers stripped", plain)
    r, j, _ = req("GET", base, headers={"X-Daytona-SDK-Version": "0.170.0"})
    ok(j and j["stdout"] == "one\ntail\n" and j["stderr"] == "two\n", "SDK version: JSON demuxed", j)

    req("POST", tb + "/process/session", {"sessionId": "s2"})
    r, j, _ = req("POST", tb + "/process/session/s2/exec", {"command": "(read a; echo got:$a; sleep 0.2)",
                                                               "runAsync": True})
    cid2 = j["cmdId"]
    r, j, _ = req("GET", "%s/process/session/s2/command/%s" % (tb, cid2))
    ok(r.status == 200 and "exitCode" not in j, "no exitCode while running", j)
    r, _, d = req("POST", "%s/process/session/s2/command/%s/input" % (tb, cid2), {"data": "hi"})
    ok(r.status == 204, "input: 204", d)
    st = wait_exit(tb, "s2", cid2)
    r, _, raw = req("GET", "%s/process/session/s2/command/%s/logs" % (tb, cid2),
                    headers={"X-Daytona-Split-Output": "true"})
    ok(raw == b"\x01\x01\x01hi\n\x01\x01\x01got:hi\n", "input: newline appended, echoed without suppress", raw)
    r, j, _ = req("POST", "%s/process/session/s2/command/%s/input" % (tb, cid2), {"data": "late"})
    ok(r.status == 410, "input after exit: 410", j)

    req("POST", tb + "/process/session", {"sessionId": "s3"})
    r, j, _ = req("POST", tb + "/process/session/s3/exec", {"command": "exit 4", "runAsync": True})
    time.sleep(0.5)
    r, j, _ = req("GET", "%s/process/session/s3/command/%s" % (tb, j["cmdId"]))
    ok("exitCode" not in j, "top-level exit: no exit code ever", j)

    req("POST", tb + "/process/session", {"sessionId": "s4"})
    r, j, _ = req("POST", tb + "/process/session/s4/exec", {"command": "(sleep 30)", "runAsync": True})
    t0 = time.time()
    r, _, _ = req("DELETE", tb + "/process/session/s4")
    ok(r.status == 204 and time.time() - t0 < 5, "session DELETE kills: 204")
    r, j, _ = req("GET", "%s/process/session/s4/command/%s" % (tb, j["cmdId"]))
    ok(r.status == 404, "deleted session: 404", j)

    boundary = "XyZ"
    mp = ("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n"
          "Content-Type: application/octet-stream\r\n\r\n" % boundary).encode() + b"\x00bin\xff" + \
        ("\r\n--%s--\r\n" % boundary).encode()
    r, _, _ = req("POST", tb + "/files/upload?path=/home/daytona/up.bin", mp,
                  headers={"Content-Type": "multipart/form-data; boundary=" + boundary})
    ok(r.status == 200, "upload: 200")
    r, _, d = req("GET", tb + "/files/download?path=/home/daytona/up.bin")
    ok(r.status == 200 and d == b"\x00bin\xff" and r.getheader("Content-Type") == "application/octet-stream",
       "download: the bytes, octet-stream", d)
    r, _, d = req("GET", tb + "/files/download?path=/home/daytona/none")
    ok(r.status == 404 and d == b"", "download of a missing file: 404, empty body", d)
    r, _, _ = req("POST", tb + "/files/folder?path=/home/daytona/w&mode=755")
    ok(r.status == 201, "folder: 201")
    r, j, _ = req("POST", tb + "/process/execute", {"command": "ls /home/daytona", "timeout": 5})
    ok("up.bin" in j["result"] and "w" in j["result"], "commands see the sandbox home", j)
    r, j, _ = req("POST", tb + "/process/execute", {"command": "echo $HOME; echo $PATH", "timeout": 5})
    ok(j["result"] == "/home/daytona\n/usr/local/bin:/usr/bin:/bin\n", "the sandbox's HOME and PATH", j)

    req("POST", "/__fake/evilArchive", {"id": sid, "kind": "dotdot"})
    r, _, d = req("GET", tb + "/files/download?path=/tmp/x.tar")
    names = tarfile.open(fileobj=io.BytesIO(d)).getnames()
    ok("../cordon-escape" in names, "evil archive: a ../ entry", names)
    req("POST", "/__fake/evilArchive", {"id": sid, "kind": "symlink"})
    r, _, d = req("GET", tb + "/files/download?path=/tmp/x.tgz")
    t = tarfile.open(fileobj=io.BytesIO(d))
    ok(t.getmember("esc").issym() and "esc/cordon-escape" in t.getnames(), "evil archive: through a symlink")

    r, _, d = req("POST", "/api/sandbox/%s/last-activity" % sid)
    ok(r.status == 201 and d == b"", "last-activity: 201, empty", d)
    r, _, _ = req("POST", "/api/sandbox/%s/autostop/0" % sid)
    ok(r.status == 201, "autostop: 201")
    req("POST", "/__fake/stop", {"id": sid})
    r, j, _ = req("GET", "/api/sandbox/" + sid)
    ok(j["state"] == "stopped", "auto-stop: stopped", j)
    r, j, _ = req("POST", tb + "/process/execute", {"command": "true", "timeout": 5})
    ok(r.status >= 400, "toolbox on a stopped sandbox fails", r.status)
    r, j, _ = req("POST", "/api/sandbox/%s/start" % sid)
    ok(r.status == 200, "start: 200", j)
    for _ in range(10):
        r, j, _ = req("GET", "/api/sandbox/" + sid)
        if j["state"] == "started":
            break
    r, j, _ = req("POST", tb + "/process/execute", {"command": "cat /home/daytona/up.bin | wc -c", "timeout": 5})
    ok(r.status == 200 and j["result"].strip() == "5", "started again, files kept", j)

    req("POST", "/__fake/fault", {"path": "/api/sandbox", "status": 429, "retryAfter": 2})
    r, j, _ = req("GET", "/api/sandbox/" + sid)
    ok(r.status == 429 and r.getheader("Retry-After") == "2" and r.getheader("Retry-After-authenticated") == "2"
       and j["message"] == "Rate limit exceeded", "fault 429: Retry-After and suffixed headers", j)
    r, j, _ = req("GET", "/api/sandbox/" + sid)
    ok(r.status == 200, "fault used up after its count")
    req("POST", "/__fake/fault", {"path": "/api/sandbox", "status": 500})
    r, j, _ = req("GET", "/api/sandbox/" + sid)
    ok(r.status == 500 and j["statusCode"] == 500, "fault 500", j)
    req("POST", "/__fake/fault", {"path": tb + "/files/download", "cutBody": True})
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    c.request("GET", tb + "/files/download?path=/home/daytona/up.bin", headers=AUTH)
    r = c.getresponse()
    try:
        d = r.read()
    except http.client.IncompleteRead as e:
        d = b"incomplete:" + e.partial
    c.close()
    ok(r.status == 200 and d == b"incomplete:" + b"\x00b", "fault cutBody: half the body, then the connection closes", d)
    req("POST", "/__fake/fault", {"path": "/api/sandbox", "method": "POST", "delay": 1.0})
    t0 = time.time()
    r, j, _ = req("POST", "/api/sandbox", {"name": "slow"})
    ok(r.status == 200 and time.time() - t0 >= 1.0, "slow create", time.time() - t0)

    r, j, _ = req("DELETE", "/api/sandbox/" + sid)
    ok(r.status == 200 and j["state"] == "destroying", "delete: 200 destroying", j)
    r, j, _ = req("DELETE", "/api/sandbox/" + sid)
    ok(r.status == 404 and j["message"] == "Sandbox with ID or name %s not found" % sid, "delete again: 404", j)
    r, j, _ = req("POST", tb + "/process/execute", {"command": "true"})
    ok(400 <= r.status < 500, "toolbox of an unknown sandbox: 4xx", r.status)
    r, j, _ = req("GET", "/__fake/log")
    ok(j and j[0]["path"] == "/api/sandbox" and "Authorization" not in j[0]["headers"]
       and j[1]["headers"].get("Authorization") == "Bearer dtn_" + "0" * 64,
       "the request log has every request with its headers", j[:2])
finally:
    fake.terminate()
    fake.wait()
print("1..%d" % n)
sys.exit(1 if failed else 0)
