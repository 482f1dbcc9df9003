"""Reports: what a reader gets from a result set, each from its tables (CSV) only, each a
command line taking the paths it writes from the workflow's rule.

- ``tables``: per experiment and for the whole set (speedup, best), md / tex / html;
- ``figures``: one module-level function per figure kind (``KINDS``);
- ``verdict`` and ``findings``: the plain-language verdict, one function per finding;
- ``compare`` and ``compare_figures``: result sets and published references side by side;
- ``scaling``: one GPU against K GPUs of one host.
"""
