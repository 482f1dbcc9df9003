"""Where a job ran and what it ran beside: GPUs, CPU placement, the host's state, processes,
the software environment, the source tree and the container."""
