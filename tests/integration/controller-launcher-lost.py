# The controller loses its launcher. Run by controller-launcher-lost.sh.
#
# 1. Its own launcherd (user mode as an ordinary user; as root, the privileged one it starts)
#    is killed: the processes that launcher made end at once (a `cordon run` exits 122 and says
#    why; an exec and a wait are answered; `exit` events with reason launcher-lost), the zombie
#    is reaped, a process on another launcher instance (an earlier activation's) keeps running,
#    and the next spawn starts a new launcherd and works.
# 2. As root: a system launcherd on a test socket is killed, under a controller running as root
#    and under one running as an ordinary user; while none listens, a spawn fails with 122
#    naming the system launcher (the controller starts none of its own in its place), and so
#    does the next; once a launcherd listens there again, spawns work, with its hello.
# 3. As root, when an ordinary user can have user namespaces: part 1's kill through the CLI of a
#    controller running as that user (a user-mode launcherd, no connection receiver).
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "helpers"))
from ctl import (CORDON, SOCK, alive, children, leak_reports, start_controller,  # noqa: E402
                 stop_controller)
from rpc import Conn, Tap  # noqa: E402

WORK = os.environ["WORK"]
TMP = os.environ["TEST_TMP"]
BUILD = os.environ["top_builddir"]
LOST_SECONDS = 2.0
t = Tap()
started = []  # the system launcherds this test started: stopped at the end of each part


def base(**kw):
    p = {"callerCwd": WORK, "env": ["PATH=/usr/bin:/bin"]}
    p.update(kw)
    return p


def gone(pid, seconds):
    """pid no longer exists at all (exited and reaped) within seconds."""
    deadline = time.time() + seconds
    while time.time() < deadline and os.path.exists("/proc/%d" % pid):
        time.sleep(0.02)
    return not os.path.exists("/proc/%d" % pid)


