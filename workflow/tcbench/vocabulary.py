"""The study's vocabulary, written down once: precision modes in order, the axes a study can
cross and their defaults, the keys that make a cell, the statuses, the harness phases and the
configuration error type.

Everything else reads these names from here: the matrix expansion, the job, the tables, the
figures, the verdict and the comparison. The JSON Schemas (``workflow/schemas/``) repeat some of
them as enums, because a schema must stand on its own; ``tests/test_vocabulary.py`` fails when
the two disagree. Standard library only: the workflow imports this while it parses.

Adding a precision mode is one ``Mode`` below (its behaviour on the device lives in
``tcbench.job.precision``); adding an axis, one ``Axis`` below plus the workload parameter it sets.
"""

from __future__ import annotations

from dataclasses import dataclass


class ConfigError(ValueError):
    """A configuration value that cannot be run; the message names the key and the value.
    ``mistakes`` holds each mistake on its own, for a line apiece where the workflow stops."""

    def __init__(self, *mistakes: str):
        super().__init__("; ".join(mistakes))
        self.mistakes = list(mistakes)

# ----------------------------------------------------------------------------- precision modes
@dataclass(frozen=True)
class Mode:
    """What a precision mode is, in words a table can print and a job can act on.

    ``autocast`` names the torch dtype under ``torch.amp.autocast`` (None: no autocast);
    ``tf32`` switches TF32 math on for fp32 matmuls and convolutions; ``min_capability`` is the
    lowest CUDA compute capability that runs it; ``fp8_recipe`` names torchao's float8 training
    recipe whose ``Float8Linear`` layers replace the model's ``nn.Linear`` layers (None: no FP8);
    ``colour``: its colour in every figure (Okabe-Ito and seaborn colorblind's brown: safe for
    colour-vision deficiencies, every two modes >= 40 apart in CIE L*a*b*, no grey or black)."""

    name: str
    description: str
    colour: str
    autocast: str | None = None
    grad_scaler: bool = False
    tf32: bool = False
    min_capability: tuple[int, int] | None = None
    fp8_recipe: str | None = None


MODES: tuple[Mode, ...] = (
    Mode("fp32", "strict float32: TF32 off for matmul and cuDNN", "#0072B2"),
    Mode("tf32", "float32 storage, TF32 Tensor Core math for matmul and cuDNN", "#009E73",
         tf32=True, min_capability=(8, 0)),
    Mode("amp-fp16", "autocast to float16 with GradScaler (TF32 off elsewhere)", "#D55E00",
         autocast="float16", grad_scaler=True),
    Mode("amp-bf16", "autocast to bfloat16, no scaler (TF32 off elsewhere)", "#CC79A7",
         autocast="bfloat16", min_capability=(8, 0)),
    # FP8 Tensor Cores arrived with Ada (8.9) and Hopper (9.0). Both recipes cast each Linear's
    # input and weight to float8 e4m3 around torch._scaled_mm (its output gradient to e5m2
    # tensorwise, e4m3 rowwise); everything else runs under bfloat16 autocast.
    Mode("fp8-tensorwise", "nn.Linear layers in float8 (torchao, one scale per tensor), "
         "autocast to bfloat16 elsewhere, no scaler", "#F0E442",
         autocast="bfloat16", min_capability=(8, 9), fp8_recipe="tensorwise"),
    Mode("fp8-rowwise", "nn.Linear layers in float8 (torchao, one scale per row), "
         "autocast to bfloat16 elsewhere, no scaler", "#CA9161",
         autocast="bfloat16", min_capability=(8, 9), fp8_recipe="rowwise"),
)
PRECISIONS: tuple[str, ...] = tuple(m.name for m in MODES)
FP8_INSTALL = "pip install -e '.[fp8]'"   # torchao, which the FP8 modes convert their layers with
BASELINE = "fp32"                       # every speedup and memory ratio is against this mode
FP8_BASELINE = "amp-bf16"               # the mode an FP8 mode replaces: it is judged against this first
# Equivalence margins: a ratio is "equivalent" where its 95% interval lies inside
# [1/(1+X), 1+X]; an accuracy difference where its interval lies inside +-POINTS points. Stated
# here so every table, verdict and README line names the same margin.
EQUIVALENCE_MARGIN = 0.03
ACCURACY_MARGIN_POINTS = 1.0
REDUCED: tuple[str, ...] = tuple(p for p in PRECISIONS if p != BASELINE)
PALETTE: dict[str, str] = {m.name: m.colour for m in MODES}


