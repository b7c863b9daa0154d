# Packs through the CLI and raw JSON-RPC. Run by packs.sh, which assembles the test pack
# (tests/packs/test-pack: pack.json + the built executable) in $PACK_SRC.
import json
import socket
import os
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "helpers"))
from ctl import CORDON, STATE, SOCK, active, leak_reports, saved, stop_controller  # noqa: E402
from rpc import Conn, Tap  # noqa: E402

WORK = os.environ["WORK"]
SRC = os.environ["PACK_SRC"]
TMP = os.path.dirname(WORK)
PACK = "org.cordon.test"
REF = "pack:%s:test" % PACK
INSTALLED = os.path.join(STATE, "packs", PACK)
PACK_STATE = os.path.join(STATE, "pack-state", PACK)
SECRET = "s3cr3t-%s-token" % os.urandom(6).hex()
t = Tap()
outputs = []  # every CLI output and RPC answer, grepped for the secret at the end


def cli(*args, **kw):
    r = subprocess.run([CORDON] + list(args), capture_output=True, text=True, timeout=60, **kw)
    outputs.append(r.stdout + r.stderr)
    return r


def call(c, method, params=None, timeout=60):
    r = c.call(method, params or {}, timeout=timeout)
    outputs.append(json.dumps(r))
    return r


def base(**kw):
    # cwd "/": a command runs wherever the request's policy puts the caller's directory.
    p = {"callerCwd": WORK, "cwd": "/", "env": ["PATH=/usr/bin:/bin"]}
    p.update(kw)
    return p


