# The Daytona pack (backends/daytona) end to end against tests/fakes/daytona_fake.py. Run by
# daytona-pack.sh, which copies the pack into $PACK_SRC. The manifest's copy asks for the proxy
# network with the fake's loopback address as its only domain.
import base64
import http.client
import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "helpers"))
from ctl import SOCK, STATE  # noqa: E402
from rpc import Conn, Tap  # noqa: E402

WORK = os.environ["WORK"]
SRC = os.environ["PACK_SRC"]
FAKE_DIR = os.environ["FAKE_DIR"]
PACK = "org.cordon.daytona"
REF = "pack:%s:daytona" % PACK
CORDON = os.path.join(os.environ["top_builddir"], "cordon")
KEY = os.environ["DAYTONA_TEST_KEY"]
RW = {"filesystem": {"workspace": {"access": "read-write"}}}
t = Tap()

portfile = os.path.join(FAKE_DIR, "port")
fake = subprocess.Popen([sys.executable, os.path.join(os.environ["top_srcdir"], "tests", "fakes", "daytona_fake.py"),
                         "--port-file", portfile, "--api-key", KEY, "--dir", FAKE_DIR],
                        stdout=subprocess.DEVNULL, stderr=open(os.path.join(FAKE_DIR, "fake.log"), "w"))
for _ in range(200):
    if os.path.exists(portfile):
        break
    time.sleep(0.05)
PORT = int(open(portfile).read())
URL = "http://127.0.0.1:%d" % PORT
API = URL + "/api"


def fake_call(path, body=None):
    req = urllib.request.Request(URL + path, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"{}")


def live():
    return {s["id"]: s for s in fake_call("/__fake/sandboxes")}


def write(rel, text):
    p = os.path.join(WORK, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)


def read(rel):
    try:
        with open(os.path.join(WORK, rel)) as f:
            return f.read()
    except OSError:
        return None


def run(c, sid, script, timeout=60, **kw):
    p = {"sandbox": sid, "callerCwd": WORK, "cwd": WORK, "env": ["PATH=/usr/bin:/bin"],
         "argv": ["/bin/sh", "-c", script]}
    p.update(kw)
    r = c.call("process.exec", p, timeout=timeout)
    return r.get("result", {}), r


