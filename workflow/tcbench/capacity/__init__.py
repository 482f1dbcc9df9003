"""The capacity study: per workload and precision, the largest batch size that trains without
running out of memory. The seed's point that lower precision needs less memory, turned into
the number that matters in practice: how much larger a batch fits.

The search doubles the batch size from ``start`` until a probe runs out of memory (or ``max``
fits), then bisects between the largest size that fitted and the smallest that did not, on the
grid of multiples of ``resolution``, until the two are ``resolution`` apart.

Each probe is one ordinary training job (``python -m tcbench.job.run``: the study's own loop,
precision flags and cuDNN settings) with a few steps, run in a fresh process. A fresh process is
what makes the answer trustworthy: after an out-of-memory error the CUDA caching allocator keeps
its (fragmented) segments, cuDNN keeps its workspace and the failed step's tensors can stay
referenced from the traceback, so an in-process probe would be judged against a GPU that is
partly full of the previous probe, and the answer would depend on the order of the probes.
Every probe leaves its record (a real ``oom`` record with the memory in use, on a GPU) under
``results/{run}/capacity/{workload}/{precision}/bs{N}.json``.

One module per concern:

- ``plan``: the searches a checked config asks for, and each probe's job spec;
- ``search``: the doubling-then-bisection algorithm, on any probe function;
- ``probe``: probes as fresh ``tcbench.job.run`` processes, one search at a time per device (a
  file lock), and the search's result file;
- ``report``: ``capacity.csv``, ``capacity.md`` and ``figures/capacity.{pdf,png}``.

Command line (``__main__``)::

    python -m tcbench.capacity search --plan JSON --out results/R/capacity/resnet50/fp32.json
    python -m tcbench.capacity report results/R/capacity/*/*.json --out results/R \\
        --figures results/R/figures
"""

from .plan import BOUNDED, PROBE_COMMON, WORKLOADS, plan, probe_params, probe_spec, search_json
from .probe import ProcessProbe, RESULT_SCHEMA, lock_path, outcome_of, peak_memory, run_search
from .report import figure, load_results, markdown, report, table
from .search import Outcome, search

__all__ = ["BOUNDED", "PROBE_COMMON", "WORKLOADS", "plan", "probe_params", "probe_spec",
           "search_json", "RESULT_SCHEMA", "ProcessProbe", "lock_path", "outcome_of",
           "peak_memory", "run_search", "figure", "load_results", "markdown", "report", "table",
           "Outcome", "search"]
