"""The last lines of a run: where the results are and what they say."""

from tcbench import closing

VERDICT = """# Verdict: smoke on a CPU

Result set `smoke`: 5 configurations.

**Bottom line.** Reduced precision paid off in **2 of 3** experiments, most in `mnist_seed`
(2.17× with amp-bf16).

## amp_recipe

**Bottom line.** not this one
"""


def test_bottom_line_is_the_first_such_paragraph_in_plain_text(tmp_path):
    (tmp_path / "summary.md").write_text(VERDICT)
    assert closing.bottom_line(tmp_path / "summary.md") == (
        "Reduced precision paid off in 2 of 3 experiments, most in mnist_seed (2.17× with "
        "amp-bf16).")
    (tmp_path / "other.md").write_text("# no verdict here\n")
    assert closing.bottom_line(tmp_path / "other.md") is None
    assert closing.bottom_line(tmp_path / "missing.md") is None


def test_message_names_what_exists(tmp_path):
    res = tmp_path / "results" / "smoke"
    (res / "figures").mkdir(parents=True)
    (res / "summary.md").write_text(VERDICT)
    text = closing.message(res, "snakemake --report report.html", width=60)
    lines = text.splitlines()
    assert lines[0] == f"Result set: {res}/"
    assert lines[1] == f"Verdict:    {res}/summary.md"
    assert lines[2].startswith("            Reduced precision paid off")
    assert all(len(line) <= 60 for line in lines[2:4])
    assert f"Figures:    {res}/figures/" in lines
    assert "Tables:" not in text and "Capacity:" not in text  # not made by this run
    assert lines[-1] == "Report:     snakemake --report report.html"


def test_a_capacity_only_run_names_its_table(tmp_path):
    (tmp_path / "capacity.md").write_text("| x |")
    assert closing.message(tmp_path).splitlines() == [
        f"Result set: {tmp_path}/", f"Capacity:   {tmp_path}/capacity.md"]


def test_report_command_repeats_the_runs_config():
    assert closing.report_command() == "snakemake --report report.html"
    assert closing.report_command(["config/smoke.yaml"], {"run": "smoke", "require_gpu": False,
                                                          "compare": {"name": "x"}}) == (
        "snakemake --report report.html --configfile config/smoke.yaml --config run=smoke "
        "require_gpu=False")
    assert closing.report_command(["my configs/a.yaml"]).endswith("'my configs/a.yaml'")


def test_a_comparison_run_names_the_comparison_not_a_missing_set(tmp_path):
    (tmp_path / "compare").mkdir()
    (tmp_path / "compare" / "comparison.md").write_text("| x |")
    text = closing.message(tmp_path / "cpu-none", "snakemake compare --report report.html",
                           comparison=tmp_path / "compare")
    assert text.splitlines() == [f"Comparison: {tmp_path}/compare/comparison.md",
                                 "Report:     snakemake compare --report report.html"]
    assert closing.report_command(targets={"compare"}) == "snakemake compare --report report.html"


def test_a_comparison_of_a_study_made_earlier_names_the_comparison_alone(tmp_path):
    res = tmp_path / "results" / "smoke"
    (res / "figures").mkdir(parents=True)
    (res / "summary.md").write_text(VERDICT)
    (tmp_path / "compare").mkdir()
    (tmp_path / "compare" / "comparison.md").write_text("| x |")
    text = closing.message(res, "snakemake compare --report report.html",
                           comparison=tmp_path / "compare", study=False)
    assert text.splitlines() == [f"Comparison: {tmp_path}/compare/comparison.md",
                                 "Report:     snakemake compare --report report.html"]


def test_a_reproduction_check_names_its_report_and_its_summary(tmp_path):
    res = tmp_path / "results" / "nvidia-h200-rerun"
    res.mkdir(parents=True)
    (res / "reproduce.md").write_text(
        "# Reproduction check\n\nBoth sets ran on NVIDIA H200. **12 of 13 rerun estimates "
        "inside the reference's 95% interval; 4 of 4 claims the same. Estimates inside: "
        "throughputs 6 of 7.**\n")
    text = closing.message(res, None, study=False, reproduction=res / "reproduce.md")
    assert text.splitlines() == [
        f"Reproduced: {res}/reproduce.md",
        "            12 of 13 rerun estimates inside the reference's 95% interval; 4 of 4 "
        "claims the same."]
    assert closing.message(res, None, study=False, reproduction=res / "absent.md") == ""


def test_the_bottom_line_never_breaks_inside_a_modes_name(tmp_path):
    res = tmp_path / "smoke"
    res.mkdir()
    said = "amp_recipe: cannot be judged (n < 3): " + "amp-bf16 at batch size 64, " * 12
    (res / "summary.md").write_text(f"# Verdict\n\n**Bottom line.** {said}\n")
    for width in range(40, 101):
        wrapped = closing.message(res, width=width).splitlines()[2:]
        assert not any(line.endswith("amp-") for line in wrapped), width
