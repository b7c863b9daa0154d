# The measuring half of bench/remote-pack.sh (which sets up the private controller directories):
#   remote-pack.py e2b|daytona ROUNDS EXECS TMPDIR
# Starts the pack's loopback fake, installs, enables and activates the pack against it, then
#   hydrate/reconcile  ROUNDS times: sandbox.acquire (read-write) of a workspace of 10,000 files
#                      totalling 100 MiB (100 directories), a command in the lease that changes
#                      100 files, adds 10 and deletes 10, sandbox.release; MiB/s and files/s
#                      of the whole tree each way, medians (and the spread); paired in
#                      alternating order with the fake's own time for the same work straight to
#                      its API (create, upload the tree's tar, untar; tar, download, delete),
#                      and the median of the per-round differences (what cordon and the pack add);
#                      and the CPU time the pack's process and the controller used for each
#   exec               EXECS pairs, in alternating order, in a lease on a one-file workspace:
#                      process.exec of /bin/true over an open controller connection vs the
#                      fake's own time for the same command on a kept-alive HTTP connection
#                      (E2B: a process.Process/Start stream; Daytona: POST …/process/execute);
#                      medians of each and of the per-pair differences (what cordon and the pack
#                      add), with their 90th percentile
import http.client
import json
import os
import statistics
import struct
import subprocess
import sys
import time
import urllib.request

which, ROUNDS, EXECS, TMP = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
B, S = os.environ["top_builddir"], os.environ["top_srcdir"]
sys.path.insert(0, os.path.join(S, "tests", "helpers"))
from ctl import SOCK  # noqa: E402
from rpc import Conn  # noqa: E402

CORDON = os.path.join(B, "cordon")
RW = {"filesystem": {"workspace": {"access": "read-write"}}}
NFILES, TOTAL, NDIRS = 10000, 100 * 1024 * 1024, 100
if which == "e2b":
    PACK, KEY, BIN = "org.cordon.e2b", "e2b_" + os.urandom(20).hex(), "backends/e2b/cordon-e2b-pack"
    FAKE, API_PATH = "e2b_fake.py", ""
else:
    PACK, KEY, BIN = "org.cordon.daytona", "dtn_" + os.urandom(32).hex(), "backends/daytona/cordon-daytona-pack"
    FAKE, API_PATH = "daytona_fake.py", "/api"
REF = "pack:%s:%s" % (PACK, which)
os.makedirs(TMP)
WORK, SMALL, FDIR, PSRC = (os.path.join(TMP, d) for d in ("work", "small", "fake", "pack"))
for d in (WORK, SMALL, FDIR, PSRC):
    os.makedirs(d)


def die(what, r):
    print("remote-pack: %s: %s: %s" % (which, what, json.dumps(r)[:600]), file=sys.stderr)
    sys.exit(1)


portfile = os.path.join(FDIR, "port")
fake = subprocess.Popen([sys.executable, os.path.join(S, "tests", "fakes", FAKE), "--port-file", portfile,
                         "--api-key", KEY, "--dir", FDIR], stdout=subprocess.DEVNULL,
                        stderr=open(os.path.join(TMP, "fake.log"), "w"))
