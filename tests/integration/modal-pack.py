# The Modal pack (backends/modal) end to end against tests/fakes/modal_fake.py. Run by
# modal-pack.sh, which copies the pack into $PACK_SRC. The manifest's copy asks for the proxy
# network with the fakes' loopback addresses (cleartext, and TLS when openssl is there) as its
# only domains.
import json
import os
import signal
import subprocess
import sys
import time

import grpc

sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "helpers"))
from ctl import SOCK, STATE  # noqa: E402
from rpc import Conn, Tap  # noqa: E402

WORK = os.environ["WORK"]
SRC = os.environ["PACK_SRC"]
FAKE_DIR = os.environ["FAKE_DIR"]
PACK = "org.cordon.modal"
REF = "pack:%s:modal" % PACK
CORDON = os.path.join(os.environ["top_builddir"], "cordon")
TID = os.environ["MODAL_TEST_TOKEN_ID"]
SECRET = os.environ["MODAL_TEST_TOKEN_SECRET"]
RW = {"filesystem": {"workspace": {"access": "read-write"}}}
t = Tap()

portfile = os.path.join(FAKE_DIR, "port")
# auth tokens live 3 s: one expires mid-lease
fake = subprocess.Popen([sys.executable, os.path.join(os.environ["top_srcdir"], "tests", "fakes", "modal_fake.py"),
                         "--port-file", portfile, "--token-id", TID, "--token-secret", SECRET,
                         "--token-ttl", "3", "--dir", os.path.join(FAKE_DIR, "sandboxes")],
                        stdout=subprocess.DEVNULL, stderr=open(os.path.join(FAKE_DIR, "fake.log"), "w"))
for _ in range(300):
    if os.path.exists(portfile):
        break
    time.sleep(0.05)
PORT = int(open(portfile).read())
URL = "http://127.0.0.1:%d" % PORT


