"""The capacity study: per workload and precision, the largest batch size that trains without
running out of memory. The seed's point that lower precision needs less memory, turned into
the number that matters in practice: how much larger a batch fits.

With ``predict`` (config/capacity.yaml's way) a search probes two small batch sizes, fits peak
memory = a + b·batch through them (torch.cuda.max_memory_allocated), predicts the largest batch
under the memory the allocator can have (the device's total less what the CUDA context, the
libraries and other processes hold, measured in the probe's record), then probes the prediction
and one step up or down and bisects that bracket until the largest size that fitted and the
smallest that did not are ``resolution`` apart. A prediction that misses goes on in steps twice
as long each time, up (too low) or down (too high). Without it, the search doubles from
``start`` until a probe runs out of memory (or ``max`` fits), then bisects. Both the prediction
and the found limit are reported. TF32 stores tensors in fp32, so it fits what fp32 fits: it is
noted, not probed. A search repeated with another setting (``cudnn_on``: cuDNN autotuning on,
whose workspaces may lower the limit) starts from the plain search's answer (``--reference``):
its limit and the size above it, two probes where the answer holds, else steps and bisection
from there, as after a missed prediction.

Each probe is one ordinary training job (``tcbench.job.run``: the study's own loop, precision
flags, eager, cuDNN autotuning off unless ``cudnn_benchmark``) with a few steps, in a process of
its own: forked from the workflow's preloaded interpreter, which never touched CUDA
(``tcbench.launch.forkclient``), where one can serve it, else a fresh interpreter; each probe's
log entry says which. A process of its own is what makes the answer trustworthy: after an
out-of-memory error the CUDA caching allocator keeps its (fragmented) segments, cuDNN keeps its
workspace and the failed step's tensors can stay referenced from the traceback, so an in-process
probe would be judged against a GPU that is partly full of the previous probe, and the answer
would depend on the order of the probes. Every probe leaves its record (a real ``oom`` record
with the memory in use, on a GPU) under
``results/{run}/capacity/{workload}/{precision}/bs{N}.json``; the search's result file says its
wall time.

One module per concern:

- ``plan``: the searches a checked config asks for, and each probe's job spec;
- ``search``: doubling-then-bisection and prediction-then-bracket, on any probe function;
- ``predict``: the line through the fit probes' peaks, and the device's budget;
- ``probe``: probes as processes of their own, one search at a time per device (a file lock),
  and the search's result file;
- ``report``: ``capacity.csv`` and ``capacity.md``; ``figure``: ``figures/capacity.{pdf,png}``
  and ``figures/capacity_memory.{pdf,png}``.

Command line (``__main__``)::

    python -m tcbench.capacity search --plan JSON --out results/R/capacity/resnet50/fp32.json
    python -m tcbench.capacity search --plan JSON --out R/capacity/resnet50/fp32.cudnn-on.json \\
        --reference R/capacity/resnet50/fp32.json
    python -m tcbench.capacity report results/R/capacity/*/*.json --out results/R \\
        --figures results/R/figures
"""

from .plan import (BOUNDED, CUDNN_ON, NOT_PROBED, PROBE_COMMON, WORKLOADS, plan, probe_params,
                   probe_spec, search_json)
from .predict import budget, fit, peak_memory, predict
from .probe import ProcessProbe, RESULT_SCHEMA, lock_path, outcome_of, run_search
from .figure import FIGURES, figure, memory_figure
from .report import FILES, load_results, markdown, report, table
from .search import Outcome, confirm, search

__all__ = ["FIGURES", "FILES", "BOUNDED", "CUDNN_ON", "NOT_PROBED", "budget", "fit", "predict", "confirm",
           "PROBE_COMMON", "WORKLOADS", "plan", "probe_params", "probe_spec",
           "search_json", "RESULT_SCHEMA", "ProcessProbe", "lock_path", "outcome_of",
           "peak_memory", "run_search", "figure", "memory_figure", "load_results", "markdown",
           "report", "table",
           "Outcome", "search"]
