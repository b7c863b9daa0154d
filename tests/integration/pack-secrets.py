# Secrets stay with the pack. Run by pack-secrets.sh, which assembles the test pack in $PACK_SRC.
#
# The test pack gets its token through configure. A command run through the pack scans every
# /proc/PID/mem it can read (every readable mapping) and every /proc/PID/environ and cmdline it
# can see for the token's bytes, tries to signal every process it sees and the pack process by
# the pid the host knows it by, and tries to write the pack's state directory. The token reaches
# the scanner reversed and hex-encoded; it rebuilds the bytes in its own memory only, and leaves
# itself out of the scan (after checking on itself that the scan finds what is there).
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "helpers"))
from ctl import SOCK, STATE, active, stop_controller  # noqa: E402
from rpc import Conn, Tap  # noqa: E402

WORK = os.environ["WORK"]
SRC = os.environ["PACK_SRC"]
PACK = "org.cordon.test"
REF = "pack:%s:test" % PACK
INSTALLED = os.path.join(STATE, "packs", PACK)
PACK_STATE = os.path.join(STATE, "pack-state", PACK)
CORDON = os.path.join(os.environ["top_builddir"], "cordon")
SECRET = "s3cr3t-%s-token" % os.urandom(8).hex()
t = Tap()

SCANNER = r'''
import json, os, re, signal, sys
needle = bytes.fromhex(sys.argv[1])[::-1]
pack_host_pid, pack_state = int(sys.argv[2]), sys.argv[3]
me = os.getpid()
out = {"me": me, "seen": [], "found": [], "regions": 0, "self_found": False,
       "signalable": [], "pack_seen": [], "pack_signal": None, "state_write": None}

def scan_mem(pid):
    hits = 0
    try:
        maps = open("/proc/%d/maps" % pid).read().splitlines()
        mem = open("/proc/%d/mem" % pid, "rb", 0)
    except OSError:
        return None
    with mem:
        for line in maps:
            addr, perms = line.split()[:2]
            if not perms.startswith("r"):
                continue
            lo, hi = (int(x, 16) for x in addr.split("-"))
            if hi - lo > (1 << 30):
                continue
            try:
                mem.seek(lo)
                data = mem.read(hi - lo)
            except (OSError, ValueError, OverflowError):
                continue
            out["regions"] += 1
            hits += data.count(needle)
    return hits

for d in os.listdir("/proc"):
    if not d.isdigit():
        continue
    pid = int(d)
    if pid == me:
        continue
    out["seen"].append(pid)
    for what in ("environ", "cmdline"):
        try:
            with open("/proc/%d/%s" % (pid, what), "rb") as f:
                data = f.read()
        except OSError:
            continue
        if needle in data:
            out["found"].append("%d/%s" % (pid, what))
        if what == "cmdline" and data.split(b"\0")[0].endswith(b"/cordon-test-pack"):
            out["pack_seen"].append(pid)
    hits = scan_mem(pid)
    if hits:
        out["found"].append("%d/mem x%d" % (pid, hits))
    try:
        os.kill(pid, 0)
        out["signalable"].append(pid)
    except OSError:
        pass
out["self_found"] = bool(scan_mem(me))
try:
    os.kill(pack_host_pid, 0)
    out["pack_signal"] = "delivered"
except OSError as e:
    out["pack_signal"] = e.errno
try:
    with open(os.path.join(pack_state, "written-by-a-command"), "w") as f:
        f.write("x")
    out["state_write"] = "written"
except OSError as e:
    out["state_write"] = e.errno
print(json.dumps(out))
'''


def pack_processes():
    """This test's pack processes (their path is under its state directory)."""
    ps = subprocess.run(["ps", "-e", "-o", "pid=,args="], capture_output=True, text=True).stdout
    return [int(l.split()[0]) for l in ps.splitlines()
            if l.split()[1:2] and l.split()[1] == os.path.join(INSTALLED, "cordon-test-pack")]


def base(**kw):
    # cwd "/": the same request runs whether the command sees the caller's directory or not.
    p = {"callerCwd": WORK, "cwd": "/", "env": ["PATH=/usr/bin:/bin"]}
    p.update(kw)
    return p


