"""The study matrix: a validated config expanded into one job spec per training process.

Each experiment in the config is a workload with its parameters and the lists to cross:
precisions x batch sizes x axes (loader, memory_format, compile) x repeats. A job is named
``{experiment}/{cell}``, where the cell spells out every crossed value, e.g.
``mnist_seed/amp-fp16_bs512_r1`` or ``mnist_fast/amp-bf16_bs512_gpu-resident_r2``; its record is
``results/{run}/records/{experiment}/{cell}.json``. Repeat r runs with seed ``params.seed + r - 1``
(the same seed for every precision of that repeat).

Everything here is checked before any job runs: a bad value raises ``ConfigError`` naming the
key and the value.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path

from . import vocabulary as V
from .vocabulary import ConfigError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
RANDOM_MNIST_DIR = "resources/mnist-format-random"
MNIST_RAW = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
             "t10k-labels-idx1-ubyte")


@dataclass(frozen=True)
class Job:
    experiment: str
    cell: str
    workload: str
    precision: str
    batch_size: int
    repeat: int
    params: tuple  # sorted (key, value) pairs: hashable, order-independent

    @property
    def id(self) -> str:
        return f"{self.experiment}/{self.cell}"

    def spec(self, run: str) -> dict:
        return {"run": run, "experiment": self.experiment, "cell": self.cell,
                "workload": self.workload, "precision": self.precision,
                "batch_size": self.batch_size, "repeat": self.repeat,
                "params": dict(self.params)}

    def inputs(self) -> list[str]:
        """Files the job reads that the workflow makes (random MNIST-format data)."""
        p = dict(self.params)
        if p.get("data") == "mnist-format-random":
            return [str(Path(p["data_dir"]) / "MNIST" / "raw" / f) for f in MNIST_RAW]
        return []


def check_name(value, where: str) -> str:
    if not isinstance(value, str) or not NAME_RE.match(value) or ".." in value:
        raise ConfigError(f"{where}={value!r}: use letters, digits, '.', '_' and '-' only, "
                          f"starting with a letter or digit (no path separators, no '..')")
    return value


def cell_name(precision: str, batch_size: int, axes: dict, repeat: int) -> str:
    parts = [precision, f"bs{batch_size}",
             *(a.text(axes[a.name]) for a in V.AXES if a.name in axes), f"r{repeat}"]
    return "_".join(parts)


def expand(config: dict) -> dict[str, Job]:
    """Every job of the study, keyed by ``experiment/cell``, in config order."""
    from . import workloads as W

    experiments = config.get("experiments") or []
    if not experiments:
        raise ConfigError("experiments: the study is empty; list at least one experiment")
    default_repeats = config.get("repeats", 1)
    jobs: dict[str, Job] = {}
    seen_names: set[str] = set()
    for i, exp in enumerate(experiments):
        where = f"experiments[{i}]"
        name = check_name(exp.get("name", exp.get("workload")), f"{where}.name")
        where = f"experiments[{i}] ({name})"
        if name in seen_names:
            raise ConfigError(f"{where}: experiment name {name!r} is used twice")
        seen_names.add(name)
        workload = exp.get("workload")
        if workload not in W.NAMES:
            raise ConfigError(f"{where}.workload={workload!r}: known workloads are "
                              f"{', '.join(W.NAMES)}")
        precisions, sizes = exp.get("precisions") or [], exp.get("batch_sizes") or []
        for p in precisions:
            if p not in V.PRECISIONS:
                raise ConfigError(f"{where}.precisions: {p!r} is not a precision mode; known: "
                                  f"{', '.join(V.PRECISIONS)}")
        for b in sizes:
            if not isinstance(b, int) or isinstance(b, bool) or b < 1:
                raise ConfigError(f"{where}.batch_sizes: {b!r} is not a positive integer")
        for key, values in (("precisions", precisions), ("batch_sizes", sizes)):
            if not values:
                raise ConfigError(f"{where}.{key}: empty; list at least one")
            if len(set(values)) != len(values):
                raise ConfigError(f"{where}.{key}: duplicate entries in {values!r}")
        repeats = exp.get("repeats", default_repeats)
        if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
            raise ConfigError(f"{where}.repeats={repeats!r}: must be a positive integer")
        axes = exp.get("axes") or {}
        for axis, values in axes.items():
            if axis not in V.AXIS_NAMES:
                raise ConfigError(f"{where}.axes.{axis}: unknown axis; known: "
                                  f"{', '.join(V.AXIS_NAMES)}")
            if not isinstance(values, list) or not values or len(set(values)) != len(values):
                raise ConfigError(f"{where}.axes.{axis}={values!r}: a non-empty list without "
                                  f"duplicates")
        # YAML 1.1 reads a bare `off` as false; the on/off axes mean the words.
        axes = {a: [V.onoff(v) for v in vs] if V.axis(a).onoff else vs
                for a, vs in axes.items()}
        params = dict(exp.get("params") or {})
        for a in V.AXES:
            if a.onoff and a.name in params:
                params[a.name] = V.onoff(params[a.name])
        exclude = exp.get("exclude") or []
        for j, ex in enumerate(exclude):
            bad = sorted(set(ex) - {"precision", "batch_size", *V.AXIS_NAMES}) \
                if isinstance(ex, dict) \
                else ["(not a mapping)"]
            if bad or not ex:
                raise ConfigError(f"{where}.exclude[{j}]={ex!r}: match on precision, batch_size "
                                  f"or an axis")
        clash = sorted(set(params) & set(axes))
        if clash:
            raise ConfigError(f"{where}: {', '.join(clash)} set both in params and in axes")
        if workload == "mnist_cnn" and params.get("data") == "mnist-format-random":
            params.setdefault("data_dir", RANDOM_MNIST_DIR)
        elif workload == "mnist_cnn" and "data_dir" not in params and config.get("data_dir"):
            params["data_dir"] = config["data_dir"]
        axis_names = list(axes)
        for combo in itertools.product(*(axes[a] for a in axis_names)):
            axis_values = dict(zip(axis_names, combo))
            try:
                resolved = W.resolve_params(workload, params | axis_values)
            except ValueError as exc:
                raise ConfigError(f"{where}: {exc}") from None
            for precision, bs, rep in itertools.product(precisions, sizes,
                                                        range(1, repeats + 1)):
                cell = {"precision": precision, "batch_size": bs} | axis_values
                if any(all(cell.get(k) == V.onoff(v) for k, v in ex.items())
                       for ex in exclude):
                    continue
                # Each repeat its own seed, the same for every precision: repeats are
                # independent runs, and precisions compare paired by seed.
                seeded = resolved | {"seed": resolved["seed"] + rep - 1}
                job = Job(name, cell_name(precision, bs, axis_values, rep), workload, precision,
                          bs, rep, tuple(sorted(seeded.items())))
                if job.id in jobs:
                    raise ConfigError(f"{where}: job {job.id} appears twice")
                jobs[job.id] = job
    if not jobs:
        raise ConfigError("experiments: every cell is excluded; the study is empty")
    return jobs


def resolve_run(config: dict) -> str:
    """The result-set name: ``run`` from the config, or the device's slug for ``auto``."""
    from .environment import device_slug

    run = config.get("run", "auto")
    if run in (None, "auto"):
        return device_slug()
    return check_name(run, "run")
