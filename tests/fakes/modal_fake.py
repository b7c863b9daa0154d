#!/usr/bin/env python3
# A loopback fake of Modal's gRPC API for the Modal pack's tests (python3-grpcio and
# python3-grpc-tools: the message classes are generated at start from
# backends/modal/modal-subset.proto, the one the pack is built from).
#
# One HTTP/2 gRPC server (cleartext, or TLS with --tls-cert/--tls-key) serves both services:
#   modal.client.ModalClient  x-modal-token-id/-secret checked on every call; every call but
#       AuthTokenGet also needs a live x-modal-auth-token (a JWT whose "exp" is --token-ttl s away);
#       AppGetOrCreate, SandboxCreate (image ids "im-…" only, a built one when this fake built it),
#       SandboxGetTaskId, SandboxTerminate, SandboxList (by app and tags),
#       TaskGetCommandRouterAccess ({jwt, url of this server}), EnvironmentGetOrCreate (its
#       settings' image_builder_version BUILDER_VERSION), ImageGetOrCreate (Dockerfile commands,
#       the first `FROM ref`, and the builder version; one image id per recipe, built once unless
#       force_build) and ImageJoinStreaming (the build's log entries after last_entry_id, then its
#       result; a stream past its timeout ends without one). A build logs a line every
#       --build-step-s seconds: the FROM (a reference under missing/ fails as a refused pull), each
#       command (`RUN exit N`, N not 0, fails as Docker says), the snapshot, then succeeds.
#   Unary calls carrying x-idempotency-key are answered once per key: a repeated key gets the
#       first answer again (a retried SandboxCreate makes one sandbox).
#   modal.task_command_router.TaskCommandRouter  authorization: Bearer <router jwt> checked;
#       TaskExecStart (exec_id idempotent), TaskExecStdioRead (server stream from an offset, per
#       fd), TaskExecStdinWrite (offset, eof), TaskExecWait (code or signal)
# Commands run for real in a private directory per sandbox, its home, seen at /root: each command
# in a mount namespace of its own with the directory bound there (unshare); where that is not
# possible, a workdir under /root is rewritten to the directory (and HOME is the directory). A sandbox past its timeout_secs is killed: its task result is TIMEOUT and
# the router answers NOT_FOUND for it.
#
# Test hooks (JSON bodies in gRPC framing, no credentials):
#   /fake.Hooks/Fault {"rpc", "code"?, "message"?, "count"?, "kind"?: "status"|"cut"|"after"}: the
#       next `count` calls of the RPC (a method name, or "any") fail with `code` (after: once the
#       call did its work, which its idempotency key keeps), or (cut) a stream sends its first
#       message then ends with UNAVAILABLE
#   /fake.Hooks/State {}: {"sandboxes": {...}, "log": [{rpc, idem, attempt, timeout}],
#       "leaks": [...], "handlerSeconds", "handlerCalls"} where leaks lists every place other
#       than x-modal-token-secret the secret was seen (a header, a request body), and
#       handlerSeconds the time spent in the handlers (the fake's own time)
# Usage: modal_fake.py --port-file FILE --token-id ID --token-secret SECRET [--token-ttl S]
#        [--tls-cert PEM --tls-key PEM] [--build-step-s S]
import argparse
import base64
import json
import os
import random
import shutil
import signal
import string
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "..", "..", "backends", "modal")

lock = threading.Lock()
cond = threading.Condition(lock)
sandboxes = {}
tasks = {}
apps = {}
tokens = {}   # auth token -> expiry
routers = {}  # router jwt -> task id
faults = []
log = []
leaks = []
durs = []    # (rpc, seconds in the handler)
images = {}  # image id -> build
recipes = {}  # (commands, builder version) -> image id
idem = {}    # (rpc, idempotency key) -> the first answer
cfg = {}
pb = None
BUILDER_VERSION = "2024.10"
GS_SUCCESS, GS_FAILURE = 1, 2


def load_pb(tmp):
    from grpc_tools import protoc
    src = os.path.abspath(PROTO_DIR)
    if protoc.main(["protoc", "-I" + src, "--python_out=" + tmp,
                    os.path.join(src, "modal-subset.proto")]) != 0:
        sys.exit("modal_fake: protoc failed")
    sys.path.insert(0, tmp)
    import modal_subset_pb2
    return modal_subset_pb2


