# The controller a Python integration test runs against (tests only): where its files are, per
# the private XDG directories cli-lib.sh sets up, and how to start, find and stop it.
import os
import subprocess
import time

CORDON = os.path.join(os.environ["top_builddir"], "cordon")
RUN = os.environ["XDG_RUNTIME_DIR"]
STATE = os.path.join(os.environ["XDG_STATE_HOME"], "cordon")
SOCK = os.path.join(RUN, "cordon", "controller.sock")


def controller_pid():
    """The running controller's pid from its lock file, 0 when there is none."""
    try:
        with open(SOCK + ".lock") as f:
            return int(f.readline())
    except (OSError, ValueError):
        return 0


def start_controller():
    """Start the controller as the CLI does on demand (a no-op when it runs); its pid. When
    that fails, the exception carries what the CLI said and the end of the controller's log."""
    r = subprocess.run([CORDON, "ps"], capture_output=True, text=True)
    if r.returncode != 0:
        try:
            with open(os.path.join(STATE, "controller.log"), errors="replace") as f:
                log = "".join(f.readlines()[-30:])
        except OSError as e:
            log = "(no controller log: %s)" % e
        raise RuntimeError("cordon ps exited %d: %s\ncontroller.log, last lines:\n%s"
                           % (r.returncode, r.stderr.strip(), log))
    return controller_pid()


def alive(pid):
    """Running (a zombie waiting for whoever reaps orphans here counts as dead)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def children(ppid, word="cordon-launcherd"):
    """Live children of ppid whose command line has word."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(fields[1]) == ppid and fields[0] != "Z" and word in cmd:
            out.append(int(d))
    return sorted(out)


def wait_gone(pid, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline and alive(pid):
        time.sleep(0.02)
    return not alive(pid)


def stop_controller(pid=None):
    """SIGTERM to the controller (by default the running one), then wait until it is gone."""
    pid = pid or controller_pid()
    if pid:
        os.kill(pid, 15)
        wait_gone(pid, 5)


def saved():
    """The saved selection (active.json) as text, None when there is none."""
    try:
        with open(os.path.join(STATE, "active.json")) as f:
            return f.read()
    except OSError:
        return None


def active(conn):
    """(active ref, its launcher) from backend.list over conn; (None, None) while none is: a lost
    instance's replacement is still being activated (spawns fail cleanly meanwhile)."""
    r = conn.call("backend.list", {}, timeout=60)["result"]
    launchers = [b.get("launcher") for b in r["backends"] if b["active"]]
    return r.get("active"), launchers[0] if launchers else None


def leak_reports():
    """LeakSanitizer's reports in the controller's log (its stderr, and its user-mode
    launchers'): nothing but in an ASan build that leaked at exit. Each leak with the first
    frames of its stack."""
    try:
        with open(os.path.join(STATE, "controller.log"), errors="replace") as f:
            lines = [line.rstrip() for line in f]
    except OSError:
        return []
    out, frames = [], 0
    for line in lines:
        if "LeakSanitizer" in line or "Direct leak of" in line:
            out.append(line)
            frames = 8 if "Direct" in line else 0
        elif frames and line.lstrip().startswith("#"):
            if "libc_start" not in line and "asan_malloc" not in line:
                out.append(line)
            frames -= 1
    return out
