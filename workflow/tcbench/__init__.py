"""tcbench: do Tensor Cores speed up my CNN training on this GPU, what do they save, and if not,
what is the bottleneck? One module per concept; the Snakemake workflow only wires them."""

__version__ = "0.1.0"
