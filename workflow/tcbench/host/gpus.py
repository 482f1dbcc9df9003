"""One GPU per job: claim a free device before CUDA starts, hold it for the life of the process.

Snakemake counts ``--resources gpu=K`` but never says *which* GPU a job gets, so every job would
land on device 0. Each job therefore claims a device itself:

* the devices are those NVML (or ``nvidia-smi``) lists (physical index and UUID);
* a device is claimed by an exclusive ``flock`` on ``<lock dir>/gpu-<uuid>.lock``, tried in
  index order, waiting (and saying so) while all are held;
* the claim lives as long as the process: the kernel drops an ``flock`` when its last file
  descriptor closes, so a job that exits, crashes or is killed with SIGKILL frees its device
  at once; nothing is ever cleaned up by hand and no lock file is ever deleted (deleting a
  lock file that another process is about to lock is the classic way to get two holders);
* the job then sets ``CUDA_VISIBLE_DEVICES`` to the device's UUID (not its index: CUDA's
  default device order, fastest first, need not be nvidia-smi's PCI order).

When ``CUDA_VISIBLE_DEVICES`` is already set (by SLURM for a ``--gpus`` job, or by the user)
the choice was made elsewhere and nothing is claimed. Without an NVIDIA GPU nothing happens.

Lock directory: ``$TCBENCH_GPU_LOCK_DIR``, else ``<system temp dir>/tcbench-gpu-locks-<uid>``.
It must be on a local file system of the host that owns the GPUs (``flock`` over NFS is not
dependable); two users share GPUs safely only if they point this at one shared directory.
``$TCBENCH_GPU_WAIT_S`` bounds the wait for a free device (default: no bound).
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

LOCK_DIR_ENV = "TCBENCH_GPU_LOCK_DIR"
WAIT_ENV = "TCBENCH_GPU_WAIT_S"


class GpuBusyError(RuntimeError):
    """No device became free within the allowed wait."""


@dataclass(frozen=True)
class Gpu:
    index: int
    uuid: str


@dataclass
class Claim:
    """A device held by this process; the lock goes when ``fd`` closes or the process ends."""

    gpu: Gpu
    path: Path
    fd: int

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


_HELD: Claim | None = None  # module-global so the descriptor lives as long as the process


def parse_query(text: str) -> list[Gpu]:
    """``nvidia-smi --query-gpu=index,uuid --format=csv,noheader`` output -> devices."""
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        index, sep, uuid = (part.strip() for part in line.partition(","))
        if not sep or not index.isdigit() or not uuid.startswith("GPU-"):
            raise ValueError(f"unexpected nvidia-smi line {line!r} (want 'index, GPU-uuid')")
        gpus.append(Gpu(int(index), uuid))
    return gpus


_NVML = None  # pynvml once initialised; False once it failed (no driver, no library)


def nvml():
    """pynvml, initialised once per process; None without a usable NVIDIA driver. NVML is what
    nvidia-smi itself reads, without starting a process for each question, and it numbers
    devices as nvidia-smi does, whatever CUDA_VISIBLE_DEVICES says."""
    global _NVML
    if _NVML is None:
        try:
            import pynvml
            pynvml.nvmlInit()
            _NVML = pynvml
        except Exception:  # noqa: BLE001 - ImportError, NVMLError_LibraryNotFound, driver errors
            _NVML = False
    return _NVML or None


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def discover() -> list[Gpu]:
    """The host's NVIDIA GPUs (physical index and UUID), from NVML, else from nvidia-smi;
    empty when neither finds a device."""
    lib = nvml()
    if lib is not None:
        try:
            handles = [lib.nvmlDeviceGetHandleByIndex(i) for i in range(lib.nvmlDeviceGetCount())]
            return [Gpu(lib.nvmlDeviceGetIndex(h), _text(lib.nvmlDeviceGetUUID(h)))
                    for h in handles]
        except Exception:  # noqa: BLE001 - NVML errors: ask nvidia-smi instead
            pass
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return []
    return parse_query(out)


def lock_dir() -> Path:
    configured = os.environ.get(LOCK_DIR_ENV)
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / f"tcbench-gpu-locks-{os.getuid()}"


def _lock_path(directory: Path, gpu: Gpu) -> Path:
    return directory / f"gpu-{gpu.uuid}.lock"


def holder(directory: Path, gpu: Gpu) -> str:
    """Who holds a device, as its holder wrote it (for messages only)."""
    try:
        return _lock_path(directory, gpu).read_text().strip() or "unknown"
    except OSError:
        return "unknown"


def try_claim(gpu: Gpu, directory: Path) -> Claim | None:
    """Lock one device without waiting; None when another process holds it."""
    path = _lock_path(directory, gpu)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        writable = True
    except PermissionError:  # another user's lock file in a shared directory: lock it all the same
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        writable = False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return None
        raise
    if writable:  # who holds it, for those who wait; the lock, not this text, is the truth
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {os.uname().nodename} since "
                      f"{time.strftime('%Y-%m-%dT%H:%M:%S')}\n".encode(), 0)
    return Claim(gpu, path, fd)


def claim(gpus: list[Gpu], directory: Path | None = None, timeout: float | None = None,
          poll_s: float = 0.5, log=None) -> Claim:
    """The first free device of ``gpus``, waiting up to ``timeout`` seconds (None: forever)."""
    if not gpus:
        raise ValueError("no GPU to claim")
    directory = Path(directory) if directory is not None else lock_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    start = time.monotonic()
    next_note = 0.0
    while True:
        for gpu in gpus:
            got = try_claim(gpu, directory)
            if got:
                return got
        waited = time.monotonic() - start
        if timeout is not None and waited >= timeout:
            busy = "; ".join(f"GPU {g.index}: {holder(directory, g)}" for g in gpus)
            raise GpuBusyError(f"all {len(gpus)} GPU(s) stayed busy for {waited:.0f} s "
                               f"(locks in {directory}: {busy})")
        if log and waited >= next_note:
            log(f"tcbench: all {len(gpus)} GPU(s) busy, waiting for one (locks in {directory})")
            next_note = waited + 60
        time.sleep(poll_s)


def _wait_limit() -> float | None:
    raw = os.environ.get(WAIT_ENV)
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{WAIT_ENV}={raw!r} must be a number of seconds") from None
    if value < 0:
        raise ValueError(f"{WAIT_ENV}={raw!r} must not be negative")
    return value


def pin(environ=None, gpus: list[Gpu] | None = None) -> Claim | None:
    """Claim a GPU for this process and make it the only one CUDA sees.

    Call before anything initialises CUDA. Returns the claim (also kept in the module, so it
    lasts as long as the process), or None when nothing was claimed: CUDA_VISIBLE_DEVICES
    was already set, or there is no NVIDIA GPU.
    """
    global _HELD
    environ = os.environ if environ is None else environ
    if _HELD is not None:
        return _HELD
    if "CUDA_VISIBLE_DEVICES" in environ:
        return None
    gpus = discover() if gpus is None else gpus
    if not gpus:
        return None
    held = claim(gpus, timeout=_wait_limit(), log=lambda m: print(m, file=sys.stderr))
    environ["CUDA_VISIBLE_DEVICES"] = held.gpu.uuid
    _HELD = held
    print(f"tcbench: pinned to GPU {held.gpu.index} ({held.gpu.uuid})", file=sys.stderr)
    return held


def held() -> Claim | None:
    """The device this process claimed, if it claimed one."""
    return _HELD
