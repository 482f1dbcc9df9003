"""The README's measured numbers are generated from the committed results (scripts/readme.py)
and cannot drift; its results section quotes no measured number outside a generated part."""

import re
import subprocess
import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import readme  # noqa: E402

RESULTS = REPO / "results" / "nvidia-h200"
pytestmark = pytest.mark.skipif(not (RESULTS / "summary.csv").exists(),
                                reason="no committed H200 result set")
# a measured quantity: a number with a unit, a ratio or a share (targets are written with >= / <=)
MEASURED = re.compile(r"(?<![\w.,])(?<![≥≤] )\d[\d,]*(\.\d+)?\s*(×|%|s\b|images/s|samples/s|"
                      r"GiB|MiB|TFLOP|J\b|mJ|img/s)")


def results_section(text: str) -> str:
    start = text.index("### Results on an NVIDIA H200")
    return text[start:text.index("\n## ", start)]


def test_readme_matches_the_committed_results():
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "readme.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_a_drifted_number_is_caught():
    text = (REPO / "README.md").read_text()
    block = readme.BLOCK.search(text)
    assert block, "README.md has no generated part"
    body = block.group("body")
    drifted = text.replace(body, body.replace("2", "3", 1) if "2" in body else body + "x", 1)
    _, changed = readme.regenerate(drifted, readme.Blocks(REPO / "results"))
    assert changed == [block.group("name")]


def answer_section(text: str) -> str:
    """From the answer's heading to the end of its generated table (the workflow's description
    follows it, with the seed's published numbers)."""
    start = text.index("## The answer on an NVIDIA H200")
    end = "<!-- end: answer -->"
    return text[start:text.index(end, start) + len(end)]


def test_the_answer_table_comes_first():
    """The one-screen table (every experiment of the set) opens the README: before line 40 and
    before the workflow is described."""
    text = (REPO / "README.md").read_text()
    lines = text.splitlines()
    head = next(i for i, x in enumerate(lines) if x.startswith("| experiment | question it "
                                                                  "answers |"))
    assert head < 40, head
    assert text.index("<!-- generated: answer -->") < text.index("is a Snakemake workflow")
    rows = set()
    for x in lines[head + 2:]:
        if not x.startswith("|"):
            break
        rows.add(x.split(" | ")[0].removeprefix("| "))
    experiments = set(readme.Blocks(REPO / "results").summary["experiment"].astype(str))
    assert {r.split(":")[0] for r in rows} == experiments


def test_no_measured_number_outside_a_generated_part():
    text = (REPO / "README.md").read_text()
    section = results_section(text) + answer_section(text)
    outside = readme.BLOCK.sub("", section)
    found = [m.group(0) for m in MEASURED.finditer(outside) if m.group(0) != "95%"]
    assert found == [], f"measured numbers written by hand in the README: {found}"


def test_the_check_finds_a_number_written_by_hand():
    assert MEASURED.search("ResNet-50 reached 6,698 images/s, 2.79× over fp32") is not None
    assert MEASURED.search("targets: ResNet-50 ≥ 8,000 images/s, MNIST in ≤ 1.0 s") is None


def test_ci_runs_the_readmes_test_command_verbatim():
    """Command 2 is what CI runs (.ci/run), word for word; command 1 installs with the same
    step, which picks PyTorch's CPU build where there is no NVIDIA GPU."""
    lines = (REPO / "README.md").read_text().splitlines()
    command = {c: lines[i + 1] for i, x in enumerate(lines) for c in ("1", "2")
               if x.startswith(f"# {c}. install")}
    assert command["2"] in (REPO / ".ci" / "run").read_text().splitlines()
    for c in ("1", "2"):
        assert "sh scripts/install_torch.sh && pip install -e " in command[c], command[c]


def test_the_seed_finding_says_what_the_seed_cells_claim():
    """The README said the seed's finding "holds" of a cell whose windows were unsteady and
    whose repeats were noisy, and whose ratio was inconclusive."""
    said = readme.Blocks(REPO / "results").seed_finding()
    v = readme.Blocks(REPO / "results").verdict()
    j = next(a for a in v.answers if a.experiment == readme.SEED_EXPERIMENT).judgement
    words = {"inconclusive": "neither confirms nor contradicts", "pays off": "contradicts",
             "faster": "contradicts", "slower": "agrees with"}
    assert said.startswith(f"This set {words.get(j.claim, 'neither confirms nor contradicts')} "
                           f"the seed's MNIST finding")
    assert j.claim in said and "holds" not in said
    if j.row.get("unsteady_n"):
        assert "windows unsteady" in said
