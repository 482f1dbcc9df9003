"""The claims a report makes of a ratio or a difference, decided once, with their words (the
module doc of ``tcbench.stats``)."""

from __future__ import annotations

import math

from ..vocabulary import ACCURACY_MARGIN_POINTS as ACCURACY_POINTS, EQUIVALENCE_MARGIN
from .core import CI, CONFIDENCE_METHODS, FEW, MIN_CI_N, MIN_CI_WORD, Estimate, clears

GAIN = 1.10          # a speedup "pays off" when its 95% interval lies wholly above this
MARGIN = EQUIVALENCE_MARGIN
PAYS_OFF, FASTER, SLOWER, EQUIVALENT, INCONCLUSIVE, UNJUDGED = (
    "pays off", "faster", "slower", f"equivalent within ±{MARGIN:.0%}", "inconclusive", FEW)
# every run slower than every run it is compared with, although no interval decides it (n = 2,
# or a t interval that still reaches 1): said, never hidden as "n < 3"
ALL_SLOWER = "every run slower"
# Where the repeats cannot decide a ratio, whatever its interval says (``GATES``): the cell or
# its baseline falls into two modes (``modes``); a timed window of theirs was not steady; a
# compiled run made before compilations inside the timed window were counted compiled there
# all the same (its window reads steady; tcbench.resultset.compile_check); the host set their
# pace (GPU busy below vocabulary.HOST_BOUND_BUSY_SHARE) and no interleaved comparison
# measured the ratio. And an FP8 cell whose baseline (amp-bf16) did not run.
TWO_MODES, UNSTEADY, UNCOUNTED, HOST_BOUND, NO_BASELINE = (
    "not judged: two modes", "not judged: unsteady windows",
    "not judged: compiled inside the timed window",
    "not judged: host-bound, no interleaved comparison", "not judged: no baseline run")
GATES: tuple[str, ...] = (TWO_MODES, UNSTEADY, UNCOUNTED, HOST_BOUND)
CLAIMS: tuple[str, ...] = (PAYS_OFF, FASTER, EQUIVALENT, INCONCLUSIVE, SLOWER, ALL_SLOWER,
                           UNJUDGED, *GATES, NO_BASELINE)
# how strongly a claim answers "does it speed training up": the bottom line reports each
# experiment's strongest (then the highest lower bound); a slowdown is reported on its own
STRENGTH = {PAYS_OFF: 4, FASTER: 3, EQUIVALENT: 2, INCONCLUSIVE: 1, UNJUDGED: 0, SLOWER: -1,
            ALL_SLOWER: -1, **{g: 0 for g in GATES}, NO_BASELINE: -1}
# a claim as the verdict says it of one configuration ("it ...")
CLAIM_WORDS = {PAYS_OFF: "pays off",
               FASTER: f"is faster, but its 95% CI does not show the {GAIN:.2f}× that counts as "
                       f"paying off",
               SLOWER: "is slower",
               ALL_SLOWER: "was slower in every run, though too few runs for an interval",
               EQUIVALENT: f"is equivalent within ±{MARGIN:.0%} (its 95% CI lies inside "
                           f"[{1 / (1 + MARGIN):.3f}, {1 + MARGIN:.2f}])",
               INCONCLUSIVE: f"is inconclusive (its 95% CI neither excludes 1 nor lies within "
                             f"±{MARGIN:.0%})",
               UNJUDGED: f"cannot be judged (fewer than {MIN_CI_WORD} repeats on a side)",
               TWO_MODES: "is not judged: its repeats fall into two modes, so no pooled "
                          "interval describes them",
               UNSTEADY: "is not judged: a timed window of its repeats was not steady",
               UNCOUNTED: "is not judged: its epoch's last, smaller batch compiled inside the "
                          "timed window of repeats recorded before such compilations were "
                          "counted, so their windows read steady",
               HOST_BOUND: "is not judged: the host set its pace, and processes run minutes "
                           "apart cannot resolve a host-bound ratio without an interleaved "
                           "comparison",
               NO_BASELINE: "is not judged: its baseline did not run at this setting"}
