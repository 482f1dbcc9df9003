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
           "resnet50": ("steps", "distinct_batches"),
           "transformers": ("steps", "distinct_batches")}
WORKLOADS = tuple(BOUNDED)
# a probe asks "does this batch fit?", not "how fast is it?": no timed window beyond its steps;
# eager, since compilation changes what is kept for backward (the memory the study measures)
PROBE_COMMON = {"warmup_steps": 1, "profile_steps": 0, "min_timed_s": 0, "min_timed_steps": 0,
                "compile": "off"}
# the settings a search carries from the config into its plan; PER_WORKLOAD may differ by workload
SEARCH_KEYS = ("start", "max", "resolution", "steps", "memory_limit_bytes", "probe_timeout_s",
               "predict", "bracket")
PER_WORKLOAD = ("start", "max", "resolution")
# TF32 changes how fp32 matrix products are computed, not what is stored: it fits what fp32 fits
NOT_PROBED = {"tf32": "TF32 stores every tensor in fp32 (it changes only how matrix products "
                      "are computed), so it fits exactly what fp32 fits: not probed"}
CUDNN_ON = "cudnn-on"   # the variant of a search whose probes autotune cuDNN


def probe_params(workload: str, steps: int, batch_size: int, user: dict | None,
                 cudnn_benchmark: str = "off") -> dict:
    """Workload parameters of one probe: ``user``'s, then a warm-up step plus ``steps`` steps,
    no profiling, eager, and the search's cuDNN autotuning. ResNet-50 and transformers keep one
    batch of data on the device (a loader would hold about as much); amp_recipe and synthetic
    mnist_cnn keep their ``steps + 1`` batches there, as those workloads always do."""
    bounded = {"amp_recipe": {"num_batches": steps + 1, "epochs": 1},
               "mnist_cnn": {"epochs": 1, "train_samples": batch_size * (steps + 1)},
               "resnet50": {"steps": steps, "distinct_batches": 1},
               "transformers": {"steps": steps, "distinct_batches": 1}}[workload]
    base = {"data": "synthetic", "loader": "synthetic"} if workload == "mnist_cnn" else {}
    return (base | dict(user or {}) | PROBE_COMMON | {"cudnn_benchmark": cudnn_benchmark}
            | bounded)


def _grid_error(where: str, c: dict) -> None:
    if c["start"] > c["max"]:
        raise ConfigError(f"{where}start={c['start']!r}: larger than {where}max={c['max']!r}")
    for key in ("start", "max"):
        if c[key] % c["resolution"]:
            raise ConfigError(f"{where}{key}={c[key]!r}: not a multiple of {where}resolution="
                              f"{c['resolution']!r} (the search works on that grid)")


def _check(c: dict) -> None:
    """The rules across keys: the grid, and parameters the study sets itself."""
    from .. import workloads

    _grid_error("capacity.", c)
    for workload, over in c["per_workload"].items():
        if workload not in c["workloads"]:
            raise ConfigError(f"capacity.per_workload.{workload}: not one of capacity.workloads "
                              f"({', '.join(c['workloads'])})")
        _grid_error(f"capacity.per_workload.{workload}.", settings(c, workload))
    for key in c["cudnn_on"]:
        workload, _, precision = key.partition("/")
        if workload not in c["workloads"] or precision not in c["precisions"] \
                or precision in NOT_PROBED:
            raise ConfigError(f"capacity.cudnn_on: {key!r} is not a probed workload/precision "
                              f"of this study (e.g. {c['workloads'][0]}/{c['precisions'][0]})")
    for workload, user in c["params"].items():
        if workload not in c["workloads"]:
            raise ConfigError(f"capacity.params.{workload}: not one of capacity.workloads "
                              f"({', '.join(c['workloads'])})")
        for key in (*BOUNDED[workload], *PROBE_COMMON, "cudnn_benchmark"):
            if key in user:
                raise ConfigError(f"capacity.params.{workload}.{key}={user[key]!r}: set by the "
                                  f"capacity study itself (capacity.steps, capacity.cudnn_"
                                  f"benchmark; probes run eager)")
    for workload in c["workloads"]:
        try:
            workloads.resolve_params(workload, probe_params(workload, c["steps"], c["start"],
                                                            c["params"].get(workload)))
        except ValueError as exc:
            raise ConfigError(f"capacity.params.{workload}: {exc}") from None


def settings(c: dict, workload: str) -> dict:
    """The search settings of one workload: the study's, then its ``per_workload`` ones."""
    return {k: c[k] for k in SEARCH_KEYS} | (c["per_workload"].get(workload) or {})


def plan(config: dict, run: str) -> dict[str, dict]:
    """Every search of the capacity study, keyed ``workload/precision`` (and
    ``workload/precision/cudnn-on`` for ``capacity.cudnn_on``); empty when disabled. ``config``
    has been through ``tcbench.launch.config.check``. Raises ConfigError naming the key and the
    value, before any job runs."""
    c = config.get("capacity") or {}
    if not c.get("enabled"):
        return {}
    _check(c)
    searches = {}
    for workload in c["workloads"]:
        for precision in c["precisions"]:
            s = {"run": run, "workload": workload, "precision": precision,
                 **settings(c, workload), "params": c["params"].get(workload) or {},
                 "cudnn_benchmark": c["cudnn_benchmark"], "variant": None,
                 "launcher": "tcbench.job.run", "not_probed": NOT_PROBED.get(precision)}
            searches[f"{workload}/{precision}"] = s
            if f"{workload}/{precision}" in c["cudnn_on"] and c["cudnn_benchmark"] != "on":
                searches[f"{workload}/{precision}/{CUDNN_ON}"] = s | {
                    "cudnn_benchmark": "on", "variant": CUDNN_ON}
    return searches


def search_json(searches: dict[str, dict], workload: str, precision: str, run: str,
                variant: str | None = None, launcher: str | None = None) -> str:
    """The plan of one search, as the JSON the ``search`` command takes; ``launcher`` is the
    module a probe runs (``tcbench.launch.forkclient`` where a fork server can serve it; the
    workflow knows only once its jobs are made), else a fresh ``tcbench.job.run``."""
    key = "/".join([workload, precision] + ([variant] if variant else []))
    if key not in searches:
        raise ValueError(f"{key} is not a search of this capacity study "
                         f"({', '.join(searches) or 'capacity.enabled is false'})")
    return json.dumps(searches[key] | {"run": run} | ({"launcher": launcher} if launcher else {}),
                      sort_keys=True)


def probe_spec(s: dict, bs: int) -> dict:
    """The job spec (``python -m tcbench.job.run``) of the probe of search ``s`` at batch
    size ``bs``."""
    variant = f"_{s['variant']}" if s.get("variant") else ""
    spec = {"run": s["run"], "experiment": "capacity",
            "cell": f"{s['workload']}_{s['precision']}{variant}_bs{bs}",
            "workload": s["workload"], "precision": s["precision"], "batch_size": bs,
            "params": probe_params(s["workload"], s["steps"], bs, s["params"],
                                   s.get("cudnn_benchmark", "off"))}
    if s.get("memory_limit_bytes") is not None:
        spec["memory_limit_bytes"] = s["memory_limit_bytes"]
    return spec

