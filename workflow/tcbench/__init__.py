"""tcbench: do Tensor Cores speed up my CNN training on this GPU, what do they save, and if not,
what is the bottleneck? One module per concept, in folders by the half they serve: the job half
(host, data, measure, workloads, job, launch, capacity) and the reporting half (stats, analysis,
render, reports), on shared words and records at the top (docs/layout.md). The Snakemake
workflow only wires them."""

__version__ = "0.1.0"
