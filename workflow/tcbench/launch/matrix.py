"""The study matrix: a validated config expanded into one job spec per training process.

Each experiment in the config is a workload with its parameters and the lists to cross:
precisions x batch sizes x axes (loader, memory_format, compile) x repeats. A job is named
``{experiment}/{cell}``, where the cell spells out every crossed value, e.g.
``mnist_seed/amp-fp16_bs512_r1`` or ``mnist_fast/amp-bf16_bs512_gpu-resident_r2``; its record is
``results/{run}/records/{experiment}/{cell}.json``. Repeat r runs with seed ``params.seed + r - 1``
(the same seed for every precision of that repeat).

The config comes checked (``tcbench.launch.config.check``: types, enums and defaults); the rules
only this module knows are checked here, still before any job runs, and a bad value raises
``ConfigError`` naming the key and the value.
"""

from __future__ import annotations

import importlib.util
import itertools
from dataclasses import dataclass, replace
from pathlib import Path

from .. import vocabulary as V
from ..vocabulary import ConfigError
from .config import check

RANDOM_MNIST_DIR = "resources/mnist-format-random"
DEVICE = "{device}"  # in a run's name: this machine's device slug
MNIST_RAW = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
             "t10k-labels-idx1-ubyte")


@dataclass(frozen=True)
class Cell:
    """One cell of the study in one repeat: one training job, its own process and record."""

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

    @property
    def group(self) -> str:
        """The cell's name without its repeat (what the repeats of one cell share)."""
        return self.cell[: -len(f"_r{self.repeat}")]

    def again(self, repeat: int) -> "Cell":
        """Repeat ``repeat`` of the same cell: its own process and seed (seed + r - 1), as
        the initial repeats have (tcbench.launch.repeats adds such repeats to a wide cell)."""
        params = dict(self.params)
        params["seed"] += repeat - self.repeat
        return replace(self, cell=f"{self.group}_r{repeat}", repeat=repeat,
                       params=tuple(sorted(params.items())))

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


@dataclass(frozen=True)
class Comparison:
    """One interleaved comparison process (tcbench.job.interleave): every precision of one setting
    of an experiment that asks for it (``interleave: {enabled: true}``), alternated in one
    process. A setting has ``interleave.replicates`` of them, each an independent process: replicate
    k builds its arms as the cells' k-th repeats are (the same parameters, seed + k - 1), so
    the spread between processes is measured, not assumed away (docs/measurement.md)."""

    experiment: str
    setting: str       # the cells' name without precision and repeat, e.g. bs512_graphs-on
    workload: str
    batch_size: int
    precisions: tuple
    params: tuple      # replicate k's: the k-th repeat's, sorted (key, value) pairs
    interleave: tuple  # the comparison's settings, sorted (key, value) pairs
    replicate: int = 1

    @property
    def name(self) -> str:
        """The comparison's file name without ``.json``: its setting and replicate."""
        return f"{self.setting}_r{self.replicate}"

    @property
    def id(self) -> str:
        return f"{self.experiment}/{self.name}"

    @property
    def key(self) -> str:
        """What the replicates of one setting share."""
        return f"{self.experiment}/{self.setting}"

    def path(self, run: str) -> str:
        """Its record, where the interleave rule writes it."""
        return f"results/{run}/{V.INTERLEAVED_DIR}/{self.experiment}/{self.name}.json"

    def spec(self, run: str) -> dict:
        return {"run": run, "experiment": self.experiment, "setting": self.setting,
                "workload": self.workload, "batch_size": self.batch_size,
                "replicate": self.replicate,
                "precisions": list(self.precisions), "params": dict(self.params),
                "interleave": dict(self.interleave)}

    def inputs(self) -> list[str]:
        return Cell(self.experiment, "", self.workload, self.precisions[0], self.batch_size, 1,
                    self.params).inputs()


# Independent comparison processes per setting: three give a 95% interval across processes
# (t on the log ratios, two degrees of freedom), the level a rerun varies at.
REPLICATES = 3


def check_replicates(k) -> None:
    """ValueError naming a bad ``interleave.replicates``: 1 (the rounds of one process), or 3 and
    more (an interval across processes needs three); 2 would give neither."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"interleave: replicates={k!r} must be a whole number, 1 or at least 3")
    if k == 2:
        raise ValueError("interleave: replicates=2 gives no interval across processes (that "
                         "needs three) and hides the one of each process's rounds; use 3 (the "
                         "default) or 1")


def setting_of(cell: Cell) -> str:
    """A cell's setting: its name without the precision and the repeat."""
    return cell.group[len(cell.precision) + 1:]


