# The backend conformance suite (run by run.sh): every check below, through the controller's
# JSON-RPC API (docs/PROTOCOL.md), against each backend named on the command line.
#
#   python3 conformance.py [--label LABEL] REF [REF...]
#
# The controller is the one of the private XDG directories run.sh set up (tests/helpers/ctl.py).
# Each backend is activated in turn; what a check expects follows the backend's descriptor as
# backend.list shows it: claims.workspace ("direct" when absent: the command sees the host path;
# "bind"; "transfer": the tree goes to the backend at acquisition and comes back at release; "none")
# and claims.readOnlyWorkspace (false when absent: a read-only workspace must be refused, naming
# filesystem.workspace.access). A check the claims rule out is "n/a" with the claim that says so.
# On a transfer backend the core refuses one-shot runs (checked by one-shot): every other check's
# one-shot commands run in a lease of their own instead (Backend.exec/spawn: sandbox.acquire with
# the same policy, read-write unless the check asks for read-only, the process with "sandbox": ID,
# then sandbox.release; a release that fails fails the check).
#
# The checks (CHECKS at the end, in this order):
#   exit-codes     exit 0, 1, 42 come back as such, reason "exited"
#   signal         death by SIGTERM is signal 15, reason "signaled"; `cordon exec` exits 128+N
#   signal-state   the command starts with no signal blocked or ignored
#   stdio          interleaved writes: stdout and stderr apart, each in order (exec and spawn)
#   output-cap     more than 4 MiB on one stream: capped, *Truncated, *Bytes; the other intact
#   binary         all 256 byte values, NULs, exact on both streams
#   stdin          spawn + process.write + closeStdin (100 KiB, EOF seen); exec stdin/stdinBase64
#   env            env.pass and env.set arrive, nothing else of the caller's
#   cwd            the caller in a workspace subdirectory: pwd is the mount point + that path, and
#                  what is there is the host's (a host change seen) or, transfer, the lease's copy
#                  (a host change after the acquisition unseen)
#   timeout        wallSeconds 1 ends the whole marked tree, reason "timeout", nothing left
#   cancel         process.signal (kill) ends the whole marked tree, reason "killed"
#   read-only      enforced (writes fail, host unchanged) or refused naming
#                  filesystem.workspace.access, as claims.readOnlyWorkspace says (transfer: at the
#                  acquisition); one-shot, lease, a lease's default access, cordon run
#   read-write     direct/bind: changes on the host at the one-shot's exit, and at once in a lease;
#                  transfer: not on the host before sandbox.release, then applied, and the
#                  release's workspace report (items, counts) says what changed
#   one-shot       transfer: a one-shot process.exec and process.spawn are refused naming
#                  params.sandbox, and nothing runs (n/a for other attachments)
#   cli-run        cordon run (transfer: in a lease of its own): its output, exit status, and its
#                  change on the host when it returns
#   leases         a failing setup hook fails sandbox.acquire; a good one and two processes share
#                  the workspace state, on the host at once or (transfer) only after the release;
#                  release kills what is left
#   narrowing      narrower patch and nested sandbox run; widenings refused naming the field
#   activation     a new instance of the same backend activated while spawns go on: none lost
#   lease-pinning  a lease stays on the instance it was acquired on across an activation
#
# Output: one TAP line per backend and check (numbered from $CONFORMANCE_TAP_BASE + 1, no plan:
# run.sh prints it), then the table backend x check as TAP comments, each FAIL and n/a with its
# reason below it. Exit status 0 when nothing failed.
import base64
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "helpers"))
from ctl import CORDON, SOCK, STATE, start_controller  # noqa: E402
from rpc import Conn  # noqa: E402

OK, FAIL, NA = "ok", "FAIL", "n/a"
PATH_ENV = "PATH=/usr/local/bin:/usr/bin:/bin"
# The capture cap of the default policy (limits.maxOutputBytes), per stream.
CAP = 4 * 1024 * 1024
# What builtin:host (isolation "none") cannot enforce: optional in its policy, as a host policy
# must be (tests/integration/backend-host.sh).
UNCONFINED_OPTIONAL = ["landlock", "landlock.net", "landlock.scope", "seccomp", "limits.pids",
                       "limits.memoryBytes"]
# Per backend: the settings change the activation check makes (an activation of a new instance
# of the same backend while spawns go on), and what puts the settings back afterwards. A
# backend without an entry is activated again with its stored settings (a new instance too).
ACTIVATION_SETTINGS = {
    "pack:org.cordon.test:test": ({"prepareDelayMs": 700}, {"prepareDelayMs": None}),
}


class CheckFailed(Exception):
    pass


class NotApplicable(Exception):
    pass


def need(cond, why):
    if not cond:
        raise CheckFailed(why)


