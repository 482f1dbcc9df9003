"""Jobs forked from a preloaded interpreter (tcbench.launch.forkclient /
tcbench.launch.forkserver), with real processes: a job, failing jobs, killed jobs and clients, a
stale socket, changed source, two workflows at once, and a forked child's torch state against a
fresh process's."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tcbench.launch import forkclient, forkserver, preload
from tcbench import record as R

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "workflow"
TINY = {"workload": "amp_recipe", "precision": "fp32", "batch_size": 8,
        "params": {"in_size": 16, "out_size": 16, "num_batches": 2, "epochs": 1,
                   "warmup_steps": 0}}
# minutes of training unless it is killed first
LONG = TINY | {"params": TINY["params"] | {"num_batches": 100000, "epochs": 100}}
FORKED = re.compile(r"job forked as pid (\d+) by server pid (\d+)")
PROBE_MODEL = '''
import json, os, random, sys, threading
import torch

input_shape = (4,)


def model(num_classes):
    from torch._dynamo.utils import counters
    state = {
        "cudnn": [torch.backends.cudnn.enabled, torch.backends.cudnn.benchmark,
                  torch.backends.cudnn.deterministic, torch.backends.cudnn.allow_tf32],
        "matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "deterministic": [torch.are_deterministic_algorithms_enabled(),
                          torch.is_deterministic_algorithms_warn_only_enabled()],
        "initial_seed": torch.initial_seed(), "rng": torch.get_rng_state().sum().item(),
        "draw": torch.rand(3).tolist(), "default_dtype": str(torch.get_default_dtype()),
        "grad": torch.is_grad_enabled(), "autocast": torch.is_autocast_enabled("cpu"),
        "threads": [torch.get_num_threads(), torch.get_num_interop_threads()],
        "python_threads": sorted(t.name for t in threading.enumerate()),
        "dynamo_counters": {k: dict(v) for k, v in counters.items() if v},
        "dynamo_cache_size_limit": torch._dynamo.config.cache_size_limit,
        "cuda_initialized": torch.cuda.is_initialized(),
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "env": dict(os.environ), "cwd": os.getcwd(), "argv": sys.argv[1:], "path": sys.path,
        "umask": os.umask(0o22), "affinity": sorted(os.sched_getaffinity(0)),
        "random": random.random(), "pid": os.getpid(),
    }
    os.umask(state["umask"])
    with open(os.environ["PROBE_OUT"], "a") as f:
        f.write(json.dumps(state) + "\\n")
    return torch.nn.Linear(4, num_classes)
'''


def env_for(tmp: Path, owner_pid: int, src: Path = SRC, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCBENCH_")}
    return env | {"PYTHONPATH": str(src), forkclient.DIR_ENV: str(tmp / "rt"),
                  forkclient.OWNER_ENV: str(owner_pid), forkclient.IDLE_ENV: "600"} | extra


def client(spec, out: Path, env: dict, module="tcbench.launch.forkclient", **kw):
    return subprocess.run([sys.executable, "-m", module, "--spec", json.dumps(spec),
                           "--out", str(out)], env=env, capture_output=True, text=True,
                          cwd=out.parent, **kw)


def alive(pid: int) -> bool:
    """Running, not merely a zombie waiting for its parent."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until(condition, what: str, limit_s: float = 300):
    """A guard against a hang, not a bound on how long anything takes."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def owner():
    """A stand-in for the workflow's Snakemake process: the servers end with it."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    yield proc
    proc.kill()
    proc.wait()


def start_long(tmp: Path, env: dict, name="long"):
    """A client running a long job, and its child's and server's pids once it has forked."""
    err = (tmp / f"{name}.err").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "tcbench.launch.forkclient", "--spec",
                             json.dumps(LONG), "--out", str(tmp / f"{name}.json")],
                            env=env, stdout=err, stderr=err, cwd=tmp)
    wait_until(lambda: FORKED.search((tmp / f"{name}.err").read_text()), "the fork")
    child, server = map(int, FORKED.search((tmp / f"{name}.err").read_text()).groups())
    return proc, child, server