def comparisons(config: dict, cells: dict[str, Cell]) -> dict[str, Comparison]:
    """The interleaved comparison processes of the study: for each experiment with
    ``interleave.enabled``, ``interleave.replicates`` per setting that has two or more
    precisions (built from its first repeats' jobs, reseeded per replicate). A bad
    ``interleave`` value is a ConfigError naming it, before any job runs."""
    from ..job import interleave

    out: dict[str, Comparison] = {}
    for i, exp in enumerate(config["experiments"]):
        given = dict(exp.get("interleave") or {})
        if not given.pop("enabled", False):
            continue
        name = exp.get("name", exp["workload"])
        replicates = given.pop("replicates", REPLICATES)
        try:
            chosen = interleave.settings(given)
            check_replicates(replicates)
        except ValueError as exc:
            raise ConfigError(f"experiments[{i}] ({name}).{exc}") from None
        firsts: dict[str, list[Cell]] = {}
        for cell in cells.values():
            if cell.experiment == name and cell.repeat == 1:
                firsts.setdefault(setting_of(cell), []).append(cell)
        for setting, js in firsts.items():
            if len(js) < 2:
                continue
            for k in range(1, replicates + 1):
                c = Comparison(name, setting, js[0].workload, js[0].batch_size,
                               tuple(j.precision for j in js), js[0].again(k).params,
                               tuple(sorted(chosen.items())), k)
                out[c.id] = c
        if not any(c.experiment == name for c in out.values()):
            raise ConfigError(f"experiments[{i}] ({name}).interleave: no setting of it has two "
                              "or more precisions to compare")
    return out


def strays(found, mine) -> list[str]:
    """The ids (``experiment/name``) among ``found`` in a result set that this study's rules
    would take for their own but are not ``mine``: a rule's wildcard constraints match the
    experiment and the name each on its own, so another study's ``amp_recipe/fp32_bs64_r1``
    looks like a job of this one where it has an ``amp_recipe`` and some cell
    ``fp32_bs64_r1``, and asking the matrix for that job then fails. Found before any job."""
    mine = set(mine)
    experiments = {m.split("/", 1)[0] for m in mine}
    names = {m.split("/", 1)[1] for m in mine}
    return sorted(f for f in set(found) if f not in mine and f.split("/", 1)[0] in experiments
                  and f.split("/", 1)[1] in names)


def cell_name(precision: str, batch_size: int, axes: dict, repeat: int) -> str:
    parts = [precision, f"bs{batch_size}",
             *(a.text(axes[a.name]) for a in V.AXES if a.name in axes), f"r{repeat}"]
    return "_".join(parts)


def crossed(precisions, sizes, axes: dict, exclude: list[dict], excluded: list[int]):
    """The cells of one experiment: (precision, batch size, axis values) of the cross product
    less every ``exclude`` match, counting each exclude's matches in ``excluded``. The one
    crossing, for the jobs (``expand``) and for a study's plan (``plan_of``)."""
    names = list(axes)
    for combo in itertools.product(*(axes[a] for a in names)):
        axis_values = dict(zip(names, combo))
        for precision, bs in itertools.product(precisions, sizes):
            cell = {"precision": precision, "batch_size": bs} | axis_values
            hits = [j for j, ex in enumerate(exclude)
                    if all(cell.get(k) == v for k, v in ex.items())]
            for j in hits:
                excluded[j] += 1
            if not hits:
                yield precision, bs, axis_values


def _axes_and_exclude(exp: dict) -> tuple[dict, list[dict]]:
    # YAML 1.1 reads a bare `off` as false; the on/off axes mean the words.
    axes = {a: [V.onoff(v) for v in vs] if V.axis(a).onoff else vs
            for a, vs in (exp.get("axes") or {}).items()}
    return axes, [{k: V.onoff(v) for k, v in ex.items()} for ex in exp.get("exclude") or []]


def plan_of(experiment: str, recorded: set[str], studies: dict[str, dict]) -> list[str] | None:
    """The cells (names without the repeat) that a study planned for ``experiment``: that of
    the one study among ``studies`` (name -> checked config) which has the experiment and
    whose cells include every one ``recorded``; None where no study, or more than one, fits
    (the plan is then not known). Reads the crossing only: no workload is resolved."""
    plans = []
    for study in studies.values():
        for exp in study.get("experiments") or []:
            if exp.get("name", exp["workload"]) != experiment:
                continue
            axes, exclude = _axes_and_exclude(exp)
            cells = [cell_name(p, bs, a, 1).removesuffix("_r1") for p, bs, a in
                     crossed(exp["precisions"], exp["batch_sizes"], axes, exclude,
                             [0] * len(exclude))]
            if set(recorded) <= set(cells) and cells not in plans:
                plans.append(cells)
    return plans[0] if len(plans) == 1 else None


def studies(folder: Path) -> dict[str, dict]:
    """The study configs in ``folder`` (``*.yaml``), checked (``tcbench.launch.config.check``), by
    file name; a file that is not a study (no experiments) is left out."""
    import yaml

    out = {}
    for path in sorted(Path(folder).glob("*.yaml")):
        try:
            out[path.name] = check(yaml.safe_load(path.read_text()))
        except ConfigError:
            continue
    return out


