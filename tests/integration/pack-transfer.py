# A transfer backend through the test pack's "transfer" kind. Run by pack-transfer.sh, which
# assembles the test pack in $PACK_SRC. The commands of a lease work on the pack's copy of the
# workspace, seen at the workspace's own path; the host workspace changes at release, by exactly
# what they changed, except what the host would execute (.git/config).
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
REF = "pack:%s:transfer" % PACK
PACK_STATE = os.path.join(STATE, "pack-state", PACK)
CORDON = os.path.join(os.environ["top_builddir"], "cordon")
RW = {"filesystem": {"workspace": {"access": "read-write"}}}
t = Tap()


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


def tree():
    out = {}
    for root, dirs, files in os.walk(WORK):
        for n in files:
            p = os.path.join(root, n)
            with open(p) as f:
                out[os.path.relpath(p, WORK)] = f.read()
    return out


def run(c, sid, script, timeout=60):
    r = c.call("process.exec", {"sandbox": sid, "callerCwd": WORK, "cwd": WORK,
                                "env": ["PATH=/usr/bin:/bin"], "argv": ["/bin/sh", "-c", script]},
               timeout=timeout)
    return r.get("result", {}), r


write("keep.txt", "kept\n")
write("change.txt", "before\n")
write("delete.txt", "doomed\n")
write("sub/deep.txt", "deep\n")
write(".git/config", "[core]\n\tbare = false\n")
os.makedirs(os.path.join(WORK, ".git", "hooks"), exist_ok=True)
git_config = read(".git/config")

r = subprocess.run([CORDON, "pack", "install", SRC], capture_output=True, text=True, timeout=60)
t.ok(r.returncode == 0, "the test pack installs", r)
c = Conn(SOCK)
r = c.call("backend.activate", {"backend": REF}, timeout=60)
launcher = r.get("result", {}).get("launcher", "")
t.ok(launcher.startswith(REF + "#"), "the transfer backend activates (%s)" % launcher, r)

# Read-only is refused before anything is sent: a transfer backend cannot enforce it.
r = c.call("sandbox.acquire", {"callerCwd": WORK})
e = r.get("error", {})
t.ok(e.get("data", {}).get("field") == "filesystem.workspace.access",
     "a read-only acquire (the default) is refused naming filesystem.workspace.access", r)
r = subprocess.run([CORDON, "sandbox", "acquire"], capture_output=True, text=True, timeout=60, cwd=WORK)
t.ok(r.returncode == 120 and "filesystem.workspace.access" in r.stderr,
     "…and through the CLI, exit 120", r)

r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW}, timeout=120)
sid = r.get("result", {}).get("sandboxId")
t.ok(sid and r["result"].get("launcher") == launcher, "a read-write lease is acquired (%s)" % sid, r)
lease_dir = os.path.join(PACK_STATE, "leases", sid or "-")
t.ok(os.path.isfile(os.path.join(lease_dir, "sub", "deep.txt")),
     "the pack extracted the workspace into its state directory")

res, r = run(c, sid, 'pwd; cat keep.txt change.txt; '
             'echo after > change.txt && echo new > added.txt && rm delete.txt && '
             'mkdir -p newdir && echo n > newdir/n.txt')
t.ok(res.get("exitCode") == 0 and res.get("stdout", "").split() == [WORK, "kept", "before"]
     and res.get("launcher") == launcher,
     "a command of the lease sees the workspace at its own path and changes it", r)
res, r = run(c, sid, 'cat added.txt; test -e delete.txt || echo gone; echo more >> sub/deep.txt; '
             'rm -r newdir; printf "[core]\\n\\thooksPath = /tmp/evil\\n" >> .git/config && echo git-edited')
t.ok(res.get("stdout", "").split() == ["new", "gone", "git-edited"],
     "a second command sees the first one's changes; it edits .git/config in its copy", r)
t.ok(read("change.txt") == "before\n" and read("added.txt") is None and read("delete.txt") == "doomed\n",
     "the host workspace is unchanged while the lease runs")
res, r = run(c, sid, 'ls -d "%s" 2>/dev/null || echo state-unseen' % PACK_STATE)
t.ok(res.get("stdout", "").split() == ["state-unseen"],
     "the command does not see the pack's state directory (its copy is at the workspace's path)", r)

r = c.call("sandbox.release", {"sandboxId": sid}, timeout=120)
rep = r.get("result", {}).get("workspace") or r.get("error", {}).get("data", {}).get("workspace") or {}
items = {i["path"]: i["action"] for i in rep.get("items", [])}
t.ok(r.get("result", {}).get("released") is True, "the lease is released", r)
want = {"keep.txt": "kept\n", "change.txt": "after\n", "added.txt": "new\n",
        "sub/deep.txt": "deep\nmore\n", ".git/config": git_config}
t.ok(tree() == want, "the host workspace shows exactly the lease's changes", [tree(), want])
t.ok(read(".git/config") == git_config and items.get(".git/config") == "refused",
     "the change to .git/config is refused and reported; the host file is unchanged", rep)
t.ok(items.get("change.txt") == "changed" and items.get("added.txt") == "added"
     and items.get("delete.txt") == "deleted", "the report lists what changed", rep)
t.ok(not os.path.exists(lease_dir), "the pack removed its copy")