def log_tail(n=12):
    """The controller log's last n lines (what a check that got no answer shows)."""
    try:
        with open(os.path.join(STATE, "controller.log"), errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError as e:
        return "(no controller log: %s)\n" % e


def call(c, method, params, timeout=30):
    """c.call, a missing answer a CheckFailed naming the method, with the controller's log."""
    try:
        return c.call(method, params, timeout=timeout)
    except OSError as e:
        raise CheckFailed("no answer to %s within %d s (%s); controller.log, last lines:\n%s"
                          % (method, timeout, e, log_tail()))


def short(obj, n=600):
    s = obj if isinstance(obj, str) else json.dumps(obj, default=repr)
    return s if len(s) <= n else s[:n] + "…"


def err_field(r):
    return ((r or {}).get("error") or {}).get("data", {}).get("field")


def err_code(r):
    return ((r or {}).get("error") or {}).get("code")


def res(r, what):
    """The result of an answer; a CheckFailed naming what when it is an error or missing."""
    if r is None:
        raise CheckFailed("%s: no answer (the controller closed the connection)" % what)
    if "result" not in r:
        raise CheckFailed("%s failed: %s" % (what, short(r.get("error"))))
    return r["result"]


def out_bytes(result, stream):
    if stream + "Base64" in result:
        return base64.b64decode(result[stream + "Base64"])
    return (result.get(stream) or "").encode()


def marker():
    """A sleep duration unique to one check: every process of a marked command has it in its
    command line (the shells through the script's text, the sleeps as their argument)."""
    return "3%03d.%06d" % (random.randrange(600, 999), random.randrange(10 ** 6))


def marked_pids(m):
    """Live processes on the host (zombies excluded) whose command line has m."""
    out = []
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read()
            with open("/proc/%s/stat" % d) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if m.encode() in cmd and state != "Z":
            out.append(int(d))
    return sorted(out)


def wait_marked_gone(m, seconds=5.0):
    """The marked processes still alive after up to seconds (the kernel may take a moment to
    tear a killed tree down after its exit was reported)."""
    deadline = time.time() + seconds
    left = marked_pids(m)
    while left and time.time() < deadline:
        time.sleep(0.05)
        left = marked_pids(m)
    return left


def wait_marked_seen(m, at_least, seconds=10.0):
    deadline = time.time() + seconds
    seen = marked_pids(m)
    while len(seen) < at_least and time.time() < deadline:
        time.sleep(0.05)
        seen = marked_pids(m)
    return seen


def tree_script(m):
    """A command that leaves a tree behind: a subshell with two sleeps, a sleep of its own, all
    marked; "ready" once they are started. Five marked processes while it runs."""
    return "(sleep %s & sleep %s; :) & sleep %s & echo ready; wait" % (m, m, m)


class Backend:
    def __init__(self, suite, ref, entry):
        self.suite = suite
        self.ref = ref
        self.entry = entry
        d = entry.get("descriptor") or {}
        self.claims = d.get("claims") or {}
        self.workspace = self.claims.get("workspace", "direct")
        self.ro_claim = bool(self.claims.get("readOnlyWorkspace", False))
        self.unconfined = self.claims.get("isolation") == "none"
        self.transfer = self.workspace == "transfer"
        self.leases = []  # the leases a check took for its one-shot commands (lease_for)
        self.refused = None
        self.policy = {"version": 1}
        if self.unconfined:
            self.policy.update(hostExecution=True, optional=list(UNCONFINED_OPTIONAL))
        slug = re.sub(r"[^A-Za-z0-9]+", "-", ref).strip("-")
        self.base = os.path.join(suite.work, slug)
        shutil.rmtree(self.base, ignore_errors=True)
        os.makedirs(self.base)
        self.policy_file = os.path.join(self.base, "policy.json")
        with open(self.policy_file, "w") as f:
            json.dump(self.policy, f)

    def ws(self, name):
        """A fresh workspace directory for one check (its real path)."""
        d = os.path.join(self.base, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        return os.path.realpath(d)

    def params(self, argv, ws=None, cwd=None, patch=None, env=None, **kw):
        """process.exec/spawn params: the backend's policy, the workspace ws (else the backend's
        base directory) as the caller's directory, cwd "/" when no workspace is involved."""
        p = {"argv": argv, "env": [PATH_ENV] + (env or []),
             "callerCwd": ws or self.base, "policy": self.policy}
        wpatch = {"filesystem": {"workspace": {"path": ws or self.base}}}
        if patch:
            wpatch = merge(wpatch, patch)
        p["policyPatch"] = wpatch
        if cwd is not None:
            p["cwd"] = cwd
        elif ws is None:
            p["cwd"] = "/"
        p.update(kw)
        return p

    def sh(self, script, *args, **kw):
        return self.params(["/bin/sh", "-c", script, "sh"] + list(args), **kw)

    # A check's "one-shot" commands go through these. On a transfer backend the core refuses a
    # one-shot run (its changes would be lost; check_one_shot checks that): the command runs in
    # a lease of its own instead, acquired with the same policy (read-write unless the patch says
    # otherwise), the process started with "sandbox": ID and no policy of its own.
    def lease_for(self, c, p):
        """(answer, process params): the acquisition's answer (an error ends there) and p for
        that lease; (None, p) when the backend runs one-shots."""
        if not self.transfer:
            return None, p
        patch = merge({"filesystem": {"workspace": {"access": "read-write"}}}, p.get("policyPatch") or {})
        a = call(c, "sandbox.acquire", {"policy": p["policy"], "policyPatch": patch,
                                       "callerCwd": p["callerCwd"], "env": p["env"]}, timeout=60)
        if "result" not in (a or {}):
            return a, None
        self.leases.append(a["result"]["sandboxId"])
        q = {k: v for k, v in p.items() if k != "policy"}
        q["sandbox"] = a["result"]["sandboxId"]
        return a, q

    def exec(self, c, p, timeout=30):
        """process.exec's answer (on a transfer backend: in a lease, released before this
        returns; an acquisition's error is the answer)."""
        a, q = self.lease_for(c, p)
        if q is None:
            return a
        r = call(c, "process.exec", q, timeout=timeout)
        if a is not None:
            self.release(c, q["sandbox"])
        return r

    def spawn(self, c, p):
        """process.spawn's answer (on a transfer backend: in a lease, released at the check's
        end, by then the process has ended or is killed by the release)."""
        a, q = self.lease_for(c, p)
        return call(c, "process.spawn", q) if q is not None else a

    def request_exec(self, c, p):
        """process.exec sent, not waited for: its request id (None when the acquisition failed:
        then self.refused has the answer)."""
        a, q = self.lease_for(c, p)
        if q is None:
            self.refused = a
            return None
        return c.request("process.exec", q)

    def release(self, c, sid):
        """sandbox.release of a lease this suite took for a one-shot: its answer; a failure
        fails the check."""
        self.leases.remove(sid)
        return res(call(c, "sandbox.release", {"sandboxId": sid}, timeout=60), "sandbox.release of the lease "
                   "the command ran in")


def merge(a, b):
    out = dict(a)
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def collect(conn, pid, seconds=30):
    """Output and exit of a spawned process from conn's notifications: (stdout, stderr, exit)."""
    out = {"stdout": b"", "stderr": b""}
    deadline = time.time() + seconds
    pending = conn.notes
    conn.notes = []
    while True:
        while pending:
            m = pending.pop(0)
            p = m.get("params") or {}
            if p.get("processId") != pid:
                continue
            if m.get("method") == "process.output":
                out[p["stream"]] = out.get(p["stream"], b"") + base64.b64decode(p["data"])
            elif m.get("method") == "process.exit":
                return out["stdout"], out["stderr"], p
        left = deadline - time.time()
        if left <= 0:
            return out["stdout"], out["stderr"], None
        try:
            m = conn.read_msg(timeout=left)
        except OSError:
            return out["stdout"], out["stderr"], None
        if m is None:
            return out["stdout"], out["stderr"], None
        pending.append(m)


def wait_output(conn, pid, want, seconds=10):
    """Read conn's notifications until pid's stdout has want; the notifications stay queued."""
    deadline = time.time() + seconds
    got = b""
    seen = []
    while time.time() < deadline:
        for m in conn.notes[len(seen):]:
            seen.append(m)
            p = m.get("params") or {}
            if m.get("method") == "process.output" and p.get("processId") == pid:
                got += base64.b64decode(p["data"])
            if m.get("method") == "process.exit" and p.get("processId") == pid:
                return False
        if want in got:
            return True
        try:
            m = conn.read_msg(timeout=max(0.01, deadline - time.time()))
        except OSError:
            return False
        if m is None:
            return False
        conn.notes.append(m)
    return False


# --------------------------------------------------------------------------------- the checks
def check_exit_codes(b, c):
    for code in (0, 1, 42):
        r = res(b.exec(c, b.sh("exit %d" % code)), "exit %d" % code)
        need(r.get("exitCode") == code and r.get("reason") == "exited" and not r.get("signal"),
             "exit %d came back as %s" % (code, short({k: r.get(k) for k in ("exitCode", "signal", "reason")})))
    return "0, 1, 42"


def check_signal(b, c):
    r = res(b.exec(c, b.sh("kill -TERM $$")), "kill -TERM $$")
    need(r.get("signal") == 15 and r.get("reason") == "signaled",
         "death by SIGTERM came back as %s" % short({k: r.get(k) for k in ("exitCode", "signal", "reason")}))
    p = b.suite.cli(b, "exec", "--cwd", "/", "--", "/bin/sh", "-c", "kill -USR1 $$")
    need(p.returncode == 128 + 10, "cordon exec of a command killed by SIGUSR1 exited %d, not 138 (%s)"
         % (p.returncode, short(p.stderr.decode(errors="replace"))))
    return "signal 15 reported; cordon exec 138 for SIGUSR1"


def check_signal_state(b, c):
    """The command starts with no signal blocked or ignored (whatever the controller, launcher or
    backend process blocks or ignores for itself): a pipeline's writer dies of SIGPIPE, a
    SIGTERM ends it."""
    # grep itself (a shell would change its children's mask).
    r = res(b.exec(c, b.params(["grep", "-E", "^Sig(Blk|Ign):", "/proc/self/status"])),
            "signal state")
    got = dict(l.split(":\t", 1) for l in out_bytes(r, "stdout").decode(errors="replace").splitlines()
               if ":\t" in l)
    # Signals 32 and 33 are the C library's own (thread cancellation, set*id broadcast): it sets
    # their handlers itself, whatever was inherited; anything else must be at its default.
    glibc = (1 << 31) | (1 << 32)
    bad = {k: v for k, v in got.items() if int(v, 16) & ~glibc}
    need(len(got) == 2, "no SigBlk/SigIgn in the command's /proc/self/status: %s" % short(r))
    need(not bad, "the command starts with signals %s" % ", ".join(
        "%s %s" % ("blocked" if k == "SigBlk" else "ignored", sig_names(int(v, 16) & ~glibc))
        for k, v in bad.items()))
    return "none blocked or ignored"


def sig_names(mask):
    out = []
    for n in range(1, 65):
        if mask & (1 << (n - 1)):
            try:
                out.append(signal.Signals(n).name)
            except ValueError:
                out.append(str(n))
    return "+".join(out)


def check_stdio_separate(b, c):
    n = 300
    script = ('i=0; while [ $i -lt %d ]; do i=$((i+1)); echo "out $i"; echo "err $i" >&2; '
              'done' % n)
    r = res(b.exec(c, b.sh(script)), "interleaved writes")
    want_out = "".join("out %d\n" % i for i in range(1, n + 1)).encode()
    want_err = "".join("err %d\n" % i for i in range(1, n + 1)).encode()
    got_out, got_err = out_bytes(r, "stdout"), out_bytes(r, "stderr")
    need(got_out == want_out, "stdout differs (%d bytes, starts %r)" % (len(got_out), got_out[:80]))
    need(got_err == want_err, "stderr differs (%d bytes, starts %r)" % (len(got_err), got_err[:80]))
    # The same through a spawn's process.output notifications.
    sp = res(b.spawn(c, b.sh(script, stdio={"stdin": "null", "stdout": "pipe",
                                            "stderr": "pipe"})), "process.spawn")
    o, e, ex = collect(c, sp["processId"])
    need(ex is not None, "the spawned writer's exit was not reported")
    need(o == want_out and e == want_err,
         "spawned: stdout %d/%d bytes, stderr %d/%d bytes as expected" %
         (len(o), len(want_out), len(e), len(want_err)))
    return "%d lines each, exec and spawn" % n


def check_output_cap(b, c):
    big = CAP + 1024 * 1024
    for loud, quiet in (("stdout", "stderr"), ("stderr", "stdout")):
        redir = "" if loud == "stdout" else " >&2"
        qredir = " >&2" if loud == "stdout" else ""
        script = "head -c %d /dev/zero | tr '\\0' a%s; echo quiet%s" % (big, redir, qredir)
        r = res(b.exec(c, b.sh(script), timeout=60), "%s of %d bytes" % (loud, big))
        got = out_bytes(r, loud)
        need(r.get("exitCode") == 0, "the writer exited %s" % r.get("exitCode"))
        need(r.get(loud + "Truncated") is True, "%sTruncated is %r" % (loud, r.get(loud + "Truncated")))
        need(len(got) == CAP and got == b"a" * CAP,
             "%s captured %d bytes, not the cap %d" % (loud, len(got), CAP))
        need(r.get(loud + "Bytes") == big, "%sBytes is %r, not %d" % (loud, r.get(loud + "Bytes"), big))
        need(r.get(quiet + "Truncated") is False and out_bytes(r, quiet) == b"quiet\n",
             "the other stream (%s) was %r, truncated %r" % (quiet, out_bytes(r, quiet)[:40], r.get(quiet + "Truncated")))
        need(r.get("maxOutputBytes") == CAP, "maxOutputBytes is %r" % r.get("maxOutputBytes"))
    return "cap %d per stream, flag and byte count" % CAP


ALL_BYTES = bytes(range(256))


def check_binary(b, c):
    fmt = "".join("\\%03o" % i for i in range(256))
    r = res(b.exec(c, b.sh('printf "$1$1$1"; printf "$1" >&2', fmt)), "binary output")
    got_out, got_err = out_bytes(r, "stdout"), out_bytes(r, "stderr")
    need(got_out == ALL_BYTES * 3, "stdout: %d bytes, not the 768 written (first difference at %s)"
         % (len(got_out), first_diff(got_out, ALL_BYTES * 3)))
    need(got_err == ALL_BYTES, "stderr: %d bytes, not the 256 written (first difference at %s)"
         % (len(got_err), first_diff(got_err, ALL_BYTES)))
    return "256 byte values, NULs"


def first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def check_stdin(b, c):
    data = ALL_BYTES * 400  # 100 KiB: more than a pipe takes at once
    sp = res(b.spawn(c, b.sh("cat; echo EOF-seen",
                             stdio={"stdin": "pipe", "stdout": "pipe", "stderr": "pipe"})),
             "process.spawn with a stdin pipe")
    pid = sp["processId"]
    half = len(data) // 2
    for chunk in (data[:half], data[half:]):
        res(c.call("process.write", {"processId": pid, "data": base64.b64encode(chunk).decode()}),
            "process.write")
    res(c.call("process.closeStdin", {"processId": pid}), "process.closeStdin")
    o, e, ex = collect(c, pid)
    need(ex is not None, "no exit after closeStdin (EOF not seen?); %d bytes out" % len(o))
    need(o == data + b"EOF-seen\n", "spawn: %d bytes came back of %d (+ the EOF line), first difference at %d"
         % (len(o), len(data), first_diff(o, data + b"EOF-seen\n")))
    need(ex.get("exitCode") == 0, "cat exited %s" % short(ex))
    # exec with input: binary, then EOF.
    r = res(b.exec(c, b.sh("cat; echo EOF-seen", stdinBase64=base64.b64encode(data).decode())),
            "process.exec with stdinBase64")
    got = out_bytes(r, "stdout")
    need(got == data + b"EOF-seen\n", "exec stdinBase64: %d bytes back (first difference at %d)"
         % (len(got), first_diff(got, data + b"EOF-seen\n")))
    r = res(b.exec(c, b.sh("cat; echo EOF-seen", stdin="héllo\n")), "process.exec with stdin")
    need(r.get("stdout") == "héllo\nEOF-seen\n", "exec stdin text came back as %r" % r.get("stdout"))
    return "spawn+write+closeStdin (%d bytes), exec stdin/stdinBase64" % len(data)


def check_env(b, c):
    patch = {"env": {"pass": ["CONF_PASSED"], "set": {"CONF_SET": "set-by-policy"}}}
    r = res(b.exec(c, b.sh("env", patch=patch,
                           env=["CONF_PASSED=passed", "CONF_HIDDEN=hidden"])), "env")
    lines = set(out_bytes(r, "stdout").decode(errors="replace").splitlines())
    need("CONF_PASSED=passed" in lines, "a variable env.pass names did not arrive")
    need("CONF_SET=set-by-policy" in lines, "env.set did not arrive")
    need(not any(l.startswith("CONF_HIDDEN=") for l in lines), "a variable the policy does not pass arrived")
    need("PATH=/usr/local/bin:/usr/bin:/bin" in lines, "PATH is not the caller's")
    return "pass, set, the rest withheld"


def mount_point(b, result, host_path, lease=None):
    """Where the command sees the workspace: the mountPoint reported with the process or by the
    lease it ran in, else the host path (a direct backend's, and a lease's usual place)."""
    for src in (result, result.get("workspace"), lease):
        if isinstance(src, dict) and isinstance(src.get("mountPoint"), str):
            return src["mountPoint"]
    if b.workspace in ("direct", "transfer"):
        return host_path
    raise CheckFailed("claims.workspace is %r but no mountPoint is reported with the process"
                      % b.workspace)


def needs_workspace(b):
    if b.workspace == "none":
        raise NotApplicable('claims.workspace is "none"')


def check_cwd(b, c):
    """The caller in a workspace subdirectory: the command's cwd is the mount point + that path,
    and it is the workspace the backend attaches: the host's itself (direct, bind: a change on the
    host before the command is seen), or the lease's copy (transfer: the tree as it was at the
    acquisition, the host's later change unseen)."""
    needs_workspace(b)
    ws = b.ws("cwd")
    sub = os.path.join(ws, "sub", "dir")
    os.makedirs(sub)
    here = os.path.join(sub, "here.txt")
    with open(here, "w") as f:
        f.write("as acquired\n")
    p = b.params(["/bin/sh", "-c", "pwd -P; cat here.txt"], ws=ws)
    p["callerCwd"] = sub
    a, q = b.lease_for(c, p)
    lease = res(a, "sandbox.acquire (the lease the command runs in)") if a is not None else None
    with open(here, "w") as f:
        f.write("changed on the host\n")
    r = res(call(c, "process.exec", q), "pwd in a subdirectory of the workspace")
    mp = mount_point(b, r, ws, lease)
    lines = out_bytes(r, "stdout").decode(errors="replace").splitlines()
    want = [mp.rstrip("/") + "/sub/dir", "as acquired" if b.transfer else "changed on the host"]
    need(lines == want, "pwd and here.txt are %r, not %r (%s)" % (
        lines, want, "the lease's copy" if b.transfer else "the host's workspace"))
    return "pwd %s, %s" % ("= the host path" if mp == ws else "= %s/sub/dir" % mp,
                           "the lease's copy" if b.transfer else "the host's files")


def run_tree(b, c, how):
    """Start the marked tree (how: "timeout" through wallSeconds 1, "kill" through
    process.signal); the exit result, the marked pids seen while it ran, those left after."""
    m = marker()
    if how == "timeout":
        rid = b.request_exec(c, b.sh(tree_script(m), patch={"limits": {"wallSeconds": 1}}))
        seen = wait_marked_seen(m, 5, seconds=5) if rid is not None else []
        t0 = time.time()
        try:
            r = c.wait(rid, timeout=10) if rid is not None else b.refused
            if (err_code(r) == -32001 and err_field(r) == "limits.wallSeconds"
                    and "limits" not in b.claims.get("enforces", [])):
                raise NotApplicable("claims.enforces has no \"limits\": a wall timeout is refused, "
                                    "naming limits.wallSeconds")
            r = res(r, "process.exec with wallSeconds 1")
        except OSError:
            raise CheckFailed("no exit within 10 s of a 1 s wall timeout (%d of the 5 marked processes "
                              "seen, %d alive now)" % (len(seen), len(marked_pids(m))))
        took = time.time() - t0
    else:
        sp = res(b.spawn(c, b.sh(tree_script(m), stdio={"stdin": "null", "stdout": "pipe",
                                                        "stderr": "null"})), "process.spawn")
        pid = sp["processId"]
        if not wait_output(c, pid, b"ready"):
            raise CheckFailed("the tree never said ready")
        seen = wait_marked_seen(m, 5, seconds=5)
        t0 = time.time()
        res(c.call("process.signal", {"processId": pid}), "process.signal")
        r = res(c.call("process.wait", {"processId": pid}), "process.wait")
        took = time.time() - t0
    left = wait_marked_gone(m, 5)
    return r, seen, left, took


def tree_checks(r, seen, left, reason, b=None):
    need(r.get("reason") == reason, "the exit reason is %r, not %r (%s)" %
         (r.get("reason"), reason, short({k: r.get(k) for k in ("exitCode", "signal", "reason")})))
    # A VM's processes are in its own kernel: none are on the host to see or to leave behind
    # (the backend's own tests check that nothing of the VM is left).
    if b is not None and b.claims.get("isolation") == "vm":
        return
    # Without seeing the tree first, "nothing left" would prove nothing.
    need(len(seen) >= 5, "only %d of the 5 marked processes were seen on the host while it ran" % len(seen))
    need(not left, "processes left behind 5 s after the exit was reported: %s" % ", ".join(
        "%d (%s)" % (p, cmdline(p)) for p in left))


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:80]
    except OSError:
        return "gone"


def check_timeout(b, c):
    """A 1 s wall timeout ends the whole tree, reason "timeout". A backend whose claims.enforces
    lacks "limits" may instead have the policy refused (n/a); running past it is a failure."""
    r, seen, left, took = run_tree(b, c, "timeout")
    tree_checks(r, seen, left, "timeout", b)
    need(r.get("durationUsec", 0) < 10 * 10 ** 6, "it took %.1f s" % (r.get("durationUsec", 0) / 1e6))
    return "reason timeout after %.1f s, %d processes gone" % (r.get("durationUsec", 0) / 1e6, len(seen))


def check_cancel(b, c):
    r, seen, left, took = run_tree(b, c, "kill")
    tree_checks(r, seen, left, "killed", b)
    return "reason killed, %d processes gone" % len(seen)


def ro_patch(ws):
    return {"filesystem": {"workspace": {"path": ws, "access": "read-only"}}}


def check_read_only(b, c):
    needs_workspace(b)
    ws = b.ws("ro")
    with open(os.path.join(ws, "keep.txt"), "w") as f:
        f.write("original\n")
    # "ran A B": the exit statuses of the two writes (both must fail when enforced).
    script = ("echo changed 2>/dev/null >keep.txt; a=$?; echo new 2>/dev/null >new.txt; "
              "echo \"ran $a $?\" >&2")

    def unchanged(where):
        with open(os.path.join(ws, "keep.txt")) as f:
            need(f.read() == "original\n", "%s: the host file was changed" % where)
        need(not os.path.exists(os.path.join(ws, "new.txt")), "%s: a new file appeared on the host" % where)

    def refused(r, where):
        need(r is not None and err_code(r) == -32001 and err_field(r) == "filesystem.workspace.access",
             "%s: claims.readOnlyWorkspace is false, so it must be refused (policy-refused naming "
             "filesystem.workspace.access); got %s" % (where, short(r)))

    def enforced(r, where):
        rr = res(r, where)
        st = re.search(rb"ran (\d+) (\d+)\n$", out_bytes(rr, "stderr"))
        need(st, "%s: the command did not run: %s" % (where, short(rr)))
        need(st.group(1) != b"0" and st.group(2) != b"0",
             "%s: a write succeeded (statuses %s)" % (where, st.group(0).decode().strip()))

    # One-shot (on a transfer backend: the acquisition of the lease it runs in is refused).
    r = b.exec(c, b.sh(script, ws=ws, patch=ro_patch(ws)))
    where = "the lease of a one-shot" if b.transfer else "one-shot"
    (enforced if b.ro_claim else refused)(r, where)
    unchanged(where)
    # An acquired sandbox whose workspace is read-only: the acquisition or the process refused
    # (a transfer backend: the acquisition, before anything is sent).
    a = c.call("sandbox.acquire", {"policy": b.policy, "policyPatch": ro_patch(ws), "callerCwd": ws,
                                   "env": [PATH_ENV]})
    if "result" in (a or {}):
        sid = a["result"]["sandboxId"]
        try:
            need(b.ro_claim or not b.transfer, "a read-only lease was acquired on a transfer backend "
                 "that does not claim readOnlyWorkspace (it must be refused at acquisition): %s" % short(a))
            r = c.call("process.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c", script],
                                        "callerCwd": ws, "env": [PATH_ENV]})
            (enforced if b.ro_claim else refused)(r, "in a read-only lease")
        finally:
            c.call("sandbox.release", {"sandboxId": sid})
    else:
        need(not b.ro_claim, "acquiring a read-only lease failed: %s" % short(a))
        refused(a, "acquiring a read-only lease")
    unchanged("lease")
    # A lease's workspace is read-only by default: the same without an access.
    a = c.call("sandbox.acquire", {"policy": b.policy, "policyPatch": {"filesystem": {"workspace": {"path": ws}}},
                                   "callerCwd": ws, "env": [PATH_ENV]})
    if b.ro_claim:
        c.call("sandbox.release", {"sandboxId": res(a, "acquiring a lease (read-only by default)")["sandboxId"]})
    else:
        refused(a, "acquiring a lease without an access (read-only by default)")
    # The CLI asked for a read-only workspace: a write fails, or exit 120 naming the field.
    cp = b.suite.cli(b, "run", "--workspace-access", "read-only", "--", "/bin/sh", "-c", script, cwd=ws)
    err = cp.stderr.decode(errors="replace")
    if b.ro_claim:
        need(re.search(r"ran [1-9]\d* [1-9]\d*\n$", err), "cordon run --workspace-access read-only: "
             "a write did not fail (exit %d, %s)" % (cp.returncode, short(err)))
    else:
        need(cp.returncode == 120 and "filesystem.workspace.access" in err,
             "cordon run --workspace-access read-only exited %d, not 120 naming filesystem.workspace.access "
             "(%s)" % (cp.returncode, short(err)))
    unchanged("cordon run")
    return ("enforced (claims.readOnlyWorkspace true)" if b.ro_claim
            else "refused naming filesystem.workspace.access (claims.readOnlyWorkspace false)"
            + (" at acquisition" if b.transfer else "") + "; lease default, cordon run")


