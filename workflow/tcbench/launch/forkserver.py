"""A preloaded interpreter that forks one child per training job (the server side of
tcbench.launch.forkclient, which starts it; see that module for the job's side).

A fresh ``python -m tcbench.job.run`` spends seconds importing torch and torch._dynamo (which any
``torch.optim`` optimiser imports) before its first step: most of what a small job costs. This
server pays that once per workflow:

1. it imports what a job would (``tcbench.launch.preload``: torch, torch._dynamo, torchvision,
   tcbench's job modules, the study's workloads' libraries) and checks what a fork must not
   inherit: no thread but the main one, CUDA never started (no libcuda mapped, torch's CUDA
   state uninitialised, no NVML handle); it refuses to serve otherwise;
2. it listens on its Unix socket; for each job it forks one child, which becomes the job: own
   process group, killed if the server dies (PR_SET_PDEATHSIG), the client's stdin/stdout/
   stderr, working directory, environment, umask and CPU affinity, signals at their defaults,
   Python's and NumPy's global RNGs reseeded from the OS as in a fresh process; then
   ``tcbench.job.run.main`` with the client's arguments, which pins the GPU before CUDA starts,
   seeds torch, writes the record atomically and ends the process (or the ``main`` of another
   of ``tcbench.launch.forkclient.ENTRIES`` the client names: the calibration);
3. it reports each child's end (exit code or signal) to its client, forwards the client's
   signals to the child, and kills the child's process group when the client goes away;
4. it exits when no job has run for ``--idle-s`` seconds, or when its owner (the workflow's
   Snakemake process) is gone, removing its socket if the socket is still its own.

One thread, one ``selectors`` loop over the socket, the clients' connections and the children's
pidfds. A child that crashes, is OOM-killed or hangs is one pidfd among others: it ends only
its own job.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time
import traceback
from pathlib import Path

from ..host import process
from . import forkclient
from .preload import fork_hazards, preload

PR_SET_PDEATHSIG = 1


# ------------------------------------------------------------------------------------ the child
def _pdeathsig() -> None:
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def become_job(req: dict, fds: list[int], info: dict) -> None:
    """In the forked child: turn into the client's job, run it and end the process."""
    forked = time.monotonic()
    os.setpgid(0, 0)
    _pdeathsig()
    # The server forked with these signals blocked (a signal forwarded at once must not reach
    # the server's Python handlers in the child): at their defaults and unblocked, one already
    # pending ends the child as it would end a fresh process that had not started yet.
    for sig in forkclient.FORWARDED:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, forkclient.FORWARDED)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(line_buffering=os.isatty(stream.fileno()))
    os.umask(req["umask"])
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"] | info.pop("_import_env"))
    os.sched_setaffinity(0, req["affinity"])
    reseed()
    import importlib

    from ..job import run

    module = req.get("module", forkclient.ENTRIES[0])
    if module not in forkclient.ENTRIES:  # a foreign request: refused, never imported
        print(f"tcbench.launch.forkserver: module {module!r} is not one of {forkclient.ENTRIES}",
              file=sys.stderr)
        run.exit_now(2)
    entry = importlib.import_module(module)
    sys.argv = [entry.__file__, *req["argv"]]
    ready = info.pop("_ready")
    process.ORIGIN = info | {"server_age_s": round(forked - ready, 3)}
    try:
        # Ctrl-C as Python has it from here on: KeyboardInterrupt, so the job's cleanup runs
        signal.signal(signal.SIGINT, signal.default_int_handler)
        code = entry.main(req["argv"])
    except SystemExit as exc:  # argparse: a bad command line
        code = exc.code if isinstance(exc.code, int) else (print(exc.code, file=sys.stderr) or 1)
    except KeyboardInterrupt:  # as Python ends on an uncaught Ctrl-C: by SIGINT
        traceback.print_exc()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 130
    except BaseException:  # noqa: BLE001 - the child must end here, never return to the loop
        traceback.print_exc()
        code = 1
    run.exit_now(code)


def reseed() -> None:
    """A fresh process draws its global RNG states from the OS: so does a child (torch's CPU
    generator included, which torch seeds from the OS at import; tcbench.job.run then seeds torch
    with the job's seed)."""
    import random

    import torch

    random.seed()
    torch.default_generator.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()


