"""A training job started by forking a preloaded interpreter: the thin client.

    python -m tcbench.launch.forkclient --spec '{...}' --out results/x/records/a.json \\
        [--compile-cache DIR]
    python -m tcbench.launch.forkclient --module tcbench.job.calibrate \\
        --out results/x/calibration.json ...

takes exactly the arguments of ``python -m tcbench.job.run`` (or, after ``--module``, of another of
``ENTRIES``: the interleaved comparison, or the calibration, which would otherwise pay the
import of torch on its own, and which takes ``--compile-cache`` only so that it is keyed to the
training jobs' server) and has the same effect: one job, one record, the same exit status. It imports no torch. It asks a server (tcbench.launch.forkserver: an
interpreter that has imported torch, torch._dynamo, torchvision and tcbench's job modules, and
never touched CUDA) to fork one child for the job; the child gets this process's argv, working
directory, environment, umask, CPU affinity and its stdin/stdout/stderr (the descriptors
themselves, passed over the socket), so it writes to the job's log as a fresh process would.

- Exit status passes through: the client exits with the child's status; a child killed by a
  signal is reported as such and the client then ends by the same signal.
- Signals pass through: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to the client go to the child.
  A client that dies (SIGKILL) takes its child with it: the server kills the child's process
  group when the client's connection drops.
- The server starts on the first job (spawned here, detached, under a lock so that two clients
  do not start two) and is keyed (``server_key``) by the Python executable, tcbench's source
  files, the environment, the working directory and the workflow process that owns it: two workflows at once, another
  source tree, a changed module, another environment each get a server of their own. It ends
  when idle (``TCBENCH_FORK_IDLE_S``, default 120 s) or when its owner process is gone. A
  socket whose server is dead is replaced.
- Anything that keeps the server from answering (it failed to start, it died) makes the job a
  fresh ``python -m tcbench.job.run``, said on stderr; a server that dies while its child runs the
  job takes the child with it, and the job is then run again, once, fresh. The record says how
  its process began and why (``harness.process``).

The owner is ``$TCBENCH_WORKFLOW_PID`` (the workflow's Snakemake process exports it), else this
process's parent.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OWNER_ENV = "TCBENCH_WORKFLOW_PID"
# the study's workloads (comma-separated): the server also preloads what their jobs import
# (each workload module's PRELOAD, e.g. transformers), which a job would otherwise import itself
PRELOAD_ENV = "TCBENCH_PRELOAD_WORKLOADS"
IDLE_ENV = "TCBENCH_FORK_IDLE_S"
DIR_ENV = "TCBENCH_FORK_DIR"
# variables that differ from job to job and are read only after the fork (CUDA reads
# CUDA_VISIBLE_DEVICES when it starts, which the server never does), or that only the shell uses
PER_JOB_ENV = ("CUDA_VISIBLE_DEVICES", "PWD", "OLDPWD", "SHLVL", "_")
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
PACKAGE = Path(__file__).resolve().parents[1]
# the modules a forked child may run (their main(argv)): the first is the default
ENTRIES = ("tcbench.job.run", "tcbench.job.calibrate", "tcbench.job.interleave")
HEADER = struct.Struct("!Q")


# ------------------------------------------------------------------------------------ the key
def start_ticks(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot): with the pid, names it for good."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def owner(environ=None) -> tuple[int, int | None]:
    raw = (os.environ if environ is None else environ).get(OWNER_ENV)
    pid = int(raw) if raw and raw.isdigit() else os.getppid()
    return pid, start_ticks(pid)


def owner_alive(who: tuple[int, int | None]) -> bool:
    """Whether the owner ``(pid, start ticks)`` still runs (a zombie, killed and not yet
    reaped, does not)."""
    pid, ticks = who
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z" and (ticks is None or int(fields[19]) == ticks)


def source_digest(package: Path = PACKAGE) -> str:
    """tcbench's modules as they are on disk now (path, size, mtime): a server that imported
    other code is not this code's server."""
    h = hashlib.sha256(str(package).encode())
    for path in sorted(package.rglob("*.py")):
        st = path.stat()
        h.update(f"{path.relative_to(package)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


def server_key(environ=None) -> str:
    """What a server must share with a job for the job's child to be a fresh process's equal:
    interpreter, source, environment (as torch read it at import), owner, working directory."""
    environ = os.environ if environ is None else environ
    env = sorted((k, v) for k, v in environ.items() if k not in PER_JOB_ENV)
    parts = [os.path.realpath(sys.executable), sys.version, source_digest(), env, owner(environ),
             os.getcwd()]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:20]