# ------------------------------------------------------------- the key and the protocol alone
def test_the_server_key_follows_source_environment_and_owner(tmp_path, monkeypatch):
    """What makes a server another job's, without one: another byte of source or another
    variable gives another key; a per-job variable (a job's GPU) does not."""
    src = tmp_path / "tcbench"
    shutil.copytree(SRC / "tcbench", src, ignore=shutil.ignore_patterns("__pycache__"))
    before = forkclient.source_digest(src)
    assert forkclient.source_digest(src) == before
    (src / "job" / "run.py").write_text((src / "job" / "run.py").read_text() + "\n")
    assert forkclient.source_digest(src) != before

    env = {k: v for k, v in os.environ.items()
           if k not in (forkclient.OWNER_ENV, "TCBENCH_KEY_PROBE")}   # owner: this one's parent
    key = forkclient.server_key(env)
    assert forkclient.server_key(env | {"CUDA_VISIBLE_DEVICES": "3"}) == key
    assert forkclient.server_key(env | {"TCBENCH_KEY_PROBE": "1"}) != key
    # the owner: the workflow's process where it says so, else the client's parent; with its
    # start time, so that a reused pid is another owner
    me = forkclient.owner({forkclient.OWNER_ENV: str(os.getpid())})
    assert me[0] == os.getpid() and me[1] is not None
    assert forkclient.owner({})[0] == os.getppid()


def test_a_request_crosses_the_socket_whole_with_its_descriptors(tmp_path):
    """The client's framing as the server reads it: a length header carrying the descriptors,
    then the payload; replies are JSON lines, however the bytes arrive."""
    ours, theirs = socket.socketpair()
    with ours, theirs, open(tmp_path / "log", "w") as log:
        request = {"argv": ["--spec", "{}"], "cwd": str(tmp_path), "env": {"A": "é" * 5000}}
        forkclient.send_request(ours, request, [log.fileno()])
        head, fds, _flags, _addr = socket.recv_fds(theirs, forkclient.HEADER.size, 3)
        got = json.loads(forkclient.recv_exact(theirs, forkclient.HEADER.unpack(head)[0]))
        assert got == request and len(fds) == 1
        with os.fdopen(fds[0], "w") as passed:
            passed.write("from the child\n")
        theirs.sendall(b'{"pid": 7}\n{"ex')
        theirs.sendall(b'it": 3}\n')
        theirs.shutdown(socket.SHUT_WR)
        assert list(forkclient.read_lines(ours)) == [{"pid": 7}, {"exit": 3}]
    assert (tmp_path / "log").read_text() == "from the child\n"
    assert forkclient.end_as({"exit": 3}) == 3


@pytest.mark.slow
def test_a_job_is_forked_and_its_record_says_so(tmp_path, owner):
    env = env_for(tmp_path, owner.pid)
    first = client(TINY, tmp_path / "a.json", env)
    assert first.returncode == 0, first.stderr
    second = client(TINY, tmp_path / "b.json", env)
    assert second.returncode == 0, second.stderr
    assert "amp_recipe fp32 bs=8: ok" in second.stdout  # the child wrote to the client's stdout
    records = [R.read(tmp_path / n) for n in ("a.json", "b.json")]  # schema-valid
    procs = [r["harness"]["process"] for r in records]
    assert [p["start"] for p in procs] == ["forked", "forked"]
    assert procs[0]["server_pid"] == procs[1]["server_pid"]  # one server for both
    assert "torch._dynamo" in procs[0]["preloaded"] and procs[1]["server_age_s"] > 0
    assert alive(procs[0]["server_pid"])
    # the same job as a fresh interpreter says that
    fresh = client(TINY, tmp_path / "c.json", env, module="tcbench.job.run")
    assert fresh.returncode == 0, fresh.stderr
    assert R.read(tmp_path / "c.json")["harness"]["process"] == {"start": "fresh_interpreter"}
    # the server ends with its owner, and takes its socket with it
    owner.kill()
    owner.wait()
    wait_until(lambda: not alive(procs[0]["server_pid"]), "the server to end with its owner")
    assert not list((tmp_path / "rt").glob("*.sock"))