# a claim as the bottom line names it ("<experiment>: <claim>: <configuration>, <ratio>")
CLAIM_SHORT = {PAYS_OFF: "pays off", FASTER: f"faster, not shown to reach {GAIN:.2f}×",
               SLOWER: "slower", ALL_SLOWER: ALL_SLOWER,
               EQUIVALENT: f"equivalent within ±{MARGIN:.0%}",
               INCONCLUSIVE: "inconclusive", UNJUDGED: f"cannot be judged ({FEW})",
               **{g: g for g in GATES}, NO_BASELINE: NO_BASELINE}
CLAIM_NOTE = (f"Claim: 'pays off' where the 95% interval of the ratio lies wholly above "
              f"{GAIN:.2f}; 'equivalent within ±{MARGIN:.0%}' where it lies inside "
              f"[{1 / (1 + MARGIN):.3f}, {1 + MARGIN:.2f}] (an equivalence test, with its direction, "
              f"e.g. '2.4% slower', where it also excludes 1); else 'faster' or 'slower' where it "
              f"excludes 1; 'inconclusive' where it does none of these; '{FEW}' where either "
              f"side has fewer than {MIN_CI_WORD} finished repeats, so no claim is made, and 'every run "
              f"slower' where every run of the cell was slower than every run of its baseline "
              f"all the same. 'Not judged' where the repeats cannot decide it: two modes, an "
              f"unsteady timed window, a compilation inside the timed window of runs recorded "
              f"before such compilations were counted, or a host-bound cell without an "
              f"interleaved comparison.")
# the ratios each claim asserts (low, high, open bounds): two claims contradict one another only
# where no ratio satisfies both (``compatible``); a claim with no interval asserts nothing
ASSERTS = {PAYS_OFF: (GAIN, math.inf), FASTER: (1.0, math.inf),
           EQUIVALENT: (1 / (1 + MARGIN), 1 + MARGIN), SLOWER: (0.0, 1.0),
           ALL_SLOWER: (0.0, 1.0)}


def compatible(a: str, b: str) -> bool:
    """Whether two claims of one ratio can both hold: "faster" and "equivalent within ±3%" can
    (a 1.02× ratio), "pays off" and "faster" can (one interval clears 1.10×, the other only
    1×), "inconclusive" and any can; "faster" and "slower", or "pays off" and "equivalent",
    cannot."""
    lo_a, hi_a = ASSERTS.get(a, (0.0, math.inf))
    lo_b, hi_b = ASSERTS.get(b, (0.0, math.inf))
    return max(lo_a, lo_b) < min(hi_a, hi_b)


CLAIM_RULE = (f"pays off: above {GAIN:.2f}×; equivalent: inside ±{MARGIN:.0%}; faster or "
              f"slower: beyond 1×; otherwise inconclusive")


def equivalent(e: Estimate) -> bool:
    """Whether a confidence interval lies inside the equivalence margin around 1."""
    return e.method in CONFIDENCE_METHODS and e.low is not None and \
        e.low >= 1 / (1 + MARGIN) and e.high <= 1 + MARGIN


def claim(e: Estimate, pairs: tuple[float, float] | None = None) -> str:
    """What a throughput ratio's interval allows one to say ("" where there is no ratio).
    ``pairs`` (``every_pair``): the range of the ratios of any two runs; where all of them
    are below 1 and no interval says "slower", the claim is ``ALL_SLOWER``."""
    if e.value is None:
        return ""
    # "every run" needs two runs a side: one run against one is no pattern
    all_slower = pairs is not None and pairs[1] is not None and pairs[1] < 1 and e.n >= 2
    if clears(e, 1.0) is None:
        return ALL_SLOWER if all_slower else UNJUDGED
    if clears(e, GAIN):
        return PAYS_OFF
    if equivalent(e):
        return EQUIVALENT
    if clears(e, 1.0):
        return FASTER
    if clears(e, 1.0, above=False):
        return SLOWER
    return ALL_SLOWER if all_slower else INCONCLUSIVE