try:
    for _ in range(200):
        if os.path.exists(portfile):
            break
        time.sleep(0.05)
    PORT = int(open(portfile).read())
    URL = "http://127.0.0.1:%d%s" % (PORT, API_PATH)

    def fake_get(path):
        with urllib.request.urlopen("http://127.0.0.1:%d/__fake/%s" % (PORT, path), timeout=30) as r:
            return json.loads(r.read())

    # The tree: NFILES files of random bytes totalling TOTAL exactly (none with 0 rounds).
    per, extra = divmod(TOTAL, NFILES)
    for i in range(NFILES if ROUNDS else 0):
        d = os.path.join(WORK, "d%02d" % (i % NDIRS))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "f%05d" % i), "wb") as f:
            f.write(os.urandom(per + (1 if i < extra else 0)))
    with open(os.path.join(SMALL, "one.txt"), "w") as f:
        f.write("one\n")

    m = json.load(open(os.path.join(S, "backends", which, "pack.json")))
    m["domains"] = ["127.0.0.1:%d" % PORT]
    json.dump(m, open(os.path.join(PSRC, "pack.json"), "w"))
    # CORDON_BENCH_PACK: another build of the pack's program (a before/after comparison).
    subprocess.run(["cp", os.environ.get("CORDON_BENCH_PACK") or os.path.join(B, BIN),
                    os.path.join(PSRC, os.path.basename(BIN))], check=True)
    r = subprocess.run([CORDON, "pack", "install", PSRC], capture_output=True, text=True)
    if r.returncode:
        die("pack install", r.stderr)
    c = Conn(SOCK)
    for meth, params in (("pack.enable", {"id": PACK}),
                         ("secret.set", {"backend": REF, "field": "apiKey", "value": KEY}),
                         ("backend.activate", {"backend": REF, "settings": {"baseUrl": URL}})):
        r = c.call(meth, params, timeout=120)
        if "result" not in r:
            die(meth, r)

    def exec_(sid, argv, cwd, timeout=600):
        r = c.call("process.exec", {"sandbox": sid, "callerCwd": cwd, "cwd": cwd,
                                    "env": ["PATH=/usr/bin:/bin"], "argv": argv}, timeout=timeout)
        if r.get("result", {}).get("exitCode") != 0:
            die("process.exec %s" % argv, r)

    CHANGE = ("set -e; n=$1; for i in $(seq 0 99); do echo \"round $n\" >> d$(printf %02d $i)/f$(printf %05d $i); done; "
              "for i in $(seq 0 9); do rm -f d$(printf %02d $i)/new-$((n-1))-$i; "
              "head -c 10240 /dev/urandom > d$(printf %02d $i)/new-$n-$i; done")
    def fake_transfer(data):
        """The fake's own time for a hydrate and a reconcile of the same tree, straight to its
        API on a kept-alive connection: create a sandbox, upload the archive, untar it (one
        command); then tar it (one command), download the archive, delete the sandbox."""
        hc = http.client.HTTPConnection("127.0.0.1", PORT, timeout=900)

        def call(method, path, body=None, headers=None, want=(200, 201, 204)):
            hc.request(method, path, body=body, headers=headers or {})
            r = hc.getresponse()
            d = r.read()
            if r.status not in want:
                die("fake %s %s" % (method, path), "%d %s" % (r.status, d[:300]))
            return d

        t0 = time.monotonic()
        if which == "e2b":
            A = {"X-API-Key": KEY, "Content-Type": "application/json"}
            sb = json.loads(call("POST", "/sandboxes", json.dumps({"templateID": "base", "timeout": 900,
                                                                    "secure": True}), A))
            E = {"E2b-Sandbox-Id": sb["sandboxID"], "E2b-Sandbox-Port": "49983",
                 "X-Access-Token": sb["envdAccessToken"]}

            def sh(script):
                msg = json.dumps({"process": {"cmd": "/bin/sh", "args": ["-c", script], "cwd": "/home/user"},
                                  "stdin": False}).encode()
                d = call("POST", "/process.Process/Start", struct.pack(">BI", 0, len(msg)) + msg,
                         dict(E, **{"Content-Type": "application/connect+json"}))
                if b'"exited":true' not in d.replace(b" ", b"") or b'"exitCode"' in d:
                    die("fake command %s" % script, d[-300:].decode(errors="replace"))

            call("POST", "/files?path=/home/user/.in.tar", data, dict(E, **{"Content-Type": "application/octet-stream"}))
            sh("mkdir -p /home/user/workspace && tar -xf /home/user/.in.tar -C /home/user/workspace && "
               "rm -f /home/user/.in.tar")
            t1 = time.monotonic()
            sh("tar --format=pax -cf /home/user/.out.tar -C /home/user/workspace .")
            n = len(call("GET", "/files?path=/home/user/.out.tar", headers=E))
            call("DELETE", "/sandboxes/" + sb["sandboxID"], headers=A)
        else:
            A = {"Authorization": "Bearer " + KEY, "Content-Type": "application/json"}
            sb = json.loads(call("POST", "/api/sandbox", json.dumps({}), A))
            while json.loads(call("GET", "/api/sandbox/" + sb["id"], headers=A))["state"] != "started":
                time.sleep(0.02)
            tb = "/toolbox/" + sb["id"]

            def sh(script):
                d = json.loads(call("POST", tb + "/process/execute", json.dumps({"command": script,
                                    "cwd": "/home/daytona", "timeout": 600}), A))
                if d.get("exitCode") != 0:
                    die("fake command %s" % script, d)

            B = "cordon-bench-boundary"
            call("POST", tb + "/files/upload?path=/home/daytona/.in.tar",
                 (b"--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.tar\"\r\n"
                  b"Content-Type: application/octet-stream\r\n\r\n" % B.encode()) + data + b"\r\n--%s--\r\n" % B.encode(),
                 {"Authorization": "Bearer " + KEY, "Content-Type": "multipart/form-data; boundary=" + B})
            sh("mkdir -p /home/daytona/workspace && tar -xf /home/daytona/.in.tar -C /home/daytona/workspace && "
               "rm -f /home/daytona/.in.tar")
            t1 = time.monotonic()
            sh("tar --format=pax -cf /home/daytona/.out.tar -C /home/daytona/workspace .")
            n = len(call("GET", tb + "/files/download?path=/home/daytona/.out.tar", headers=A))
            call("DELETE", "/api/sandbox/" + sb["id"], headers=A)
        t2 = time.monotonic()
        hc.close()
        if n < TOTAL:
            die("fake download", "%d bytes" % n)
        return t1 - t0, t2 - t1

    STATE = os.path.join(os.environ["XDG_STATE_HOME"], "cordon")
    TICK = os.sysconf("SC_CLK_TCK")

    def cpu(pid):
        """CPU seconds (user + system, every thread) a process used so far; 0 when it is gone."""
        try:
            with open("/proc/%d/stat" % pid) as f:
                v = f.read().rsplit(")", 1)[1].split()
            return (int(v[11]) + int(v[12])) / TICK
        except (OSError, ValueError, IndexError):
            return 0.0

    def pack_pid():
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    if os.path.realpath("/proc/%s/exe" % d).startswith(os.path.join(STATE, "packs")):
                        return int(d)
                except OSError:
                    pass
        return 0

    ppid = pack_pid()
    with open(os.path.join(os.environ["XDG_RUNTIME_DIR"], "cordon", "controller.sock.lock")) as f:
        cpid = int(f.readline())
    hyd, rec, fhyd, frec = [], [], [], []
    pcpu, ccpu = [[], []], [[], []]  # the pack's and the controller's CPU seconds: hydrate, reconcile
    for rnd in range(ROUNDS):
        data = subprocess.run(["tar", "--format=pax", "-cf", "-", "-C", WORK, "."], capture_output=True,
                              check=True).stdout
        # Paired, in alternating order: the fake alone, and through cordon and the pack.
        for side in ((0, 1) if rnd % 2 == 0 else (1, 0)):
            if side == 1:
                fh, fr = fake_transfer(data)
                fhyd.append(fh)
                frec.append(fr)
                continue
            p0, c0 = cpu(ppid), cpu(cpid)
            t0 = time.monotonic()
            r = c.call("sandbox.acquire", {"callerCwd": WORK, "policyPatch": RW}, timeout=900)
            t1 = time.monotonic()
            pcpu[0].append(cpu(ppid) - p0)
            ccpu[0].append(cpu(cpid) - c0)
            sid = r.get("result", {}).get("sandboxId")
            if not sid:
                die("sandbox.acquire", r)
            exec_(sid, ["/bin/sh", "-c", CHANGE, "sh", str(rnd + 1)], WORK)
            p0, c0 = cpu(ppid), cpu(cpid)
            t2 = time.monotonic()
            r = c.call("sandbox.release", {"sandboxId": sid}, timeout=900)
            t3 = time.monotonic()
            pcpu[1].append(cpu(ppid) - p0)
            ccpu[1].append(cpu(cpid) - c0)
            rep = r.get("result", {}).get("workspace") or {}
            counts = rep.get("counts") or {}
            if r.get("result", {}).get("released") is not True or \
                    not open(os.path.join(WORK, "d00", "f00000"), "rb").read().endswith(b"round %d\n" % (rnd + 1)):
                die("sandbox.release", r)
            hyd.append(t1 - t0)
            rec.append(t3 - t2)
        print("# %s round %d: hydrate %.2f s (the fake alone %.2f s), reconcile %.2f s (the fake alone %.2f s) "
              "(%s)" % (which, rnd + 1, hyd[-1], fhyd[-1], rec[-1], frec[-1], json.dumps(counts)), flush=True)

    def line(name, ts, fs, k):
        med = statistics.median(ts)
        add = statistics.median([a - b for a, b in zip(ts, fs)])
        print("%-9s %-9s median %6.2f s  %6.1f MiB/s  %6.0f files/s | the fake alone %6.2f s | added %5.2f s"
              "  (min %.2f s, max %.2f s, %d rounds) | CPU: the pack %.2f s, the controller %.2f s"
              % (which, name, med, TOTAL / 1048576 / med, NFILES / med, statistics.median(fs), add,
                 min(ts), max(ts), len(ts), statistics.median(pcpu[k]), statistics.median(ccpu[k])))

    if ROUNDS:
        print("== %s: a %d-file, %d MiB workspace through cordon, the pack and the fake; the fake alone "
              "(paired)" % (which, NFILES, TOTAL >> 20))
        line("hydrate", hyd, fhyd, 0)
        line("reconcile", rec, frec, 1)

    # Exec: a lease on a one-file workspace; the fake's own time for the same command.
    r = c.call("sandbox.acquire", {"callerCwd": SMALL, "policyPatch": RW}, timeout=120)
    sid = r.get("result", {}).get("sandboxId")
    if not sid:
        die("sandbox.acquire", r)
    exec_(sid, ["/bin/true"], SMALL)
    hc = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    if which == "e2b":
        st = fake_get("state")["sandboxes"]
        (rsid, rsb), = ((k, v) for k, v in st.items() if v["alive"])
        body = json.dumps({"process": {"cmd": "/bin/true", "args": [], "cwd": "/home/user/workspace"},
                           "stdin": False}).encode()
        env = struct.pack(">BI", 0, len(body)) + body
        hdr = {"E2b-Sandbox-Id": rsid, "E2b-Sandbox-Port": "49983", "X-Access-Token": rsb["token"],
               "Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"}

        def direct():
            hc.request("POST", "/process.Process/Start", body=env, headers=hdr)
            d = hc.getresponse().read()
            if b'"end"' not in d:
                die("direct Start", d.decode(errors="replace"))
    else:
        (dsb,) = [s for s in fake_get("sandboxes") if s.get("state") == "started"]
        body = json.dumps({"command": "/bin/true", "cwd": "/home/daytona/workspace"})
        hdr = {"Authorization": "Bearer " + KEY, "Content-Type": "application/json"}

        def direct():
            hc.request("POST", "/toolbox/%s/process/execute" % dsb["id"], body=body, headers=hdr)
            d = hc.getresponse().read()
            if json.loads(d).get("exitCode") != 0:
                die("direct execute", d.decode(errors="replace"))
    direct()
    via, own, diff = [], [], []
    for i in range(EXECS):
        pair = {}
        for side in ((0, 1) if i % 2 == 0 else (1, 0)):
            t0 = time.monotonic()
            if side == 0:
                exec_(sid, ["/bin/true"], SMALL)
            else:
                direct()
            pair[side] = (time.monotonic() - t0) * 1000
        via.append(pair[0])
        own.append(pair[1])
        diff.append(pair[0] - pair[1])
    hc.close()
    c.call("sandbox.release", {"sandboxId": sid}, timeout=120)
    diff.sort()
    p90 = diff[min(len(diff) - 1, max(0, -(-len(diff) * 9 // 10) - 1))]
    print("%-9s exec      through cordon %.1f ms, the fake alone %.1f ms: added %.1f ms median, %.1f ms p90 "
          "(%d pairs; target <= 20 ms)" % (which, statistics.median(via), statistics.median(own),
                                           statistics.median(diff), p90, EXECS))
finally:
    fake.terminate()
    fake.wait()