@pytest.mark.slow
def test_the_calibration_is_forked_by_the_training_jobs_server(tmp_path, owner):
    """--module tcbench.job.calibrate: the same server as the set's training jobs (the client takes
    --compile-cache for the key and keeps it from the calibration), its file as a fresh one
    writes it; a module outside ENTRIES is refused."""
    env = env_for(tmp_path, owner.pid)
    cache = ["--compile-cache", str(tmp_path / "cache")]
    job = subprocess.run([sys.executable, "-m", "tcbench.launch.forkclient",
                          "--spec", json.dumps(TINY), "--out", str(tmp_path / "a.json"), *cache],
                         env=env, capture_output=True, text=True, cwd=tmp_path)
    assert job.returncode == 0, job.stderr
    cal = subprocess.run([sys.executable, "-m", "tcbench.launch.forkclient", "--module",
                          "tcbench.job.calibrate", *cache, "--out", str(tmp_path / "cal.json"),
                          "--size", "64", "--iterations", "2"], env=env, capture_output=True,
                         text=True, cwd=tmp_path)
    assert cal.returncode == 0, cal.stderr
    server = R.read(tmp_path / "a.json")["harness"]["process"]["server_pid"]
    assert int(FORKED.search(cal.stderr).group(2)) == server
    said = json.loads((tmp_path / "cal.json").read_text())
    assert said["kind"] == "calibration" and said["modes"]["fp32"]["status"] == "ok"
    bad = subprocess.run([sys.executable, "-m", "tcbench.launch.forkclient", "--module", "os",
                          "--out", str(tmp_path / "x.json")], env=env, capture_output=True,
                         text=True, cwd=tmp_path)
    assert bad.returncode == 2
    assert "choose one of tcbench.job.run, tcbench.job.calibrate" in bad.stderr


@pytest.mark.slow
def test_failing_jobs_exit_as_a_fresh_process_would(tmp_path, owner):
    env = env_for(tmp_path, owner.pid)
    bad = client({"workload": "amp_recipe"}, tmp_path / "x.json", env)
    assert bad.returncode == 2 and "lacks 'precision'" in bad.stderr
    # a bug (here: the spec file is a folder) is exit 1 with its traceback, no record
    (tmp_path / "folder").mkdir()
    bug = subprocess.run([sys.executable, "-m", "tcbench.launch.forkclient", "--spec-file",
                          str(tmp_path / "folder"), "--out", str(tmp_path / "y.json")],
                         env=env, capture_output=True, text=True)
    assert bug.returncode == 1 and "IsADirectoryError" in bug.stderr
    usage = subprocess.run([sys.executable, "-m", "tcbench.launch.forkclient", "--bogus"], env=env,
                           capture_output=True, text=True)
    assert usage.returncode == 2 and "usage:" in usage.stderr
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "y.json").exists()
    assert FORKED.search(bug.stderr)  # all three were forked, not run fresh


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM to the client", "SIGINT to the client",
                                 "SIGKILL to the child", "SIGKILL to the client"])
def test_a_killed_job_loses_its_own_cell_only(tmp_path, owner, how):
    env = env_for(tmp_path, owner.pid)
    proc, child, server = start_long(tmp_path, env)
    sig = getattr(signal, how.split()[0])
    os.kill(child if how.endswith("child") else proc.pid, sig)
    proc.wait()
    if how != "SIGKILL to the client":
        assert proc.returncode == -sig, (proc.returncode, (tmp_path / "long.err").read_text())
    wait_until(lambda: not alive(child), "the child to end")
    assert not (tmp_path / "long.json").exists()
    # the server lives on and serves the next job
    assert alive(server)
    after = client(TINY, tmp_path / "next.json", env)
    assert after.returncode == 0, after.stderr
    assert R.read(tmp_path / "next.json")["harness"]["process"]["server_pid"] == server


