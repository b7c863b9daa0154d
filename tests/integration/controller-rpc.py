# Raw JSON-RPC against cordon-controller: sandboxes (narrowing, setup hook, release), cancel of
# a process tree, disconnects, bad input, two concurrent clients, events, leaks, and a controller
# killed mid-run. Run by controller-rpc.sh, which prepares the environment.
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "helpers"))
from ctl import CORDON, SOCK, controller_pid  # noqa: E402
from rpc import Conn, Tap  # noqa: E402

WORK = os.environ["WORK"]
t = Tap()


def descendants(pid):
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout
    kids = {}
    for line in out.splitlines():
        p, pp = map(int, line.split())
        kids.setdefault(pp, []).append(p)
    res, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            res.append(k)
            todo.append(k)
    return res


def ppid_of(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def cmdline_of(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read()
    except OSError:
        return None


def host_pids_with(marker):
    out = subprocess.run(["ps", "-e", "-o", "pid=,args="], capture_output=True, text=True).stdout
    return [l for l in out.splitlines() if marker in l and "ps -e" not in l]


def base(**kw):
    p = {"callerCwd": WORK, "env": ["PATH=/usr/bin:/bin"]}
    p.update(kw)
    return p


def wait_exit(c, pid, timeout=20):
    return c.call("process.wait", {"processId": pid}, timeout=timeout)


# Start from nothing: the CLI starts the controller on demand.
subprocess.run([CORDON, "ps"], capture_output=True, check=True)
ctl = controller_pid()
t.ok(ctl > 0, "the controller is running (%d)" % ctl)
c = Conn(SOCK)

# --- sandboxes ---------------------------------------------------------------------------
ro = {"filesystem": {"workspace": {"path": WORK, "access": "read-only"}}}
r = c.call("sandbox.acquire", base(policyPatch=ro))
sid = r.get("result", {}).get("sandboxId")
t.ok(sid is not None, "acquire a sandbox with a read-only workspace", r)
r = c.call("process.exec", base(sandbox=sid, argv=["/bin/sh", "-c", "touch ro-probe"]))
t.ok(r["result"]["exitCode"] != 0 and not os.path.exists(os.path.join(WORK, "ro-probe")),
     "the sandbox's read-only workspace is really read-only", r)
r = c.call("sandbox.acquire", base(parent=sid, policyPatch={"filesystem": {"workspace": {"path": WORK, "access": "read-write"}}}))
t.ok(r.get("error", {}).get("code") == -32001 and r["error"]["data"]["field"] == "filesystem.workspace.access",
     "widening the workspace to read-write in a child is refused, naming the field", r)
r = c.call("sandbox.acquire", base(parent=sid, policyPatch={"limits": {"pids": 100000}}))
t.ok(r.get("error", {}).get("code") == -32001 and "limits.pids" in r["error"]["data"]["field"],
     "raising the pids limit in a child is refused, naming the field", r)
r = c.call("process.exec", base(sandbox=sid, argv=["/bin/true"], policyPatch={"network": {"mode": "proxy"}}))
t.ok(r.get("error", {}).get("code") == -32001 and r["error"]["data"]["field"].startswith("network"),
     "a process cannot widen its sandbox's network", r)
r = c.call("sandbox.acquire", base(parent=sid, policyPatch={"limits": {"pids": 64}}))
child = r.get("result", {}).get("sandboxId")
t.ok(child is not None, "narrowing (fewer pids) is accepted", r)

# A long-running process in the sandbox dies on release.
r = c.call("process.spawn", base(sandbox=sid, argv=["/bin/sleep", "1000"]))
spid = r.get("result", {}).get("processId")
t.ok(spid is not None, "spawn a long-running process in the sandbox", r)
r = c.call("sandbox.release", {"sandboxId": sid})
t.ok(r.get("result", {}).get("released") is True, "release the sandbox", r)
r = wait_exit(c, spid)
t.ok(r and r["result"]["signal"] == 9, "release killed what was left in it", r)
r = c.call("sandbox.list", {})
t.ok(all(s["sandboxId"] not in (sid, child) for s in r["result"]["sandboxes"]),
     "the sandbox and its child are gone", r)
r = c.call("process.exec", base(sandbox=sid, argv=["/bin/true"]))
t.ok("sandbox" in r.get("error", {}).get("data", {}).get("field", ""),
     "a released sandbox takes no more processes (its compiled plan is not reused)", r)

# The setup hook: runs on every acquisition; a non-zero exit fails the acquisition.
rw = {"filesystem": {"workspace": {"path": WORK, "access": "read-write"}}}
hook = {"argv": ["/bin/sh", "-c", "echo x >> setup-count"]}
for i in range(2):
    r = c.call("sandbox.acquire", base(policyPatch=rw, setup=hook))
    if "result" in r:
        c.call("sandbox.release", {"sandboxId": r["result"]["sandboxId"]})
with open(os.path.join(WORK, "setup-count")) as f:
    t.ok(len(f.readlines()) == 2, "the setup hook ran on each acquisition (never cached)")
r = c.call("sandbox.acquire", base(setup={"argv": ["/bin/sh", "-c", "echo broken >&2; exit 3"]}))
err = r.get("error", {})
t.ok(err.get("code") == -32002 and err["data"]["exitCode"] == 3 and "broken" in err["data"]["stderr"],
     "a failing setup hook fails the acquisition with its status and output", r)
r = c.call("sandbox.list", {})
t.ok(len(r["result"]["sandboxes"]) == 0, "no sandbox is left from the failed acquisition", r)

# --- cancel of a process tree with grandchildren --------------------------------------------
marker = "cordon-tree-%d" % os.getpid()
script = "sh -c 'sleep 1000; : %s' & sh -c 'sleep 1000; : %s' & wait" % (marker, marker)
r = c.call("process.spawn", base(argv=["/bin/sh", "-c", script]))
tree = r["result"]["processId"]
for _ in range(50):
    if len(host_pids_with(marker)) >= 2:
        break
    time.sleep(0.1)
t.ok(len(host_pids_with(marker)) >= 2, "the tree's grandchildren are running")
r = c.call("process.signal", {"processId": tree, "signal": 9})
r = wait_exit(c, tree)
time.sleep(0.2)
t.ok(r and host_pids_with(marker) == [], "cancel killed the whole tree, grandchildren too",
     host_pids_with(marker))

# --- stdin pipes and ptys -------------------------------------------------------------------
import base64  # noqa: E402

r = c.call("process.spawn", base(argv=["/bin/sh", "-c", "wc -c"], stdio={"stdin": "pipe"}))
wpid = r["result"]["processId"]
c.notes = []
r1 = c.call("process.write", {"processId": wpid, "data": base64.b64encode(b"x" * (3 << 20)).decode()})
r2 = c.call("process.write", {"processId": wpid, "text": "tail\n"})
c.call("process.closeStdin", {"processId": wpid})
r = wait_exit(c, wpid)
out = b"".join(base64.b64decode(n["params"]["data"]) for n in c.notes if n["method"] == "process.output")
t.ok(r1.get("result", {}).get("written") == 3 << 20 and out == b"3145733\n",
     "3 MiB written to a stdin pipe arrive whole, then EOF", (r1, r2, out))
r = c.call("process.spawn", base(argv=["/bin/sh", "-c", "test -t 0 && test -t 1 && echo tty; read x; echo got $x"], pty=True))
ppid = r["result"]["processId"]
c.notes = []
time.sleep(0.2)
c.call("process.write", {"processId": ppid, "text": "typed\n"})
r = wait_exit(c, ppid)
out = b"".join(base64.b64decode(n["params"]["data"]) for n in c.notes if n["method"] == "process.output")
t.ok(b"tty" in out and b"got typed" in out, "a pty is a terminal both ways", out)
r = c.call("process.spawn", base(argv=["/bin/true"], pty=True, stdio={"stdin": "pipe"}))
t.ok(r.get("error", {}).get("data", {}).get("field") == "params.pty", "pty with stdio is refused", r)

# --- bad input ------------------------------------------------------------------------------
c.send_raw(b"{this is not json\n")
m = c.read_msg()
t.ok(m and m.get("error", {}).get("code") == -32700, "garbage gets a parse error", m)
r = c.call("process.list", {})
t.ok("result" in r, "the connection is still usable after garbage")
r = c.call("no.such.method", {})
t.ok(r.get("error", {}).get("code") == -32601, "unknown method", r)
r = c.call("process.exec", base(argv=["/bin/true"], bogus=1))
t.ok(r.get("error", {}).get("code") == -32602 and r["error"]["data"]["field"] == "params.bogus",
     "an unknown parameter is refused by name", r)
r = c.call("process.exec", base(argv=["/bin/true"], policyPatch={"filesystem": {"read": ["/nonexistent/x"]}}))
t.ok(r.get("error", {}).get("code") == -32602 and "filesystem.read" in r["error"]["data"]["field"],
     "a missing path is refused naming the field", r)
big = Conn(SOCK)
msgs, closed = [], False
try:
    big.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"process.list","params":{"x":"' + b"a" * (17 << 20))
except (BrokenPipeError, ConnectionResetError):
    pass  # the controller may cut us off before we finish sending
try:
    while True:
        m = big.read_msg(timeout=5)
        if m is None:
            closed = True
            break
        msgs.append(m)
except (ConnectionResetError, BrokenPipeError):
    closed = True
except OSError:
    pass  # timeout: still open
t.ok(any(m.get("error", {}).get("code") == -32010 for m in msgs), "an oversized line gets too-large", msgs)
t.ok(closed, "and the connection is closed")
big.close()

# A client that disconnects mid-request: its process dies, nothing leaks.
d = Conn(SOCK)
rid = d.request("process.spawn", base(argv=["/bin/sleep", "1000"]))
r = d.wait(rid)
orphan = r["result"]["processId"]
d.close()
r = wait_exit(c, orphan)
t.ok(r and r["result"]["signal"] == 9, "a disconnected client's process is killed", r)
d = Conn(SOCK)
d.request("process.exec", base(argv=["/bin/sleep", "1000"]))
time.sleep(0.3)
d.close()
time.sleep(0.5)
r = c.call("process.list", {})
running = [p for p in r["result"]["processes"] if p["state"] != "exited"]
t.ok(running == [], "a client gone while its exec runs leaves nothing running", running)

# --- two concurrent clients -----------------------------------------------------------------
results = {}


def worker(name):
    k = Conn(SOCK)
    res = []
    for i in range(10):
        r = k.call("process.exec", base(argv=["/bin/sh", "-c", "echo %s-%d" % (name, i)]))
        res.append(r.get("result", {}).get("stdout"))
    results[name] = res
    k.close()


th = [threading.Thread(target=worker, args=(n,)) for n in ("a", "b")]
[x.start() for x in th]
[x.join(60) for x in th]
t.ok(results.get("a") == ["a-%d\n" % i for i in range(10)] and results.get("b") == ["b-%d\n" % i for i in range(10)],
     "two concurrent clients each get their own 10 results", results)

# --- events ---------------------------------------------------------------------------------
e = Conn(SOCK)
r = e.call("events.subscribe", {"follow": True})
t.ok("events" in r.get("result", {}), "subscribe returns the backlog")
c.call("process.exec", base(argv=["/bin/true"]))
types = []
deadline = time.time() + 10
while time.time() < deadline and "exit" not in types:
    m = e.read_msg(timeout=10)
    if m and m.get("method") == "event":
        types.append(m["params"]["type"])
t.ok("spawn" in types and "exit" in types, "a follower sees spawn and exit events", types)
e.close()

# --- no leaks -------------------------------------------------------------------------------
time.sleep(0.3)
kids = descendants(ctl)
launchers = [k for k in kids if ppid_of(k) == ctl]
# Under the launcher at most its namespace pool's helper and its connection's receiver: forks
# of it (same command line).
others = [k for k in kids if k not in launchers and not (len(launchers) == 1 and
          cmdline_of(k) == cmdline_of(launchers[0]) and ppid_of(k) == launchers[0])]
t.ok(len(launchers) == 1 and len(kids) <= 3 and not others,
     "only the launcher (its pool's helper, its connection's receiver) is left under the "
     "controller", [(k, cmdline_of(k)) for k in kids])

# --- the controller killed mid-run, then restarted ------------------------------------------
r = c.call("process.spawn", base(argv=["/bin/sh", "-c", "sleep 1000; : %s-kill" % marker]))
for _ in range(50):
    if host_pids_with(marker + "-kill"):
        break
    time.sleep(0.1)
before = host_pids_with(marker + "-kill")
os.kill(ctl, signal.SIGKILL)
c.close()
for _ in range(50):
    if not host_pids_with(marker + "-kill"):
        break
    time.sleep(0.1)
t.ok(before and not host_pids_with(marker + "-kill"), "kill -9 of the controller takes its sandboxes with it",
     host_pids_with(marker + "-kill"))
out = subprocess.run([CORDON, "exec", "--", "/bin/echo", "again"], capture_output=True, text=True)
t.ok(out.returncode == 0 and out.stdout == "again\n", "a new controller starts on the next call", out)
bad = 0
with open(os.path.join(os.environ["XDG_STATE_HOME"], "cordon", "events.log")) as f:
    for line in f:
        try:
            json.loads(line)
        except ValueError:
            bad += 1
t.ok(bad == 0, "every line of the event log is intact JSON")

sys.exit(t.done())
