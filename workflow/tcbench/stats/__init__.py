"""The one statistics core: every number a report prints about repeats comes from here.

Aggregate, tables, figures, the verdict and the cross-GPU comparison all call these functions
with their own grouping keys, so a cell's value, its interval and what the interval *is* are
computed once, the same way everywhere.

The rules (a reviewer's, not a convenience):

* A cell's value is the **mean** of its finished repeats (status ok); ``n`` is how many.
* Its interval is a **95% confidence interval of the mean (Student's t)** only where n >= 3;
  with n = 2 it is the **range** (min to max), labelled as such; one run has no interval and
  is marked as a single run.
* A **ratio** of two cells (a speedup) is the ratio of their means, r = mean(a) / mean(b). Its
  95% interval, where both have n >= 3, is ``r * exp(-+ t * se)`` with
  ``se = sqrt(CV_a^2 / n_a + CV_b^2 / n_b)`` (CV = s / mean: the delta method's standard error
  of log(mean), summed over the two sides) and t at the Welch-Satterthwaite degrees of freedom
  of those two terms (``RATIO_INTERVAL``). It is not a Welch test on per-run logarithms; it is
  asymmetric like the ratio itself. With fewer repeats the interval is the range of the ratios
  of any two runs, labelled as a range; ``every_pair`` gives that range at any n.
* A cell's repeats that fall into **two modes** (``modes``: a gap in their sorted values far
  wider than the spread within the groups it separates) get no pooled interval and no claim:
  both modes are reported, each with its n (``BIMODAL``).
* A **difference** of two cells (accuracy against fp32) pairs the runs by seed where the seeds
  match (repeat r of every precision trains from the same seed) and takes the t interval of
  the mean paired difference; unpaired, Welch's t interval of the difference of means.
* A **warm-up** (time to the first fast step: autotuning, compilation) is a skewed, positive
  quantity whose runs fall into two populations (a compile-cache hit, a miss that compiles
  afresh): it is summarised by its **median and range** (``spread``), never a Student-t
  interval (which can reach below zero), and a cell's misses are summarised apart from its
  other runs (``warmup``).
* An **interleaved ratio** (every precision arm of one setting in one process, alternated in
  rounds: ``tcbench.job.interleave``) is built at the highest level that was repeated (Kalibera &
  Jones 2013): rounds vary inside a process, and processes differ from one another
  (allocations, cuBLAS and cuDNN choices, clocks, the core), which no round can see.

  - **One process** (``process_ratio``, ``paired_ratio``): the **median of its per-round
    ratios** arm / baseline with a **95% moving-block bootstrap interval of that median**
    (percentile, 10,000 resamples, a fixed seed) over at least ``MIN_CI_N`` rounds. Rounds
    are autocorrelated (the host drifts over minutes), so blocks of consecutive rounds are
    resampled whole: the block length is the AR(1) plug-in rule on the lag-1 autocorrelation
    of the per-round log ratios (``block_length``). Host drift hits every arm of a round
    alike, so the paired ratio resolves what processes run minutes apart cannot; its interval
    covers the rounds of that one process only (``PAIRED``).
  - **k processes** (``replicated_ratio``, the setting's ``interleave.replicates``): the
    **geometric mean of the k medians**, with, for k >= 3, a **95% t interval on their
    logarithms** (k - 1 degrees of freedom, ``REPLICATED``, n = k): the level a rerun varies
    at. k = 2 gives the range of the two (``RANGE``, no claim: n < 3); k = 1 that process's
    own interval. Whether the processes spread more than their own intervals say a median
    varies (``Replicated.dominant``: "processes", else "rounds") is reported beside it.

  Both are confidence intervals, and claims are made from them as from a t interval; every
  sentence that says how a ratio was decided names its level (``level_text``).
* **Runs** of a whole study on other machines or days (``across_runs``): one machine's GPU and
  host differ from the next one's (on the H200, GPU-bound interleaved ratios by up to 0.7%,
  host speed by 1.5×), which no process on one machine can see. Over n >= 3 runs a quantity
  is the **geometric mean of the runs' estimates** with a **95% t interval on their
  logarithms** (n - 1 degrees of freedom): of the mean (``RUNS``, a confidence interval a
  claim may rest on), or for **one more run** (``PREDICTION``, t·s·√(1 + 1/n)), the interval
  a rerun on another machine is checked against (``analysis.runs``).
* A claim (``clears``) holds only when a confidence interval (not a range, not a single run)
  lies wholly beyond its threshold. The claims a report makes about a throughput ratio
  (``claim``: pays off / equivalent within the stated margin, an equivalence test, said with
  its direction / faster / slower / inconclusive / n < 3, and "every run slower" where every
  pair of runs says so although no interval can; ``GATES``: not judged where the repeats
  cannot decide it) and about an accuracy
  difference (``difference_claim``) are decided here, once, with the words every table,
  verdict sentence and README line uses for them.
"""

from .claims import *  # noqa: F401,F403
from .core import *  # noqa: F401,F403
from .modes import *  # noqa: F401,F403
from .replicates import *  # noqa: F401,F403
