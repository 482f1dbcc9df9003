"""The capacity study's plan: which searches a checked config asks for, and what each probe
runs. Types, ranges and defaults of ``capacity:`` are the config schema's
(``tcbench.launch.config.check`` has filled them in); what is checked here is what a schema cannot
say."""

from __future__ import annotations

import json

from ..vocabulary import ConfigError

# What a probe sets itself, per workload, so that it is a few steps long; a workload the study
# can search is one listed here (the config schema's capacity.workloads enum is checked
# against this by a test).
BOUNDED = {"amp_recipe": ("num_batches", "epochs"),
           "mnist_cnn": ("epochs", "train_samples"),
           "resnet50": ("steps", "distinct_batches")}
WORKLOADS = tuple(BOUNDED)
# a probe asks "does this batch fit?", not "how fast is it?": no timed window beyond its steps
PROBE_COMMON = {"warmup_steps": 1, "profile_steps": 0, "min_timed_s": 0, "min_timed_steps": 0}
# the settings a search carries from the config into its plan
SEARCH_KEYS = ("start", "max", "resolution", "steps", "memory_limit_bytes", "probe_timeout_s")


def probe_params(workload: str, steps: int, batch_size: int, user: dict | None) -> dict:
    """Workload parameters of one probe: ``user``'s, then a warm-up step plus ``steps`` steps
    and no profiling. ResNet-50 keeps one batch of data on the device (a loader would hold about
    as much); amp_recipe and synthetic mnist_cnn keep their ``steps + 1`` batches there, as
    those workloads always do."""
    bounded = {"amp_recipe": {"num_batches": steps + 1, "epochs": 1},
               "mnist_cnn": {"epochs": 1, "train_samples": batch_size * (steps + 1)},
               "resnet50": {"steps": steps, "distinct_batches": 1}}[workload]
    base = {"data": "synthetic", "loader": "synthetic"} if workload == "mnist_cnn" else {}
    return base | dict(user or {}) | PROBE_COMMON | bounded


def _check(c: dict) -> None:
    """The rules across keys: the grid, and parameters the study sets itself."""
    from .. import workloads

    if c["start"] > c["max"]:
        raise ConfigError(f"capacity.start={c['start']!r}: larger than capacity.max={c['max']!r}")
    for key in ("start", "max"):
        if c[key] % c["resolution"]:
            raise ConfigError(f"capacity.{key}={c[key]!r}: not a multiple of capacity.resolution="
                              f"{c['resolution']!r} (the search works on that grid)")
    for workload, user in c["params"].items():
        if workload not in c["workloads"]:
            raise ConfigError(f"capacity.params.{workload}: not one of capacity.workloads "
                              f"({', '.join(c['workloads'])})")
        for key in (*BOUNDED[workload], *PROBE_COMMON):
            if key in user:
                raise ConfigError(f"capacity.params.{workload}.{key}={user[key]!r}: set by the "
                                  f"capacity study itself (capacity.steps)")
    for workload in c["workloads"]:
        try:
            workloads.resolve_params(workload, probe_params(workload, c["steps"], c["start"],
                                                            c["params"].get(workload)))
        except ValueError as exc:
            raise ConfigError(f"capacity.params.{workload}: {exc}") from None


def plan(config: dict, run: str) -> dict[str, dict]:
    """Every search of the capacity study, keyed ``workload/precision``; empty when disabled.
    ``config`` has been through ``tcbench.launch.config.check``. Raises ConfigError naming the
    key and the value, before any job runs."""
    c = config.get("capacity") or {}
    if not c.get("enabled"):
        return {}
    _check(c)
    return {f"{workload}/{precision}": {
        "run": run, "workload": workload, "precision": precision,
        **{k: c[k] for k in SEARCH_KEYS}, "params": c["params"].get(workload) or {}}
        for workload in c["workloads"] for precision in c["precisions"]}


def search_json(searches: dict[str, dict], workload: str, precision: str, run: str) -> str:
    """The plan of one search, as the JSON the ``search`` command takes."""
    key = f"{workload}/{precision}"
    if key not in searches:
        raise ValueError(f"{key} is not a search of this capacity study "
                         f"({', '.join(searches) or 'capacity.enabled is false'})")
    return json.dumps(searches[key] | {"run": run}, sort_keys=True)


def probe_spec(s: dict, bs: int) -> dict:
    """The job spec (``python -m tcbench.job.run``) of the probe of search ``s`` at batch
    size ``bs``."""
    spec = {"run": s["run"], "experiment": "capacity",
            "cell": f"{s['workload']}_{s['precision']}_bs{bs}", "workload": s["workload"],
            "precision": s["precision"], "batch_size": bs,
            "params": probe_params(s["workload"], s["steps"], bs, s["params"])}
    if s.get("memory_limit_bytes") is not None:
        spec["memory_limit_bytes"] = s["memory_limit_bytes"]
    return spec