@pytest.mark.slow
def test_a_server_killed_mid_job_costs_that_job_a_fresh_rerun_not_its_record(tmp_path, owner):
    """The server dies (kill -9) while its child trains: the child dies with it, the client
    runs the job again in a fresh interpreter (its record says why), and the next job starts a
    new server."""
    env = env_for(tmp_path, owner.pid)
    medium = TINY | {"params": TINY["params"] | {"min_timed_s": 3.0}}   # ~3 s of training
    err = (tmp_path / "m.err").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "tcbench.launch.forkclient", "--spec",
                             json.dumps(medium), "--out", str(tmp_path / "m.json")],
                            env=env, stdout=err, stderr=err, cwd=tmp_path)
    wait_until(lambda: FORKED.search((tmp_path / "m.err").read_text()), "the fork")
    child, server = map(int, FORKED.search((tmp_path / "m.err").read_text()).groups())
    os.kill(server, signal.SIGKILL)
    assert proc.wait() == 0, (tmp_path / "m.err").read_text()
    wait_until(lambda: not alive(child), "the child to end with its server")
    said = R.read(tmp_path / "m.json")["harness"]["process"]
    assert said["start"] == "fresh_interpreter" and "ended before the job did" in said["because"]
    after = client(TINY, tmp_path / "next.json", env)
    assert after.returncode == 0, after.stderr
    again = R.read(tmp_path / "next.json")["harness"]["process"]
    assert again["start"] == "forked" and again["server_pid"] != server


@pytest.mark.slow
def test_a_stale_socket_and_changed_source_get_a_new_server(tmp_path, owner):
    src = tmp_path / "src"
    for part in ("tcbench", "schemas"):
        shutil.copytree(SRC / part, src / part, ignore=shutil.ignore_patterns("__pycache__"))
    env = env_for(tmp_path, owner.pid, src=src)
    key = subprocess.run([sys.executable, "-c", "from tcbench.launch import forkclient as C; "
                          "print(C.server_key())"], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    (tmp_path / "rt").mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(tmp_path / "rt" / f"{key}.sock"))  # a socket nobody listens on
    dead.close()
    first = client(TINY, tmp_path / "a.json", env)
    assert first.returncode == 0, first.stderr
    one = R.read(tmp_path / "a.json")["harness"]["process"]
    assert one["start"] == "forked"
    time.sleep(0.01)  # a distinct mtime
    module = src / "tcbench" / "vocabulary.py"
    module.write_text(module.read_text() + "\n# changed\n")
    second = client(TINY, tmp_path / "b.json", env)
    assert second.returncode == 0, second.stderr
    two = R.read(tmp_path / "b.json")["harness"]["process"]
    assert two["start"] == "forked" and two["server_pid"] != one["server_pid"]


@pytest.mark.slow
def test_two_workflows_at_once_have_a_server_each(tmp_path, owner):
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    try:
        runs = [start_long(tmp_path, env_for(tmp_path, pid), name=f"w{i}")
                for i, pid in enumerate((owner.pid, other.pid))]
        assert runs[0][2] != runs[1][2]
        other.kill()  # the second workflow's Snakemake is gone: its server and job go with it
        other.wait()
        wait_until(lambda: not alive(runs[1][2]) and not alive(runs[1][1]), "the 2nd server")
        runs[1][0].wait()
        assert runs[1][0].returncode != 0
        assert alive(runs[0][1]) and alive(runs[0][2])  # the first workflow's job runs on
        runs[0][0].terminate()
        runs[0][0].wait()
    finally:
        other.kill()
        other.wait()