RW_SCRIPT = "echo new >new.txt && echo changed >keep.txt && rm gone.txt && mkdir -p d/e && echo deep >d/e/f"


def rw_prepare(ws):
    with open(os.path.join(ws, "keep.txt"), "w") as f:
        f.write("original\n")
    with open(os.path.join(ws, "gone.txt"), "w") as f:
        f.write("to be removed\n")


def rw_seen(ws, where):
    def read(p):
        try:
            with open(os.path.join(ws, p)) as f:
                return f.read()
        except OSError:
            return None
    got = {p: read(p) for p in ("new.txt", "keep.txt", "gone.txt", "d/e/f")}
    want = {"new.txt": "new\n", "keep.txt": "changed\n", "gone.txt": None, "d/e/f": "deep\n"}
    need(got == want, "%s: the host has %s, not %s" % (where, short(got), short(want)))


def rw_patch(ws):
    return {"filesystem": {"workspace": {"path": ws, "access": "read-write"}}}


def rw_untouched(ws, where):
    got = sorted(os.listdir(ws))
    with open(os.path.join(ws, "keep.txt")) as f:
        keep = f.read()
    need(got == ["gone.txt", "keep.txt"] and keep == "original\n",
         "%s: the host workspace already changed (%s, keep.txt %r)" % (where, got, keep))