def running(conn, pids, seconds=20):
    """Every processId in pids is running (its spawn answered) within seconds."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        ps = {p["processId"]: p for p in conn.call("process.list", {})["result"]["processes"]}
        if all(ps.get(p, {}).get("state") == "running" and ps[p].get("pid", 0) > 0
               for p in pids):
            return ps
        time.sleep(0.05)
    return None


def sleeping(processes):
    """The processes of `sleep 100` that have started (the launcher answered) and run."""
    return [p for p in processes if p["state"] == "running" and p.get("pid", 0) > 0
            and p["argv"] == ["/bin/sleep", "100"]]


def events(conn, seconds):
    """Every event that arrives on conn (subscribed, follow) for seconds."""
    out, deadline = [], time.time() + seconds
    while time.time() < deadline:
        try:
            m = conn.read_msg(timeout=max(0.01, deadline - time.time()))
        except OSError:
            break
        if m is None:
            break
        if m.get("method") == "event":
            out.append(m["params"])
    return out


def run_bg(argv, env=None, user=None, cwd=None):
    pre = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] if user else []
    return subprocess.Popen(pre + [CORDON, "run", "--"] + argv, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)


def run(argv):
    p = run_bg(argv)
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err


def wait_run(p, seconds, t0):
    """(exit status, stderr, seconds since t0) of a `cordon run` once it ends."""
    try:
        _, err = p.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        return None, err, time.time() - t0
    return p.returncode, err, time.time() - t0


def lost_note(err):
    return "launcher was lost" in err


def sanitizer_reports(state_home):
    """What AddressSanitizer, LeakSanitizer or UBSan said in a controller's log (nothing but in
    a sanitizer build that found something)."""
    try:
        with open(os.path.join(state_home, "cordon", "controller.log"), errors="replace") as f:
            return [line.rstrip() for line in f
                    if "Sanitizer" in line or "runtime error:" in line or "Direct leak" in line]
    except OSError:
        return []


# ---------------------------------------------------------------------------- 1. its own launcher
# A copy of launcherd, so that touching it makes the next activation start a second launcherd.
bindir = os.path.join(TMP, "bin")
os.makedirs(bindir, exist_ok=True)
ld_copy = os.path.join(bindir, "cordon-launcherd")
shutil.copy2(os.path.join(BUILD, "cordon-launcherd"), ld_copy)
os.environ["CORDON_LAUNCHERD"] = ld_copy

ctl = start_controller()
c = Conn(SOCK)
r = c.call("process.spawn", base(argv=["/bin/sleep", "100"],
                                 stdio={"stdin": "null", "stdout": "null", "stderr": "null"}))
old_pid, old_launcher = r["result"]["processId"], r["result"]["launcher"]
first = children(ctl)
t.ok(len(first) == 1, "the controller started a launcherd of its own (%s)" % first)
# A second launcher: the binary changed on disk, so activating builtin:auto starts another.
os.utime(ld_copy, (time.time() + 5, time.time() + 5))
r = c.call("backend.activate", {"backend": "builtin:auto"}, timeout=60)
current = r.get("result", {}).get("launcher")
both = children(ctl)
t.ok(current and current != old_launcher and len(both) == 2,
     "a second instance on a second launcherd (%s, %s)" % (current, both), r)
lost_ld = [p for p in both if p not in first][0]
old_ld = first[0]

e = Conn(SOCK)
e.call("events.subscribe", {"follow": True})
runner = run_bg(["/bin/sleep", "100"])
x = Conn(SOCK)
exec_id = x.request("process.exec", base(argv=["/bin/sleep", "100"]))
w = Conn(SOCK)
r = w.call("process.spawn", base(argv=["/bin/sleep", "100"]))
piped = r["result"]["processId"]
deadline = time.time() + 20
lost_pids = None
while time.time() < deadline and lost_pids is None:
    ps = [p for p in sleeping(c.call("process.list", {})["result"]["processes"])
          if p["processId"] not in (old_pid, piped) and p["launcher"] == current]
    if len(ps) == 2:  # the run's and the exec's
        lost_pids = [p["processId"] for p in ps]
    time.sleep(0.05)
t.ok(lost_pids and running(c, lost_pids + [piped, old_pid]),
     "a run, an exec and a spawn run on the second launcher, a spawn on the first")
wait_id = w.request("process.wait", {"processId": piped})

os.kill(lost_ld, signal.SIGKILL)
killed_at = time.time()
rc, err, took = wait_run(runner, 30, killed_at)
t.ok(rc == 122 and took < LOST_SECONDS and lost_note(err),
     "cordon run ends at once, exit 122, saying why (%s, %.2f s)" % (rc, took), err)
x_reply = x.wait(exec_id, timeout=10)
t.ok(x_reply and x_reply.get("result", {}).get("reason") == "launcher-lost"
     and time.time() - killed_at < LOST_SECONDS + 1,
     "the exec is answered: reason launcher-lost", x_reply)
w_reply = w.wait(wait_id, timeout=10)
t.ok(w_reply and w_reply.get("result", {}).get("reason") == "launcher-lost",
     "the wait is answered: reason launcher-lost", w_reply)
t.ok(gone(lost_ld, LOST_SECONDS), "the dead launcherd is reaped (no zombie left)")
ev = events(e, 0.5)
exits = {v["processId"]: v["reason"] for v in ev if v["type"] == "exit"}
t.ok(all(exits.get(p) == "launcher-lost" for p in lost_pids + [piped]) and old_pid not in exits,
     "an exit event with reason launcher-lost for each of them, none for the other", ev)
t.ok(any(v["type"] == "backend-lost" and v["launcher"] == current for v in ev),
     "a backend-lost event names the instance", ev)
ps = {p["processId"]: p for p in c.call("process.list", {})["result"]["processes"]}
t.ok(ps[old_pid]["state"] == "running" and alive(old_ld),
     "the process on the other launcher runs on, and so does that launcher", ps[old_pid])

rc, out, err = run(["/bin/echo", "ok"])
t.ok(rc == 0 and out == "ok\n", "the next cordon run works (%s)" % rc, err)
r = c.call("process.exec", base(argv=["/bin/echo", "ok"]))
res = r.get("result", {})
now = children(ctl)
t.ok(res.get("stdout") == "ok\n" and res.get("launcher") not in (current, old_launcher)
     and len(now) == 2 and lost_ld not in now,
     "…served by a new instance on a new launcherd (%s, %s)" % (res.get("launcher"), now), r)

# The first launcher goes too: its process ends; the active one is not touched.
os.kill(old_ld, signal.SIGKILL)
r = c.call("process.wait", {"processId": old_pid}, timeout=10)
t.ok(r and r.get("result", {}).get("reason") == "launcher-lost",
     "the first launcher's process ends when that launcher goes", r)
r2 = c.call("process.exec", base(argv=["/bin/true"]))
t.ok(r2.get("result", {}).get("launcher") == res.get("launcher"),
     "the active instance serves on", r2)
for k in (c, e, x, w):
    k.close()
stop_controller(ctl)
t.ok(not leak_reports(), "no leak reported at the controller's exit",
     "\n".join(leak_reports()[:40]))
os.environ["CORDON_LAUNCHERD"] = os.path.join(BUILD, "cordon-launcherd")


# ---------------------------------------------------------------------------- 2. the system one
USER = 65534


def as_user(uid, name):
    """The environment of a controller of uid's own (private runtime and state directories
    under TMP/name, a working directory it owns), and the lock file naming its pid."""
    home = os.path.join(TMP, name)
    env = dict(os.environ, XDG_RUNTIME_DIR=os.path.join(home, "run"),
               XDG_STATE_HOME=os.path.join(home, "state"))
    for d in ("run", "state", "work"):
        os.makedirs(os.path.join(home, d), mode=0o700, exist_ok=True)
    if uid:
        for root, dirs, files in os.walk(home):
            os.chown(root, uid, uid)
    return env, os.path.join(home, "work"), os.path.join(home, "run", "cordon",
                                                         "controller.sock.lock")


def lock_pid(lock):
    try:
        with open(lock) as f:
            return int(f.readline())
    except (OSError, ValueError):
        return 0


def cli(args, env, uid, cwd):
    pre = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"] if uid else []
    return subprocess.run(pre + [CORDON] + args, capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=60)


def cli_ps(env, uid, cwd):
    r = cli(["--json", "ps"], env, uid, cwd)
    return json.loads(r.stdout).get("processes", []) if r.returncode == 0 else []


def start_launcherd(sock, floor, log):
    if os.path.exists(sock):
        os.unlink(sock)
    p = subprocess.Popen([os.path.join(BUILD, "cordon-launcherd"), "--socket", sock, "--floor",
                          floor], stderr=open(log, "a"))
    started.append(p)
    deadline = time.time() + 10
    while time.time() < deadline and not os.path.exists(sock) and p.poll() is None:
        time.sleep(0.02)
    time.sleep(0.1)
    return p


def system_part(uid, name):
    """The controller of uid talks to a system launcherd on a test socket, which is killed."""
    who = "as uid %d" % uid if uid else "as root"
    sock = os.path.join(TMP, "ld-%s.sock" % name)
    env, cwd, lock = as_user(uid, name)
    env["CORDON_LAUNCHERD_SOCKET"] = sock
    ctl = 0
    try:
        ld = start_launcherd(sock, floor, os.path.join(TMP, "launcherd.log"))
        r = cli(["--json", "doctor"], env, uid, cwd)
        ctl = lock_pid(lock)
        hello = json.loads(r.stdout).get("launcher") or {} if r.returncode == 0 else {}
        t.ok(hello.get("mode") == "privileged" and ctl and not children(ctl),
             "%s: the controller uses the system launcherd, none of its own" % who, r.stderr)
        runner = run_bg(["/bin/sleep", "100"], env, uid, cwd)
        deadline = time.time() + 20
        while time.time() < deadline and not sleeping(cli_ps(env, uid, cwd)):
            time.sleep(0.05)
        t.ok(sleeping(cli_ps(env, uid, cwd)), "%s: a cordon run of sleep 100 runs" % who)
        killed_at = time.time()
        ld.kill()
        ld.wait()
        rc, err, took = wait_run(runner, 30, killed_at)
        t.ok(rc == 122 and took < LOST_SECONDS and lost_note(err),
             "%s: system launcher killed: cordon run ends at once, exit 122 (%s, %.2f s)"
             % (who, rc, took), err)
        t0 = time.time()
        r = cli(["run", "--", "/bin/echo", "ok"], env, uid, cwd)
        took = time.time() - t0
        t.ok(r.returncode == 122 and "system launcher" in r.stderr and sock in r.stderr
             and took < 10,
             "%s: while none listens, a spawn fails: 122, naming the system launcher (%.2f s)"
             % (who, took), r.stderr)
        t.ok(not children(ctl), "%s: …and the controller started no launcherd in its place" % who,
             children(ctl))

        def failed_activations():
            evs = [json.loads(x) for x in cli(["events"], env, uid, cwd).stdout.splitlines()]
            return sum(1 for v in evs if v["type"] == "activation" and not v["ok"])

        before = failed_activations()
        r = cli(["run", "--", "/bin/echo", "ok"], env, uid, cwd)
        after = failed_activations()
        t.ok(r.returncode == 122 and after > before,
             "%s: the next spawn tries again, and fails the same way (%s; %d then %d failed "
             "activations)" % (who, r.returncode, before, after), r.stderr)
        ld = start_launcherd(sock, floor, os.path.join(TMP, "launcherd.log"))
        r = cli(["run", "--", "/bin/echo", "ok"], env, uid, cwd)
        t.ok(r.returncode == 0 and r.stdout == "ok\n",
             "%s: a launcherd listens again: the next spawn works" % who, r.stderr)
        r = cli(["--json", "doctor"], env, uid, cwd)
        again = json.loads(r.stdout).get("launcher") or {} if r.returncode == 0 else {}
        t.ok(again.get("mode") == "privileged" and again.get("uid") == uid
             and again.get("landlockAbi") == hello.get("landlockAbi"),
             "%s: its hello was said again (Landlock ABI %s)" % (who, again.get("landlockAbi")),
             again)
    finally:
        if ctl and alive(ctl):
            stop_controller(ctl)
        stop_all()
    found = sanitizer_reports(env["XDG_STATE_HOME"])
    t.ok(not found, "%s: no sanitizer report in the controller's log" % who, "\n".join(found[:40]))


def stop_all():
    for p in started:
        if p.poll() is None:
            p.kill()
        p.wait()


if os.geteuid() == 0:
    floor = os.path.join(TMP, "floor.json")
    with open(floor, "w") as f:
        f.write("{}\n")
    os.chmod(floor, 0o644)
    system_part(0, "root")
    # An ordinary user's connection has a receiver of its own in launcherd, which may outlive
    # launcherd: the end of launcherd's process tells then.
    if shutil.which("setpriv"):
        system_part(USER, "user")


# ---------------------------------------------------------------------------- 3. an ordinary user
def userns_ok(uid):
    return subprocess.run(["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups",
                           "unshare", "-U", "true"], capture_output=True).returncode == 0


if os.geteuid() == 0 and shutil.which("setpriv") and userns_ok(USER):
    env, cwd, lock = as_user(USER, "own")
    uctl = 0
    try:
        runner = run_bg(["/bin/sleep", "100"], env, USER, cwd)
        deadline = time.time() + 20
        lds = []
        while time.time() < deadline and not lds:
            uctl = lock_pid(lock)
            lds = children(uctl) if uctl else []
            time.sleep(0.05)
        deadline = time.time() + 20
        while time.time() < deadline and not sleeping(cli_ps(env, USER, cwd)):
            time.sleep(0.05)
        with open(os.path.join(env["XDG_STATE_HOME"], "cordon", "controller.log"),
                  errors="replace") as f:
            user_mode = "launcherd in user mode" in f.read()
        t.ok(len(lds) == 1 and user_mode, "as uid %d: a user-mode launcherd of its own (%s)"
             % (USER, lds))
        killed_at = time.time()
        if lds:
            os.kill(lds[0], signal.SIGKILL)
        rc, err, took = wait_run(runner, 30, killed_at)
        t.ok(rc == 122 and took < LOST_SECONDS and lost_note(err),
             "as uid %d: its launcherd killed: cordon run ends at once, exit 122 (%s, %.2f s)"
             % (USER, rc, took), err)
        t.ok(lds and gone(lds[0], LOST_SECONDS), "…the launcherd is reaped")
        r = cli(["run", "--", "/bin/echo", "ok"], env, USER, cwd)
        t.ok(r.returncode == 0 and r.stdout == "ok\n", "…and the next cordon run works", r.stderr)
    finally:
        if uctl and alive(uctl):
            stop_controller(uctl)
    found = sanitizer_reports(env["XDG_STATE_HOME"])
    t.ok(not found, "as uid %d: no sanitizer report in the controller's log" % USER,
         "\n".join(found[:40]))

sys.exit(t.done())