def new_id(prefix):
    return prefix + "".join(random.choice(string.ascii_letters + string.digits) for _ in range(16))


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def take_fault(rpc, kinds=("status", "cut")):
    with lock:
        for f in faults:
            if f["rpc"] in (rpc, "any") and f.get("count", 1) > 0 and \
                    f.get("kind", "status") in kinds:
                f["count"] = f.get("count", 1) - 1
                if f["count"] <= 0:
                    faults.remove(f)
                return dict(f)
    return None


def check_leak(where, data):
    s = cfg["secret"]
    if isinstance(data, str):
        data = data.encode()
    if s.encode() in data:
        with lock:
            leaks.append(where)


def md(context):
    return {k: v for k, v in context.invocation_metadata()}


def enter(rpc, context, kind):
    m = md(context)
    for k, v in m.items():
        if k != "x-modal-token-secret":
            check_leak("metadata " + k, v if isinstance(v, str) else v.decode("latin-1"))
    with lock:
        log.append({"rpc": rpc, "idem": m.get("x-idempotency-key"),
                    "attempt": m.get("x-retry-attempt"),
                    "timeout": context.time_remaining() is not None})
    if kind == "control":
        if m.get("x-modal-token-id") != cfg["token_id"] or \
           m.get("x-modal-token-secret") != cfg["secret"]:
            context.abort(grpc.StatusCode.UNAUTHENTICATED,
                          "Token ID is malformed or the token secret is invalid")
        if rpc != "AuthTokenGet":
            t = m.get("x-modal-auth-token")
            with lock:
                exp = tokens.get(t)
            if exp is None:
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or unknown auth token")
            if time.time() >= exp:
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "auth token expired")
    elif kind == "router":
        a = m.get("authorization", "")
        with lock:
            ok = a.startswith("Bearer ") and a[7:] in routers
        if not ok:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "invalid command router token")
    f = take_fault(rpc)
    if f and f.get("kind", "status") == "status":
        code = {c.value[0]: c for c in grpc.StatusCode}[f.get("code", 14)]
        context.abort(code, f.get("message", "injected fault"))
    return f


def expire_loop():
    while True:
        time.sleep(0.1)
        now = time.time()
        with lock:
            for sb in sandboxes.values():
                if sb["state"] == "running" and sb["deadline"] and now >= sb["deadline"]:
                    sb["state"] = "timeout"
                    kill_all(sb)
            cond.notify_all()


def kill_all(sb):
    for ex in sb["execs"].values():
        try:
            os.killpg(ex["proc"].pid, signal.SIGKILL)
        except OSError:
            pass


# ---- control plane ----

def AuthTokenGet(req, context):
    enter("AuthTokenGet", context, "control")
    exp = time.time() + cfg["ttl"]
    tok = b64u(b'{"alg":"none","typ":"JWT"}') + "." + \
        b64u(json.dumps({"exp": exp, "sub": "fake"}).encode()) + "." + b64u(os.urandom(8))
    with lock:
        tokens[tok] = exp
    return pb.AuthTokenGetResponse(token=tok)


def AppGetOrCreate(req, context):
    enter("AppGetOrCreate", context, "control")
    key = (req.environment_name or "main", req.app_name)
    with lock:
        if key not in apps:
            if req.object_creation_type != 1:
                context.abort(grpc.StatusCode.NOT_FOUND, "App '%s' not found" % req.app_name)
            apps[key] = new_id("ap-")
        return pb.AppGetOrCreateResponse(app_id=apps[key])


def SandboxCreate(req, context):
    enter("SandboxCreate", context, "control")
    d = req.definition
    if not d.image_id.startswith("im-"):
        context.abort(grpc.StatusCode.NOT_FOUND, "Image '%s' not found" % d.image_id)
    with lock:
        b = images.get(d.image_id)
        if b and b["status"] != GS_SUCCESS:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                          "Image '%s' has not been built successfully" % d.image_id)
    with lock:
        if req.app_id not in apps.values():
            context.abort(grpc.StatusCode.NOT_FOUND, "App not found")
        sid = new_id("sb-")
        root = os.path.join(cfg["dir"], sid)
        os.makedirs(host_path(root, d.workdir or HOME), exist_ok=True)
        tid = new_id("ta-")
        sandboxes[sid] = {"id": sid, "app": req.app_id, "root": root, "task": tid,
                          "state": "running", "execs": {},
                          "tags": {t.tag_name: t.tag_value for t in req.tags},
                          "deadline": time.time() + d.timeout_secs if d.timeout_secs else 0,
                          "workdir": d.workdir, "env": dict(d.environment_variables.contents),
                          "image": d.image_id,
                          "network": d.network_access.network_access_type ==
                          pb.NetworkAccess.OPEN,
                          "resources": [d.resources.milli_cpu, d.resources.memory_mb]}
        tasks[tid] = sid
    return pb.SandboxCreateResponse(sandbox_id=sid)