# What sandbox.release reports of RW_SCRIPT's changes (transfer): these items, and counts that
# agree with the items (directories may be reported as added too).
RW_ITEMS = {"new.txt": "added", "keep.txt": "changed", "gone.txt": "deleted", "d/e/f": "added"}


def rw_report(rel):
    w = rel.get("workspace")
    need(isinstance(w, dict), "the release answer has no workspace report: %s" % short(rel))
    items = {i.get("path"): i.get("action") for i in w.get("items") or []}
    need(all(items.get(k) == v for k, v in RW_ITEMS.items()),
         "the release reports %s, not at least %s" % (short(items), short(RW_ITEMS)))
    counts = w.get("counts") or {}
    for action in ("added", "changed", "deleted", "conflict", "refused"):
        n = sum(1 for v in items.values() if v == action)
        need(counts.get(action) == n, "workspace.counts.%s is %r, but %d items say %s (%s)"
             % (action, counts.get(action), n, action, short(counts)))
    need(counts.get("changed") == 1 and counts.get("deleted") == 1 and counts.get("conflict") == 0
         and counts.get("refused") == 0 and counts.get("added", 0) >= 2,
         "workspace.counts %s: not 2+ added, 1 changed, 1 deleted, no conflict or refusal" % short(counts))
    return counts