try:
    m = json.load(open(os.path.join(SRC, "pack.json")))
    m["domains"] = ["127.0.0.1:%d" % PORT]
    json.dump(m, open(os.path.join(SRC, "pack.json"), "w"))
    write("keep.txt", "kept\n")
    write("change.txt", "before\n")
    write("delete.txt", "doomed\n")
    write("sub/deep.txt", "deep\n")

    r = subprocess.run([CORDON, "pack", "install", SRC], capture_output=True, text=True, timeout=60)
    t.ok(r.returncode == 0, "the Daytona pack installs", r)
    c = Conn(SOCK)
    r = c.call("pack.enable", {"id": PACK})
    t.ok("result" in r, "it asks for the proxy network: enabled by a person", r)
    r = c.call("secret.set", {"backend": REF, "field": "apiKey", "value": "dtn_" + "0" * 64})
    t.ok(r.get("result", {}).get("configured") is True, "a (wrong) API key is set", r)
    before = c.call("backend.list", {}).get("result", {}).get("active")
    n_before = len(fake_call("/__fake/log"))
    r = c.call("backend.activate", {"backend": REF, "settings": {"baseUrl": API}}, timeout=60)
    e = r.get("error", {})
    t.ok(e and "Daytona: Unauthorized" in e.get("message", "")
         and e.get("data", {}).get("step") in ("probe", "isAvailable"),
         "a wrong key fails the activation at the probe with the service's message", r)
    t.ok(c.call("backend.list", {}).get("result", {}).get("active") == before and live() == {},
         "…and changes nothing (no sandbox, the active backend kept)")
    t.ok(len(fake_call("/__fake/log")) > n_before, "…after asking the service")

    r = c.call("secret.set", {"backend": REF, "field": "apiKey", "value": KEY})
    r = c.call("backend.activate", {"backend": REF, "settings": {"baseUrl": API}}, timeout=60)
    launcher = r.get("result", {}).get("launcher", "")
    t.ok(launcher.startswith(REF + "#"), "the right key activates it (%s)" % launcher, r)

    r = c.call("sandbox.acquire", {"callerCwd": WORK}, timeout=60)
    t.ok(r.get("error", {}).get("data", {}).get("field") == "filesystem.workspace.access",
         "a read-only lease is refused (filesystem.workspace.access)", r)
    t0 = time.monotonic()
    r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW}, timeout=120)
    acq = time.monotonic() - t0
    sid = r.get("result", {}).get("sandboxId")
    sbs = live()
    t.ok(sid and len(sbs) == 1, "a read-write lease is a sandbox of the fake (%.2f s)" % acq, r)
    (rsid, rsb), = sbs.items() if len(sbs) == 1 else ((None, {}),)
    lb = rsb.get("labels", {})
    t.ok(lb.get("cordonPack") == PACK and len(lb.get("cordonOwner", "")) == 32 and rsb.get("state") == "started",
         "it is labelled with the pack, host and owner, and started", rsb)

    res, r = run(c, sid, 'basename "$PWD"; cat keep.txt change.txt; echo err >&2; '
                 'echo after > change.txt && echo new > added.txt && rm delete.txt && echo more >> sub/deep.txt; '
                 'env | grep -c dtn_ ; exit 7')
    out = res.get("stdout", "").split()
    t.ok(res.get("exitCode") == 7 and out[:3] == ["workspace", "kept", "before"]
         and res.get("stderr") == "err\n", "a command runs remotely: stdout, stderr apart, exit 7", r)
    t.ok(out[3:] == ["0"], "the key is not in the command's environment", out)
    res, r = run(c, sid, "printf 'a\\0b\\377'; printf 'no newline' >&2")
    t.ok(base64.b64decode(res.get("stdoutBase64", "")) == b"a\0b\xff" if "stdoutBase64" in res
         else res.get("stdout") == "a\0b\ufffd", "output is byte-exact through the line-based log", r)
    t.ok(res.get("stderr") == "no newline", "a last line without newline comes back without one", r)
    res, r = run(c, sid, "kill -TERM $$")
    t.ok(res.get("signal") == 15 and res.get("reason") == "signaled", "SIGTERM is told as signal 15", r)
    res, r = run(c, sid, "cat; echo done", stdin="from stdin\n")
    t.ok(res.get("stdout") == "from stdin\ndone\n", "stdin reaches it, with its EOF", r)

    # The pack's own cost per exec, against the fake's time for the same command (its toolbox
    # driven directly: session, exec, status polls until the exit code, session delete).
    n = 10
    t0 = time.monotonic()
    for _ in range(n):
        run(c, sid, "true")
    per = (time.monotonic() - t0) / n * 1000
    tb = urllib.parse.urlsplit(live()[rsid]["toolboxProxyUrl"]).path + "/" + rsid
    hc = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    H = {"Authorization": "Bearer " + KEY, "Content-Type": "application/json"}

    def hreq(method, path, body=None):
        hc.request(method, path, body=json.dumps(body).encode() if body is not None else None, headers=H)
        rr = hc.getresponse()
        d = rr.read()
        return json.loads(d) if d else None
    t2 = time.monotonic()
    for i in range(n):
        hreq("POST", tb + "/process/session", {"sessionId": "direct%d" % i})
        cid = hreq("POST", tb + "/process/session/direct%d/exec" % i,
                   {"command": "(true)", "runAsync": True})["cmdId"]
        while "exitCode" not in hreq("GET", tb + "/process/session/direct%d/command/%s" % (i, cid)):
            time.sleep(0.002)
        hreq("GET", tb + "/process/session/direct%d/command/%s/logs" % (i, cid))
        hreq("DELETE", tb + "/process/session/direct%d" % i)
    direct = (time.monotonic() - t2) / n * 1000
    hc.close()
    t.ok(per < 3000, "an exec through cordon, the pack and the fake: %.1f ms; the fake alone: %.1f ms"
         % (per, direct))

    # Auto-stop: a running command is lost with a clear message; the lease goes on (restarted).
    import threading  # noqa: E402
    lost = {}

    def long_run():
        lost["res"], lost["r"] = run(Conn(SOCK), sid, "echo up; sleep 30")
    th = threading.Thread(target=long_run)
    th.start()
    time.sleep(1.5)
    fake_call("/__fake/stop", {"id": rsid})
    th.join(60)
    lr = lost.get("res", {})
    t.ok(lr.get("exitCode") not in (0, None) and "idle auto-stop" in lr.get("stderr", "")
         and lr.get("stdout") == "up\n", "a command running when the sandbox auto-stops fails, saying so", lost)
    res, r = run(c, sid, "cat change.txt")
    t.ok(res.get("exitCode") == 0 and res.get("stdout") == "after\n",
         "after an auto-stop the sandbox is started again, its files kept", r)

    t.ok(read("change.txt") == "before\n" and read("added.txt") is None, "the host is unchanged before release")
    fake_call("/__fake/fault", {"path": "/toolbox/%s/files/download" % rsid, "status": 429, "retryAfter": 1})
    fake_call("/__fake/fault", {"path": "/toolbox/%s/files/download" % rsid, "status": 503, "retryAfter": 1})
    nd = lambda: sum(1 for e in fake_call("/__fake/log") if e["path"].startswith("/toolbox/%s/files/download" % rsid))  # noqa: E731
    n0 = nd()
    r = c.call("sandbox.release", {"sandboxId": sid}, timeout=120)
    t.ok(nd() - n0 == 3, "the archive's download is retried after a 429 and a 503 (%d requests)" % (nd() - n0))
    rep = r.get("result", {}).get("workspace") or {}
    items = {i["path"]: i["action"] for i in rep.get("items", [])}
    t.ok(r.get("result", {}).get("released") is True and read("change.txt") == "after\n"
         and read("added.txt") == "new\n" and read("delete.txt") is None
         and read("sub/deep.txt") == "deep\nmore\n", "release brings the lease's changes back (after a 429 and a 503)", r)
    t.ok(items.get("change.txt") == "changed" and items.get("added.txt") == "added"
         and items.get("delete.txt") == "deleted", "…and reports them", rep)
    t.ok(live() == {}, "the remote sandbox is deleted at release")

    # Archives that escape: the core refuses what escapes; nothing lands outside.
    for kind in ("dotdot", "symlink"):
        r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW}, timeout=120)
        sid = r.get("result", {}).get("sandboxId")
        (rsid, _), = live().items()
        fake_call("/__fake/evilArchive", {"id": rsid, "kind": kind})
        r = c.call("sandbox.release", {"sandboxId": sid}, timeout=120)
        rep = r.get("result", {}).get("workspace") or r.get("error", {}).get("data", {}).get("workspace") or {}
        esc = os.path.join(os.path.dirname(WORK), "cordon-escape")
        t.ok(not os.path.exists(esc) and not os.path.exists("/etc/cordon-escape")
             and (rep.get("counts", {}).get("refused", 0) >= 1 or rep.get("error")),
             "an archive with a %s escape: refused, reported, nothing outside the workspace (%s)"
             % (kind, json.dumps(rep.get("counts") or rep.get("error"))), rep)

    # A slow create and a 500 then a 429 on the way are waited for.
    fake_call("/__fake/fault", {"path": "/api/sandbox", "method": "POST", "delay": 1.5})
    fake_call("/__fake/createPolls", {"n": 5})
    t0 = time.monotonic()
    r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW}, timeout=120)
    sid = r.get("result", {}).get("sandboxId")
    t.ok(sid and time.monotonic() - t0 >= 1.5, "a slow create is waited for (%.1f s)" % (time.monotonic() - t0), r)
    (rsid, _), = live().items()
    fake_call("/__fake/fault", {"path": "/toolbox/%s/process/session" % rsid, "method": "GET", "status": 500})
    res, r = run(c, sid, "echo ok")
    t.ok(res.get("exitCode") == 0 and res.get("stdout") == "ok\n", "a 500 on a poll is retried", r)
    r = c.call("sandbox.release", {"sandboxId": sid}, timeout=120)
    t.ok(r.get("result", {}).get("released") is True, "released", r)

    # The archive's download cut after half of it: the release fails naming the cause, the host
    # workspace is unchanged.
    snap = {p: read(p) for p in ("keep.txt", "change.txt", "added.txt")}
    r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW}, timeout=120)
    sid = r.get("result", {}).get("sandboxId")
    (rsid, _), = live().items()
    run(c, sid, "echo cut > change.txt; head -c 200000 /dev/urandom > big.bin")
    fake_call("/__fake/fault", {"path": "/toolbox/%s/files/download" % rsid, "cutBody": True})
    r = c.call("sandbox.release", {"sandboxId": sid}, timeout=120)
    msg = json.dumps(r)
    plog = ""
    for _ in range(40):  # the pack's stderr reaches the controller's log on its own path
        try:
            with open(os.path.join(STATE, "controller.log"), errors="replace") as f:
                plog = [ln for ln in f if "released (" in ln][-1]
        except (OSError, IndexError):
            pass
        if "the stream was cut after" in plog:
            break
        time.sleep(0.05)
    # The controller sees the archive end early (and says so) before the pack's answer comes.
    t.ok("result" not in r and ("the stream was cut after" in msg or "truncated archive" in msg)
         and "the stream was cut after" in plog and {p: read(p) for p in snap} == snap and read("big.bin") is None,
         "a download cut mid-archive: the release fails saying so (the pack: %s), the host is unchanged"
         % plog.strip()[-120:], r)

    # The key never leaks: not in events, state files, logs; only in the auth header.
    c2 = Conn(SOCK)
    evs = json.dumps(c2.call("events.subscribe", {}).get("result", {}))
    logs = ""
    for root, dirs, files in os.walk(STATE):
        for f in files:
            try:
                with open(os.path.join(root, f), "rb") as fh:
                    logs += fh.read().decode("latin-1")
            except OSError:
                pass
    t.ok(KEY not in evs, "the key is in no event")
    t.ok(KEY not in logs and KEY[4:] not in logs,
         "the key is in no state file nor the controller log (secrets.json holds it encrypted)")
    log = fake_call("/__fake/log")
    where = set()
    for ent in log:
        for k, v in ent["headers"].items():
            if KEY in v:
                where.add(k.lower() + (": ok" if v == "Bearer " + KEY else ": BAD"))
        if KEY in ent["path"]:
            where.add("path")
    t.ok(where == {"authorization: ok"}, "on the wire the key is in the Authorization header only", where)

    # kill -9 of the pack mid-lease; a new activation removes the orphan.
    r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW, "detached": True}, timeout=120)
    sid = r.get("result", {}).get("sandboxId")
    orphan = set(live())
    t.ok(len(orphan) == 1, "a lease holds one remote sandbox", orphan)
    pids = subprocess.run(["pgrep", "-f", "cordon-daytona-pack"], capture_output=True, text=True).stdout.split()
    mine = [p for p in pids if os.path.realpath("/proc/%s/exe" % p).startswith(os.path.join(STATE, "packs"))]
    for p in mine:
        os.kill(int(p), signal.SIGKILL)
    t.ok(len(mine) >= 1, "the pack process is killed with SIGKILL (%s)" % mine)
    time.sleep(1)
    # More orphans of dead instances of this host, and a list of pages of 1: the ones past the
    # first page are found too.
    labels = dict(list(live().values())[0]["labels"])
    for i in range(3):
        labels["cordonOwner"] = os.urandom(16).hex()
        urllib.request.urlopen(urllib.request.Request(
            API + "/sandbox", data=json.dumps({"name": "orphan-%d" % i, "labels": labels}).encode(),
            headers={"Content-Type": "application/json", "Authorization": "Bearer " + KEY}), timeout=10).read()
    orphan = set(live())
    fake_call("/__fake/pageSize", {"n": 1})
    r = c.call("backend.activate", {"backend": REF, "settings": {"baseUrl": API}}, timeout=60)
    t.ok(r.get("result", {}).get("launcher", "").startswith(REF + "#"), "a new activation", r)
    pages = [e for e in fake_call("/__fake/log") if e["path"].startswith("/api/sandbox?") and "labels=" in e["path"]]
    t.ok(len(orphan) == 4 and not (orphan & set(live())),
         "…removed the 4 orphans from the fake's list, read in pages of 1 (%d list requests)" % len(pages), live())
finally:
    fake.terminate()
    fake.wait()
sys.exit(t.done())