def SandboxGetTaskId(req, context):
    enter("SandboxGetTaskId", context, "control")
    with lock:
        sb = sandboxes.get(req.sandbox_id)
        if not sb:
            context.abort(grpc.StatusCode.NOT_FOUND, "Sandbox not found")
        if sb["state"] == "timeout":
            return pb.SandboxGetTaskIdResponse(task_result=pb.GenericResult(status=4))
        if sb["state"] == "terminated":
            return pb.SandboxGetTaskIdResponse(task_result=pb.GenericResult(status=3))
        return pb.SandboxGetTaskIdResponse(task_id=sb["task"])


def SandboxTerminate(req, context):
    enter("SandboxTerminate", context, "control")
    with lock:
        sb = sandboxes.get(req.sandbox_id)
        if not sb:
            context.abort(grpc.StatusCode.NOT_FOUND, "Sandbox not found")
        if sb["state"] == "running":
            sb["state"] = "terminated"
            kill_all(sb)
        cond.notify_all()
    return pb.SandboxTerminateResponse()


def SandboxList(req, context):
    enter("SandboxList", context, "control")
    want = {t.tag_name: t.tag_value for t in req.tags}
    out = []
    with lock:
        for sb in sandboxes.values():
            if req.app_id and sb["app"] != req.app_id:
                continue
            if sb["state"] != "running" and not req.include_finished:
                continue
            if any(sb["tags"].get(k) != v for k, v in want.items()):
                continue
            out.append(pb.SandboxInfo(id=sb["id"]))
    return pb.SandboxListResponse(sandboxes=out)


def TaskGetCommandRouterAccess(req, context):
    enter("TaskGetCommandRouterAccess", context, "control")
    with lock:
        if req.task_id not in tasks:
            context.abort(grpc.StatusCode.NOT_FOUND, "Task not found")
        jwt = new_id("rt.")
        routers[jwt] = req.task_id
    return pb.TaskGetCommandRouterAccessResponse(
        jwt=jwt, url="%s://127.0.0.1:%d" % ("https" if cfg["tls"] else "http", cfg["port"]))


# ---- images ----

def EnvironmentGetOrCreate(req, context):
    enter("EnvironmentGetOrCreate", context, "control")
    name = req.deployment_name or "main"
    return pb.EnvironmentGetOrCreateResponse(
        environment_id="en-" + name,
        metadata=pb.EnvironmentMetadata(
            name=name, settings=pb.EnvironmentSettings(image_builder_version=BUILDER_VERSION)))


def build_steps(cmds):
    """The log lines of a build and how it ends: (lines, exception or None)."""
    lines = []
    ref = cmds[0][5:] if cmds and cmds[0].startswith("FROM ") else ""
    lines.append("=> Step 0: FROM %s" % ref)
    if ref.startswith("missing/"):
        return lines, ("pull access denied for %s, repository does not exist or may require "
                       "'docker login'" % ref.split(":")[0])
    for i, c in enumerate(cmds[1:], 1):
        lines.append("=> Step %d: %s" % (i, c))
        w = c.split()
        if len(w) == 3 and w[0] == "RUN" and w[1] == "exit" and w[2] != "0":
            lines.append("Terminating task due to error: exit status %s" % w[2])
            return lines, ("The command '/bin/sh -c exit %s' returned a non-zero code: %s"
                           % (w[2], w[2]))
    lines.append("Creating image snapshot...")
    lines.append("Finished snapshot; took 0.01s")
    return lines, None


def run_build(iid, lines, exc):
    for ln in lines:
        time.sleep(cfg["build_step"])
        with lock:
            b = images[iid]
            b["log"].append(ln)
            cond.notify_all()
    time.sleep(cfg["build_step"])
    with lock:
        b = images[iid]
        b["status"] = GS_FAILURE if exc else GS_SUCCESS
        b["exception"] = exc or ""
        cond.notify_all()


