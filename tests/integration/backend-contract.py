# The backend methods' contract, against the test build of the controller (builtin:test):
#   - stored settings and the selection change together or not at all: when the selection write
#     fails (strace makes the rename onto active.json fail with EIO, no hook in the controller),
#     the activation fails at persist and the stored settings stay as they were; settings saved
#     with the selection win at start-up over a settings.json a crash left behind;
#   - every method taking a backend accepts the object reference backend.list returns as well as
#     the text form, and a bad one is refused naming the field;
#   - every subcommand takes --json after its arguments as the global flag does.
# Run by backend-contract.sh.
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "helpers"))
from ctl import CORDON, STATE, SOCK, active, start_controller, stop_controller  # noqa: E402
from rpc import Conn, Tap  # noqa: E402

WORK = os.environ["WORK"]
TEST_TMP = os.environ["TEST_TMP"]
SETTINGS = os.path.join(STATE, "settings.json")
ACTIVE = os.path.join(STATE, "active.json")
REF = "builtin:test"
t = Tap()


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def field(r):
    return r.get("error", {}).get("data", {}).get("field")


def stored_region(c):
    """The region builtin:test has stored, as backend.settings.get shows it."""
    r = c.call("backend.settings.get", {"backend": REF})
    return r.get("result", {}).get("settings", {}).get("region")


