# The Modal pack (backends/modal) end to end against tests/fakes/modal_fake.py. Run by
# modal-pack.sh, which copies the pack into $PACK_SRC. The manifest's copy asks for the proxy
# network with the fake's loopback address as its only domain.
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
    m["domains"] = ["127.0.0.1:%d" % PORT]
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
    fake.terminate()
    fake.wait()
sys.exit(t.done())