@pytest.mark.slow
def test_a_forked_childs_torch_state_is_a_fresh_processs(tmp_path, owner):
    probe = tmp_path / "probe_model.py"
    probe.write_text(PROBE_MODEL)
    spec = {"workload": "custom", "precision": "fp32", "batch_size": 2,
            "params": {"file": str(probe), "num_classes": 3, "steps": 1, "warmup_steps": 0,
                       "distinct_batches": 1, "profile_steps": 1}}
    out = tmp_path / "state.jsonl"
    env = env_for(tmp_path, owner.pid, PROBE_OUT=str(out))
    for module in ("tcbench.job.run", "tcbench.launch.forkclient", "tcbench.launch.forkclient"):
        proc = client(spec, tmp_path / "r.json", env, module=module)
        assert proc.returncode == 0, proc.stderr
    calls = {}  # every call of model() in each job's process, by pid
    for line in out.read_text().splitlines():
        state = json.loads(line)
        calls.setdefault(state.pop("pid"), []).append(state)
    assert len(calls) == 3 and len({len(c) for c in calls.values()}) == 1, calls
    fresh, forked, forked_again = calls.values()
    assert R.read(tmp_path / "r.json")["harness"]["process"]["start"] == "forked"
    # The first call (the workload's check on the meta device) comes before tcbench seeds the
    # job: there, as in fresh processes, every process has RNG states of its own, drawn from
    # the OS (torch seeds its generator so at import; Python's random module too).
    unseeded = ("initial_seed", "rng", "draw", "random")
    for key in unseeded:
        assert len({json.dumps(c[0].pop(key)) for c in calls.values()}) == 3, key
    # Python's random module is never seeded by tcbench: different in every process
    assert len({json.dumps([s.pop("random") for s in c[1:]]) for c in calls.values()}) == 3
    assert forked == fresh
    assert forked_again == fresh


@pytest.mark.slow
@pytest.mark.parametrize("extra, launcher", [((), "-m tcbench.launch.forkclient "),
                                             (("--config", "fresh_interpreter=true"),
                                              "-m tcbench.job.run ")])
def test_the_train_rule_forks_unless_told_not_to(workflow_copy, extra, launcher):
    from conftest import snakemake

    dry = snakemake(workflow_copy, "-n", "-p", "--cores", "1", "--configfile",
                    "config/smoke.yaml", *extra)
    text = dry.stdout + dry.stderr
    assert launcher in text and text.count(launcher) >= 10, text[-3000:]


@pytest.mark.slow
def test_the_smoke_studys_jobs_are_forked_from_one_server(smoke_run):
    records = [R.read(p) for p in sorted((smoke_run / "records").rglob("*.json"))]
    starts = [r["harness"]["process"] for r in records]
    assert records and all(p["start"] == "forked" for p in starts), starts
    assert len({p["server_pid"] for p in starts}) == 1


def test_a_job_ends_the_processes_it_started_when_it_exits(tmp_path):
    """exit_now kills what the job started (Inductor's compile-worker sidecar, say) rather than
    letting an exit handler wait for it: none of them outlives the job."""
    code = ("import subprocess, sys, time; from tcbench.job import run\n"
            "inner = 'import subprocess, sys, time; subprocess.Popen([sys.executable, \"-c\", "
            "\"import time; time.sleep(600)\"]); time.sleep(600)'\n"
            "subprocess.Popen([sys.executable, '-c', inner])\n"
            "from tcbench.host.process import descendants\n"
            "while len(descendants()) < 2: time.sleep(0.05)\n"
            "print(' '.join(map(str, descendants())), flush=True)\n"
            "run.exit_now(0)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=os.environ | {"PYTHONPATH": str(SRC)},
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    started = [int(p) for p in proc.stdout.split()]
    assert len(started) == 2
    wait_until(lambda: not any(alive(p) for p in started), "the job's processes to end")


def test_a_server_that_will_not_start_is_tried_once_per_workflow(tmp_path, monkeypatch, capsys):
    """On a host where the server refuses to serve, every job must not pay its imports twice
    (a start that fails, then the fresh interpreter): the first failure is kept for the key."""
    monkeypatch.setenv(forkclient.DIR_ENV, str(tmp_path / "fork"))
    (tmp_path / "fork").mkdir(mode=0o700)
    started = []

    def refusing(sock_path, log):
        started.append(sock_path)
        log.write_text("tcbench.launch.forkserver: not serving: 3 threads are running\n")
        return subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])

    monkeypatch.setattr(forkclient, "spawn_server", refusing)
    assert forkclient.server("k1") is None
    assert forkclient.server("k1") is None
    assert len(started) == 1
    said = capsys.readouterr().err
    assert "3 threads are running" in said and "did not start" in said
    assert forkclient.server("k2") is None  # another workflow's key tries for itself
    assert len(started) == 2