# Local answers the controller refuses: a workspace that is not a directory strictly below the
# pack's state directory reached without a symlink, a workspace for a direct backend, an
# environment variable a program gives a meaning to, an answer with both "local" and "sandbox".
# None of them runs the command (it would exit 3).
bad = [
    (REF, "workspace-outside", "is not below the pack's state directory"),
    (REF, "workspace-symlink", "reached without a symlink"),
    (REF, "workspace-unnormalized", "is not below the pack's state directory"),
    (REF, "workspace-state", "is not below the pack's state directory"),
    (REF, "bad-env", "is not CORDON_PACK_<NAME>=<value>"),
    (REF, "both", "not exactly one of"),
    ("pack:%s:test" % PACK, "workspace-direct", "for a transfer backend only"),
]
for ref, answer, why in bad:
    r = c.call("backend.activate", {"backend": ref, "settings": {"spawnAnswer": answer}}, timeout=60)
    lsid = None
    if ref == REF:
        lsid = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW},
                      timeout=120).get("result", {}).get("sandboxId")
    r = c.call("process.exec", {"sandbox": lsid, "callerCwd": WORK, "cwd": WORK, "env": ["PATH=/usr/bin:/bin"],
                                "argv": ["/bin/sh", "-c", "exit 3"]} if lsid else
               {"callerCwd": WORK, "cwd": WORK, "env": ["PATH=/usr/bin:/bin"], "argv": ["/bin/sh", "-c", "exit 3"]})
    e = r.get("error", {})
    t.ok(e.get("code") == -32002 and why in e.get("message", "") and "result" not in r,
         "%s answering %s: the spawn is refused (%s)" % (ref.split(":")[-1], answer, e.get("message")), r)
    if lsid:
        c.call("sandbox.release", {"sandboxId": lsid}, timeout=120)
t.ok(tree() == want, "none of them changed the host workspace", tree())
r = c.call("backend.settings.set", {"backend": "pack:%s:test" % PACK, "settings": {"spawnAnswer": None}})
r = c.call("backend.activate", {"backend": REF, "settings": {"spawnAnswer": None}}, timeout=60)
launcher = r.get("result", {}).get("launcher", "")
t.ok(launcher.startswith(REF + "#"), "the transfer backend answers normally again (%s)" % launcher, r)

# A one-shot command on a transfer backend: the controller refuses it (its changes would be
# lost); cordon run runs it in a lease of its own and brings its changes back.
r = c.call("process.exec", {"callerCwd": WORK, "cwd": WORK, "env": ["PATH=/usr/bin:/bin"],
                            "argv": ["/bin/true"], "policyPatch": RW})
t.ok(r.get("error", {}).get("data", {}).get("field") == "params.sandbox",
     "a one-shot process.exec is refused naming params.sandbox", r)
r = subprocess.run([CORDON, "run", "--", "/bin/sh", "-c", "echo via-run > run.txt; echo ran"],
                   capture_output=True, text=True, timeout=120, cwd=WORK)
t.ok(r.returncode == 0 and r.stdout.strip() == "ran" and read("run.txt") == "via-run\n",
     "cordon run through the transfer backend: its change is on the host when it returns", r)
os.unlink(os.path.join(WORK, "run.txt"))

# A lease is pinned to its instance: activating another backend does not move it.
r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW}, timeout=120)
sid2 = r.get("result", {}).get("sandboxId")
r = c.call("process.spawn", {"sandbox": sid2, "callerCwd": WORK, "cwd": WORK,
                             "env": ["PATH=/usr/bin:/bin"],
                             "argv": ["/bin/sh", "-c", "i=0; while :; do i=$((i+1)); echo $i > beat; sleep 0.1; done"],
                             "stdio": {"stdin": "null", "stdout": "null", "stderr": "null"}})
beater = r.get("result", {}).get("processId")
t.ok(sid2 and beater, "a second lease runs a long command", r)
r = c.call("backend.activate", {"backend": "builtin:auto"}, timeout=60)
t.ok("result" in r and active(c)[0] == "builtin:auto", "builtin:auto is activated meanwhile", r)
res1, _ = run(c, sid2, "cat beat")
time.sleep(0.5)
res2, r = run(c, sid2, "cat beat; echo from-lease > pinned.txt")
b1, b2 = (int((x.get("stdout") or "0").split()[0] or 0) for x in (res1, res2))
t.ok(res2.get("launcher") == launcher and b2 > b1 > 0,
     "the lease's command keeps running and new ones still go to the pinned instance (%d, %d)" % (b1, b2), r)
r = c.call("process.list", {})
live = [p for p in r.get("result", {}).get("processes", []) if p.get("processId") == beater]
t.ok(live and not live[0].get("exit"), "the long command is still listed as running", r)
r = c.call("sandbox.release", {"sandboxId": sid2}, timeout=120)
t.ok(r.get("result", {}).get("released") is True and read("pinned.txt") == "from-lease\n",
     "its release brings the changes back after the activation", r)
r = c.call("process.wait", {"processId": beater}, timeout=30)
t.ok(r.get("result", {}).get("reason") in ("killed", "signaled"), "the long command ended with the lease", r)

c.close()
stop_controller()
sys.exit(t.done())