def mode(name: str) -> Mode:
    for m in MODES:
        if m.name == name:
            return m
    raise ValueError(f"unknown precision {name!r}; known: {', '.join(PRECISIONS)}")

# ----------------------------------------------------------------------------------- statuses
# Best first: a cell whose repeats differ takes the worst status among them.
STATUSES: tuple[str, ...] = ("ok", "diverged", "oom", "unsupported", "error")
OK, DIVERGED, OOM, UNSUPPORTED, ERROR = STATUSES
STATUS_RANK: dict[str, int] = {s: i for i, s in enumerate(STATUSES)}

# why a record exists: one of a cell's configured repeats, or one that adaptive repeats added
# (tcbench.launch.repeats writes "added at look N: ..." into the job spec)
REPEAT_INITIAL = "initial"

# --------------------------------------------------------------------------------------- axes
LOADERS = ("dataloader", "dataloader-tuned", "gpu-resident", "synthetic")


@dataclass(frozen=True)
class Axis:
    """One thing a study can vary besides precision and batch size; it sets the workload
    parameter of the same name.

    ``values`` None: open (the workload says which values exist). ``default`` None: the
    workload's own default. ``unstated``: what a table that does not name the axis ran (a
    published reference, a set made before the axis existed), where that is not ``default``.
    ``prefix`` goes before the value in cell names and labels where the bare value ("on",
    "default") would say nothing; ``onoff`` axes take YAML's bare on/off (which YAML 1.1
    reads as booleans) as the words."""

    name: str
    label: str
    values: tuple[str, ...] | None = None
    default: str | None = None
    prefix: str = ""
    onoff: bool = False
    unstated: str | None = None

    @property
    def assumed(self) -> str:
        """The value a table without this axis's column holds (``tcbench.resultset``)."""
        return self.unstated or self.default or "default"

    def text(self, value) -> str:
        """How a value reads in a cell name."""
        return f"{self.prefix}{value}"

    def display(self, value) -> str:
        """How a value reads in a table or on a figure's axis."""
        return f"{self.prefix.replace('-', ' ')}{value}"


AXES: tuple[Axis, ...] = (
    Axis("model", "model"),
    Axis("loader", "input pipeline", LOADERS),
    Axis("memory_format", "memory format", ("contiguous", "channels_last"), "contiguous"),
    Axis("compile", "torch.compile", ("off", "default", "reduce-overhead", "max-autotune"),
         "off", prefix="compile-", onoff=True),
    Axis("cuda_graphs", "CUDA graphs", ("off", "on"), "off", prefix="graphs-", onoff=True),
    # torch.optim's fused=True (one kernel for the whole update) against its foreach default
    Axis("fused_optimizer", "fused optimiser", ("off", "on"), "off", prefix="fused-", onoff=True),
    # the default is the workload's (on for fixed-shape image training, off elsewhere); a
    # table that does not say ran PyTorch's default, off, as a plain script (the seed) does
    Axis("cudnn_benchmark", "cuDNN autotuning", ("off", "on"), None, prefix="cudnn-",
         onoff=True, unstated="off"),
)
AXIS_NAMES: tuple[str, ...] = tuple(a.name for a in AXES)
# how a cell executes rather than what it trains: every axis but the model and its input
EXECUTION_AXES: tuple[str, ...] = tuple(a for a in AXIS_NAMES if a not in ("model", "loader"))
# the execution knobs left at their plain-PyTorch value: the "eager" baseline of best.csv
EAGER: dict[str, str] = {"memory_format": "contiguous", "compile": "off", "cuda_graphs": "off",
                         "fused_optimizer": "off"}
# The parameters every workload accepts, which say how a job is measured rather than what it
# trains (tcbench.workloads.COMMON_DEFAULTS holds their defaults; a test keeps the two equal),
# and those a record states in columns of their own or that only locate its data: what is left
# of a record's parameters is its workload's own (``resultset.workload_params``), the model's
# shape and schedule, which two cells compared across experiments must share or name.
MEASUREMENT_PARAMS: tuple[str, ...] = (
    "seed", "warmup_steps", "sync_loss_every_step", "loss_every", "input_bound_share",
    *EXECUTION_AXES, "profile_steps", "evidence_repeats", "telemetry_interval_s",
    "min_timed_s", "min_timed_steps", "max_timed_s", "steady_tolerance", "cpu_placement")
STATED_PARAMS: tuple[str, ...] = ("model", "loader", "data", "data_dir", "download")
# workload parameters that set how long or how fast a model learns, not what one step
# computes: a plain fp32 baseline may differ in them (and the table names each difference); it
# may not differ in any other (a Linear width, a sequence length, a model configuration)
SCHEDULE_PARAMS: tuple[str, ...] = ("epochs", "num_batches", "steps", "train_samples",
                                    "distinct_batches", "lr", "gamma")