def make_tls():
    """A CA, a server certificate of it for 127.0.0.1, another CA; None without openssl."""
    d = os.path.join(FAKE_DIR, "tls")
    os.makedirs(d, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    try:
        for ca in ("ca", "wrong"):
            subprocess.run(["openssl", "req", "-x509"] + ec + [
                "-keyout", os.path.join(d, ca + ".key"), "-out", os.path.join(d, ca + ".pem"),
                "-days", "2", "-subj", "/CN=cordon test " + ca,
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=keyCertSign"],
                check=True, capture_output=True)
        subprocess.run(["openssl", "req"] + ec + ["-keyout", os.path.join(d, "srv.key"),
                        "-out", os.path.join(d, "srv.csr"), "-subj", "/CN=127.0.0.1"],
                       check=True, capture_output=True)
        with open(os.path.join(d, "srv.ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
        subprocess.run(["openssl", "x509", "-req", "-in", os.path.join(d, "srv.csr"),
                        "-CA", os.path.join(d, "ca.pem"), "-CAkey", os.path.join(d, "ca.key"),
                        "-CAcreateserial", "-out", os.path.join(d, "srv.pem"), "-days", "2",
                        "-extfile", os.path.join(d, "srv.ext")], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return d


# The same fake served over TLS, its certificate from a CA made here.
tls_dir = make_tls()
tfake = None
TPORT = None
if tls_dir:
    tportfile = os.path.join(FAKE_DIR, "tport")
    tfake = subprocess.Popen([sys.executable, os.path.join(os.environ["top_srcdir"], "tests", "fakes", "modal_fake.py"),
                              "--port-file", tportfile, "--token-id", TID, "--token-secret", SECRET,
                              "--dir", os.path.join(FAKE_DIR, "tls-sandboxes"),
                              "--tls-cert", os.path.join(tls_dir, "srv.pem"),
                              "--tls-key", os.path.join(tls_dir, "srv.key")],
                             stdout=subprocess.DEVNULL, stderr=open(os.path.join(FAKE_DIR, "tfake.log"), "w"))
    for _ in range(300):
        if os.path.exists(tportfile):
            break
        time.sleep(0.05)
    TPORT = int(open(tportfile).read()) if os.path.exists(tportfile) else None
SETTINGS = {"serverUrl": URL, "image": "im-test"}
chan = grpc.insecure_channel("127.0.0.1:%d" % PORT)


def hook(name, body):
    f = chan.unary_unary("/fake.Hooks/" + name)
    return json.loads(f(json.dumps(body).encode(), timeout=10))


def live():
    return {k: v for k, v in hook("State", {})["sandboxes"].items() if v["state"] == "running"}


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
    m["domains"] = ["127.0.0.1:%d" % PORT] + (["127.0.0.1:%d" % TPORT] if TPORT else [])
    json.dump(m, open(os.path.join(SRC, "pack.json"), "w"))
    write("keep.txt", "kept\n")
    write("change.txt", "before\n")
    write("delete.txt", "doomed\n")
    write("sub/deep.txt", "deep\n")

    r = subprocess.run([CORDON, "pack", "install", SRC], capture_output=True, text=True, timeout=60)
    t.ok(r.returncode == 0, "the Modal pack installs", r)
    c = Conn(SOCK)
    r = c.call("pack.enable", {"id": PACK})
    t.ok("result" in r, "it asks for the proxy network: enabled by a person", r)
    r1 = c.call("secret.set", {"backend": REF, "field": "tokenId", "value": TID})
    r2 = c.call("secret.set", {"backend": REF, "field": "tokenSecret", "value": "as-wrong"})
    t.ok(r1.get("result", {}).get("configured") is True and r2.get("result", {}).get("configured") is True,
         "a token id and a (wrong) secret are set", [r1, r2])
    before = c.call("backend.list", {}).get("result", {}).get("active")
    r = c.call("backend.activate", {"backend": REF, "settings": SETTINGS}, timeout=60)
    e = r.get("error", {})
    t.ok(e and "the token secret is invalid" in e.get("message", "")
         and e.get("data", {}).get("step") in ("probe", "isAvailable"),
         "a wrong secret fails the activation at isAvailable with the service's message", r)
    t.ok(c.call("backend.list", {}).get("result", {}).get("active") == before, "…and changes nothing")

    c.call("secret.set", {"backend": REF, "field": "tokenSecret", "value": SECRET})
    r = c.call("backend.activate", {"backend": REF, "settings": SETTINGS}, timeout=60)
    launcher = r.get("result", {}).get("launcher", "")
    t.ok(launcher.startswith(REF + "#"), "the right token activates it (%s)" % launcher, r)

    r = c.call("sandbox.acquire", {"callerCwd": WORK}, timeout=60)
    t.ok(r.get("error", {}).get("data", {}).get("field") == "filesystem.workspace.access",
         "a read-only lease is refused (filesystem.workspace.access)", r)
    t0 = time.monotonic()
    r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW}, timeout=120)
    acq = time.monotonic() - t0
    sid = r.get("result", {}).get("sandboxId")
    lv = live()
    t.ok(sid and len(lv) == 1, "a read-write lease is a sandbox of the fake (%.2f s)" % acq, r)
    sb = next(iter(lv.values()), {})
    t.ok(sb.get("network") is False and sb.get("workdir") == "/root/workspace",
         "created without network access, workdir /root/workspace", sb)

    res, r = run(c, sid, 'basename "$PWD"; cat keep.txt change.txt; echo err >&2; '
                 'echo after > change.txt && echo new > added.txt && rm delete.txt && echo more >> sub/deep.txt; '
                 'env | grep -c "$(echo %s | rev)" ; exit 7' % SECRET[::-1])
    out = res.get("stdout", "").split()
    t.ok(res.get("exitCode") == 7 and out[:3] == ["workspace", "kept", "before"]
         and res.get("stderr") == "err\n", "a command runs remotely: stdout, stderr apart, exit 7", r)
    t.ok(out[3:] == ["0"], "the secret is not in the command's environment", out)
    res, r = run(c, sid, "true")
    t.ok(res.get("exitCode") == 0 and res.get("signal", 0) == 0, "exit 0", r)
    res, r = run(c, sid, "kill -TERM $$")
    t.ok(res.get("signal") == 15, "a signal is told exactly (SIGTERM)", r)
    res, r = run(c, sid, "cat; echo done", stdin="from stdin\n")
    t.ok(res.get("stdout") == "from stdin\ndone\n", "stdin reaches it, with its EOF", r)
    time.sleep(3.2)  # the auth token expires mid-lease
    res, r = run(c, sid, "cd sub && pwd | sed 's,.*/,,'")
    t.ok(res.get("exitCode") == 0 and res.get("stdout") == "sub\n", "a command after the auth token expired", r)

    # The pack's cost per exec: cordon + pack + fake, against the fake's handlers' own time.
    n = 20
    st0 = hook("State", {})
    t0 = time.monotonic()
    for _ in range(n):
        run(c, sid, "true")
    per = (time.monotonic() - t0) / n * 1000
    st1 = hook("State", {})
    fake_ms = (st1["handlerSeconds"] - st0["handlerSeconds"]) / n * 1000
    t1 = time.monotonic()
    for _ in range(n):
        subprocess.run(["/bin/sh", "-c", "true"])
    local = (time.monotonic() - t1) / n * 1000
    t.ok(per < 2000, "an exec through cordon, the pack and the fake: %.1f ms; in the fake's handlers: "
         "%.1f ms (%d calls); a local sh: %.1f ms" % (per, fake_ms, (st1["handlerCalls"] - st0["handlerCalls"]) / n, local))

    t.ok(read("change.txt") == "before\n" and read("added.txt") is None, "the host is unchanged before release")
    r = c.call("sandbox.release", {"sandboxId": sid}, timeout=120)
    rep = r.get("result", {}).get("workspace") or {}
    items = {i["path"]: i["action"] for i in rep.get("items", [])}
    t.ok(r.get("result", {}).get("released") is True and read("change.txt") == "after\n"
         and read("added.txt") == "new\n" and read("delete.txt") is None
         and read("sub/deep.txt") == "deep\nmore\n", "release brings the lease's changes back", r)
    t.ok(items.get("change.txt") == "changed" and items.get("added.txt") == "added"
         and items.get("delete.txt") == "deleted", "…and reports them", rep)
    t.ok(live() == {}, "the remote sandbox is terminated at release")

    # The secret never leaks: the fake saw it in its header only; no event, state file or log.
    st = hook("State", {})
    t.ok(st["leaks"] == [], "the fake saw the secret only in x-modal-token-secret", st["leaks"])
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
    t.ok(SECRET not in evs, "the secret is in no event")
    t.ok(SECRET not in logs and SECRET[3:] not in logs,
         "the secret is in no state file nor the controller log (secrets.json holds it encrypted)")

    # A registry image: built at activation by the fake's image calls, its log reaching the user
    # as backend-progress events, its sandboxes made from it; a failing build fails the
    # activation with the build's message and changes nothing.
    ev = Conn(SOCK)
    ev.call("events.subscribe", {"follow": True})
    build = dict(SETTINGS, image="python:3.12-slim", imageCommands="RUN echo built")
    r = c.call("backend.activate", {"backend": REF, "settings": build}, timeout=120)
    t.ok(r.get("result", {}).get("launcher", "").startswith(REF + "#"),
         "a registry image activates once built", r)
    msgs = []
    while True:
        p = ev.wait_event("backend-progress", seconds=1)
        if p is None:
            break
        msgs.append(p.get("message", ""))
    ev.close()
    built = [m for m in msgs if m.startswith("image python:3.12-slim built: im-")]
    t.ok(any(m.startswith("building image python:3.12-slim: ") for m in msgs) and built,
         "its build log and its end reached the user as backend-progress events", msgs)
    r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW}, timeout=120)
    sid = r.get("result", {}).get("sandboxId")
    img = [v.get("image") for v in live().values()]
    t.ok(sid and built and img == [built[0].split(": ")[1]], "a lease's sandbox is made from it", [r, img, built])
    res, r = run(c, sid, "echo from the built image")
    t.ok(res.get("stdout") == "from the built image\n", "a command runs there", r)
    r = c.call("sandbox.release", {"sandboxId": sid}, timeout=120)
    t.ok(r.get("result", {}).get("released") is True, "…and it is released", r)
    active = c.call("backend.list", {}).get("result", {}).get("active")
    failing = dict(SETTINGS, image="debian:12", imageCommands="RUN exit 3")
    r = c.call("backend.activate", {"backend": REF, "settings": failing}, timeout=120)
    e = r.get("error", {})
    t.ok("returned a non-zero code: 3" in e.get("message", ""),
         "a failing build fails the activation with the build's message", r)
    t.ok(c.call("backend.list", {}).get("result", {}).get("active") == active, "…and changes nothing")
    r = c.call("backend.activate", {"backend": REF, "settings": SETTINGS}, timeout=60)

    # TLS: the API (and the command router it names) over https, trusted through the caFile
    # setting (a file in the pack's state directory, which the pack can read); another CA's
    # certificate refused with a clear reason.
    if TPORT:
        pstate = os.path.join(STATE, "pack-state", PACK)
        for n in ("ca.pem", "wrong.pem"):
            with open(os.path.join(tls_dir, n), "rb") as f, open(os.path.join(pstate, n), "wb") as g:
                g.write(f.read())
        tset = {"serverUrl": "https://127.0.0.1:%d" % TPORT, "image": "im-test",
                "caFile": os.path.join(pstate, "ca.pem")}
        r = c.call("backend.activate", {"backend": REF, "settings": tset}, timeout=60)
        t.ok(r.get("result", {}).get("launcher", "").startswith(REF + "#"),
             "an https API with the caFile setting activates", r)
        r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW}, timeout=120)
        sid = r.get("result", {}).get("sandboxId")
        res, r2 = run(c, sid, "echo over tls; cat keep.txt") if sid else ({}, r)
        t.ok(res.get("stdout") == "over tls\nkept\n", "a lease and a command over TLS (API and router)", [r, r2])
        if sid:
            c.call("sandbox.release", {"sandboxId": sid}, timeout=120)
        active = c.call("backend.list", {}).get("result", {}).get("active")
        tset["caFile"] = os.path.join(pstate, "wrong.pem")
        r = c.call("backend.activate", {"backend": REF, "settings": tset}, timeout=60)
        msg = r.get("error", {}).get("message", "")
        t.ok("TLS: untrusted server's certificate" in msg and "wrong.pem" in msg,
             "another CA's certificate is refused: the activation says why", r)
        t.ok(c.call("backend.list", {}).get("result", {}).get("active") == active, "…and changes nothing")
        r = c.call("backend.activate", {"backend": REF, "settings": SETTINGS}, timeout=60)
    else:
        t.ok(True, "# SKIP no openssl or no TLS fake: TLS through the pack untested")

    # kill -9 of the pack mid-lease; a new activation removes the orphan.
    r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW, "detached": True}, timeout=120)
    sid = r.get("result", {}).get("sandboxId")
    orphan = set(live())
    t.ok(len(orphan) == 1, "a lease holds one remote sandbox", orphan)
    pids = subprocess.run(["pgrep", "-f", "cordon-modal-pack"], capture_output=True, text=True).stdout.split()
    mine = [p for p in pids if os.path.realpath("/proc/%s/exe" % p).startswith(os.path.join(STATE, "packs"))]
    for p in mine:
        os.kill(int(p), signal.SIGKILL)
    t.ok(len(mine) >= 1, "the pack process is killed with SIGKILL (%s)" % mine)
    time.sleep(1)
    r = c.call("backend.activate", {"backend": REF, "settings": SETTINGS}, timeout=60)
    t.ok(r.get("result", {}).get("launcher", "").startswith(REF + "#"), "a new activation", r)
    t.ok(not (orphan & set(live())), "…removed the orphan from the fake's list", live())
finally:
    for f in (fake, tfake):
        if f:
            f.terminate()
            f.wait()
sys.exit(t.done())
