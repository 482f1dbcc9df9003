"""Reports: what a reader gets from a result set, each from its tables (CSV) only, each a
command line taking the paths it writes from the workflow's rule.

- ``tables``: per experiment and for the whole set (speedup, best), md / tex / html;
- ``figures``: the figures by kind (``KINDS``) and their command; one function per kind, in
  the module of its family: ``speed_figures`` (throughput, speedup), ``cost_figures``
  (warm-up, memory), ``evidence_figures`` (Tensor Cores, attribution), drawn from what
  ``figure_cells`` gives them; the set's own figures in ``host_figures``;
- ``verdict`` and ``findings``: the plain-language verdict, one function per finding;
- ``compare`` and ``compare_figures``: result sets and published references side by side;
- ``reproduce`` and ``reproduce_figure``: a rerun against a reference set of the same GPU
  model, estimate by estimate and claim by claim;
- ``scaling``: one GPU against K GPUs of one host.
"""