def check_read_write(b, c):
    """A direct or bind backend: the changes on the host at a one-shot's exit, and at once in a
    lease. A transfer backend: in a lease, the host unchanged until sandbox.release, then the
    changes applied and reported (workspace.counts)."""
    needs_workspace(b)
    if not b.transfer:
        ws = b.ws("rw-oneshot")
        rw_prepare(ws)
        r = res(b.exec(c, b.sh(RW_SCRIPT, ws=ws, patch=rw_patch(ws))), "one-shot write")
        need(r.get("exitCode") == 0, "the writes failed: %s" % short(r))
        rw_seen(ws, "when the one-shot exit was reported")
    ws = b.ws("rw-lease")
    rw_prepare(ws)
    sid = res(c.call("sandbox.acquire", {"policy": b.policy, "policyPatch": rw_patch(ws), "callerCwd": ws,
                                         "env": [PATH_ENV]}), "sandbox.acquire read-write")["sandboxId"]
    try:
        r = res(c.call("process.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c", RW_SCRIPT],
                                        "callerCwd": ws, "env": [PATH_ENV]}), "write in the lease")
        need(r.get("exitCode") == 0, "the writes in the lease failed: %s" % short(r))
        if b.transfer:
            rw_untouched(ws, "before sandbox.release")
        else:
            rw_seen(ws, "in the lease, before its release")
    finally:
        rel = c.call("sandbox.release", {"sandboxId": sid}, timeout=60)
    rel = res(rel, "sandbox.release")
    rw_seen(ws, "after sandbox.release")
    if not b.transfer:
        return "one-shot at exit, lease at once"
    counts = rw_report(rel)
    return "not before release, then applied; counts %s" % ", ".join(
        "%s %d" % (k, v) for k, v in sorted(counts.items()) if v)


