# The activation transaction through raw JSON-RPC: hot swaps keep running processes with the
# launcher that made them, the old launcher is disposed after its last process, unconfined is
# refused, a persistence failure leaves both the runtime and the saved selection unchanged, and
# spawns keep working while activations flip. Run by controller-backend.sh.
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "helpers"))
from ctl import CORDON, STATE, SOCK, active, leak_reports, saved, start_controller, stop_controller  # noqa: E402
from rpc import Conn, Tap  # noqa: E402

WORK = os.environ["WORK"]
t = Tap()


def base(**kw):
    p = {"callerCwd": WORK, "env": ["PATH=/usr/bin:/bin"]}
    p.update(kw)
    return p


ctl = start_controller()
c = Conn(SOCK)
ref, first = active(c)
t.ok(ref == "builtin:auto" and first.startswith("builtin:auto#"), "builtin:auto serves at start (%s)" % first)

# A process started before the swap stays with its launcher.
r = c.call("process.spawn", base(argv=["/bin/sleep", "1000"], stdio={"stdin": "null", "stdout": "null", "stderr": "null"}))
old_pid = r["result"]["processId"]
t.ok(r["result"]["launcher"] == first, "a process records the launcher that created it")
r = c.call("backend.activate", {"backend": "builtin:auto"})
second = r.get("result", {}).get("launcher")
t.ok(second and second != first, "activation swaps in a new instance (%s)" % second, r)
t.ok(json.loads(saved() or "{}").get("backend") == "builtin:auto", "the selection is saved")
r = c.call("process.exec", base(argv=["/bin/true"]))
t.ok(r["result"]["launcher"] == second, "new processes use the new launcher", r)
r = c.call("process.list", {})
old = [p for p in r["result"]["processes"] if p["processId"] == old_pid][0]
t.ok(old["state"] == "running" and old["launcher"] == first, "the running process stays with the old one", old)
e = Conn(SOCK)
e.call("events.subscribe", {"follow": True})
c.call("process.signal", {"processId": old_pid, "signal": 9})
c.call("process.wait", {"processId": old_pid})
disposed = e.wait_event("backend-disposed", lambda p: p["launcher"] == first)
t.ok(disposed, "the old launcher is disposed when its last process ends")
e.close()

# Never unconfined: builtin:host needs the floor's hostMode (the default floor says no).
before = saved()
r = c.call("backend.activate", {"backend": "builtin:host"})
t.ok(r.get("error", {}).get("code") == -32001, "builtin:host is refused by the default floor", r)
t.ok(active(c)[1] == second and saved() == before, "…and nothing changed, at runtime or on disk")

# Bad settings fail at step 1, changing nothing.
r = c.call("backend.activate", {"backend": "builtin:auto", "settings": {"nope": 1}})
t.ok(r.get("error", {}).get("data", {}).get("field") == "settings.nope" and active(c)[1] == second,
     "unknown settings are refused by name; the active launcher stays", r)
r = c.call("backend.activate", {"backend": "pack:org.example.none:x"})
t.ok(r.get("error", {}).get("code") == -32003, "an unknown backend is not found", r)

# Spawns never fail while activations flip.
failures, launchers, done = [], set(), threading.Event()


# At least 200 spawns, and on until the activations below have flipped twice (spawns can be
# faster than activations: the count must not depend on which is).
flipped = [0]
spawned = [0]


def spawner():
    k = Conn(SOCK)
    while spawned[0] < 200 or (flipped[0] < 2 and spawned[0] < 5000):
        spawned[0] += 1
        r = k.call("process.exec", base(argv=["/bin/true"]))
        if "result" not in r or r["result"].get("exitCode") != 0:
            failures.append(r)
        else:
            launchers.add(r["result"]["launcher"])
    k.close()
    done.set()


th = threading.Thread(target=spawner)
th.start()
flips = 0
a = Conn(SOCK)
while not done.is_set():
    r = a.call("backend.activate", {"backend": "builtin:auto"}, timeout=60)
    if "result" in r:
        flips += 1
        flipped[0] = flips
th.join(120)
t.ok(failures == [] and flips >= 2, "%d spawns during %d activations: %d failed" % (spawned[0], flips, len(failures)),
     failures[:3])
t.ok(len(launchers) >= 2, "the spawns were served by %d launcher instances" % len(launchers))
time.sleep(0.5)
out = subprocess.run(["ps", "-e", "-o", "ppid=,args="], capture_output=True, text=True).stdout
launcherds = [l for l in out.splitlines() if "cordon-launcherd" in l and l.split()[0] == str(ctl)]
t.ok(len(launcherds) == 1, "only the active launcher is left running", launcherds)
a.close()
c.close()
stop_controller(ctl)

# A persistence failure swaps back: runtime and disk keep the previous selection. The state
# directory is made read-only for the controller: a read-only bind mount in a mount namespace of
# its own when we are root (root writes through mode bits), else mode 0500.
if os.geteuid() == 0:
    ctl_cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c",
               'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && exec "$2" ps', "-",
               STATE, CORDON]
    subprocess.run(ctl_cmd, capture_output=True, check=True)
    with open(SOCK + ".lock") as f:
        ctl = int(f.readline())
else:
    os.chmod(STATE, 0o500)
    ctl = start_controller()
c = Conn(SOCK)
ref, cur = active(c)
before = saved()
r = c.call("backend.activate", {"backend": "builtin:auto"})
t.ok(r.get("error", {}).get("data", {}).get("step") == "persist", "a failed save fails the activation at persist", r)
t.ok(active(c)[1] == cur and saved() == before, "…and the previous launcher stays active, the saved file untouched")
r = c.call("process.exec", base(argv=["/bin/echo", "ok"]))
t.ok(r.get("result", {}).get("stdout") == "ok\n" and r["result"]["launcher"] == cur, "spawns go on with it", r)
c.close()
stop_controller(ctl)
os.chmod(STATE, 0o700)

# A torn selection file never decodes to anything unconfined.
with open(os.path.join(STATE, "active.json"), "w") as f:
    f.write('{"backend":"builtin:ho')
ctl = start_controller()
c = Conn(SOCK)
t.ok(active(c)[0] == "builtin:auto", "a torn active.json starts builtin:auto")
c.close()
with open(os.path.join(STATE, "active.json"), "w") as f:
    f.write('{"backend":"builtin:host","generation":9}')
os.chmod(os.path.join(STATE, "active.json"), 0o600)
stop_controller(ctl)
ctl = start_controller()
c = Conn(SOCK)
t.ok(active(c)[0] == "builtin:auto", "a saved builtin:host is never restored at start")
c.close()

# Every controller of this test stopped cleanly: in an ASan build, nothing leaked at exit (the
# last instance and its launcher are disposed of, not left to a timer that never runs).
stop_controller(ctl)
t.ok(not leak_reports(), "no leak reported at any controller's exit", "\n".join(leak_reports()[:40]))
sys.exit(t.done())
