# A slow launcher stalls nobody: with the controller's launcherd stopped (SIGSTOP: it answers
# nothing), a client's process.signal is answered at once and another client's requests are
# served meanwhile; the controller never waits for a launcher on its event loop. Once the
# launcherd goes on, the signal takes effect. Run by controller-slow-launcher.sh.
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "helpers"))
from ctl import SOCK, children, start_controller, stop_controller  # noqa: E402
from rpc import Conn, Tap  # noqa: E402

WORK = os.environ["WORK"]
t = Tap()


ctl = start_controller()
a = Conn(SOCK)
r = a.call("process.spawn", {"callerCwd": WORK, "env": ["PATH=/usr/bin:/bin"],
                             "argv": ["/bin/sleep", "100"],
                             "stdio": {"stdin": "null", "stdout": "null", "stderr": "null"}})
pid = r.get("result", {}).get("processId")
lds = children(ctl)
t.ok(pid and len(lds) == 1, "a process runs on the controller's own launcherd (%s)" % lds, r)
stopped = lds[0] if lds else None
if stopped:
    os.kill(stopped, signal.SIGSTOP)
try:
    b = Conn(SOCK)
    t0 = time.time()
    sid = a.request("process.signal", {"processId": pid, "signal": 15})
    r = a.wait(sid, timeout=5)
    took = time.time() - t0
    t.ok(r and r.get("result", {}).get("delivered") is True and took < 1,
         "process.signal is answered at once while the launcher answers nothing (%.2f s)" % took,
         r)
    t0 = time.time()
    r = b.call("process.list", {}, timeout=5)
    took = time.time() - t0
    t.ok(r and "result" in r and took < 1,
         "another client is served meanwhile (%.2f s)" % took, r)
finally:
    if stopped:
        os.kill(stopped, signal.SIGCONT)
r = a.call("process.wait", {"processId": pid}, timeout=20)
t.ok(r and r.get("result", {}).get("signal") == 15,
     "once the launcher goes on, the signal took effect (signal 15)", r)
stop_controller()
t.done()