def ImageGetOrCreate(req, context):
    enter("ImageGetOrCreate", context, "control")
    cmds = list(req.image.dockerfile_commands)
    if req.builder_version != BUILDER_VERSION:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                      "Unsupported image builder version '%s'" % req.builder_version)
    if not cmds or not cmds[0].startswith("FROM "):
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "An image needs a FROM command first")
    with lock:
        if req.app_id not in apps.values():
            context.abort(grpc.StatusCode.NOT_FOUND, "App not found")
        key = (tuple(cmds), req.builder_version)
        iid = recipes.get(key)
        if iid is None or req.force_build:
            iid = new_id("im-")
            recipes[key] = iid
            lines, exc = build_steps(cmds)
            images[iid] = {"commands": cmds, "status": 0, "exception": "", "log": []}
            threading.Thread(target=run_build, args=(iid, lines, exc), daemon=True).start()
        b = images[iid]
        res = pb.GenericResult(status=b["status"], exception=b["exception"]) \
            if b["status"] else None
    return pb.ImageGetOrCreateResponse(image_id=iid, result=res)


def ImageJoinStreaming(req, context):
    f = enter("ImageJoinStreaming", context, "control")
    cut = f is not None and f.get("kind") == "cut"
    end = time.time() + (req.timeout or 55)
    with lock:
        if req.image_id not in images:
            context.abort(grpc.StatusCode.NOT_FOUND, "Image '%s' not found" % req.image_id)
    nxt = int(req.last_entry_id) if req.last_entry_id.isdigit() else 0
    while True:
        with lock:
            b = images[req.image_id]
            while len(b["log"]) <= nxt and not b["status"] and time.time() < end and \
                    context.is_active():
                cond.wait(0.2)
            if not context.is_active():
                return
            new = b["log"][nxt:]
            st, exc = b["status"], b["exception"]
        for ln in new:
            nxt += 1
            yield pb.ImageJoinStreamingResponse(
                task_logs=[pb.TaskLogs(data=ln + "\n", file_descriptor=pb.FILE_DESCRIPTOR_STDOUT)],
                entry_id=str(nxt))
            if cut:
                context.abort(grpc.StatusCode.UNAVAILABLE, "stream reset by the server")
        if st and nxt >= len(b["log"]):
            yield pb.ImageJoinStreamingResponse(
                result=pb.GenericResult(status=st, exception=exc), eof=True)
            return
        if time.time() >= end:
            return


# ---- command router ----

def live_sandbox(task_id, context):
    sid = tasks.get(task_id)
    sb = sandboxes.get(sid) if sid else None
    if not sb:
        context.abort(grpc.StatusCode.NOT_FOUND, "Task not found")
    if sb["state"] == "timeout":
        context.abort(grpc.StatusCode.NOT_FOUND, "Sandbox has timed out")
    if sb["state"] != "running":
        context.abort(grpc.StatusCode.NOT_FOUND, "Sandbox has been terminated")
    return sb


HOME = "/root"
NS_SCRIPT = 'mount --bind "$0" /root && cd "$1" && shift && exec "$@"'


def host_path(root, path):
    """Where a sandbox path under /root is on the host (anything else: under the directory)."""
    rel = path[len(HOME):] if path == HOME or path.startswith(HOME + "/") else path
    return os.path.normpath(os.path.join(root, rel.lstrip("/")))


def ns_wrap(root, cwd):
    return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", NS_SCRIPT,
            root, cwd]