@pytest.mark.slow
def test_a_fork_server_killed_mid_study_leaves_a_complete_matrix(workflow_copy, tmp_path):
    """kill -9 of the server while a job trains: that job runs again in a fresh interpreter
    (its record says why), the later jobs start a new server, and the study completes."""
    import threading

    import yaml

    from conftest import snakemake

    rt = tmp_path / "rt"
    params = {"in_size": 16, "out_size": 16, "num_batches": 2, "epochs": 1, "warmup_steps": 0,
              "min_timed_s": 2.0}   # each job trains ~2 s: long enough to be killed mid-way
    cfg = {"run": "killed", "require_gpu": False, "repeats": 1,
           "adaptive_repeats": {"enabled": False}, "calibrate": {"enabled": False},
           "experiments": [{"name": "mlp", "workload": "amp_recipe",
                            "precisions": ["fp32", "amp-bf16"], "batch_sizes": [4, 8],
                            "params": params}]}
    (workflow_copy / "config" / "killed.yaml").write_text(yaml.safe_dump(cfg))
    killed = []

    def kill_the_first_server():
        def serving():
            for log in rt.glob("*.log") if rt.exists() else []:
                m = re.search(r"pid (\d+) serving", log.read_text())
                if m:
                    return int(m.group(1))
            return None
        wait_until(lambda: serving() and list((workflow_copy / "logs").rglob("*.log")),
                   "the first server and a job")
        time.sleep(1.0)   # into the first job's training
        pid = serving()
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    watcher = threading.Thread(target=kill_the_first_server, daemon=True)
    watcher.start()
    # the target first: --configfile takes every word after it
    snakemake(workflow_copy, "results/killed/metrics.csv", "--cores", "1", "--configfile",
              "config/killed.yaml", env={forkclient.DIR_ENV: str(rt)}, timeout=900)
    watcher.join(timeout=60)
    assert killed, "the server was never seen to kill"
    records = [R.read(p) for p in sorted((workflow_copy / "results/killed/records")
                                         .rglob("*.json"))]
    assert len(records) == 4   # the whole matrix
    starts = [r["harness"]["process"] for r in records]
    rerun = [p for p in starts if p["start"] == "fresh_interpreter"]
    assert len(rerun) == 1 and "ended before the job did" in rerun[0]["because"]
    servers = {p["server_pid"] for p in starts if p["start"] == "forked"}
    assert servers and killed[0] not in servers   # the later jobs: a new server


def test_a_workflow_that_is_gone_is_told_from_one_that_runs():
    """A job whose server ended with its workflow ends too (no rerun); the client tells a gone
    owner (exited, a zombie not yet reaped, or its pid taken by another process) by /proc."""
    assert forkclient.owner_alive(forkclient.owner({forkclient.OWNER_ENV: str(os.getpid())}))
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    who = (proc.pid, forkclient.start_ticks(proc.pid))
    wait_until(lambda: not forkclient.owner_alive(who), "a zombie to count as gone")
    proc.wait()
    assert not forkclient.owner_alive(who)
    me = forkclient.owner({forkclient.OWNER_ENV: str(os.getpid())})
    assert not forkclient.owner_alive((me[0], me[1] + 1))   # the pid, another process's start


