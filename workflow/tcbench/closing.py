"""The last lines of a run: where the result set is, what its verdict says, where the figures
are, and the command that builds the HTML report (the workflow's ``onsuccess`` prints them)."""

from __future__ import annotations

import re
import shlex
import textwrap
from pathlib import Path

from . import vocabulary as V

BOTTOM_LINE = "**Bottom line.**"


def bottom_line(verdict: Path) -> str | None:
    """The verdict's first "**Bottom line.**" paragraph, as plain text; None without one."""
    try:
        text = Path(verdict).read_text()
    except OSError:
        return None
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = paragraph.strip()
        if paragraph.startswith(BOTTOM_LINE):
            plain = re.sub(r"\*\*(.+?)\*\*", r"\1", paragraph[len(BOTTOM_LINE):])
            return " ".join(plain.replace("`", "").split())
    return None


def report_command(configfiles=(), config: dict | None = None, targets=()) -> str:
    """``snakemake [targets] --report report.html`` with the run's own targets, config files
    and overrides."""
    words = ["snakemake", *sorted(targets), "--report", "report.html"]
    if configfiles:
        words += ["--configfile", *map(str, configfiles)]
    scalars = {k: v for k, v in (config or {}).items() if isinstance(v, (str, int, float, bool))}
    if scalars:
        words += ["--config", *(f"{k}={v}" for k, v in scalars.items())]
    return " ".join(shlex.quote(w) for w in words)


def summary_line(report: Path) -> str | None:
    """The reproduction check's summary (``reproduce.md``'s first bold sentence: "N of M rerun
    estimates inside ...; K of L claims the same"), as plain text; None without one."""
    try:
        found = re.search(r"\*\*(.+?)\*\*", Path(report).read_text())
    except OSError:
        return None
    return found.group(1).split(". ")[0].rstrip(".") + "." if found else None


def message(result_set: Path | str, report_command: str | None = None,
            comparison: Path | str | None = None, width: int = 100, study: bool = True,
            reproduction: Path | str | None = None) -> str:
    """What a user wants to read when the run is over, from the files that exist: the result
    set (when there is one and ``study``: this run was about it), its verdict's bottom line,
    tables, figures, capacity table, the cross-GPU comparison and the reproduction check (when
    this run made them, the check with its summary) and the command for the HTML report."""
    res = Path(result_set)
    lines = [f"Result set: {res}/"] if study and res.is_dir() else []
    verdict = res / V.VERDICT_FILES["md"]
    if study and verdict.exists():
        lines.append(f"Verdict:    {verdict}")
        said = bottom_line(verdict)
        if said:
            # its opening lines: a set of many experiments has a bottom line of many
            # sentences, which the verdict file holds in full; a line never ends inside a
            # mode's name ("amp-" / "bf16")
            lines += textwrap.wrap(said, width=width, initial_indent="            ",
                                   subsequent_indent="            ", max_lines=6,
                                   placeholder=" … (the rest in the verdict)",
                                   break_on_hyphens=False)
    shown = [("Tables:", res / f"{V.COMBINED_STEM}.md"), ("Figures:", res / "figures"),
             ("Capacity:", res / "capacity.md")] if study else []
    if comparison is not None:
        shown.append(("Comparison:", Path(comparison) / V.COMPARE_FILES["md"]))
    for label, path in shown:
        if path.exists():
            lines.append(f"{label:<11} {path}{'/' if path.is_dir() else ''}")
    if reproduction is not None and Path(reproduction).exists():
        lines.append(f"{'Reproduced:':<11} {reproduction}")
        said = summary_line(Path(reproduction))
        lines += textwrap.wrap(said or "", width=width, initial_indent=" " * 12,
                               subsequent_indent=" " * 12)
    if report_command:
        lines.append(f"Report:     {report_command}")
    return "\n".join(lines)