def ns_works():
    """Whether commands can see the sandbox's home at /root (else paths are rewritten)."""
    d = tempfile.mkdtemp(prefix="modal-fake-ns-")
    try:
        r = subprocess.run(ns_wrap(d, HOME) + ["/bin/sh", "-c", "test \"$(pwd)\" = /root"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
        return r.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(d, ignore_errors=True)


def default_signals():
    # a fake started in the background by a shell ignores SIGINT and SIGQUIT: its commands not
    for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGPIPE):
        signal.signal(s, signal.SIG_DFL)


def pump(ex, fd, pipe):
    while True:
        d = os.read(pipe.fileno(), 65536)
        with lock:
            if not d:
                ex["closed"][fd] = True
                cond.notify_all()
                return
            ex["out"][fd] += d
            cond.notify_all()


def TaskExecStart(req, context):
    enter("TaskExecStart", context, "router")
    with lock:
        sb = live_sandbox(req.task_id, context)
        if req.exec_id in sb["execs"]:
            return pb.TaskExecStartResponse()
        wd = req.workdir or sb["workdir"] or HOME
        cwd = host_path(sb["root"], wd)
        if not os.path.isdir(cwd):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "workdir %s does not exist" % wd)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": HOME if cfg["ns"] else sb["root"]}
        env.update(sb["env"])
        env.update(dict(req.env))
        argv = list(req.command_args)
        if cfg["ns"]:
            argv = ns_wrap(sb["root"], wd) + argv
        try:
            p = subprocess.Popen(argv, cwd=cwd, env=env,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, start_new_session=True,
                                 preexec_fn=default_signals)
        except OSError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "exec failed: %s" % e.strerror)
        ex = {"proc": p, "out": [bytearray(), bytearray()], "closed": [False, False],
              "stdin_off": 0, "rc": None}
        sb["execs"][req.exec_id] = ex
    for fd, pipe in ((0, p.stdout), (1, p.stderr)):
        threading.Thread(target=pump, args=(ex, fd, pipe), daemon=True).start()

    def reap():
        rc = p.wait()
        with lock:
            ex["rc"] = rc
            cond.notify_all()
    threading.Thread(target=reap, daemon=True).start()
    return pb.TaskExecStartResponse()


def find_exec(req, context):
    sb = live_sandbox(req.task_id, context)
    ex = sb["execs"].get(req.exec_id)
    if not ex:
        context.abort(grpc.StatusCode.NOT_FOUND, "Exec not found")
    return sb, ex


def TaskExecStdioRead(req, context):
    f = enter("TaskExecStdioRead", context, "router")
    cut = f is not None and f.get("kind") == "cut"
    fd = req.file_descriptor
    if fd not in (0, 1):
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "bad file descriptor")
    off = req.offset
    sent = 0
    while True:
        with lock:
            sb, ex = find_exec(req, context)
            while len(ex["out"][fd]) <= off and not ex["closed"][fd] and \
                    sb["state"] == "running" and context.is_active():
                cond.wait(1.0)
            if not context.is_active():
                return
            data = bytes(ex["out"][fd][off:off + 16384])
            done = ex["closed"][fd] and not data
            dead = sb["state"] != "running" and not data
        if dead:
            context.abort(grpc.StatusCode.NOT_FOUND, "Sandbox has timed out"
                          if sb["state"] == "timeout" else "Sandbox has been terminated")
        if done:
            return
        off += len(data)
        sent += 1
        yield pb.TaskExecStdioReadResponse(data=data)
        if cut:
            context.abort(grpc.StatusCode.UNAVAILABLE, "stream reset by the router")


def TaskExecStdinWrite(req, context):
    enter("TaskExecStdinWrite", context, "router")
    with lock:
        sb, ex = find_exec(req, context)
        p = ex["proc"]
        skip = ex["stdin_off"] - req.offset
        if skip < 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "stdin offset beyond what was written")
        data = req.data[skip:] if skip < len(req.data) else b""
        ex["stdin_off"] += len(data)
    try:
        if data:
            p.stdin.write(data)
            p.stdin.flush()
        if req.eof:
            p.stdin.close()
    except (BrokenPipeError, ValueError):
        pass
    return pb.TaskExecStdinWriteResponse()


def TaskExecWait(req, context):
    enter("TaskExecWait", context, "router")
    with lock:
        sb, ex = find_exec(req, context)
        while ex["rc"] is None and context.is_active():
            cond.wait(1.0)
        rc = ex["rc"]
    if rc is None:
        context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "wait timed out")
    if sb["state"] == "timeout":
        context.abort(grpc.StatusCode.NOT_FOUND, "Sandbox has timed out")
    if rc < 0:
        return pb.TaskExecWaitResponse(signal=-rc)
    return pb.TaskExecWaitResponse(code=rc)


# ---- hooks ----

def hook_fault(req, context):
    f = json.loads(req or b"{}")
    with lock:
        faults.append(f)
    return b"{}"


def hook_state(req, context):
    with lock:
        st = {"sandboxes": {k: {kk: vv for kk, vv in v.items() if kk != "execs"}
                            for k, v in sandboxes.items()},
              "log": list(log), "leaks": list(leaks),
              "handlerSeconds": sum(d for _, d in durs), "handlerCalls": len(durs)}
    return json.dumps(st).encode()