def test_the_server_preloads_what_the_studys_workloads_import(monkeypatch):
    """A transformer job imports transformers (seconds) unless the server already has: the
    study's workloads name the modules, a missing optional package is left to the job."""
    from tcbench import workloads

    assert workloads.preload_modules(["amp_recipe"]) == ("tcbench.workloads.amp_recipe",)
    hf = workloads.preload_modules(["transformers", "nope"])
    assert hf[0] == "tcbench.workloads.hf_transformers" and "transformers" in hf
    monkeypatch.setattr(preload, "PRELOAD", ("json",))
    monkeypatch.setattr(workloads, "preload_modules", lambda names: ("csv", "not_installed_pkg"))
    monkeypatch.setenv(forkclient.PRELOAD_ENV, "timm")
    monkeypatch.delenv(preload.ARROW_MALLOC, raising=False)
    seen = []
    monkeypatch.setattr(preload, "threadless",
                        lambda mods: (seen.append(os.environ.get(preload.ARROW_MALLOC))
                                      or (list(mods)[:1], "not_installed_pkg (missing)")))
    assert preload.preload() == ["json", "csv"]
    # pyarrow (pandas loads it) must not start jemalloc's background thread in the server,
    # and the jobs it forks keep a fresh process's environment
    assert seen == ["background_thread:false"] and preload.ARROW_MALLOC not in os.environ
    monkeypatch.setenv(preload.ARROW_MALLOC, "narenas:2")
    preload.preload()
    assert seen[-1] == os.environ[preload.ARROW_MALLOC] == "narenas:2"   # the user's own


def test_the_preloaded_modules_cover_a_transformer_presets_check_and_build():
    """A transformer job's parameter check looks up the model's head in the registry and builds
    the model on the meta device, importing the library's model base and the model's module:
    each a preset needs is on the preload list, so a forked job imports none of them."""
    from tcbench.workloads import hf_transformers as H

    for model_type, _ in H.PRESETS.values():
        assert f"transformers.models.{model_type}.modeling_{model_type}" in H.PRELOAD
    assert {"transformers.models.auto.modeling_auto", "transformers.modeling_utils"} <= \
        set(H.PRELOAD)


def test_a_preload_that_starts_a_thread_is_left_to_the_jobs(tmp_path, monkeypatch):
    """A module whose import starts a thread (an allocator's background thread) would stop the
    server from forking at all: the trial import in a child finds it, and it and what follows
    it are left out."""
    (tmp_path / "spawns_thread.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ok, why = preload.threadless(["csv", "spawns_thread", "json"])
    assert ok == ["csv"] and why.startswith("spawns_thread (importing it started")
    assert "spawns_thread" not in sys.modules   # tried in the child only
    assert preload.threadless(["csv", "not_installed_pkg"])[0] == ["csv"]


def test_a_preload_whose_pool_stops_itself_before_a_fork_is_kept(tmp_path, monkeypatch):
    """A library that keeps a thread pool but stops it before every fork (OpenBLAS, which
    NumPy and SciPy load, does) is safe to preload: the trial fork tells it from a thread that
    would be inherited half-way."""
    (tmp_path / "pool_stops_at_fork.py").write_text(
        "import os, threading, time\n"
        "stop = threading.Event()\n"
        "worker = threading.Thread(target=stop.wait, daemon=True)\n"
        "worker.start()\n"
        "def halt():\n"
        "    stop.set(); worker.join()\n"
        "    deadline = time.monotonic() + 5   # as pthread_join: until the task has gone\n"
        "    while len(os.listdir('/proc/self/task')) > 1 and time.monotonic() < deadline:\n"
        "        time.sleep(0.001)\n"
        "os.register_at_fork(before=halt)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert preload.threadless(["csv", "pool_stops_at_fork", "json"]) == \
        (["csv", "pool_stops_at_fork", "json"], None)
