"""The README's measured numbers, and docs/results.md's, are generated from the committed
results (scripts/readme.py) and cannot drift; neither quotes a measured number outside a
generated part. The README's first screen says what tcbench is, gives the two commands, shows
the overview figure, a bottom line of at most 60 words and a narrow answer table; the README
stays short enough to read and its prose lines narrow enough to read unwrapped."""

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


README = REPO / "README.md"
RESULTS_DOC = REPO / "docs" / "results.md"
MAX_LINES, MAX_LINE_CHARS, FIGURE_BY = 300, 200, 60


def test_readme_matches_the_committed_results():
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "readme.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_a_drifted_number_is_caught():
    text = README.read_text()
    block = readme.BLOCK.search(text)
    assert block, "README.md has no generated part"
    body = block.group("body")
    drifted = text.replace(body, body.replace("2", "3", 1) if "2" in body else body + "x", 1)
    _, changed = readme.regenerate(drifted, readme.Blocks(REPO / "results"))
    assert changed == [block.group("name")]


def answer_section(text: str) -> str:
    """From the answer's heading to the end of its generated table."""
    start = text.index("## The answer on an NVIDIA H200")
    end = "<!-- end: answer -->"
    return text[start:text.index(end, start) + len(end)]


def table_rows(lines: list[str], head: int) -> list[list[str]]:
    """The cells of the Markdown table whose header is ``lines[head]``, header first."""
    rows = []
    for x in lines[head:]:
        if not x.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", x.strip().strip("|"))])
    return [rows[0], *rows[2:]]


def test_the_first_screen_is_what_tcbench_is_the_commands_the_figure_and_the_answer():
    """What tcbench is (its first paragraph), the two commands, then the overview figure of the
    H200 set within the first 60 lines, its bottom line and the answer table with every
    experiment of the set, before the workflow is described."""
    text = README.read_text()
    lines = text.splitlines()
    assert lines[2].startswith("tcbench is a Snakemake workflow that asks whether Tensor Cores")
    first = text.split("\n\n")[1]
    assert len(re.findall(r"[.!?](?:\s|$)", first)) == 2, first
    assert text.index("# 1. install") < text.index("# 2. install") < text.index("![")
    figure = next(i for i, x in enumerate(lines) if x.startswith("!["))
    png = readme.V.set_figure_name(readme.V.OVERVIEW_FIGURE, "png")
    assert figure < FIGURE_BY and lines[figure].endswith(f"(results/nvidia-h200/figures/{png})")
    head = next(i for i, x in enumerate(lines) if x.startswith("| experiment |"))
    assert figure < head < FIGURE_BY + 10, head
    assert text.index("<!-- generated: answer -->") < text.index("How it works")
    rows = table_rows(lines, head)
    experiments = set(readme.Blocks(REPO / "results").summary["experiment"].astype(str))
    assert {r[0].split(":")[0] for r in rows[1:]} == experiments


def test_the_readme_answer_is_narrow_and_its_bottom_line_short():
    lines = README.read_text().splitlines()
    rows = table_rows(lines, next(i for i, x in enumerate(lines) if x.startswith("| experiment |")))
    assert rows[0] == list(readme.README_COLUMNS) and len(rows[0]) <= 6
    long = [c for r in rows for c in r if len(c) > readme.README_CELL_CHARS]
    assert long == [], long
    start = next(i for i, x in enumerate(lines) if x.startswith("**Bottom line.**"))
    bottom = " ".join(lines[start:lines.index("<!-- end: headline -->")])
    assert len(bottom.removeprefix("**Bottom line.**").split()) <= readme.README_WORDS, bottom
    # what the narrow table cuts is in the full one, with its footnotes
    full = RESULTS_DOC.read_text()
    assert "| experiment | question it answers | best mode and setting |" in full
    assert "how it was decided" in full and "Claim: 'pays off' where" in full


def test_the_readme_is_short_and_its_prose_lines_narrow():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_LINES, len(lines)
    wide = [i + 1 for i, x in enumerate(lines) if len(x) > MAX_LINE_CHARS and
            not x.startswith("|")]
    assert wide == [], f"README lines over {MAX_LINE_CHARS} characters outside tables: {wide}"


def test_no_measured_number_outside_a_generated_part():
    section = RESULTS_DOC.read_text() + answer_section(README.read_text())
    outside = readme.BLOCK.sub("", section)
    found = [m.group(0) for m in MEASURED.finditer(outside) if m.group(0) != "95%"]
    assert found == [], f"measured numbers written by hand: {found}"


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


