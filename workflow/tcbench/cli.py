"""How an entry point (``python -m tcbench.X``) says its input cannot be used: one line on
stderr, ``tcbench.X: error: <what, naming the culprit>``, and exit status 2, the status
argparse gives a bad command line. Anything else raised is a bug and keeps its traceback.
Standard library only: both halves use it.
"""

from __future__ import annotations

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