r = subprocess.run([CORDON, "pack", "install", SRC], capture_output=True, text=True, timeout=60)
t.ok(r.returncode == 0, "the test pack installs", r)
c = Conn(SOCK)
r = c.call("secret.set", {"backend": REF, "field": "token", "value": SECRET})
t.ok("result" in r, "its token is set", r)
r = c.call("backend.activate", {"backend": REF}, timeout=60)
launcher = r.get("result", {}).get("launcher", "")
t.ok(launcher.startswith(REF + "#"), "the pack's backend activates (%s)" % launcher, r)
pids = pack_processes()
t.ok(len(pids) == 1, "one pack process runs (pid %s on the host)" % pids, pids)
pack_pid = pids[0] if pids else 0

r = c.call("process.exec", base(argv=["/bin/sh", "-c", 'printf %s "$CORDON_PACK_TOKEN"']))
t.ok(r.get("result", {}).get("stdout") == "configured" and r["result"].get("launcher") == launcher,
     "the pack has the token (it says so through the command's environment)", r)

hexed = SECRET.encode()[::-1].hex()
r = c.call("process.exec", base(argv=["/usr/bin/python3", "-c", SCANNER, hexed, str(pack_pid), PACK_STATE]),
           timeout=120)
res = r.get("result", {})
try:
    scan = json.loads(res.get("stdout", ""))
except ValueError:
    scan = {}
t.ok(res.get("exitCode") == 0 and scan.get("self_found") is True and scan.get("regions", 0) > 0,
     "the scan runs through the pack and finds the token where it is: in the scanner (%d regions read)"
     % scan.get("regions", 0), r)
t.ok(scan.get("found") == [], "no process the command can see holds the token in its memory, "
     "environment or command line (%d processes seen)" % len(scan.get("seen", [])), scan)
t.ok(scan.get("pack_seen") == [], "the pack process is not among those it sees", scan)
t.ok(scan.get("signalable", [None]) == [] or scan.get("signalable") == [1],
     "it can signal nothing but its own sandbox's init", scan)
t.ok(scan.get("pack_signal") in (3, 1),
     "signalling the pack by its host pid %d fails with ESRCH or EPERM (%s)" % (pack_pid, scan.get("pack_signal")),
     scan)
t.ok(scan.get("state_write") not in (None, "written")
     and not os.path.exists(os.path.join(PACK_STATE, "written-by-a-command")),
     "it cannot write the pack's state directory (errno %s)" % scan.get("state_write"), scan)
t.ok(pack_processes() == [pack_pid], "the pack process still runs", pack_processes())

# A lease on a pack backend that has nothing to do per lease (the test kind knows no acquire
# call: method-not-found is nothing to do for a direct backend).
r = c.call("sandbox.acquire", {"callerCwd": WORK})
sid = r.get("result", {}).get("sandboxId")
t.ok(sid and r["result"].get("launcher") == launcher, "a lease on the direct pack backend is acquired", r)
r = c.call("process.exec", base(sandbox=sid, argv=["/bin/sh", "-c", 'touch x 2>/dev/null || echo ro; ls -d "$PWD"'],
                                cwd=WORK))
t.ok(r.get("result", {}).get("stdout", "").split() == ["ro", WORK],
     "a command in it sees the host workspace, read-only (the lease's default)", r)
r = c.call("sandbox.release", {"sandboxId": sid})
t.ok(r.get("result", {}).get("released") is True, "and the lease is released", r)

# The pack process dies while a command it had run locally is running: the instance is lost and
# its command ends with it.
r = c.call("process.spawn", base(argv=["/bin/sleep", "100"],
                                 stdio={"stdin": "null", "stdout": "null", "stderr": "null"}))
sleeper = r.get("result", {}).get("processId")
t.ok(sleeper and r["result"].get("launcher") == launcher, "a long command runs through the pack", r)
if pack_pid:
    os.kill(pack_pid, 9)
r = c.call("process.wait", {"processId": sleeper}, timeout=30)
t.ok(r.get("result", {}).get("reason") == "launcher-lost",
     "killing the pack process ends it: reason launcher-lost", r)
deadline = time.time() + 10
while time.time() < deadline and active(c)[0] != "builtin:auto":
    time.sleep(0.2)
t.ok(active(c)[0] == "builtin:auto", "and builtin:auto serves in the lost instance's place")

c.close()
stop_controller()
sys.exit(t.done())
