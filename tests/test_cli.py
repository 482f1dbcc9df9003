"""The entry points' one way to say that their input cannot be used (tcbench.cli)."""

import re
from pathlib import Path

import pytest

from tcbench import cli

PACKAGE = Path(__file__).resolve().parents[1] / "workflow" / "tcbench"


def test_bad_input_is_one_line_naming_the_program_and_exit_2(capsys):
    def run():
        raise ValueError("--summary x.csv: no such file")

    assert cli.main("tcbench.x", run, (ValueError,)) == 2
    assert capsys.readouterr().err == "tcbench.x: error: --summary x.csv: no such file\n"
    assert cli.main("tcbench.x", lambda: None, (ValueError,)) == 0
    assert cli.main("tcbench.x", lambda: 1, (ValueError,)) == 1


def test_anything_else_raised_is_a_bug_and_keeps_its_traceback():
    def run():
        raise KeyError("not bad input here")

    with pytest.raises(KeyError):
        cli.main("tcbench.x", run, (ValueError,))
    with pytest.raises(TypeError, match="exit status"):     # a result is no exit status
        cli.main("tcbench.x", lambda: ["written.md"], (ValueError,))


def test_no_entry_point_writes_its_own_error_line():
    own = re.compile(r"""print\(f?["']tcbench\.[\w.]+: error:""")
    wrong = [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py"))
             if own.search(p.read_text())]
    assert wrong == []
