# The E2B fake (e2b_fake.py) against the service's wire protocol, written from the protocol
# alone (not from the pack): control plane status codes and bodies, Connect envelopes on a
# process stream (a zero exit without exitCode, a signal, an error inside a 200 stream, a cut
# stream whose process lives on), Connect to a running process by pid or tag (its later output
# and its end; not_found once it ended), the plain-JSON 401 of envd, the 502 of a dead sandbox,
# files, the paged list (X-Next-Token), and the faults.
import http.client
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

KEY = "e2b_" + "a1" * 20
tmp = tempfile.mkdtemp(prefix="e2b-fake-test-")
portfile = os.path.join(tmp, "port")
fake = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2b_fake.py"),
                         "--port-file", portfile, "--api-key", KEY, "--dir", tmp])
for _ in range(100):
    if os.path.exists(portfile):
        break
    time.sleep(0.05)
PORT = int(open(portfile).read())
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


def req(method, path, body=None, headers=None, raw=False):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    h = dict(headers or {})
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    if data is not None and "Content-Type" not in h:
        h["Content-Type"] = "application/json"
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    d = r.read()
    c.close()
    if raw:
        return r, d
    try:
        return r, json.loads(d) if d else None
    except ValueError:
        return r, d


def frames(data):
    out = []
    while len(data) >= 5:
        flags, ln = struct.unpack(">BI", data[:5])
        out.append((flags, json.loads(data[5:5 + ln])))
        data = data[5 + ln:]
    return out, data


def start(sb, argv, **kw):
    msg = {"process": {"cmd": argv[0], "args": argv[1:], "cwd": kw.get("cwd", "/home/user")}, "stdin": False}
    if "tag" in kw:
        msg["tag"] = kw["tag"]
    return stream(sb, "Start", msg, **kw)


def stream(sb, rpc, msg, **kw):
    body = json.dumps(msg).encode()
    env = struct.pack(">BI", 0, len(body)) + body
    h = {"E2b-Sandbox-Id": sb["sandboxID"], "E2b-Sandbox-Port": "49983",
         "X-Access-Token": kw.get("token", sb["envdAccessToken"]),
         "Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"}
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    c.request("POST", "/process.Process/" + rpc, body=env, headers=h)
    r = c.getresponse()
    try:
        d = r.read()
    except http.client.IncompleteRead as e:
        d = e.partial
    c.close()
    return r, d


A = {"X-API-Key": KEY}
r, b = req("POST", "/sandboxes", {"templateID": "base"}, {"X-API-Key": "e2b_bad"})
ok(r.status == 401 and b["message"].startswith("Invalid API key"), "a wrong key: 401 with the service's message", b)
r, b = req("POST", "/sandboxes", {"templateID": "base", "timeout": 0}, A)
ok(r.status == 400 and b["message"] == "Timeout must be greater than 0", "timeout 0: 400", b)
r, sb = req("POST", "/sandboxes", {"templateID": "base", "timeout": 60, "secure": True,
                                   "metadata": {"owner": "t1"}}, A)
ok(r.status == 201 and len(sb["sandboxID"]) == 20 and sb["envdAccessToken"] and sb["domain"] is None,
   "create: 201 with a 20-character id, an access token, domain null", sb)
sid = sb["sandboxID"]

r, d = start(sb, ["/bin/sh", "-c", "echo hello; echo oops >&2; exit 0"])
fr, rest = frames(d)
ok(r.status == 200 and r.getheader("Content-Type") == "application/connect+json", "Start: 200 connect+json")
evs = [f[1].get("event", {}) for f in fr if f[0] == 0]
end = [e["end"] for e in evs if "end" in e]
ok(list(evs[0]) == ["start"] and end and "exitCode" not in end[0] and end[0].get("exited") is True
   and end[0]["status"] == "exit status 0", "a zero exit: start first, an end without exitCode", evs)
import base64  # noqa: E402
out = b"".join(base64.b64decode(e["data"]["stdout"]) for e in evs if "data" in e and "stdout" in e["data"])
err = b"".join(base64.b64decode(e["data"]["stderr"]) for e in evs if "data" in e and "stderr" in e["data"])
ok(out == b"hello\n" and err == b"oops\n", "stdout and stderr apart, base64", (out, err))
ok(fr[-1] == (2, {}) and rest == b"", "the stream ends with the 0x02 envelope {}", fr[-1])