def generated(text: str, name: str) -> str:
    """The body of the generated part ``name``."""
    m = next((m for m in readme.BLOCK.finditer(text) if m.group("name") == name), None)
    assert m, f"no generated part {name!r}"
    return m.group("body")


def test_the_capacity_answer_is_capacity_csv():
    """docs/results.md's "How much larger a batch fits": per workload and precision the largest
    batch, its ratio to fp32 (recomputed here from capacity.csv), the prediction and its
    outcome, the search time, and why a precision has no limit of its own."""
    import pandas as pd

    csv = RESULTS / "capacity.csv"
    if not csv.exists():
        pytest.skip("the committed H200 set has no capacity study")
    text = RESULTS_DOC.read_text()
    assert text.index("## How much larger a batch fits") < text.index("<!-- generated: capacity")
    body = generated(text, "capacity")
    lines = body.splitlines()
    rows = table_rows(lines, next(i for i, x in enumerate(lines) if x.startswith("| workload |")))
    at = {c: i for i, c in enumerate(rows[0])}
    shown = {(r[at["workload"]], r[at["precision"]]): r for r in rows[1:]}
    df = pd.read_csv(csv)
    plain = df["setting"].isna() if "setting" in df else pd.Series(True, index=df.index)
    fp32 = df[plain & (df["precision"] == "fp32")].set_index("workload")["largest_batch_size"]
    for i, c in df.iterrows():   # a search repeated with another setting: its own row
        r = shown[(c["shown_as"], c["precision"] + ("" if plain[i] else f" ({c['setting']})"))]
        assert r[at["search time"]] == f"{c['search_wall_s']:.0f} s", r
        if pd.isna(c["largest_batch_size"]):
            assert r[at["× fp32"]] == readme.numbers.MISSING, r
            said = [x for x in body.splitlines()
                    if f"({c['status']}): {c['status_reason']}" in x]
            assert len(said) == 1 and f"{c['shown_as']} {c['precision']}" in said[0], said
            continue
        ratio = c["largest_batch_size"] / fp32[c["workload"]]
        assert r[at["× fp32"]] == readme.numbers.times(ratio), r
        assert r[at["largest batch"]].split()[0] == f"{int(c['largest_batch_size']):,}", r
        if pd.notna(c["predicted_batch_size"]):
            assert r[at["predicted"]] == (f"{int(c['predicted_batch_size']):,} "
                                          f"({c['prediction']})"), r
    # the verdict's sentence names each workload's largest gain over fp32, and every
    # precision that fits that same batch
    main = df[plain].assign(r=df["largest_batch_size"] / df["workload"].map(fp32))
    for _, g in main[main["precision"] != "fp32"].dropna(subset=["r"]).groupby("workload"):
        top = g[g["r"] == g["r"].max()]
        *others, last = top["precision"]
        names = f"{', '.join(others)} and {last}" if others else last
        assert f"{top['shown_as'].iloc[0]}, {names}: {readme.numbers.times(g['r'].max())}" \
            in body


def test_the_best_part_says_what_holds_each_fastest_configuration_back():
    """The best part renders best.md's second table: each experiment with a `target` in the
    config files that the set ran has its row, with the target met, short or not told apart,
    and its MFU; the prose around it quotes no target as reached or missed (the table says)."""
    import pandas as pd

    text = RESULTS_DOC.read_text()
    body = generated(text, "best")
    lines = body.splitlines()
    head = [i for i, x in enumerate(lines) if x.startswith("| experiment |")]
    assert len(head) == 2, "the best part has no second table"
    rows = table_rows(lines, head[1])
    assert rows[0][:4] == ["experiment", "fastest configuration", "target", "MFU"]
    targets = readme.tcconfig.targets({}, (REPO / "config").glob("*.yaml"))
    ran = set(pd.read_csv(RESULTS / "best.csv")["experiment"].astype(str))
    held = {r[0].split(":")[0]: r for r in rows[1:]}
    for exp in set(targets) & ran:
        assert re.search(r": (met|short by [\d.]+%|not told apart)", held[exp][2]), held[exp]
    outside = readme.BLOCK.sub("", text)
    assert not re.search(r"targets?\b[^.]*\b(were|was|is|are) (not )?(reached|met)\b", outside)