def runtime_dir() -> Path:
    """Sockets, locks and server logs (a short path: a Unix socket's name has 107 bytes)."""
    configured = os.environ.get(DIR_ENV)
    base = Path(configured) if configured else Path(tempfile.gettempdir()) / f"tcbench-fork-{os.getuid()}"
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = base.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o077:  # another user's sockets: not ours to use
        raise PermissionError(f"{base} must be this user's own, mode 0700 (set {DIR_ENV})")
    return base


# ------------------------------------------------------------------------------------ protocol
def send_request(sock: socket.socket, request: dict, fds: list[int]) -> None:
    payload = json.dumps(request).encode()
    socket.send_fds(sock, [HEADER.pack(len(payload))], fds)
    sock.sendall(payload)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("connection closed mid-message")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def send_line(sock: socket.socket, message: dict) -> None:
    sock.sendall(json.dumps(message).encode() + b"\n")


def read_lines(sock: socket.socket):
    """The peer's newline-separated JSON messages, until it closes the connection."""
    buf = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except InterruptedError:
            continue
        if not chunk:
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield json.loads(line)


# ------------------------------------------------------------------------------------ the server
def connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        return sock
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.ENOENT, errno.ECONNREFUSED):
            return None
        raise


def spawn_server(sock_path: Path, log: Path) -> subprocess.Popen:
    """A detached server (a process session of its own: no terminal's Ctrl-C, not Snakemake's
    group) with this job's environment and working directory, which its key was made of (``-m``
    puts the working directory first on sys.path, as in the job's fresh process)."""
    pid, ticks = owner()
    cmd = [sys.executable, "-m", "tcbench.launch.forkserver", "--socket", str(sock_path),
           "--owner-pid", str(pid), "--owner-ticks", str(ticks or 0),
           "--idle-s", os.environ.get(IDLE_ENV, "120")]
    with open(log, "ab") as out:  # finds tcbench as this client did: same sys.path
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                start_new_session=True)


def server(key: str) -> socket.socket | None:
    """A connection to this key's server, started (or restarted, when its socket is stale) if
    need be; None when no server could be had."""
    base = runtime_dir()
    sock_path, lock_path, log = (base / f"{key}{ext}" for ext in (".sock", ".lock", ".log"))
    failed = base / f"{key}.failed"
    sock = connect(sock_path)
    if sock is not None:
        return sock
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one client starts the server; the others wait here
        sock = connect(sock_path)
        if sock is not None:
            return sock
        if failed.exists():  # this key's server would not start: the next job's would not either
            print(f"tcbench.launch.forkclient: this workflow's fork server did not start: "
                  f"{failed.read_text().strip()}", file=sys.stderr)
            return None
        if sock_path.exists():  # a socket no server listens on: its server died
            sock_path.unlink()
        proc = spawn_server(sock_path, log)
        while proc.poll() is None:  # the server binds once it has imported everything
            sock = connect(sock_path)
            if sock is not None:
                return sock
            time.sleep(0.05)
        said = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
        why = f"it exited ({proc.returncode}) before it listened: {' / '.join(said)} ({log})"
        failed.write_text(why + "\n")  # the key names this workflow: the next one tries again
    print(f"tcbench.launch.forkclient: the fork server {why}", file=sys.stderr)
    return None