def fail_selection_writes(pid):
    """strace the controller's writer thread (every thread but the main one: the selection is
    written there, off the event loop, controller-persist.c); each rename there fails with EIO.
    strace's -P cannot pick the rename onto active.json (it matches the first path only)."""
    tids = sorted(t for t in os.listdir("/proc/%d/task" % pid) if t != str(pid))
    if not tids:
        raise RuntimeError("the controller has no writer thread")
    st = subprocess.Popen(
        ["strace", "-qq"] + [a for tid in tids for a in ("-p", tid)]
        + ["-o", os.path.join(TEST_TMP, "strace.log"),
           "-e", "trace=rename,renameat,renameat2",
           "-e", "inject=rename,renameat,renameat2:error=EIO"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 10
    while time.time() < deadline:
        traced = 0
        for tid in tids:
            try:
                with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                    if any(l.startswith("TracerPid:") and l.split()[1] != "0" for l in f):
                        traced += 1
            except OSError:
                pass
        if traced == len(tids):
            return st
        time.sleep(0.02)
    st.kill()
    st.wait()
    raise RuntimeError("strace did not attach")


def detach(st):
    if st.poll() is None:
        st.send_signal(signal.SIGINT)
    try:
        st.wait(10)
    except subprocess.TimeoutExpired:
        st.kill()
        st.wait()


# --- 1. Stored settings and the selection change together ----------------------------------
ctl = start_controller()
c = Conn(SOCK)
r = c.call("backend.activate", {"backend": REF, "settings": {"region": "eu"}})
t.ok("result" in r and stored_region(c) == "eu", "builtin:test activates with region eu", r)
_, serving = active(c)
settings_before, active_before = read(SETTINGS), read(ACTIVE)

# The controller is not dumpable (it holds secrets): only root can trace it.
if os.geteuid() != 0:
    for _ in range(7):
        t.ok(True, "a failing selection write # SKIP needs root to trace the controller")
else:
    st = fail_selection_writes(ctl)
    try:
        r = c.call("backend.activate", {"backend": REF, "settings": {"region": "us"}})
        r2 = c.call("backend.settings.set", {"backend": REF, "settings": {"region": "ap"}})
    finally:
        detach(st)
    with open(os.path.join(TEST_TMP, "strace.log")) as f:
        injected = [l for l in f if "EIO" in l and "INJECTED" in l]
    t.ok(injected and all("active.json" in l for l in injected),
         "the rename onto active.json was made to fail", injected)
    t.ok(r.get("error", {}).get("data", {}).get("step") == "persist",
         "an activation whose selection write fails fails at persist", r)
    t.ok(r2.get("error", {}).get("data", {}).get("step") == "persist",
         "…and so does a settings change of the active backend (an activation)", r2)
    t.ok(active(c)[1] == serving, "the previous instance stays active")
    t.ok(read(ACTIVE) == active_before, "active.json is unchanged")
    t.ok(read(SETTINGS) == settings_before, "settings.json is unchanged",
         (settings_before, read(SETTINGS)))
    t.ok(stored_region(c) == "eu", "the stored settings are unchanged (region eu)", stored_region(c))
c.close()
stop_controller(ctl)
ctl = start_controller()
c = Conn(SOCK)
t.ok(active(c)[0] == REF and stored_region(c) == "eu",
     "a restarted controller has the old selection with its old settings")

# A crash after the selection was replaced but before settings.json: the settings saved with
# the selection are the ones that count.
r = c.call("backend.activate", {"backend": REF, "settings": {"region": "sa"}})
doc = json.loads(read(ACTIVE) or b"{}")
t.ok("result" in r and doc.get("backend") == REF and doc.get("settings", {}).get("region") == "sa",
     "the selection is saved with its settings, in one file", doc)
c.close()
stop_controller(ctl)
with open(SETTINGS, "wb") as f:
    f.write(settings_before)  # as if the copy into settings.json never happened
ctl = start_controller()
c = Conn(SOCK)
t.ok(active(c)[0] == REF and stored_region(c) == "sa",
     "at start-up the settings saved with the selection win", stored_region(c))
t.ok(json.loads(read(SETTINGS))["backends"].get(REF, {}).get("region") == "sa",
     "…and are copied into settings.json", read(SETTINGS))

# --- 2. Object references, as backend.list returns them -------------------------------------
listed = c.call("backend.list", {})["result"]["backends"]
objs = {b["ref"]: b["backend"] for b in listed}
t.ok(objs.get("builtin:auto") == {"source": "builtin", "kind": "auto"}, "backend.list gives object references", objs)
objs[REF] = {"source": "builtin", "kind": "test"}  # the test build's backend is not listed
for ref, obj in sorted(objs.items()):
    r = c.call("backend.settings.get", {"backend": obj})
    t.ok(r.get("result", {}).get("backend") == ref, "backend.settings.get takes %s" % json.dumps(obj), r)
r = c.call("backend.settings.set", {"backend": objs[REF], "settings": {"count": 3}})
t.ok(r.get("result", {}).get("settings", {}).get("count") == 3, "backend.settings.set takes the object form", r)
r = c.call("secret.set", {"backend": objs[REF], "field": "apiKey", "value": "k"})
t.ok(r.get("result", {}).get("backend") == REF and r["result"].get("configured"), "secret.set takes it", r)
r = c.call("secret.clear", {"backend": objs[REF], "field": "apiKey"})
t.ok(r.get("result", {}).get("backend") == REF and r["result"].get("changed"), "secret.clear takes it", r)
r = c.call("backend.activate", {"backend": objs["builtin:auto"]})
t.ok(r.get("result", {}).get("active") == "builtin:auto", "backend.activate takes the object form", r)
r = c.call("backend.activate", {"backend": "builtin:auto"})
t.ok(r.get("result", {}).get("active") == "builtin:auto", "…and still the text form", r)

bad = [
    ({"source": "builtin", "kind": "Auto"}, "params.backend.kind"),
    ({"source": "builtin"}, "params.backend.kind"),
    ({"source": "pack", "kind": "x"}, "params.backend.packId"),
    ({"source": "builtin", "packId": "org.example.p", "kind": "auto"}, "params.backend.packId"),
    ({"source": "elsewhere", "kind": "auto"}, "params.backend.source"),
    ({"source": "builtin", "kind": "auto", "extra": 1}, "params.backend.extra"),
    (42, "params.backend"),
    ("builtin", "params.backend"),
]
for method, extra in (("backend.activate", {}), ("backend.settings.get", {}),
                      ("backend.settings.set", {"settings": {}}),
                      ("secret.set", {"field": "apiKey", "value": ""}),
                      ("secret.clear", {"field": "apiKey"})):
    wrong = []
    for ref, want in bad:
        p = dict(extra, backend=ref)
        r = c.call(method, p)
        if r.get("error", {}).get("code") != -32602 or field(r) != want:
            wrong.append((ref, want, r))
    r = c.call(method, dict(extra))
    if field(r) not in ("params.backend", "params"):
        wrong.append(("(missing)", "params.backend", r))
    t.ok(not wrong, "%s refuses bad references naming the field" % method, wrong[:3])
r = c.call("backend.activate", {"backend": {"source": "pack", "packId": "org.example.none", "kind": "x"}})
t.ok(r.get("error", {}).get("code") == -32003, "an unknown object reference is not found", r)
c.close()

# --- 3. --json after the arguments, as the global flag -------------------------------------
def cli(*args, stdin=b""):
    return subprocess.run([CORDON, *args], input=stdin, capture_output=True, timeout=60)


def one_json(p):
    try:
        json.loads(p.stdout)
        return p.returncode == 0
    except ValueError:
        return False


def json_lines(p):
    try:
        return p.returncode == 0 and all(json.loads(l) is not None for l in p.stdout.splitlines())
    except ValueError:
        return False


policy = os.path.join(os.environ["top_srcdir"], "tests", "fixtures", "valid", "default.json")
c = Conn(SOCK)
sp = c.call("process.spawn", {"callerCwd": WORK, "env": ["PATH=/usr/bin:/bin"], "argv": ["/bin/true"],
                              "stdio": {"stdin": "null", "stdout": "null", "stderr": "null"}})
pid = sp.get("result", {}).get("processId", "none")  # c stays open: its processes live on
cases = [
    (["backend", "list"], one_json),
    (["backend", "activate", "builtin:auto"], one_json),
    (["backend", "settings", REF], one_json),
    (["backend", "settings", REF, "--set", "count=4"], one_json),
    (["pack", "list"], one_json),
    (["secret", "set", REF, "apiKey"], one_json),
    (["secret", "clear", REF, "apiKey"], one_json),
    (["ps"], one_json),
    (["wait", pid], one_json),
    (["doctor"], one_json),
    (["events"], json_lines),
    (["policy", "check", policy], one_json),
    (["policy", "explain"], one_json),
]
for args, check in cases:
    after = cli(*args, "--json")
    before = cli("--json", *args)
    t.ok(check(after) and after.returncode == before.returncode,
         "cordon %s --json (exit %d, as --json first: %d)" % (" ".join(args), after.returncode, before.returncode),
         (after.stdout[-300:], after.stderr[-300:]))
# "--" ends the options: what follows is an argument.
r = cli("backend", "list", "--", "--json")
t.ok(r.returncode == 125, "an argument after -- is not an option (exit %d)" % r.returncode, r.stderr)
# A command line of its own keeps its --json.
r = cli("exec", "--", "/bin/echo", "--json")
t.ok(r.returncode == 0 and r.stdout == b"--json\n", "cordon exec -- echo --json passes --json to the command", r)

# Every method answers: a handler that fails without replying (test.fail returns -ENOMEM
# as an out-of-memory handler would) gets an internal-error reply from the dispatcher.
r = c.call("test.fail", {}, timeout=5)
t.ok(r is not None and r.get("error", {}).get("code") == -32603,
     "a handler failing without a reply gets internal-error (-32603)", r)
r = c.call("backend.list", {}, timeout=5)
t.ok(r is not None and "result" in r, "and the connection still serves", r)

c.close()
stop_controller()
sys.exit(t.done())