r, d = start(sb, ["/bin/sh", "-c", "exit 3"])
end = [f[1]["event"]["end"] for f in frames(d)[0] if f[0] == 0 and "end" in f[1]["event"]]
ok(end and end[0] == {"exitCode": 3, "exited": True, "status": "exit status 3", "error": "exit status 3"},
   "exit 3: exitCode, exited, status, error", end)
r, d = start(sb, ["/bin/sh", "-c", "kill -9 $$"])
end = [f[1]["event"]["end"] for f in frames(d)[0] if f[0] == 0 and "end" in f[1]["event"]]
ok(end and end[0] == {"exitCode": -1, "status": "signal: killed", "error": "signal: killed"},
   "killed by SIGKILL: exitCode -1, no exited, status 'signal: killed'", end)
r, d = start(sb, ["/bin/true"], cwd="/home/user/nowhere")
fr = frames(d)[0]
ok(r.status == 200 and fr[-1][0] == 2 and fr[-1][1]["error"]["code"] == "invalid_argument",
   "a bad cwd: invalid_argument inside a 200 stream", fr)
r, d = start(sb, ["/bin/true"], token="wrong")
ok(r.status == 401 and json.loads(d)["code"] == 401, "envd: a wrong access token is a plain-JSON 401", d)

req("POST", "/__fake/fault", {"route": "start", "kind": "error-frame"})
r, d = start(sb, ["/bin/true"])
fr = frames(d)[0]
ok(r.status == 200 and fr[-1][0] == 2 and fr[-1][1]["error"]["code"] == "internal", "fault: an error frame in a 200 stream", fr)
req("POST", "/__fake/fault", {"route": "start", "kind": "cut"})
r, d = start(sb, ["/bin/sh", "-c", "echo one; sleep 0.6; echo two; exit 4"], tag="job-1")
fr, rest = frames(d)
ok(not any(f[0] == 2 for f in fr), "fault: a stream cut mid-output has no end-of-stream envelope", (fr, rest))
pid = fr[0][1]["event"]["start"]["pid"] if fr and "start" in fr[0][1].get("event", {}) else None
r, b = req("POST", "/process.Process/List", {}, {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983",
                                                  "X-Access-Token": sb["envdAccessToken"]})
ok(r.status == 200 and {"pid": pid, "tag": "job-1"} in b["processes"],
   "the cut stream's process lives on (List: its pid and tag)", b)
# Connect: the running process again, its start event, its output from now on, its end.
r, d = stream(sb, "Connect", {"process": {"pid": pid}})
fr, rest = frames(d)
evs = [f[1].get("event", {}) for f in fr if f[0] == 0]
out = b"".join(base64.b64decode(e["data"]["stdout"]) for e in evs if "data" in e and "stdout" in e["data"])
end = [e["end"] for e in evs if "end" in e]
ok(r.status == 200 and evs and evs[0] == {"start": {"pid": pid}} and out == b"two\n"
   and end == [{"exitCode": 4, "exited": True, "status": "exit status 4", "error": "exit status 4"}]
   and fr[-1] == (2, {}), "Connect by pid: start, the output from then on, the end, end-of-stream", fr)
r, d = stream(sb, "Connect", {"process": {"pid": pid}})
fr = frames(d)[0]
ok(r.status == 200 and fr == [(2, {"error": {"code": "not_found", "message": "process with pid %s not found" % pid}})],
   "Connect to a process that ended: not_found inside a 200 stream", fr)
import threading  # noqa: E402
got = {}
th = threading.Thread(target=lambda: got.update(r=start(sb, ["/bin/sh", "-c", "sleep 0.4; echo late"], tag="job-2")))
th.start()
time.sleep(0.2)
r, d = stream(sb, "Connect", {"process": {"tag": "job-2"}})
th.join()
evs = [f[1].get("event", {}) for f in frames(d)[0] if f[0] == 0]
evs1 = [f[1].get("event", {}) for f in frames(got["r"][1])[0] if f[0] == 0]
late = [base64.b64decode(e["data"]["stdout"]) for e in evs if "data" in e]
ok("start" in evs[0] and late == [b"late\n"] and "end" in evs[-1] and evs[1:] == evs1[1:],
   "Connect by tag while the Start stream follows too: both get the output and the end", (evs, evs1))

h = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983", "X-Access-Token": sb["envdAccessToken"],
     "Content-Type": "application/octet-stream"}
r, b = req("POST", "/files?path=/home/user/d/x.txt", b"data\n", h)
ok(r.status == 200 and b == [{"path": "/home/user/d/x.txt", "name": "x.txt", "type": "file"}], "upload: 200 with the entry", b)
r, d = req("GET", "/files?path=/home/user/d/x.txt", None, h, raw=True)
ok(r.status == 200 and d == b"data\n", "download: the bytes", d)
r, b = req("GET", "/files?path=/home/user/none", None, h)
ok(r.status == 404 and b["message"] == "path '/home/user/none' does not exist", "download of a missing path: 404", b)

req("POST", "/__fake/fault", {"route": "list", "status": 429, "retryAfter": 2})
r, b = req("GET", "/v2/sandboxes?metadata=owner%3Dt1", None, A)
ok(r.status == 429 and r.getheader("Retry-After") == "2", "fault: 429 with Retry-After", b)
r, b = req("GET", "/v2/sandboxes?metadata=owner%3Dt1", None, A)
ok(r.status == 200 and [s["sandboxID"] for s in b] == [sid], "list by metadata finds it", b)
r, b = req("GET", "/v2/sandboxes?metadata=owner%3Dt2", None, A)
ok(r.status == 200 and b == [], "…and not for other metadata", b)
more = [req("POST", "/sandboxes", {"templateID": "base", "metadata": {"owner": "t1"}}, A)[1]["sandboxID"]
        for _ in range(2)]
req("POST", "/__fake/config", {"pageSize": 2})
seen, tok, pages = [], None, 0
while True:
    r, b = req("GET", "/v2/sandboxes?metadata=owner%3Dt1&limit=100" + ("&nextToken=" + tok if tok else ""), None, A)
    pages += 1
    seen += [x["sandboxID"] for x in b]
    tok = r.getheader("X-Next-Token")
    if r.status != 200 or not tok or pages > 5:
        break
ok(pages == 2 and seen == [sid] + more, "a paged list: X-Next-Token to the next page, all of it once", (pages, seen))
r, b = req("GET", "/v2/sandboxes?limit=101", None, A)
ok(r.status == 400, "a limit over 100: 400", b)
req("POST", "/__fake/config", {"pageSize": 0})
for x in more:
    req("DELETE", "/sandboxes/%s" % x, None, A)
r, b = req("POST", "/sandboxes/%s/timeout" % sid, {"timeout": 120}, A)
ok(r.status == 204, "set timeout: 204")
import tarfile, io  # noqa: E401,E402
req("POST", "/__fake/fault", {"route": "files-get", "kind": "cut-body"})
c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
c.request("GET", "/files?path=/home/user/d/x.txt", headers=h)
r = c.getresponse()
try:
    d = r.read()
except http.client.IncompleteRead as e:
    d = b"incomplete:" + e.partial
c.close()
ok(r.status == 200 and d == b"incomplete:da", "fault: a download cut after half its body", d)
req("POST", "/__fake/fault", {"route": "files-get", "kind": "evil-archive"})
r, d = req("GET", "/files?path=/home/user/d/x.txt", None, h, raw=True)
names = tarfile.open(fileobj=io.BytesIO(d)).getnames()
ok("../escape.txt" in names and "esc/pwned.txt" in names, "fault: an archive with ../ and a symlink escape", names)

r, b = req("DELETE", "/sandboxes/%s" % sid, None, A)
ok(r.status == 204, "kill: 204")
r, b = req("DELETE", "/sandboxes/%s" % sid, None, A)
ok(r.status == 404 and b["message"] == 'Sandbox "%s" doesn\'t exist or you don\'t have access to it' % sid,
   "a second kill: 404 with the service's message", b)
r, d = start(sb, ["/bin/true"])
ok(r.status == 502 and json.loads(d)["message"] == "The sandbox was not found", "envd of a gone sandbox: 502", d)

fake.terminate()
fake.wait()
print("1..%d" % n)
sys.exit(1 if failed else 0)