def _needs_torchao(config: dict, precisions, where: str) -> None:
    """A GPU study's FP8 modes need torchao: without it every FP8 cell would train for nothing
    but an ``unsupported`` record, so the study stops before any job (a CPU study records
    them unsupported anyway: FP8 needs an FP8 GPU)."""
    fp8 = [p for p in precisions if V.mode(p).fp8_recipe]
    if fp8 and config.get("require_gpu") and importlib.util.find_spec("torchao") is None:
        raise ConfigError(f"{where}.precisions: {', '.join(fp8)} need(s) torchao, which is not "
                          f"installed: {V.FP8_INSTALL}, or drop the FP8 modes")


def _add_experiment(config: dict, i: int, exp: dict, cells: dict[str, Cell],
                    seen_names: set[str]) -> None:
    """``expand``'s work for experiment ``i``: its cells into ``cells``, or a ConfigError."""
    from .. import workloads

    name = exp.get("name", exp["workload"])
    where = f"experiments[{i}] ({name})"
    if name in seen_names:
        raise ConfigError(f"{where}: experiment name {name!r} is used twice")
    seen_names.add(name)
    workload, precisions, sizes = exp["workload"], exp["precisions"], exp["batch_sizes"]
    _needs_torchao(config, precisions, where)
    repeats = exp.get("repeats", config.get("repeats", 1))
    axes, exclude = _axes_and_exclude(exp)
    params = dict(exp.get("params") or {})
    for a in V.AXES:
        if a.onoff and a.name in params:
            params[a.name] = V.onoff(params[a.name])
    clash = sorted(set(params) & set(axes))
    if clash:
        raise ConfigError(f"{where}: {', '.join(clash)} set both in params and in axes")
    if workload == "mnist_cnn" and params.get("data") == "mnist-format-random":
        params.setdefault("data_dir", RANDOM_MNIST_DIR)
    elif workload == "mnist_cnn" and "data_dir" not in params and config.get("data_dir"):
        params["data_dir"] = config["data_dir"]
    excluded = [0] * len(exclude)
    resolved_by_axes: dict[tuple, dict] = {}
    for combo in itertools.product(*axes.values()):   # every combination, excluded or not
        axis_values = dict(zip(axes, combo))
        try:
            resolved_by_axes[combo] = workloads.resolve_params(workload, params | axis_values)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    for precision, bs, axis_values in crossed(precisions, sizes, axes, exclude, excluded):
        resolved = resolved_by_axes[tuple(axis_values.values())]
        for rep in range(1, repeats + 1):
            # Each repeat its own seed, the same for every precision: repeats are
            # independent runs, and precisions compare paired by seed.
            seeded = resolved | {"seed": resolved["seed"] + rep - 1}
            cell = Cell(name, cell_name(precision, bs, axis_values, rep), workload, precision,
                        bs, rep, tuple(sorted(seeded.items())))
            if cell.id in cells:
                raise ConfigError(f"{where}: job {cell.id} appears twice")
            cells[cell.id] = cell
    for j, count in enumerate(excluded):
        if not count:  # a typo in an exclude would otherwise run the cells it meant to drop
            raise ConfigError(f"{where}.exclude[{j}]={exp['exclude'][j]!r}: matches "
                              f"no cell of {name} (its precisions, batch_sizes and axes)")


def expand(config: dict) -> dict[str, Cell]:
    """Every cell of the study (one training job each), keyed by ``experiment/cell``, in config
    order.

    ``config`` has been through ``tcbench.launch.config.check`` (types, enums, ranges and
    defaults are the schema's); what is checked here is what the schema cannot say: experiment
    names used twice, a parameter set both in ``params`` and in ``axes``, workload parameters (the
    workload's own rules), an ``exclude`` that matches no cell, and a study left empty."""
    cells: dict[str, Cell] = {}
    seen_names: set[str] = set()
    mistakes: list[str] = []
    for i, exp in enumerate(config["experiments"]):
        # every experiment is checked, so one run of the check names every mistake
        try:
            _add_experiment(config, i, exp, cells, seen_names)
        except ConfigError as exc:
            mistakes += exc.mistakes
    if mistakes:
        raise ConfigError(*mistakes)
    if not cells:
        raise ConfigError("experiments: every cell is excluded; the study is empty")
    return cells


def resolve_run(config: dict) -> str:
    """The result-set name: ``run`` from the config, the device's slug for ``auto``, and the
    slug in place of ``{device}`` (``smoke-{device}``: a set of the study's own on each
    machine, apart from the GPU study's)."""
    from ..host.environment import device_slug

    run = config.get("run", "auto")  # a name the schema's pattern allows: one folder, no '..'
    if run == "auto":
        return device_slug()
    return run.replace(DEVICE, device_slug()) if DEVICE in run else run