def check_one_shot(b, c):
    """A transfer backend refuses a one-shot process.exec and process.spawn (its changes would be
    lost), naming params.sandbox; nothing runs."""
    if not b.transfer:
        raise NotApplicable('claims.workspace is "%s": one-shot runs see the workspace' % b.workspace)
    ws = b.ws("one-shot")
    for method in ("process.exec", "process.spawn"):
        r = c.call(method, b.sh("echo ran >ran.txt", ws=ws, patch=rw_patch(ws)))
        need(err_code(r) == -32001 and err_field(r) == "params.sandbox",
             "a one-shot %s was not refused (policy-refused naming params.sandbox): %s" % (method, short(r)))
    time.sleep(0.2)
    need(os.listdir(ws) == [], "a refused one-shot ran: the workspace has %s" % os.listdir(ws))
    return "process.exec and process.spawn refused naming params.sandbox"


def check_cli_run(b, c):
    """cordon run (read-write by default; on a transfer backend in a lease of its own): its output,
    exit status, and its change on the host when it returns."""
    needs_workspace(b)
    ws = b.ws("cli-run")
    with open(os.path.join(ws, "keep.txt"), "w") as f:
        f.write("original\n")
    cp = b.suite.cli(b, "run", "--", "/bin/sh", "-c", "cat keep.txt; echo via-run >run.txt; exit 7", cwd=ws)
    out = cp.stdout.decode(errors="replace")
    need(cp.returncode == 7 and out == "original\n",
         "cordon run exited %d with %r, not 7 with the workspace's file (%s)"
         % (cp.returncode, out, short(cp.stderr.decode(errors="replace"))))
    try:
        with open(os.path.join(ws, "run.txt")) as f:
            got = f.read()
    except OSError as e:
        got = "(%s)" % e.strerror
    need(got == "via-run\n", "run.txt on the host when cordon run returned: %r" % got)
    return "exit 7, output, change on the host" + (" (a lease of its own)" if b.transfer else "")


def check_leases(b, c):
    ws = b.ws("lease") if b.workspace != "none" else b.base
    acq = {"policy": b.policy, "policyPatch": rw_patch(ws), "callerCwd": ws, "env": [PATH_ENV]}
    # A failing setup hook fails the acquisition, and leaves no sandbox.
    before = res(c.call("sandbox.list", {}), "sandbox.list")["sandboxes"]
    r = c.call("sandbox.acquire", dict(acq, setup={"argv": ["/bin/sh", "-c", "echo no >&2; exit 3"]}))
    need(err_code(r) == -32002, "a setup hook exiting 3 did not fail the acquisition: %s" % short(r))
    need((r["error"].get("data") or {}).get("exitCode") == 3,
         "the failure does not carry the hook's exitCode 3: %s" % short(r))
    after = res(c.call("sandbox.list", {}), "sandbox.list")["sandboxes"]
    need(len(after) == len(before), "a sandbox is left after the failed acquisition: %s" % short(after))
    # A succeeding one: two processes share the workspace state (the hook's too).
    sid = res(c.call("sandbox.acquire", dict(acq, setup={"argv": ["/bin/sh", "-c", "echo setup >setup.txt"]})),
              "sandbox.acquire with a setup hook that succeeds")["sandboxId"]
    m = marker()
    try:
        if b.workspace != "none":
            r1 = res(c.call("process.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c", "echo first >shared.txt"],
                                             "callerCwd": ws, "env": [PATH_ENV]}), "first process")
            need(r1.get("exitCode") == 0, "the first process failed: %s" % short(r1))
            r2 = res(c.call("process.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c", "cat setup.txt shared.txt"],
                                             "callerCwd": ws, "env": [PATH_ENV]}), "second process")
            need(out_bytes(r2, "stdout") == b"setup\nfirst\n",
                 "the second process saw %r, not the hook's and the first's files" % out_bytes(r2, "stdout"))
            # On the host: at once (the workspace itself), or only after the release (transfer).
            on_host = os.path.exists(os.path.join(ws, "shared.txt"))
            need(on_host != b.transfer, "shared.txt is %s on the host while the lease runs (claims.workspace %r)"
                 % ("already" if on_host else "not", b.workspace))
        # What is left at release is killed.
        sp = res(c.call("process.spawn", {"sandbox": sid, "argv": ["/bin/sh", "-c", tree_script(m)],
                                          "callerCwd": ws, "env": [PATH_ENV],
                                          "stdio": {"stdin": "null", "stdout": "pipe", "stderr": "null"}}),
                 "a process left in the lease")
        need(wait_output(c, sp["processId"], b"ready"), "the tree in the lease never said ready")
        seen = wait_marked_seen(m, 5, seconds=5) if b.claims.get("isolation") != "vm" else []
    finally:
        rel = c.call("sandbox.release", {"sandboxId": sid})
    res(rel, "sandbox.release")
    if b.workspace != "none":
        got = {}
        for n in ("setup.txt", "shared.txt"):
            try:
                with open(os.path.join(ws, n)) as f:
                    got[n] = f.read()
            except OSError:
                got[n] = None
        need(got == {"setup.txt": "setup\n", "shared.txt": "first\n"},
             "after the release the host workspace has %s, not the hook's and the first process's files"
             % short(got))
    w = res(c.call("process.wait", {"processId": sp["processId"]}, timeout=15), "process.wait after release")
    left = wait_marked_gone(m, 5)
    # A VM's processes are in its own kernel: none are on the host to see or to leave behind
    # (the backend's own tests check that nothing of the VM is left).
    if b.claims.get("isolation") != "vm":
        need(len(seen) >= 5, "only %d of the 5 marked processes were seen on the host" % len(seen))
        need(not left, "release left processes: %s" % ", ".join("%d (%s)" % (p, cmdline(p)) for p in left))
    need(w.get("reason") == "killed" or w.get("signal") == 9,
         "the left process ended as %s" % short({k: w.get(k) for k in ("exitCode", "signal", "reason")}))
    lst = res(c.call("sandbox.list", {}), "sandbox.list")["sandboxes"]
    need(all(s.get("sandboxId", s.get("id")) != sid for s in lst), "the released sandbox is still listed")
    return "failing hook refused; shared state; release killed %d" % len(seen)