# ------------------------------------------------------------------------------------ the loop
class Server:
    def __init__(self, path: Path, owner: tuple[int, int], idle_s: float, preloaded: list[str]):
        self.path, self.owner, self.idle_s = path, owner, idle_s
        self.sel = selectors.DefaultSelector()
        self.jobs: dict[int, tuple[socket.socket, int]] = {}  # child pid -> (client, pidfd)
        self.last_active = time.monotonic()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(64)
        self.inode = path.stat().st_ino
        self.sel.register(self.listener, selectors.EVENT_READ, ("accept", None))
        self.info = {"start": "forked", "server_pid": os.getpid(), "preloaded": preloaded,
                     "modules_loaded": len(sys.modules), "_ready": time.monotonic()}

    def owner_alive(self) -> bool:
        pid, ticks = self.owner
        return forkclient.start_ticks(pid) == ticks if ticks else os.path.exists(f"/proc/{pid}")

    def serve(self) -> None:
        while True:
            for key, _ in self.sel.select(timeout=1.0):
                what, pid = key.data
                {"accept": self.accept, "client": self.from_client,
                 "child": self.child_ended}[what](key.fileobj, pid)
            if self.jobs:
                self.last_active = time.monotonic()
            if not self.owner_alive() or time.monotonic() - self.last_active > self.idle_s:
                return

    def accept(self, listener, _pid) -> None:
        conn, _ = listener.accept()
        try:
            head, fds, _flags, _addr = socket.recv_fds(conn, forkclient.HEADER.size, 3)
            req = json.loads(forkclient.recv_exact(conn, forkclient.HEADER.unpack(head)[0]))
        except (OSError, ValueError, ConnectionError, struct.error):
            conn.close()
            return
        sys.stdout.flush()
        sys.stderr.flush()
        signal.pthread_sigmask(signal.SIG_BLOCK, forkclient.FORWARDED)
        pid = os.fork()
        if pid == 0:
            self.close_all(conn)
            become_job(req, fds, dict(self.info))  # never returns
        signal.pthread_sigmask(signal.SIG_UNBLOCK, forkclient.FORWARDED)
        for fd in fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        self.jobs[pid] = (conn, pidfd)
        self.sel.register(conn, selectors.EVENT_READ, ("client", pid))
        self.sel.register(pidfd, selectors.EVENT_READ, ("child", pid))
        forkclient.send_line(conn, {"pid": pid, "server_pid": os.getpid()})

    def close_all(self, conn) -> None:
        """In the child: nothing of the server's stays open."""
        self.sel.close()
        self.listener.close()
        conn.close()
        for client, pidfd in self.jobs.values():
            client.close()
            os.close(pidfd)

    def from_client(self, conn, pid) -> None:
        try:
            data = conn.recv(4096)
        except OSError:
            data = b""
        if not data:  # the client is gone (killed): so is its job
            self.kill(pid, signal.SIGKILL)
            self.sel.unregister(conn)
            return
        for line in data.splitlines():
            sig = json.loads(line).get("signal")
            if sig in [int(s) for s in forkclient.FORWARDED]:
                self.kill(pid, sig, group=False)

    def kill(self, pid: int, sig: int, group: bool = True) -> None:
        try:
            (os.killpg if group else os.kill)(pid, sig)
        except ProcessLookupError:
            pass

    def child_ended(self, pidfd, pid) -> None:
        _, status = os.waitpid(pid, 0)
        conn, _ = self.jobs.pop(pid)
        self.sel.unregister(pidfd)
        os.close(pidfd)
        if os.WIFSIGNALED(status):
            message = {"signal": os.WTERMSIG(status), "pid": pid}
        else:
            message = {"exit": os.waitstatus_to_exitcode(status), "pid": pid}
        try:
            forkclient.send_line(conn, message)
        except OSError:
            pass
        if conn.fileno() >= 0:
            try:
                self.sel.unregister(conn)
            except KeyError:
                pass
            conn.close()

    def close(self) -> None:
        for pid in list(self.jobs):
            self.kill(pid, signal.SIGKILL)
        try:
            if self.path.stat().st_ino == self.inode:  # not a successor's socket
                self.path.unlink()
        except OSError:
            pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.launch.forkserver", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--socket", type=Path, required=True)
    ap.add_argument("--owner-pid", type=int, required=True)
    ap.add_argument("--owner-ticks", type=int, default=0)
    ap.add_argument("--idle-s", type=float, default=120.0)
    args = ap.parse_args(argv)
    started = time.monotonic()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # to close(); a child resets it
    before = dict(os.environ)
    preloaded = preload()
    # what the imports wrote into the environment (Inductor its cache folder): a fresh process
    # has it after its imports, so a child gets it on top of its client's environment
    import_env = {k: v for k, v in os.environ.items() if before.get(k) != v}
    problems = fork_hazards()
    if problems:
        print(f"tcbench.launch.forkserver: not serving: {'; '.join(problems)}", file=sys.stderr)
        return 1
    # The preloaded objects out of the collector's reach: a child's full collection would
    # otherwise write to every one of them and copy-on-write the server's whole heap inside the
    # job, possibly in its timed window (Python's gc docs: gc.freeze before a fork server forks)
    gc.collect()
    gc.freeze()
    server = Server(args.socket, (args.owner_pid, args.owner_ticks), args.idle_s, preloaded)
    server.info["_import_env"] = import_env
    print(f"tcbench.launch.forkserver: pid {os.getpid()} serving {args.socket} "
          f"(preloaded in {time.monotonic() - started:.2f} s)", file=sys.stderr, flush=True)
    try:
        server.serve()
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    # run as the module its children import (tcbench.host.process.ORIGIN is set there), not as
    # __main__
    from tcbench.launch import forkserver

    sys.exit(forkserver.main())
