# The E2B pack (backends/e2b) end to end against tests/fakes/e2b_fake.py. Run by e2b-pack.sh,
# which copies the pack into $PACK_SRC. The manifest's copy asks for the proxy network with the
# fake's loopback address as its only domain (an IP address listed there is the only way the
# pack's proxy reaches a loopback address).
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "helpers"))
from ctl import SOCK, STATE  # noqa: E402
from rpc import Conn, Tap  # noqa: E402

WORK = os.environ["WORK"]
SRC = os.environ["PACK_SRC"]
FAKE_DIR = os.environ["FAKE_DIR"]
PACK = "org.cordon.e2b"
REF = "pack:%s:e2b" % PACK
CORDON = os.path.join(os.environ["top_builddir"], "cordon")
KEY = os.environ["E2B_TEST_KEY"]
RW = {"filesystem": {"workspace": {"access": "read-write"}}}
t = Tap()

portfile = os.path.join(FAKE_DIR, "port")
fake = subprocess.Popen([sys.executable, os.path.join(os.environ["top_srcdir"], "tests", "fakes", "e2b_fake.py"),
                         "--port-file", portfile, "--api-key", KEY, "--dir", FAKE_DIR],
                        stdout=subprocess.DEVNULL, stderr=open(os.path.join(FAKE_DIR, "fake.log"), "w"))
for _ in range(200):
    if os.path.exists(portfile):
        break
    time.sleep(0.05)
PORT = int(open(portfile).read())
URL = "http://127.0.0.1:%d" % PORT


def fake_call(path, body=None):
    req = urllib.request.Request(URL + path, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"{}")


def live():
    return {k: v for k, v in fake_call("/__fake/state")["sandboxes"].items() if v["alive"]}


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


