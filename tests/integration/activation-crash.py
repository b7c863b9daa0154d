# kill -9 of the controller at every step of an activation, then a restart: the running and
# the persisted selection stay consistent (docs/ARCHITECTURE.md, "Activation").
#
# strace attaches to the running controller and delivers SIGKILL on the Nth call of one system
# call (openat, write, fsync, rename, ...), for N = 1, 2, ... until an activation completes
# without reaching the Nth call. That puts a kill at every point the controller touches the disk
# or the launcher during the transaction, with no test hook in the controller. After each kill:
# the saved selection is the old or the new one (never torn, never unconfined), the settings file
# parses, a restarted controller serves spawns, and the killed controller's launchers are gone.
# Run by activation-crash.sh.
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "helpers"))
from ctl import STATE, SOCK, start_controller, wait_gone  # noqa: E402
from rpc import Conn, Tap  # noqa: E402

WORK = os.environ["WORK"]
TEST_TMP = os.environ["TEST_TMP"]
# The candidate: a pack backend when the test pack is installed by the caller, else builtin:auto.
CANDIDATE = json.loads(os.environ.get("CRASH_CANDIDATE", '{"backend":"builtin:auto"}'))
SYSCALLS = os.environ.get("CRASH_SYSCALLS", "openat,write,fsync,rename,sendmsg,close").split(",")
t = Tap()


def ours(name):
    """Live processes called name whose environment is this test's (other tests run in parallel)."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % d) as f:
                if f.read().strip() != name[:15]:
                    continue
            with open("/proc/%s/environ" % d, "rb") as f:
                if TEST_TMP.encode() in f.read():
                    found.append(int(d))
        except OSError:
            pass
    return found


def read_state():
    """(active.json parsed or None, settings.json parsed or None, problems)."""
    problems, docs = [], []
    for name in ("active.json", "settings.json"):
        p = os.path.join(STATE, name)
        try:
            with open(p) as f:
                docs.append(json.load(f))
        except FileNotFoundError:
            docs.append(None)
        except ValueError as e:
            problems.append("%s is torn: %s" % (name, e))
            docs.append(None)
    return docs[0], docs[1], problems


def attach(pid, syscall, n):
    """strace the controller, SIGKILL on the nth call of syscall; returns once attached."""
    log = os.path.join(TEST_TMP, "strace.log")
    # Every thread of the controller (its writer thread does the atomic replaces), but not its
    # children: a kill must land in the controller.
    tids = sorted(os.listdir("/proc/%d/task" % pid))
    st = subprocess.Popen(
        ["strace"] + [a for t in tids for a in ("-p", t)] + ["-o", log, "-e", "trace=" + syscall,
         "-e", "inject=%s:signal=SIGKILL:when=%d" % (syscall, n)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # strace says "Process N attached" on stderr once each tracee is stopped and seized.
    for _ in tids:
        line = st.stderr.readline()
        if "attached" not in line:
            st.kill()
            st.wait()
            raise RuntimeError("strace did not attach: %r" % line)
    return st


ctl = start_controller()
c = Conn(SOCK)
r = c.call("backend.activate", CANDIDATE)
t.ok("result" in r, "the candidate activates without faults (%s)" % CANDIDATE["backend"], r)
r = c.call("backend.activate", {"backend": "builtin:auto"})
c.close()
base, _, _ = read_state()
t.ok(base and base.get("backend") == "builtin:auto", "the baseline selection is saved", base)

kills, torn, unconfined, bad_restart, leaked, points = 0, [], [], [], [], []
for syscall in SYSCALLS:
    n = 1
    while n < 400:
        before, _, _ = read_state()
        st = attach(ctl, syscall, n)
        # The kill may come before our request is even read: the previous activation's step 7
        # (disposing of the old launcher) may still be running when strace attaches.
        r = None
        try:
            c = Conn(SOCK)
            try:
                r = c.call("backend.activate", CANDIDATE, timeout=30)
            finally:
                c.close()
        except (OSError, ValueError):
            pass
        # Detach (strace exits by itself once its tracee is dead), then see whether the kill
        # came, during the request or in the work that follows the reply (step 7).
        if st.poll() is None:
            st.send_signal(signal.SIGINT)
        try:
            st.wait(10)
        except subprocess.TimeoutExpired:
            st.kill()
            st.wait()
        t_dead = wait_gone(ctl, 0.3)
        if not t_dead:
            # The nth call was never reached during the activation: this syscall is covered.
            if r is None:
                bad_restart.append("%s#%d: no answer, and the controller lives" % (syscall, n))
            c = Conn(SOCK)
            c.call("backend.activate", {"backend": "builtin:auto"})
            c.close()
            break
        kills += 1
        points.append("%s#%d" % (syscall, n))
        after, settings, problems = read_state()
        torn += problems
        if after is None:
            torn.append("%s#%d: active.json vanished" % (syscall, n))
        else:
            if after.get("backend") not in ("builtin:auto", CANDIDATE["backend"]):
                unconfined.append("%s#%d: %s" % (syscall, n, after))
            g0 = (before or {}).get("generation", 0)
            if after.get("generation") not in (g0, g0 + 1):
                torn.append("%s#%d: generation %s after %s" % (syscall, n, after.get("generation"), g0))
        # The killed controller's launchers die with it (they watch their parent).
        deadline = time.time() + 10
        while time.time() < deadline and ours("cordon-launcherd"):
            time.sleep(0.05)
        left = ours("cordon-launcherd")
        if left:
            leaked.append("%s#%d: launcherd %s" % (syscall, n, left))
            for p in left:
                os.kill(p, signal.SIGKILL)
        # A restart serves spawns with what was saved.
        ctl = start_controller()
        c = Conn(SOCK)
        # cwd "/": a pack backend runs the command in its own sandbox, where WORK is not.
        r = c.call("process.exec", {"callerCwd": WORK, "cwd": "/", "env": ["PATH=/usr/bin:/bin"],
                                    "argv": ["/bin/echo", "up"]})
        l = c.call("backend.list", {})
        c.close()
        if r.get("result", {}).get("stdout") != "up\n":
            bad_restart.append("%s#%d: %s" % (syscall, n, r))
        if after and l.get("result", {}).get("active") != after.get("backend"):
            bad_restart.append("%s#%d: restarted with %s, saved %s" % (syscall, n, l.get("result", {}).get("active"), after))
        # Back to the baseline for the next point.
        c = Conn(SOCK)
        c.call("backend.activate", {"backend": "builtin:auto"})
        c.close()
        n += 1

print("# kill points: %s" % " ".join(points), flush=True)
t.ok(kills >= 5, "the controller was killed at %d points of the activation" % kills)
t.ok(not torn, "the saved selection and settings are never torn", torn[:5])
t.ok(not unconfined, "the saved selection is never unconfined nor anything but old/new", unconfined[:5])
t.ok(not bad_restart, "every restart serves spawns with the saved selection", bad_restart[:5])
t.ok(not leaked, "no launcher outlives the controller that started it", leaked[:5])
stale = [f for f in os.listdir(STATE) if ".tmp." in f]
t.ok(not stale, "no half-written temporary file is left in the state directory", stale)
sys.exit(t.done())