def axis(name: str) -> Axis:
    for a in AXES:
        if a.name == name:
            return a
    raise ValueError(f"unknown axis {name!r}; known: {', '.join(AXIS_NAMES)}")


def onoff(value):
    """YAML 1.1 reads bare off/on as booleans; the on/off axes mean the words."""
    return {False: "off", True: "on"}.get(value, value) if isinstance(value, bool) else value

# --------------------------------------------------------------------------- the host's part
# A cell is *host-bound* when the GPU is busy less than this share of its timed steps (the
# record's gpu_busy_share, tcbench.kernels): the CPU thread that issues its kernels sets its
# pace. Such a cell's precision ratios come from an interleaved comparison (tcbench.job.interleave),
# not from processes run minutes apart, and it gets no repeats added to chase the host's drift.
HOST_BOUND_BUSY_SHARE = 0.9
# where a job's threads run (workload parameter cpu_placement, tcbench.host.placement): "pinned",
# the training thread on the fastest core of the job's CPU set by a probe at the job's start
# (helpers off it); "first", on the set's first CPU, as `taskset -c N` puts a plain script;
# "os", wherever the operating system puts it
CPU_PLACEMENTS: tuple[str, ...] = ("pinned", "first", "os")
# an interleaved comparison's arms are judged against these, each where it is an arm
INTERLEAVED_BASELINES: tuple[str, ...] = ("fp32", "tf32", "amp-bf16")

# -------------------------------------------------------------------------------------- cells
# A cell: everything that defines one configuration, except the repeat. ``data`` is derived
# from the workload's parameters (what it trains on), ``model`` is the workload's model.
CELL_KEYS: tuple[str, ...] = ("run", "experiment", "workload", "data", "batch_size",
                              *AXIS_NAMES, "precision")
SETTING_KEYS: tuple[str, ...] = ("batch_size", *AXIS_NAMES)   # what a row label shows
BASELINE_KEYS: tuple[str, ...] = tuple(k for k in CELL_KEYS if k != "precision")

# ---------------------------------------------------------------------------- harness phases
# tcbench.job.run's phases (record field harness.phases_s), in the order they happen
HARNESS_PHASES: tuple[str, ...] = (
    "imports", "gpu_pinning", "parameter_check", "cpu_placement", "cuda_context",
    "device_and_environment", "building", "counting_flops", "capturing_cuda_graph", "training",
    "evaluating", "measurement_steps", "measuring", "profiling")

# ------------------------------------------------------------------------------ compile cache
# whether a job's torch.compile graphs came from the on-disk cache (record field
# metrics.compile_cache.outcome): hit, every graph did; miss, none did (compiled and autotuned
# afresh); partial, some did; none, nothing was compiled; uncompiled: a job that did not compile
COMPILE_CACHE_OUTCOMES: tuple[str, ...] = ("hit", "miss", "partial", "none")
UNCOMPILED = "uncompiled"
# torch._dynamo.utils.counters that say whether a compilation came from the cache
COMPILE_CACHE_COUNTERS = {"inductor": ("fxgraph_cache_hit", "fxgraph_cache_miss",
                                       "fxgraph_cache_bypass"),
                          "aot_autograd": ("autograd_cache_hit", "autograd_cache_miss")}


def compile_cache_outcome(counters: dict) -> str:
    """The outcome of a job's compilation from its cache counters: the one rule, used by the
    job that writes it and by the reader of records written before the outcome was a field."""
    hits = int(counters.get("fxgraph_cache_hit", 0))
    misses = int(counters.get("fxgraph_cache_miss", 0)) + \
        int(counters.get("fxgraph_cache_bypass", 0))
    return ("hit" if hits and not misses else "miss" if misses and not hits
            else "partial" if hits else "none")

# ------------------------------------------------------------------------------------ metrics
@dataclass(frozen=True)
class Metric:
    """One measured quantity, defined once: every table, figure, verdict sentence and README
    number that names it means this column of ``metrics.csv`` and nothing else. ``label``
    names it in prose, ``short`` in a column head or axis label (with ``unit``).
    ``host_definition`` is how it is measured where no CUDA device ran, when that differs.
    ``pooled`` says how a cell's repeats are summarised: ``mean`` (with a 95% CI,
    ``stats.estimate``) or ``median`` (with the range, misses of the compile cache apart:
    ``stats.warmup``)."""

    column: str
    label: str
    short: str
    unit: str
    higher_is_better: bool
    definition: str
    host_definition: str = ""
    pooled: str = "mean"

    def defined_on(self, cuda: bool) -> str:
        """The definition that holds for a set measured on a CUDA device or not."""
        return self.definition if cuda or not self.host_definition else self.host_definition