def run(c, sid, script, timeout=60, stdin=None):
    p = {"sandbox": sid, "callerCwd": WORK, "cwd": WORK, "env": ["PATH=/usr/bin:/bin"],
         "argv": ["/bin/sh", "-c", script]}
    if stdin is not None:
        p["stdin"] = stdin
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
    t.ok(r.returncode == 0, "the E2B pack installs", r)
    c = Conn(SOCK)
    r = c.call("pack.enable", {"id": PACK})
    t.ok("result" in r, "it asks for the proxy network: enabled by a person", r)
    r = c.call("secret.set", {"backend": REF, "field": "apiKey", "value": "e2b_" + "0" * 40})
    t.ok(r.get("result", {}).get("configured") is True, "a (wrong) API key is set", r)
    before = c.call("backend.list", {}).get("result", {}).get("active")
    r = c.call("backend.activate", {"backend": REF, "settings": {"baseUrl": URL}}, timeout=60)
    e = r.get("error", {})
    t.ok(e and "Invalid API key, please visit https://e2b.dev/docs/api-key" in e.get("message", "")
         and e.get("data", {}).get("step") in ("probe", "isAvailable"),
         "a wrong key fails the activation at the probe with the service's message", r)
    t.ok(c.call("backend.list", {}).get("result", {}).get("active") == before, "…and changes nothing")

    r = c.call("secret.set", {"backend": REF, "field": "apiKey", "value": KEY})
    r = c.call("backend.activate", {"backend": REF, "settings": {"baseUrl": URL}}, timeout=60)
    launcher = r.get("result", {}).get("launcher", "")
    t.ok(launcher.startswith(REF + "#"), "the right key activates it (%s)" % launcher, r)

    r = c.call("sandbox.acquire", {"callerCwd": WORK}, timeout=60)
    t.ok(r.get("error", {}).get("data", {}).get("field") == "filesystem.workspace.access",
         "a read-only lease is refused (filesystem.workspace.access)", r)
    t0 = time.monotonic()
    r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW}, timeout=120)
    acq = time.monotonic() - t0
    sid = r.get("result", {}).get("sandboxId")
    t.ok(sid and len(live()) == 1, "a read-write lease is a sandbox of the fake (%.2f s)" % acq, r)

    res, r = run(c, sid, 'basename "$PWD"; cat keep.txt change.txt; echo err >&2; '
                 'echo after > change.txt && echo new > added.txt && rm delete.txt && echo more >> sub/deep.txt; '
                 'env | grep -c e2b_ ; exit 7')
    out = res.get("stdout", "").split()
    t.ok(res.get("exitCode") == 7 and out[:3] == ["workspace", "kept", "before"]
         and res.get("stderr") == "err\n", "a command runs remotely: stdout, stderr apart, exit 7", r)
    t.ok(out[3:] == ["0"], "the key is not in the command's environment", out)
    res, r = run(c, sid, "true")
    t.ok(res.get("exitCode") == 0 and res.get("signal", 0) == 0, "exit 0 (no exitCode on the wire) is 0", r)
    res, r = run(c, sid, "kill -TERM $$")
    t.ok(res.get("signal") == 15, "a signal is told exactly (SIGTERM)", r)
    res, r = run(c, sid, "cat; echo done", stdin="from stdin\n")
    t.ok(res.get("stdout") == "from stdin\ndone\n", "stdin reaches it, with its EOF", r)
    # The pack's own cost per exec: the fake's time for the same command is in its process.
    n = 10
    t0 = time.monotonic()
    for _ in range(n):
        run(c, sid, "true")
    per = (time.monotonic() - t0) / n * 1000
    t1 = time.monotonic()
    for _ in range(n):
        subprocess.run(["/bin/sh", "-c", "true"])
    local = (time.monotonic() - t1) / n * 1000
    # The fake's own time for the same command: a Start stream straight to it.
    import http.client  # noqa: E402
    import struct  # noqa: E402
    (rsid, rsb), = live().items()
    body = json.dumps({"process": {"cmd": "/bin/sh", "args": ["-c", "true"], "cwd": "/home/user/workspace"},
                       "stdin": False}).encode()
    hc = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    t2 = time.monotonic()
    for _ in range(n):
        hc.request("POST", "/process.Process/Start", body=struct.pack(">BI", 0, len(body)) + body,
                   headers={"E2b-Sandbox-Id": rsid, "E2b-Sandbox-Port": "49983", "X-Access-Token": rsb["token"],
                            "Content-Type": "application/connect+json"})
        hc.getresponse().read()
    direct = (time.monotonic() - t2) / n * 1000
    hc.close()
    t.ok(per < 2000, "an exec through cordon, the pack and the fake: %.1f ms; the fake alone: %.1f ms; "
         "a local sh: %.1f ms" % (per, direct, local))

    req_fail = fake_call("/__fake/fault", {"route": "start", "kind": "error-frame"})
    res, r = run(c, sid, "echo never")
    t.ok(res.get("exitCode") not in (0, None) and "injected: envd failed" in res.get("stderr", ""),
         "an error inside a 200 stream fails the command with its message", r)
    def log_count(path):
        return sum(1 for e in fake_call("/__fake/state")["log"] if e["path"] == path)

    # A stream cut mid-output: the pack follows the process again (Connect) to its end.
    fake_call("/__fake/fault", {"route": "start", "kind": "cut"})
    n0 = log_count("/process.Process/Connect")
    res, r = run(c, sid, "echo one; sleep 1; echo two; echo err2 >&2; exit 5")
    t.ok(res.get("exitCode") == 5 and res.get("stdout", "").endswith("two\n") and res.get("stderr") == "err2\n"
         and log_count("/process.Process/Connect") == n0 + 1,
         "a stream cut mid-output is followed again (Connect): the later output and exit 5 arrive", r)
    # A Connect refused (the sandbox's proxy answering 502): the command fails, saying why.
    fake_call("/__fake/fault", {"route": "start", "kind": "cut"})
    fake_call("/__fake/fault", {"route": "connect", "status": 502, "message": "injected: no route"})
    res, r = run(c, sid, "echo one; sleep 1; echo two")
    err = res.get("stderr", "")
    t.ok(res.get("exitCode") not in (0, None) and err.startswith("cordon-e2b: the process stream was cut (")
         and "injected: no route" in err, "a cut stream that cannot be followed again fails the command with both causes", r)
    # Every Connect cut too: bounded attempts (5), then the command fails.
    fake_call("/__fake/fault", {"route": "start", "kind": "cut"})
    fake_call("/__fake/fault", {"route": "connect", "kind": "cut", "count": 20})
    n0 = log_count("/process.Process/Connect")
    res, r = run(c, sid, "for i in $(seq 60); do echo $i; sleep 0.1; done", timeout=120)
    n1 = log_count("/process.Process/Connect") - n0
    t.ok(res.get("exitCode") not in (0, None) and n1 == 5 and "could not be followed again" in res.get("stderr", ""),
         "a stream cut again and again: 5 attempts to follow it, then the command fails (%d)" % n1, r)
    fake_call("/__fake/fault", {"route": "timeout", "status": 429, "retryAfter": 1, "count": 1})

    t.ok(read("change.txt") == "before\n" and read("added.txt") is None, "the host is unchanged before release")
    # The archive's download answered 503 twice (Retry-After: 1), then served.
    fake_call("/__fake/fault", {"route": "files-get", "status": 503, "retryAfter": 1, "count": 2})
    n0 = log_count("/files")
    t0 = time.monotonic()
    r = c.call("sandbox.release", {"sandboxId": sid}, timeout=120)
    waited = time.monotonic() - t0
    t.ok(log_count("/files") - n0 == 3 and waited >= 2, "the archive's download is retried after 503s, "
         "Retry-After honoured (%d requests, %.1f s)" % (log_count("/files") - n0, waited), r)
    rep = r.get("result", {}).get("workspace") or {}
    items = {i["path"]: i["action"] for i in rep.get("items", [])}
    t.ok(r.get("result", {}).get("released") is True and read("change.txt") == "after\n"
         and read("added.txt") == "new\n" and read("delete.txt") is None
         and read("sub/deep.txt") == "deep\nmore\n", "release brings the lease's changes back", r)
    t.ok(items.get("change.txt") == "changed" and items.get("added.txt") == "added"
         and items.get("delete.txt") == "deleted", "…and reports them", rep)
    t.ok(live() == {}, "the remote sandbox is killed at release")

    # An archive that escapes: the core refuses what escapes; nothing lands outside.
    r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW}, timeout=120)
    sid = r.get("result", {}).get("sandboxId")
    fake_call("/__fake/fault", {"route": "files-get", "kind": "evil-archive"})
    r = c.call("sandbox.release", {"sandboxId": sid}, timeout=120)
    rep = r.get("result", {}).get("workspace") or r.get("error", {}).get("data", {}).get("workspace") or {}
    esc = os.path.join(os.path.dirname(WORK), "escape.txt")
    t.ok(not os.path.exists(esc) and not os.path.exists("/tmp/pwned.txt")
         and (rep.get("counts", {}).get("refused", 0) >= 1 or rep.get("error")),
         "an archive with ../ and a symlink escape: refused, reported, nothing outside the workspace (%s)"
         % json.dumps(rep.get("counts") or rep.get("error")), rep)

    # The archive's download cut after half of it: the release fails naming the cause, the host
    # workspace is unchanged.
    snap = {p: read(p) for p in ("keep.txt", "change.txt", "added.txt")}
    r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW}, timeout=120)
    sid = r.get("result", {}).get("sandboxId")
    run(c, sid, "echo cut > change.txt; head -c 200000 /dev/urandom > big.bin")
    fake_call("/__fake/fault", {"route": "files-get", "kind": "cut-body"})
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

    # A slow create, then a sandbox that dies mid-lease: its command fails with the service's
    # message, its release fails, the host workspace is unchanged.
    snap = {p: read(p) for p in ("keep.txt", "change.txt", "added.txt", "ok.txt")}
    fake_call("/__fake/fault", {"route": "create", "kind": "delay", "delayMs": 1500})
    t0 = time.monotonic()
    r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW}, timeout=120)
    sid = r.get("result", {}).get("sandboxId")
    t.ok(sid and time.monotonic() - t0 >= 1.5, "a slow create is waited for (%.1f s)" % (time.monotonic() - t0), r)
    (dead, _), = live().items()
    fake_call("/__fake/die", {"sandbox": dead})
    res, r = run(c, sid, "echo hi > added.txt")
    t.ok(res.get("exitCode") not in (0, None) and "The sandbox was not found" in res.get("stderr", ""),
         "a command in a dead sandbox fails with the service's message", r)
    r = c.call("sandbox.release", {"sandboxId": sid}, timeout=120)
    t.ok({p: read(p) for p in snap} == snap, "its release changes nothing on the host", r)

    # The key never leaks.
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

    # kill -9 of the pack mid-lease; a new activation removes the orphan.
    r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW, "detached": True}, timeout=120)
    sid = r.get("result", {}).get("sandboxId")
    orphan = set(live())
    t.ok(len(orphan) == 1, "a lease holds one remote sandbox", orphan)
    pids = subprocess.run(["pgrep", "-f", "cordon-e2b-pack"], capture_output=True, text=True).stdout.split()
    mine = [p for p in pids if os.path.realpath("/proc/%s/exe" % p).startswith(os.path.join(STATE, "packs"))]
    for p in mine:
        os.kill(int(p), signal.SIGKILL)
    t.ok(len(mine) >= 1, "the pack process is killed with SIGKILL (%s)" % mine)
    time.sleep(1)
    # More orphans of dead instances of this host, and a list of pages of 1: the ones past the
    # first page are found too.
    md = dict(list(live().values())[0]["metadata"])
    for _ in range(3):
        md["cordonOwner"] = os.urandom(16).hex()
        urllib.request.urlopen(urllib.request.Request(
            URL + "/sandboxes", data=json.dumps({"templateID": "base", "metadata": md}).encode(),
            headers={"Content-Type": "application/json", "X-API-Key": KEY}), timeout=10).read()
    orphan = set(live())
    fake_call("/__fake/config", {"pageSize": 1})
    r = c.call("backend.activate", {"backend": REF, "settings": {"baseUrl": URL}}, timeout=60)
    t.ok(r.get("result", {}).get("launcher", "").startswith(REF + "#"), "a new activation", r)
    pages = [e for e in fake_call("/__fake/state")["log"] if e["path"] == "/v2/sandboxes" and "metadata=" in e["query"]]
    t.ok(len(orphan) == 4 and not (orphan & set(live())),
         "…removed the 4 orphans from the fake's list, read in pages of 1 (%d list requests)" % len(pages), live())
finally:
    fake.terminate()
    fake.wait()
sys.exit(t.done())