# ------------------------------------------------------------------------------------ the job
def fresh(argv: list[str], why: str, module: str = ENTRIES[0]):
    """Run the job as a fresh interpreter instead (this process becomes it); its record says
    why (``harness.process.because``)."""
    from ..host.process import FRESH_BECAUSE_ENV

    print(f"tcbench.launch.forkclient: {why}; running the job in a fresh interpreter",
          file=sys.stderr)
    sys.stderr.flush()
    os.environ[FRESH_BECAUSE_ENV] = why
    os.execv(sys.executable, [sys.executable, "-m", module, *argv])


def request(argv: list[str], module: str = ENTRIES[0]) -> dict:
    return {"module": module, "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ),
            "umask": _umask(), "affinity": sorted(os.sched_getaffinity(0)),
            "client_pid": os.getpid()}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def forward(sock: socket.socket, sig: int) -> None:
    try:
        send_line(sock, {"signal": sig})
    except OSError:  # the server is gone; so is the child (PR_SET_PDEATHSIG)
        pass


def end_as(status: dict) -> int:
    """Exit as the child did: its exit code, or death by its signal."""
    if "signal" in status:
        sig = status["signal"]
        print(f"tcbench.launch.forkclient: the job (pid {status.get('pid')}) was killed by signal "
              f"{sig} ({signal.Signals(sig).name})", file=sys.stderr)
        sys.stderr.flush()
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # those two cannot be handled
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig
    return status["exit"]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    module = ENTRIES[0]
    if argv[:1] == ["--module"]:
        module, argv = (argv[1:2] or [""])[0], argv[2:]
        if module not in ENTRIES:
            print(f"tcbench.launch.forkclient: --module {module!r}; "
                  f"choose one of {', '.join(ENTRIES)}", file=sys.stderr)
            return 2
    # --compile-cache points Inductor and Triton at their folder through the environment, which
    # torch reads at import: set it here, so that the server is started (and keyed) with it.
    from ..job.run import use_compile_cache  # run.py imports torch only inside functions

    if "--compile-cache" in argv[:-1]:
        at = argv.index("--compile-cache")
        use_compile_cache(Path(argv[at + 1]))
        if module == "tcbench.job.calibrate":  # the client's alone: it keys the jobs' server
            argv = argv[:at] + argv[at + 2:]
    workflow = owner()   # the server ends with it; so does a job whose server did
    try:
        sock = server(server_key())
    except OSError as exc:
        sock = None
        print(f"tcbench.launch.forkclient: {exc}", file=sys.stderr)
    if sock is None:
        fresh(argv, "no fork server", module)
    with sock:
        send_request(sock, request(argv, module), [0, 1, 2])
        for sig in FORWARDED:  # to the child, through the server (its parent: no pid reuse)
            signal.signal(sig, lambda n, _f: forward(sock, n))
        started = False
        for message in read_lines(sock):
            if "pid" in message and not started:
                started = True
                print(f"tcbench.launch.forkclient: job forked as pid {message['pid']} "
                      f"by server pid {message['server_pid']}", file=sys.stderr, flush=True)
            if "exit" in message or "signal" in message:
                return end_as(message)
            if "error" in message:
                print(f"tcbench.launch.forkclient: {message['error']}", file=sys.stderr)
                break
    if not started:
        fresh(argv, "the fork server closed the connection before forking", module)
    # The server died mid-job and took the child with it (PR_SET_PDEATHSIG). A server ends by
    # itself when its workflow is gone: then the job ends too, as the workflow's own would.
    # Otherwise (the server was killed, or crashed) the job is run again, once, in a fresh
    # interpreter; its record is written only at its end, so nothing of the lost run remains,
    # and a later job starts a new server (a dead socket is replaced).
    if not owner_alive(workflow):
        print("tcbench.launch.forkclient: the fork server ended with its workflow "
              f"(pid {workflow[0]}) before the job did", file=sys.stderr)
        return 1
    fresh(argv, "the fork server ended before the job did; the job was run again", module)
    return 1  # not reached: fresh() replaces this process


if __name__ == "__main__":
    sys.exit(main())
