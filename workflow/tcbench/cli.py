"""How an entry point (``python -m tcbench.X``) says its input cannot be used: one line on
stderr, ``tcbench.X: error: <what, naming the culprit>``, and exit status 2, the status
argparse gives a bad command line. Anything else raised is a bug and keeps its traceback. A
name that is not known is told the known ones closest to it (``suggestion``).
Standard library only: both halves use it.
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Callable

BAD_INPUT = 2   # argparse's own status for a command line it cannot use


def bad_input(prog: str, message) -> int:
    """Say why the input cannot be used; the exit status for it."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return BAD_INPUT


def main(prog: str, run: Callable[[], int | None],
         errors: tuple[type[BaseException], ...]) -> int:
    """``run()``'s exit status (None: 0), or ``BAD_INPUT`` with the message of one of
    ``errors``, the exceptions that mean this program's input cannot be used."""
    try:
        status = run()
    except errors as exc:
        return bad_input(prog, exc)
    if status is not None and type(status) is not int:
        raise TypeError(f"{prog}: an exit status is an int or None, not {status!r}")
    return 0 if status is None else status


def suggestion(value, known) -> str:
    """`` (did you mean X?)`` for a name ``value`` that is not one of ``known``: the known names
    it is a part of ('bf16': amp-bf16; 'fp8': fp8-tensorwise or fp8-rowwise), else those
    closest to it by spelling (difflib; 'warmup_step': warmup_steps); empty where none is
    close."""
    text = str(value).strip().lower()
    names = {str(k).lower(): str(k) for k in known}
    close = [n for n in names if text and text in re.split(r"[-_.]", n)]
    close = close or difflib.get_close_matches(text, list(names), n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(names[c] for c in close[:3])}?)" if close else ""