def check_narrowing(b, c):
    ws = b.ws("narrow") if b.workspace != "none" else b.base
    parent = merge(rw_patch(ws), {"limits": {"wallSeconds": 60}})
    sid = res(c.call("sandbox.acquire", {"policy": b.policy, "policyPatch": parent, "callerCwd": ws,
                                         "env": [PATH_ENV]}), "sandbox.acquire (parent)")["sandboxId"]
    try:
        narrow = {"limits": {"wallSeconds": 30}}
        r = res(c.call("process.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c", "echo narrow"], "cwd": "/",
                                        "callerCwd": ws, "env": [PATH_ENV], "policyPatch": narrow}),
                "a process with a narrowing patch")
        need(out_bytes(r, "stdout") == b"narrow\n", "it did not run: %s" % short(r))
        r = c.call("process.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c", "echo wide"], "cwd": "/",
                                    "callerCwd": ws, "env": [PATH_ENV],
                                    "policyPatch": {"network": {"mode": "host"}}})
        need(err_code(r) == -32001 and err_field(r) == "network.mode",
             "a widening patch (network host) was not refused naming network.mode: %s" % short(r))
        child = res(c.call("sandbox.acquire", {"parent": sid, "policyPatch": narrow, "callerCwd": ws,
                                               "env": [PATH_ENV]}), "a nested narrower sandbox")["sandboxId"]
        r = res(c.call("process.exec", {"sandbox": child, "argv": ["/bin/sh", "-c", "echo nested"], "cwd": "/",
                                        "callerCwd": ws, "env": [PATH_ENV]}), "a process in the nested sandbox")
        need(out_bytes(r, "stdout") == b"nested\n", "it did not run: %s" % short(r))
        r = c.call("sandbox.acquire", {"parent": sid, "policyPatch": {"limits": {"wallSeconds": 120}},
                                       "callerCwd": ws, "env": [PATH_ENV]})
        need(err_code(r) == -32001 and err_field(r) == "limits.wallSeconds",
             "a nested widening (wallSeconds 120 under 60) was not refused naming limits.wallSeconds: %s"
             % short(r))
    finally:
        c.call("sandbox.release", {"sandboxId": sid})
    return "narrower runs (patch, nested); widenings refused, field named"


def check_activation(b, c):
    """A spawn while another instance of the same backend is being activated: neither is lost."""
    change, undo = ACTIVATION_SETTINGS.get(b.ref, (None, None))
    _, first = b.suite.active(c)
    # A long process on the current instance.
    sp = res(b.spawn(c, b.sh("sleep 1; echo before", stdio={"stdin": "null", "stdout": "pipe",
                                                            "stderr": "pipe"})), "spawn before")
    act = Conn(SOCK)
    try:
        p = {"backend": b.ref}
        if change:
            p["settings"] = change
        rid = act.request("backend.activate", p)
        time.sleep(0.1)
        # Spawns while the activation runs.
        during = [b.exec(c, b.sh("echo during %d" % i)) for i in range(3)]
        a = act.wait(rid, timeout=60)
    finally:
        act.close()
    ar = res(a, "backend.activate of a new instance")
    o, e, ex = collect(c, sp["processId"])
    need(ex is not None and ex.get("exitCode") == 0 and o == b"before\n",
         "the process started before the activation was lost: %s, %r" % (short(ex), o))
    for i, r in enumerate(during):
        rr = res(r, "exec %d during the activation" % i)
        need(rr.get("exitCode") == 0 and out_bytes(rr, "stdout") == b"during %d\n" % i,
             "exec %d during the activation: %s" % (i, short(rr)))
    r = res(b.exec(c, b.sh("echo after")), "exec after the activation")
    need(out_bytes(r, "stdout") == b"after\n", "exec after the activation: %s" % short(r))
    need(ar.get("launcher") != first, "the activation did not make a new instance (%s)" % ar.get("launcher"))
    need(r.get("launcher") == ar.get("launcher"),
         "the exec after it was served by %s, not the new instance %s" % (r.get("launcher"), ar.get("launcher")))
    if undo:
        res(c.call("backend.activate", {"backend": b.ref, "settings": undo}), "activation with the settings back")
    return "%s -> %s, 5 processes complete" % (first, ar.get("launcher"))


def check_lease_pinning(b, c):
    """A lease stays on the instance that was active when it was acquired: processes started in
    it after another activation still run there; a one-shot spawn goes to the new instance."""
    change, undo = ACTIVATION_SETTINGS.get(b.ref, (None, None))
    ws = b.ws("pin") if b.workspace != "none" else b.base
    sid = res(c.call("sandbox.acquire", {"policy": b.policy, "policyPatch": rw_patch(ws), "callerCwd": ws,
                                         "env": [PATH_ENV]}), "sandbox.acquire")["sandboxId"]
    try:
        r = res(c.call("process.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c", "echo one >pin.txt"],
                                        "callerCwd": ws, "env": [PATH_ENV]}), "exec in the lease")
        first = r.get("launcher")
        p = {"backend": b.ref}
        if change:
            p["settings"] = change
        ar = res(c.call("backend.activate", p, timeout=60), "backend.activate of a new instance")
        need(ar.get("launcher") != first, "the activation did not make a new instance (%s)" % ar.get("launcher"))
        r = res(c.call("process.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c", "cat pin.txt"],
                                        "callerCwd": ws, "env": [PATH_ENV]}), "exec in the lease after it")
        need(r.get("launcher") == first,
             "a process in the lease ran on %s, not on the instance it was acquired on (%s)"
             % (r.get("launcher"), first))
        need(out_bytes(r, "stdout") == b"one\n", "the lease's workspace state was lost: %s" % short(r))
        r = res(b.exec(c, b.sh("true")), "one-shot exec after the activation")
        need(r.get("launcher") == ar.get("launcher"),
             "a one-shot exec ran on %s, not the new instance %s" % (r.get("launcher"), ar.get("launcher")))
    finally:
        c.call("sandbox.release", {"sandboxId": sid})
        if undo:
            c.call("backend.activate", {"backend": b.ref, "settings": undo}, timeout=60)
    return "the lease stayed on %s" % first