def main():
    global pb
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--token-id", required=True)
    ap.add_argument("--token-secret", required=True)
    ap.add_argument("--token-ttl", type=float, default=3600)
    ap.add_argument("--dir")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--build-step-s", type=float, default=0.2)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="modal-fake.")
    pb = load_pb(tmp)
    cfg.update(token_id=a.token_id, secret=a.token_secret, ttl=a.token_ttl,
               dir=a.dir or os.path.join(tmp, "sandboxes"), tls=bool(a.tls_cert),
               build_step=a.build_step_s)
    os.makedirs(cfg["dir"], exist_ok=True)
    cfg["ns"] = os.geteuid() == 0 and ns_works()

    def rawdeser(name, cls):
        def d(b):
            check_leak("body " + name, b)
            return cls.FromString(b)
        return d

    def timed(fn, stream):
        # the handler's own time, for the pack's overhead measurement
        def note(t0):
            with lock:
                durs.append((fn.__name__, time.monotonic() - t0))

        def unary(req, context):
            # one answer per idempotency key: a retry of a call that did its work gets it again
            m = md(context)
            key = (fn.__name__, m.get("x-idempotency-key"))
            t0 = time.monotonic()
            try:
                with lock:
                    again = idem.get(key) if key[1] else None
                    if again is not None:
                        log.append({"rpc": fn.__name__, "idem": key[1],
                                    "attempt": m.get("x-retry-attempt"),
                                    "timeout": context.time_remaining() is not None,
                                    "replayed": True})
                if again is not None:
                    return again
                resp = fn(req, context)
                if key[1]:
                    with lock:
                        idem[key] = resp
                f = take_fault(fn.__name__, ("after",))
                if f:
                    code = {c.value[0]: c for c in grpc.StatusCode}[f.get("code", 14)]
                    context.abort(code, f.get("message", "injected fault"))
                return resp
            finally:
                note(t0)

        def streaming(req, context):
            t0 = time.monotonic()
            try:
                yield from fn(req, context)
            finally:
                note(t0)
        return streaming if stream else unary

    def h(fn, req, resp, stream=False):
        mk = grpc.unary_stream_rpc_method_handler if stream else grpc.unary_unary_rpc_method_handler
        return mk(timed(fn, stream), request_deserializer=rawdeser(fn.__name__, req),
                  response_serializer=resp.SerializeToString)

    control = {n: h(globals()[n], getattr(pb, n + "Request"), getattr(pb, n + "Response"))
               for n in ("AuthTokenGet", "AppGetOrCreate", "SandboxCreate", "SandboxGetTaskId",
                         "SandboxTerminate", "SandboxList", "TaskGetCommandRouterAccess",
                         "EnvironmentGetOrCreate", "ImageGetOrCreate")}
    control["ImageJoinStreaming"] = h(ImageJoinStreaming, pb.ImageJoinStreamingRequest,
                                      pb.ImageJoinStreamingResponse, True)
    router = {n: h(globals()[n], getattr(pb, n + "Request"), getattr(pb, n + "Response"),
                   n == "TaskExecStdioRead")
              for n in ("TaskExecStart", "TaskExecStdioRead", "TaskExecStdinWrite", "TaskExecWait")}
    ident = dict(request_deserializer=None, response_serializer=None)
    hooks = {"Fault": grpc.unary_unary_rpc_method_handler(hook_fault, **ident),
             "State": grpc.unary_unary_rpc_method_handler(hook_state, **ident)}
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=64))
    server.add_generic_rpc_handlers((
        grpc.method_handlers_generic_handler("modal.client.ModalClient", control),
        grpc.method_handlers_generic_handler("modal.task_command_router.TaskCommandRouter", router),
        grpc.method_handlers_generic_handler("fake.Hooks", hooks)))
    if a.tls_cert:
        with open(a.tls_key, "rb") as k, open(a.tls_cert, "rb") as c:
            creds = grpc.ssl_server_credentials([(k.read(), c.read())])
        cfg["port"] = server.add_secure_port("127.0.0.1:0", creds)
    else:
        cfg["port"] = server.add_insecure_port("127.0.0.1:0")
    server.start()
    threading.Thread(target=expire_loop, daemon=True).start()
    with open(a.port_file + ".tmp", "w") as f:
        f.write("%d\n" % cfg["port"])
    os.rename(a.port_file + ".tmp", a.port_file)

    def stop(*_):
        with lock:
            for sb in sandboxes.values():
                kill_all(sb)
        server.stop(0)
        shutil.rmtree(tmp, ignore_errors=True)
        os._exit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
