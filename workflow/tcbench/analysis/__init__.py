"""Analysis: frames in, frames out, nothing rendered. Each module answers one question of a
result set's tidy frame (``tcbench.resultset``) with ``tcbench.stats``:

- ``summarise``: one row per cell, its finished repeats pooled (summary.csv);
- ``speedup``: each cell against fp32 at the same setting, and against the plain fp32
  baseline (speedup.csv);
- ``claims``: each cell's one baseline and claim (FP8 against amp-bf16 first), and per
  experiment the strongest claim and every significant slowdown;
- ``best``: per experiment and model, the fastest configuration, against its baseline at the
  same setting and against the plain fp32 one, with what else changed (best.csv);
- ``overhead``: each job's wall time against what it measured (overhead.csv);
- ``diagnosis``: what limits a cell's step, from its measurements;
- ``conditions``: where a set mixes GPUs, hosts, CPU placements, concurrent jobs or process
  starts;
- ``crossgpu``: several result sets and published references pooled as one (comparison.csv);
- ``reproduce``: a rerun's set against a reference set of the same GPU model, quantity by
  quantity (reproduce.csv).

``tcbench.aggregate`` runs the first four on a result set's records.
"""
