"""How a step is measured without changing what it computes: timers and memory, GPU telemetry,
and the timed window (long enough to decide, and steady)."""