CHECKS = [
    ("exit-codes", check_exit_codes),
    ("signal", check_signal),
    ("signal-state", check_signal_state),
    ("stdio", check_stdio_separate),
    ("output-cap", check_output_cap),
    ("binary", check_binary),
    ("stdin", check_stdin),
    ("env", check_env),
    ("cwd", check_cwd),
    ("timeout", check_timeout),
    ("cancel", check_cancel),
    ("read-only", check_read_only),
    ("read-write", check_read_write),
    ("one-shot", check_one_shot),
    ("cli-run", check_cli_run),
    ("leases", check_leases),
    ("narrowing", check_narrowing),
    ("activation", check_activation),
    ("lease-pinning", check_lease_pinning),
]


class Suite:
    def __init__(self, label, refs):
        self.label = label
        self.refs = refs
        self.work = os.environ["CONFORMANCE_WORK"]
        self.n = int(os.environ.get("CONFORMANCE_TAP_BASE", "0"))
        self.failed = 0
        self.rows = {}  # ref -> [(check, status, detail)]
        self.only = set(filter(None, os.environ.get("CONFORMANCE_CHECKS", "").split(",")))

    def tap(self, status, ref, check, detail):
        self.n += 1
        desc = "%s: %s %s" % (self.label, ref, check)
        if status == OK:
            print("ok %d - %s (%s)" % (self.n, desc, detail), flush=True)
        elif status == NA:
            print("ok %d - %s # SKIP n/a: %s" % (self.n, desc, detail), flush=True)
        else:
            self.failed += 1
            print("not ok %d - %s" % (self.n, desc), flush=True)
            for line in str(detail).splitlines():
                print("#   %s" % line, flush=True)
        self.rows.setdefault(ref, []).append((check, status, detail))

    def cli(self, b, *args, cwd=None):
        """cordon ARGS with the backend's policy file inserted after the subcommand, in cwd (the
        backend's base directory by default: the workspace of cordon run and exec)."""
        args = list(args)
        args[1:1] = ["--policy", b.policy_file]
        return subprocess.run([CORDON] + args, capture_output=True, timeout=60, cwd=cwd or b.base)

    def active(self, c):
        r = c.call("backend.list", {}, timeout=60)["result"]
        launchers = [x.get("launcher") for x in r["backends"] if x["active"]]
        return r.get("active"), launchers[0] if launchers else None

    def run_ref(self, c, ref):
        lst = c.call("backend.list", {}, timeout=60)
        entries = {e["ref"]: e for e in (lst.get("result") or {}).get("backends", [])}
        why = None
        if ref not in entries:
            why = "not in backend.list (%s)" % ", ".join(sorted(entries))
        else:
            r = c.call("backend.activate", {"backend": ref}, timeout=120)
            if "result" not in (r or {}):
                why = "backend.activate failed: %s" % short((r or {}).get("error"))
        if why:
            for name, _ in CHECKS:
                if not self.only or name in self.only:
                    self.tap(FAIL, ref, name, why)
            return
        b = Backend(self, ref, entries[ref])
        print("# %s: %s claims %s" % (self.label, ref, json.dumps(b.claims, sort_keys=True)), flush=True)
        for name, fn in CHECKS:
            if self.only and name not in self.only:
                continue
            t0 = time.time()
            conn = Conn(SOCK)
            try:
                try:
                    detail = fn(b, conn)
                finally:
                    leases, b.leases = b.leases, []
                # The leases the check's one-shot commands ran in (transfer): released, and a
                # release that fails fails the check.
                for sid in leases:
                    res(call(conn, "sandbox.release", {"sandboxId": sid}, timeout=60),
                        "sandbox.release of a command's lease")
                status = OK
            except NotApplicable as e:
                status, detail = NA, str(e)
            except CheckFailed as e:
                status, detail = FAIL, str(e)
            except Exception as e:  # a broken check is a failure with its cause, never a pass
                status, detail = FAIL, "%s: %s" % (type(e).__name__, e)
                if isinstance(e, OSError):
                    detail += "; controller.log, last lines:\n" + log_tail()
            finally:
                conn.close()
            dt = time.time() - t0
            self.tap(status, ref, name, detail if status != OK else "%s; %.1f s" % (detail, dt))
            # Whatever the check left (it is detached from nothing: its client closed) goes.
        c2 = Conn(SOCK)
        r = c2.call("backend.activate", {"backend": "builtin:auto"}, timeout=120)
        c2.close()
        if "result" not in (r or {}):
            print("# could not go back to builtin:auto: %s" % short(r), flush=True)

    def table(self):
        names = [n for n, _ in CHECKS if not self.only or n in self.only]
        refs = list(self.rows)
        w0 = max([len("backend")] + [len(r) for r in refs])
        widths = [max(len(n), 4) for n in names]
        head = "backend".ljust(w0) + " | " + " | ".join(n.ljust(w) for n, w in zip(names, widths))
        print("# conformance (%s):" % self.label)
        print("# " + head)
        print("# " + "-" * len(head))
        notes = []
        for ref in refs:
            cells = {n: (s, d) for n, s, d in self.rows[ref]}
            line = ref.ljust(w0) + " | " + " | ".join(
                cells.get(n, ("-", ""))[0].ljust(w) for n, w in zip(names, widths))
            print("# " + line)
            for n in names:
                s, d = cells.get(n, ("-", ""))
                if s in (FAIL, NA):
                    notes.append("%s %s %s: %s" % (ref, n, s, d))
        for note in notes:
            print("#   " + short(note, 400).replace("\n", " "))
        sys.stdout.flush()


def main():
    args = sys.argv[1:]
    label = "root" if os.geteuid() == 0 else "user"
    if len(args) >= 2 and args[0] == "--label":
        label, args = args[1], args[2:]
    if not args:
        print("usage: conformance.py [--label LABEL] REF [REF...]", file=sys.stderr)
        return 125
    random.seed()
    s = Suite(label, args)
    try:
        start_controller()
        c = Conn(SOCK)
        for ref in args:
            s.run_ref(c, ref)
        c.close()
        s.table()
    except Exception as e:  # the suite itself broke: one more failure, with its cause
        s.tap(FAIL, "(suite)", "run", "%s: %s" % (type(e).__name__, e))
    finally:
        # run.sh numbers what follows and prints the plan from this count.
        with open(os.environ.get("CONFORMANCE_COUNT_FILE", os.devnull), "w") as f:
            f.write("%d\n" % s.n)
    return 1 if s.failed else 0


if __name__ == "__main__":
    sys.exit(main())