def make_pack(name, edit=None, extra=None):
    """A copy of the test pack with its manifest edited by edit(manifest)."""
    d = os.path.join(TMP, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(SRC, d)
    if edit:
        with open(os.path.join(d, "pack.json")) as f:
            m = json.load(f)
        edit(m)
        with open(os.path.join(d, "pack.json"), "w") as f:
            json.dump(m, f)
    if extra:
        extra(d)
    return d


def exec_env(c, var):
    r = call(c, "process.exec", base(argv=["/bin/sh", "-c", 'printf %s "$' + var + '"']))
    return r.get("result", {}).get("stdout"), r


# ---------------------------------------------------------------- install, list
r = cli("pack", "install", SRC)
t.ok(r.returncode == 0 and "installed pack org.cordon.test" in r.stdout, "cordon pack install", r)
st = os.stat(INSTALLED)
t.ok(st.st_mode & 0o077 == 0 and os.path.exists(os.path.join(INSTALLED, "pack.json")),
     "the pack is copied into the state directory, owner-only (%o)" % (st.st_mode & 0o777))
r = cli("pack", "install", SRC)
t.ok(r.returncode == 120 and "installed already" in r.stderr, "a second install of the same id is refused", r)
r = cli("--json", "pack", "list")
packs = json.loads(r.stdout)["packs"] if r.returncode == 0 else []
t.ok(len(packs) == 1 and packs[0]["id"] == PACK and packs[0]["enabled"]
     and packs[0]["backends"] == [REF, "pack:%s:transfer" % PACK],
     "pack list --json shows it enabled, with its backend", r)
r = cli("pack", "list")
t.ok(r.returncode == 0 and PACK in r.stdout and REF in r.stdout, "pack list (text)", r)
r = cli("--json", "backend", "list")
refs = [b["ref"] for b in json.loads(r.stdout)["backends"]]
t.ok(REF in refs, "backend list shows the pack's backend", refs)
with open(os.path.join(STATE, "packs.json")) as f:
    rec = json.load(f)
t.ok(rec["packs"][PACK]["enabled"] is True and os.stat(os.path.join(STATE, "packs.json")).st_mode & 0o077 == 0,
     "packs.json records it, owner-only")

# ---------------------------------------------------------------- bad packs name the field
def desc(m):
    return m["backends"][0]["descriptor"]


def set_in(path, value):
    def edit(m):
        obj = m
        for k in path[:-1]:
            obj = obj[k]
        if value is None:
            del obj[path[-1]]
        else:
            obj[path[-1]] = value
    return edit


bad = [
    ("no-id", set_in(["id"], None), None, "manifest.id"),
    ("bad-id", set_in(["id"], "Org/Evil"), None, "manifest.id"),
    ("unknown-key", set_in(["postInstall"], "rm -rf ~"), None, "manifest.postInstall"),
    ("abs-exe", set_in(["executable"], "/bin/sh"), None, "manifest.executable"),
    ("missing-exe", set_in(["executable"], "nope"), None, "manifest.executable"),
    ("html-name", lambda m: desc(m).update(name="<img src=x onerror=alert(1)>"), None,
     "manifest.backends[0].descriptor.name"),
    ("script-url", lambda m: desc(m).update(description="javascript:alert(1)"), None,
     "manifest.backends[0].descriptor.description"),
    ("field-type", lambda m: desc(m)["settings"]["fields"][0].update(type="html"), None,
     "manifest.backends[0].descriptor.settings.fields[0].type"),
    ("callback", lambda m: desc(m)["settings"]["fields"][1].update(onChange="steal()"), None,
     "manifest.backends[0].descriptor.settings.fields[1].onChange"),
    ("unconfined", lambda m: desc(m)["claims"].update(isolation="none"), None,
     "manifest.backends[0].descriptor.claims.isolation"),
    ("no-manifest", None, lambda d: os.unlink(os.path.join(d, "pack.json")), "path"),
    ("symlink", None, lambda d: os.symlink("/etc/passwd", os.path.join(d, "link")), "path"),
]
c = Conn(SOCK)
for name, edit, extra, field in bad:
    d = make_pack("bad-" + name, edit, extra)
    r = call(c, "pack.install", {"path": d, "replace": True})
    e = r.get("error", {})
    t.ok(e.get("code") == -32602 and e.get("data", {}).get("field") == field,
         "%s: refused naming %s (%s)" % (name, field, e.get("message")), r)
r = cli("pack", "install", make_pack("bad-cli", set_in(["version"], "1 0")))
t.ok(r.returncode == 120 and "manifest.version" in r.stderr, "cordon pack install reports the field, exit 120", r)
t.ok(sorted(os.listdir(os.path.join(STATE, "packs"))) == [PACK], "refused installs leave nothing behind",
     os.listdir(os.path.join(STATE, "packs")))
r = cli("pack", "enable", "org.example.nope")
t.ok(r.returncode == 1 and "no such pack" in r.stderr, "an unknown id is not found (exit 1)", r)

# ---------------------------------------------------------------- activation and spawns
ref0, first = active(c)
r = call(c, "backend.activate", {"backend": REF})
launcher = r.get("result", {}).get("launcher", "")
t.ok(launcher.startswith(REF + "#"), "the pack's backend activates (%s)" % launcher, r)
t.ok(json.loads(saved() or "{}").get("backend") == REF, "and is saved")
gen, r = exec_env(c, "CORDON_PACK_GENERATION")
t.ok(gen == launcher and r["result"]["launcher"] == launcher,
     "a spawn through it runs, served by that instance (CORDON_PACK_GENERATION=%s)" % gen, r)
r = cli("run", "--", "/bin/sh", "-c", 'echo "gen=$CORDON_PACK_GENERATION"', cwd="/tmp")
t.ok(r.returncode == 0 and r.stdout.strip() == "gen=" + launcher, "cordon run through the pack, on its stdio", r)
r = call(c, "process.exec", base(argv=["/bin/sh", "-c", "exit 7"]))
t.ok(r.get("result", {}).get("exitCode") == 7, "the exit status comes back through exited", r)
r = call(c, "process.spawn", base(argv=["/bin/sleep", "100"], stdio={"stdin": "null", "stdout": "null", "stderr": "null"}))
pid = r.get("result", {}).get("processId")
call(c, "process.signal", {"processId": pid, "signal": 9})
r = call(c, "process.wait", {"processId": pid})
t.ok(r.get("result", {}).get("reason") == "killed", "kill goes through the pack", r)
r = call(c, "process.exec", base(argv=["/nonexistent/cmd"]))
t.ok(r.get("error", {}).get("data", {}).get("exitStatus") == 127, "a command not found is 127", r)

# Confinement: the pack's commands run in sandboxes of their own, never in the pack's (its
# secrets: pack-secrets.sh), under the request's policy.
script = ('touch "$1/ok" 2>/dev/null || echo state-unseen; ls "$2" >/dev/null 2>&1 || echo pack-unseen; '
          'ls "$3" >/dev/null 2>&1 && echo work-seen; touch /etc/x 2>/dev/null || echo etc-ro')
r = call(c, "process.exec", base(argv=["/bin/sh", "-c", script, "-", PACK_STATE, INSTALLED, WORK]))
out = r.get("result", {}).get("stdout", "").split()
t.ok(out == ["state-unseen", "pack-unseen", "work-seen", "etc-ro"],
     "a pack's command: the pack's state and files unseen, the workspace seen, the system read-only", r)
t.ok(not os.path.exists(os.path.join(PACK_STATE, "ok")) and not os.path.exists(os.path.join(INSTALLED, "x")),
     "…as seen from the host")
r = call(c, "process.exec", base(argv=["/bin/sh", "-c", "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '"]))
t.ok(r.get("result", {}).get("stdout", "").split() == ["lo"], "the pack has no network but loopback", r)

# ---------------------------------------------------------------- failure rules, steps 3-4
for fail in ("configure", "prepare", "probe"):
    before_rt, before_disk = active(c), saved()
    r = call(c, "backend.activate", {"backend": REF, "settings": {"failAt": fail}})
    e = r.get("error", {})
    t.ok(e.get("code") == -32007 and e.get("data", {}).get("step") == fail,
         "failAt=%s fails the activation at %s" % (fail, fail), r)
    t.ok(active(c) == before_rt and saved() == before_disk,
         "…leaving the runtime selection and active.json unchanged")
gen, r = exec_env(c, "CORDON_PACK_GENERATION")
t.ok(gen == launcher, "the previous instance still serves", r)

# Spawns never wait on a slow activation.
r = call(c, "backend.activate", {"backend": "builtin:auto"})
auto = r["result"]["launcher"]
slow = Conn(SOCK)
rid = slow.request("backend.activate", {"backend": REF, "settings": {"prepareDelayMs": 2500}})
time.sleep(0.3)
t0 = time.time()
r = call(c, "process.exec", {"callerCwd": WORK, "env": ["PATH=/usr/bin:/bin"], "argv": ["/bin/true"]})
dt = time.time() - t0
t.ok(r.get("result", {}).get("launcher") == auto and dt < 1.5,
     "a spawn during a slow activation is served by the current launcher at once (%.3f s)" % dt, r)
r = slow.wait(rid, timeout=30)
t.ok(r.get("result", {}).get("active") == REF, "the slow activation completes", r)
slow.close()

# The reply to an activation goes to the client that asked, found by id: a client that went
# away meanwhile gets nothing, and a new client (whose record may take the same address) is
# never answered a request it did not make.
r = call(c, "backend.activate", {"backend": "builtin:auto"})
gone = Conn(SOCK)
gone.request("backend.activate", {"backend": REF, "settings": {"prepareDelayMs": 1500}})
time.sleep(0.3)
gone.close()
time.sleep(0.3)
newcomers = [Conn(SOCK) for _ in range(4)]
stray = []
deadline = time.time() + 4
for k in newcomers:
    while time.time() < deadline:
        try:
            m = k.read_msg(timeout=max(0.01, min(0.5, deadline - time.time())))
        except socket.timeout:
            break
        if m is None:
            break
        stray.append(m)
t.ok(not stray, "the answer to a gone client's activation reaches no other client", stray)
for k in newcomers:
    k.close()
r = call(c, "backend.activate", {"backend": "builtin:auto"})

# A pack's progress notification (the test pack says it prepares) is a backend-progress event.
ev = Conn(SOCK)
call(ev, "events.subscribe", {"follow": True})
r = call(c, "backend.activate", {"backend": REF, "settings": {"prepareDelayMs": 0}})
prog = ev.wait_event("backend-progress", lambda p: p.get("message") == "preparing the test pack")
t.ok(prog is not None and prog.get("launcher") == r.get("result", {}).get("launcher"),
     "a pack's progress notification is a backend-progress event naming its instance", prog)
ev.close()
call(c, "backend.activate", {"backend": "builtin:auto"})

# Step 7: a failing dispose keeps the new activation, warns, retries.
ev = Conn(SOCK)
call(ev, "events.subscribe", {"follow": True})
r = call(c, "backend.activate", {"backend": REF, "settings": {"failAt": "dispose", "prepareDelayMs": 0}})
bad_inst = r.get("result", {}).get("launcher")
r = call(c, "backend.activate", {"backend": "builtin:auto"})
t.ok("result" in r and active(c)[0] == "builtin:auto", "with failAt=dispose the next activation still succeeds", r)
warned = ev.wait_event("backend-cleanup-failed", lambda p: p["launcher"] == bad_inst)
t.ok(warned, "a backend-cleanup-failed warning names the old instance")
log = os.path.join(STATE, "controller.log")
retried = False
deadline = time.time() + 15
while time.time() < deadline and not retried:
    with open(log, errors="replace") as f:
        retried = ("cleanup of %s failed (attempt 2" % bad_inst) in f.read()
    time.sleep(0.5)
t.ok(retried, "the cleanup is retried in the background")
ev.close()
t.ok(json.loads(saved() or "{}").get("backend") == "builtin:auto", "the new selection stays saved")

# ---------------------------------------------------------------- secrets and interactions
r = call(c, "secret.set", {"backend": REF, "field": "token", "value": SECRET})
t.ok("result" in r, "secret.set for the pack's token", r)
r = call(c, "backend.activate", {"backend": REF, "settings": {"failAt": "none"}})
t.ok("result" in r, "activation with the secret configured", r)
tok, r = exec_env(c, "CORDON_PACK_TOKEN")
t.ok(tok == "configured", "the pack's process got the resolved token", r)


def activate_answering(answer, kind="confirm"):
    """backend.activate from a client that answers the controller's host.interaction."""
    k = Conn(SOCK)
    rid = k.request("backend.activate", {"backend": REF, "settings": {"interaction": kind}})
    asked = None
    while True:
        m = k.read_msg(timeout=30)
        if m is None:
            break
        if m.get("method") == "host.interaction" and "id" in m:
            asked = m["params"]
            k.send_raw((json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": answer}) + "\n").encode())
            continue
        if m.get("id") == rid:
            k.close()
            return m, asked
    k.close()
    return None, asked


r, asked = activate_answering({"value": True})
t.ok(asked and asked.get("kind") == "confirm" and "result" in (r or {}),
     "a pack's confirm reaches the activating client; its answer lets prepare go on", [r, asked])
ans, _ = exec_env(c, "CORDON_PACK_INTERACTION")
t.ok(ans == '{"value":true}', "the pack got the answer (%s)" % ans)
before_rt, before_disk = active(c), saved()
r, asked = activate_answering({"unavailable": True})
t.ok(asked and r.get("error", {}).get("data", {}).get("step") == "prepare",
     "an unavailable answer fails the activation cleanly at prepare", r)
t.ok(active(c) == before_rt and saved() == before_disk, "…and changes nothing")
SECRET2 = "s3cr3t-%s-typed" % os.urandom(6).hex()
r, asked = activate_answering({"value": SECRET2}, "secret-input")
outputs.append(json.dumps([r, asked]))
t.ok(asked and asked.get("field") == "token" and asked.get("backend") == REF and "result" in (r or {}),
     "a secret-input names this backend's field; the answer goes on", [asked, r])
ans, _ = exec_env(c, "CORDON_PACK_INTERACTION")
t.ok(ans and SECRET2 not in ans and json.loads(ans).get("changed") is True,
     "the pack learns only that the secret changed (%s)" % ans)
r, asked = activate_answering({"value": "blue"}, "choice")
ans, _ = exec_env(c, "CORDON_PACK_INTERACTION")
t.ok(asked and [o.get("value") for o in asked.get("options", [])] == ["red", "blue"] and ans == '{"value":"blue"}',
     "a choice is asked with its options and answered", [asked, ans, r])
r, asked = activate_answering({"value": "green"}, "choice")
t.ok(r.get("error", {}).get("data", {}).get("step") == "prepare", "an unlisted choice fails it cleanly", r)
r = call(c, "backend.activate", {"backend": REF, "settings": {"interaction": "none"}})
t.ok("result" in r, "back to no interaction", r)

# ---------------------------------------------------------------- disable, remove, reinstall
# Through the CLI: --set values take the descriptor's types; a secret is refused there.
r = cli("backend", "activate", REF, "--set", "prepareDelayMs=7", "--set", "failAt=none")
t.ok(r.returncode == 0 and "is active" in r.stdout,
     "cordon backend activate --set prepareDelayMs=7 (a number field) activates (saved)", r)
r = cli("backend", "activate", REF, "--set", "token=not-the-token")
t.ok(r.returncode == 125 and "is a secret" in r.stderr, "…and --set of a secret is refused", r)
r = cli("pack", "disable", PACK)
t.ok(r.returncode == 0, "disabling the pack of the active backend succeeds", r)
t.ok(active(c)[0] == "builtin:auto" and json.loads(saved() or "{}").get("backend") == "builtin:auto",
     "…after activating builtin:auto (runtime and disk)")
r = call(c, "backend.activate", {"backend": REF})
t.ok(r.get("error", {}).get("code") == -32003, "a disabled pack's backend is not found", r)
t.ok(REF not in [b["ref"] for b in call(c, "backend.list")["result"]["backends"]], "nor listed")
r = cli("pack", "enable", PACK)
t.ok(r.returncode == 0 and REF in [b["ref"] for b in call(c, "backend.list")["result"]["backends"]],
     "enable brings it back", r)
r = call(c, "backend.activate", {"backend": REF})
t.ok("result" in r, "activate it again", r)
r = cli("pack", "remove", PACK)
t.ok(r.returncode == 0 and not os.path.exists(INSTALLED), "removing the active pack succeeds, files gone", r)
t.ok(active(c)[0] == "builtin:auto", "…after activating builtin:auto")
with open(os.path.join(STATE, "settings.json")) as f:
    kept = json.load(f)["backends"].get(REF, {})
t.ok(kept.get("prepareDelayMs") == 7, "its settings are kept", kept)
r = cli("pack", "install", SRC)
t.ok(r.returncode == 0, "reinstall the same id", r)
r = call(c, "backend.settings.get", {"backend": REF})
got = r.get("result", {})
t.ok("prepareDelayMs" in json.dumps(got) and "7" in json.dumps(got), "the reinstalled pack has its settings back", r)
r = call(c, "backend.activate", {"backend": REF})
t.ok("result" in r, "and activates with them", r)
tok, r = exec_env(c, "CORDON_PACK_TOKEN")
t.ok(tok == "configured", "and its secret", r)
r = cli("pack", "install", "--replace", SRC)
t.ok(r.returncode == 0 and "reinstalled" in r.stdout, "install --replace upgrades in place", r)
gen, r = exec_env(c, "CORDON_PACK_GENERATION")
t.ok(gen == r.get("result", {}).get("launcher"), "the running instance keeps serving across a reinstall", r)

# 200 spawns while activations flip between two backends (builtin:auto and the pack's): none
# fails, each reports the instance that made it (the pack's commands carry its name), and once
# the flipping stops no pack process or launcher of a replaced instance is left.
def pack_processes():
    """This test's pack processes (their path is under its state directory; other tests may run)."""
    ps = subprocess.run(["ps", "-e", "-o", "pid=,args="], capture_output=True, text=True).stdout
    return [l for l in ps.splitlines()
            if l.split()[1:2] and l.split()[1] == os.path.join(INSTALLED, "cordon-test-pack")]


# Before: the active pack instance's process, and one whose cleanup keeps failing (failAt=dispose
# above, retried in the background).
baseline = len(pack_processes())
failures, served, mismatch, done = [], {}, [], threading.Event()


# At least 200 spawns, and on until the activations below have flipped 4 times (spawns can be
# faster than activations: the count must not depend on which is).
flipped = [0]


def spawner():
    k = Conn(SOCK)
    n = 0
    while n < 200 or (flipped[0] < 4 and n < 5000):
        n += 1
        r = k.call("process.exec", base(argv=["/bin/sh", "-c", 'printf %s "$CORDON_PACK_GENERATION"']),
                   timeout=60)
        res = (r or {}).get("result")
        if not res or res.get("exitCode") != 0:
            failures.append(r)
            continue
        served[res["launcher"]] = served.get(res["launcher"], 0) + 1
        if res["stdout"] != (res["launcher"] if res["launcher"].startswith(REF) else ""):
            mismatch.append((res["launcher"], res["stdout"]))
    k.close()
    done.set()


th = threading.Thread(target=spawner)
th.start()
flips, k = 0, Conn(SOCK)
while not done.is_set():
    r = k.call("backend.activate", {"backend": REF if flips % 2 == 0 else "builtin:auto"}, timeout=60)
    flips += 1 if "result" in r else 0
    flipped[0] = flips
th.join(300)
r = k.call("backend.activate", {"backend": REF}, timeout=60)
k.close()
kinds = {i.split("#")[0] for i in served}
t.ok(failures == [] and flips >= 4, "%d spawns during %d activations between two backends: %d failed"
     % (sum(served.values()) + len(failures), flips, len(failures)), failures[:3])
t.ok(kinds == {REF, "builtin:auto"} and len(served) >= 4,
     "served by %d instances of both backends" % len(served), served)
t.ok(mismatch == [], "each pack-served process ran in the instance it reports", mismatch[:3])


deadline = time.time() + 15
while time.time() < deadline and len(pack_processes()) > baseline:
    time.sleep(0.2)
left = pack_processes()
if len(left) != baseline:
    with open(os.path.join(STATE, "controller.log"), errors="replace") as f:
        left += [l.rstrip() for l in f if "pack process" in l or "dispos" in l or "lost" in l][-40:]
t.ok(len(pack_processes()) == baseline,
     "no pack process of a replaced instance is left (%d before, as after)" % baseline, "\n".join(left))

# A restart restores the saved pack selection (with its settings and secret).
c.close()
stop_controller()
cli("ps")
c = Conn(SOCK)
ref_now, inst = active(c)
t.ok(ref_now == REF, "a restarted controller restores the saved pack backend (%s)" % inst)
tok, r = exec_env(c, "CORDON_PACK_TOKEN")
t.ok(tok == "configured" and r["result"]["launcher"] == inst, "…which serves, with its secret", r)

# The pack process dies: its instance is lost, builtin:auto takes over.
_, inst = active(c)
pids = [int(l.split()[0]) for l in pack_processes()]
for p in pids:
    os.kill(p, 9)
deadline = time.time() + 10
while time.time() < deadline and active(c)[0] != "builtin:auto":
    time.sleep(0.2)
t.ok(pids and active(c)[0] == "builtin:auto", "a dead pack process loses its instance; builtin:auto serves", pids)
r = call(c, "process.exec", {"callerCwd": WORK, "env": ["PATH=/usr/bin:/bin"], "argv": ["/bin/true"]})
t.ok(r.get("result", {}).get("exitCode") == 0, "spawns go on", r)

# The safe fallback fails (the state directory is read-only, so activating builtin:auto fails at
# persist): disabling the active pack is refused and nothing changes. Read-only for the
# controller: a read-only bind mount in a mount namespace of its own when we are root (root writes
# through mode bits), else mode 0500.
r = call(c, "backend.activate", {"backend": REF})
t.ok("result" in r, "the pack is active again", r)
c.close()
stop_controller()
if os.geteuid() == 0:
    subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                    'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && exec "$2" ps', "-",
                    STATE, CORDON], capture_output=True, check=True)
else:
    os.chmod(STATE, 0o500)
    cli("ps")
c = Conn(SOCK)
before_rt, before_disk = active(c), saved()
with open(os.path.join(STATE, "packs.json")) as f:
    rec_before = f.read()
r = cli("pack", "disable", PACK)
t.ok(r.returncode == 122 and "could not be activated" in r.stderr,
     "disabling the active pack is refused when builtin:auto cannot take over (exit 122)", r)
r = cli("pack", "remove", PACK)
t.ok(r.returncode == 122 and os.path.exists(INSTALLED), "so is removing it", r)
with open(os.path.join(STATE, "packs.json")) as f:
    rec_after = f.read()
t.ok(active(c)[0] == REF and saved() == before_disk and rec_after == rec_before and
     json.loads(cli("--json", "pack", "list").stdout)["packs"][0]["enabled"],
     "…the pack stays enabled and active, nothing changed on disk")
c.close()
stop_controller()
os.chmod(STATE, 0o700)
cli("ps")
c = Conn(SOCK)

# ---------------------------------------------------------------- the secret never leaks
c.close()
leaks = [o[:200] for o in outputs if SECRET in o or SECRET2 in o]
for root, _, files in os.walk(os.environ["XDG_STATE_HOME"]):
    for n in files:
        p = os.path.join(root, n)
        try:
            with open(p, "rb") as f:
                data = f.read()
                if SECRET.encode() in data or SECRET2.encode() in data:
                    leaks.append(p)
        except OSError:
            pass
t.ok(leaks == [], "the tokens' values are in no output, log, event, settings or pack file", leaks)
# In an ASan build: no controller of this test leaked at exit (pack instances disposed of).
stop_controller()
t.ok(not leak_reports(), "no leak reported at any controller's exit", "\n".join(leak_reports()[:40]))
sys.exit(t.done())