METRICS: tuple[Metric, ...] = (
    Metric("throughput_samples_per_s", "steady-state throughput", "throughput", "samples/s",
           True, "the samples of the training steps after warm-up over their duration, timed "
           "with CUDA events on the GPU's own timeline",
           # measure.StepTimer: a CPU has no GPU timeline, its steps are timed on the host
           "the samples of the training steps after warm-up over their duration, timed with "
           "the host's clock (time.perf_counter), there being no GPU timeline to read"),
    # one sample of a token workload (transformers) is one sequence: the same speed counted in
    # tokens, the unit language-model training is compared in (tcbench.analysis.throughput)
    Metric("throughput_tokens_per_s", "steady-state throughput in tokens", "throughput",
           "tokens/s", True, "the steady-state throughput times the tokens of one sample (the "
           "record's data.tokens_per_sample, a sequence's length); only for workloads that "
           "train on tokens"),
    Metric("time_to_steady_s", "time to the first fast step", "warm-up", "s", False,
           "wall time from the start of training to the end of the warm-up steps: CUDA "
           "context, lazy module loading, cuDNN autotuning and compilation, and a CUDA graph's "
           "capture where the step is one", pooled="median"),
    Metric("total_time_s", "total time (the seed's metric)", "total time", "s", False,
           "wall time of the whole training loop, warm-up included, as the seed timed it, and "
           "a CUDA graph's capture where the step is one"),
    Metric("max_memory_allocated_bytes", "peak memory", "peak memory", "bytes", False,
           "torch.cuda.max_memory_allocated over the training loop"),
    Metric("steady_energy_per_sample_j", "energy per sample", "energy/sample", "J", False,
           "GPU energy (NVML's cumulative counter, read where the steady steps start and end) "
           "over the samples of the steady steps, where the counter passes its check "
           "(tcbench.energy)"),
    Metric("energy_per_sample_j", "energy per sample, whole run", "energy/sample (run)", "J",
           False, "GPU energy over the whole training loop, warm-up included, per sample"),
    Metric("test_accuracy", "test accuracy", "accuracy", "", True,
           "accuracy on the held-out set after training, evaluated in fp32"),
    Metric("achieved_tflops", "achieved TFLOP/s", "TFLOP/s", "TFLOP/s", True,
           "FLOPs of one training step (torch.utils.flop_counter) times steady steps per second"),
    Metric("mfu", "model FLOP utilisation", "MFU", "", True,
           "achieved TFLOP/s over this device's measured matmul ceiling in the same mode"),
    Metric("step_time_median_s", "median step time", "step time", "s", False,
           "median of the steady steps' durations (CUDA events)"),
)
# how an FP8 cell's MFU counts (said by every table and verdict sentence that states one)
FP8_MFU_COUNTING = ("an FP8 cell's FLOPs are those of the same training step before the "
                    "conversion (torch.utils.flop_counter; the arithmetic is the same), every one "
                    "of them, the Linear layers kept in bf16 included, over the calibration's FP8 "
                    "matmul roof of its recipe (torch._scaled_mm on float8 e4m3 operands); a bf16 "
                    "cell's over the bf16 roof. Where layers stay in bf16, an FP8 cell's MFU is "
                    "lower than that of its FP8 GEMMs alone")
HEADLINE = "throughput_samples_per_s"     # the speed question's one metric
SEED_METRIC = "total_time_s"              # kept for the seed-reproduction table only
WARMUP = "time_to_steady_s"               # the warm-up question's one metric


def miss_column(column: str) -> str:
    """The column of a median-pooled metric over the runs whose compile cache missed."""
    return column.removesuffix("_s") + "_miss_s"


WARMUP_MISS = miss_column(WARMUP)         # the same, of the runs whose compile cache missed


def metric(column: str) -> Metric:
    for m in METRICS:
        if m.column == column:
            return m
    raise ValueError(f"unknown metric {column!r}")

# ------------------------------------------------------------------------------------ outputs
# The files of a result set, named once: the workflow's rules declare their outputs with these
# names and pass the paths to the modules, which never choose a file name of their own.
# the figures of one experiment (tcbench.reports.figures) and of the cross-GPU comparison
# (tcbench.reports.compare)
FIGURES: tuple[str, ...] = ("throughput", "speedup", "warmup", "memory", "attribution",
                            "tensor_cores")