def gated(c: str, gate: str | None) -> str:
    """A claim where the repeats cannot decide it (``gate``, one of ``GATES``): the gate's
    "not judged", whatever the interval would have said (pays off, faster, equivalent,
    slower, inconclusive) or whether there was one (n < 3), as ``CLAIM_NOTE`` says, so the
    verdict, the tables and the figures name one claim for the cell. Only the plain fact that
    every run was slower than every run of the baseline (``ALL_SLOWER``) stays: it is said
    whatever the gate, since no interval of the repeats is needed for it."""
    return gate if gate and c not in ("", ALL_SLOWER) else c


def direction(e: Estimate) -> str:
    """An equivalent ratio's direction, where its interval excludes 1 ("2.4% slower")."""
    if not equivalent(e):
        return ""
    if e.low > 1:
        return f"{100 * (e.value - 1):.1f}% faster"
    if e.high < 1:
        return f"{100 * (1 - e.value):.1f}% slower"
    return ""


def claim_text(c: str, e: Estimate) -> str:
    """A claim as a table names it (``CLAIM_NOTE`` says what each name means), an
    equivalence with its direction ("equivalent within ±3%, 2.4% slower")."""
    way = direction(e) if c == EQUIVALENT else ""
    return f"{c}, {way}" if way else c


def strength(c: str, e: Estimate) -> tuple:
    """The sort key of "the strongest claim the intervals support": the claim's strength
    first, then the interval's lower bound (the value where there is none)."""
    low = e.low if e.low is not None else e.value
    return (STRENGTH.get(c, -2), -math.inf if low is None else low)


def tied(a: Estimate, b: Estimate) -> bool:
    """Whether two estimates cannot be ranked: both have a confidence interval (n >= 3; a
    range of two runs is none) and the two overlap. The one rule by which a pick (the
    answer's best mode, best.md's fastest configuration) is called a tie with the picks it
    cannot be told from."""
    return min(a.n, b.n) >= MIN_CI_N and None not in (a.low, a.high, b.low, b.high) \
        and a.low <= b.high and b.low <= a.high


def is_faster(c: str) -> bool | None:
    """speedup.csv's ``faster`` column: None where no claim can be made."""
    return None if c in ("", UNJUDGED, ALL_SLOWER, NO_BASELINE, *GATES) else \
        c in (PAYS_OFF, FASTER)


def is_slower(c: str) -> bool | None:
    return None if c in ("", UNJUDGED, ALL_SLOWER, NO_BASELINE, *GATES) else c == SLOWER


ACCURACY_MARGIN = ACCURACY_POINTS / 100     # accuracy is stored as a share
LOSS, ACC_GAIN, ACC_EQUIVALENT, ACC_UNJUDGED = (
    "a loss", "a gain", f"equivalent within ±{ACCURACY_POINTS:.1f} points",
    f"fewer than {MIN_CI_WORD} paired seeds, not judged")


def difference_claim(e: Estimate) -> str:
    """What a difference's interval (accuracy against fp32) allows one to say: a loss or a
    gain where it excludes 0, equivalent where it lies inside the stated margin, otherwise
    inconclusive, saying when the interval is too wide for the margin whatever its centre
    (the seeds and the test set cannot resolve it)."""
    if e.method != CI or e.low is None:
        return ACC_UNJUDGED
    if e.high < 0:
        return LOSS
    if e.low > 0:
        return ACC_GAIN
    if -ACCURACY_MARGIN <= e.low and e.high <= ACCURACY_MARGIN:
        return ACC_EQUIVALENT
    if (e.high - e.low) / 2 > ACCURACY_MARGIN:
        return (f"inconclusive: the interval is wider than the ±{ACCURACY_POINTS:.1f}-point "
                f"margin, so {e.n} seeds on this test set cannot resolve it")
    return f"inconclusive: the interval reaches beyond ±{ACCURACY_POINTS:.1f} points"
