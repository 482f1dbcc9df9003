"""One cell, one process, one record: the job's spec, precision modes, the training loop and
its step builder, profiling, calibration and interleaved comparisons."""