COMPARE_FIGURES: tuple[str, ...] = ("speed", "speedup", "memory")
# the figures of a whole result set (tcbench.reports.figures, figures/<kind>.<format>): the
# host-bound cells' throughput against the host's measured speed, and the interleaved
# comparisons; each is drawn where its data exist and is a note saying why not elsewhere
SET_FIGURES: tuple[str, ...] = ("host_bound", "interleaved")
# What a CPU cannot measure: torch.cuda's memory statistics and a kernel profile (the Tensor
# Core share; the GPU busy share that tells a host-bound cell). A set measured on a CPU draws
# none of their figures, and its verdict says so once (CPU_UNMEASURED in its tables' cells).
GPU_ONLY_FIGURES: tuple[str, ...] = ("memory", "tensor_cores")
GPU_ONLY_SET_FIGURES: tuple[str, ...] = ("host_bound",)
CPU_UNMEASURED = "not measured on a CPU"
COMPARE_OVERVIEW = "overview"
# the marks a reader meets, one meaning each: a number that rests on one run (figures), a set
# of published numbers (a reference, in the comparison's tables and figures), a ratio judged
# across runs of the study on other machines (render.numbers.runs_note), an interval from one
# process's rounds, which a rerun can fall outside (render.numbers.one_process_note)
SINGLE_RUN_MARK, REFERENCE_MARK, RUNS_MARK, ONE_PROCESS_MARK = "†", "‡", "§", "¶"
FIGURE_FORMATS: tuple[str, ...] = ("pdf", "svg", "png")
TABLE_FORMATS: tuple[str, ...] = ("md", "tex", "html")
# tcbench.aggregate's tables (CSV) and their Markdown views (tcbench.reports.tables)
SET_TABLES: dict[str, str] = {"metrics": "metrics.csv", "summary": "summary.csv",
                              "speedup": "speedup.csv", "best": "best.csv",
                              "overhead": "overhead.csv",
                              # the interleaved comparisons (tcbench.job.interleave): each
                              # setting's ratios at the highest level measured, each process's
                              # own, and every segment of every round
                              "interleaved": "interleaved.csv",
                              "interleaved_processes": "interleaved_processes.csv",
                              "interleaved_rounds": "interleaved_rounds.csv"}
# where a result set keeps its interleaved comparisons' records (beside records/)
INTERLEAVED_DIR = "interleaved"
SET_VIEWS: dict[str, str] = {"speedup": "speedup.md", "best": "best.md"}
VERDICT_FILES: dict[str, str] = {"md": "summary.md", "html": "summary.html"}
COMBINED_STEM = "tables"                  # every experiment's tables in tables.{md,tex}
# the cross-GPU comparison's files, inside its folder
COMPARE_FILES: dict[str, str] = {"csv": "comparison.csv", "md": "comparison.md",
                                 "tex": "comparison.tex", "seed": "seed.md"}


# the reproduction check (tcbench.reports.reproduce): a rerun's result set against a reference
# set of the same GPU model, written into the rerun's folder (its figure: figures/<stem>.<format>)
REPRODUCE_FILES: dict[str, str] = {"md": "reproduce.md", "csv": "reproduce.csv"}
REPRODUCE_FIGURE = "reproduce"


# the FP8 crossover map (tcbench.reports.crossover) of a result set whose experiments named
# CROSSOVER_PREFIX* (config/fp8_crossover.yaml's, one per Linear width) ran: its table, its
# sentences, and its figure (figures/<stem>.<format>)
CROSSOVER_PREFIX = "fp8_crossover"
# the functions a model file of the user's own (workload custom) may build its model with, when
# it names none: names of no model, so the reports call such a model by its experiment's name
CUSTOM_FACTORIES = ("model", "build_model")
CROSSOVER_FILES: dict[str, str] = {"csv": "tables/fp8_crossover.csv", "md": "fp8_crossover.md"}
CROSSOVER_FIGURE = "fp8_crossover"
# the answer of a whole set at a glance, heading its verdict (reports.overview_figure)
OVERVIEW_FIGURE = "overview"


def figure_name(experiment: str, kind: str, ext: str) -> str:
    """The file name of one figure of one experiment (``figures/`` of a result set)."""
    return f"{experiment}_{kind}.{ext}"


def set_figure_name(kind: str, ext: str) -> str:
    """The file name of one figure of a whole result set (``figures/`` of the set)."""
    return f"{kind}.{ext}"


def table_name(experiment: str, ext: str) -> str:
    """The file name of one experiment's tables (``tables/`` of a result set)."""
    return f"{experiment}.{ext}"
