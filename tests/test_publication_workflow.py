"""The publication targets through Snakemake: the HTML report of the smoke study, the compare
target on the smoke study, and the compare target from a committed result set alone (no
records, no GPU), which is how CI builds the cross-GPU figure of the README."""

from __future__ import annotations

import json
import re
import shutil

import yaml

import gpu_like
from conftest import REPO, snakemake
from tcbench import vocabulary as V

SMOKE = ("--configfile", "config/smoke.yaml", "--config", "run=smoke")
# every experiment of the smoke study gets a verdict section, a table and its figures
N_SMOKE = len(yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())["experiments"])


def test_smoke_study_writes_tables_and_verdict(smoke_run):
    for exp in ("amp_recipe", "mnist_seed", "digits", "models", "own_model"):
        for ext in ("md", "tex", "html"):
            assert (smoke_run / "tables" / f"{exp}.{ext}").stat().st_size > 200
        for ext in ("pdf", "svg", "png"):
            assert (smoke_run / "figures" / f"{exp}_speedup.{ext}").exists()
    verdict = (smoke_run / "summary.md").read_text()
    assert verdict.startswith("# Verdict: smoke on ")
    assert "not a CUDA GPU" in verdict
    # it opens on the one-screen table, and every experiment has its section after it
    lines = verdict.splitlines()
    assert next(i for i, x in enumerate(lines) if x.startswith("| experiment |")) < 30
    names = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())["experiments"]
    for exp in (e["name"] for e in names):
        assert f"\n## {exp}" in verdict, exp
    assert r"\toprule" in (smoke_run / "tables.tex").read_text()


def test_report_builds_after_the_smoke_study(smoke_run):
    wd = smoke_run.parents[1]
    snakemake(wd, "--report", "report.html", *SMOKE)
    html = (wd / "report.html").read_text()
    for needle in ("Verdict", "summary.html", "amp_recipe_attribution.png", "models.html",
                   "Experiment <strong>mnist_seed</strong>", "Where a step", "Okabe"):
        assert needle in html, needle
    # it opens on the verdict: the landing page (the workflow description) is the verdict's
    # page, then how the numbers were made, naming the set as its folder does
    desc = json.loads(re.search(r"var workflow_desc = (\".*?\");\n", html, re.S).group(1))
    assert desc.index("Bottom line.") < desc.index("How these numbers were made")
    assert re.search(r'Result set: <tt class="docutils literal">(<span class="pre">)?smoke<', desc)
    assert "body{" not in desc  # the verdict's style stays inside its own wrapper
    # every figure and table of the study is in it, each under its experiment, and the set's
    # own figures, but none of what a CPU cannot measure (memory, kernel profiles); each says
    # whether it was drawn (fp32 alone has no speedup to draw); and the overview figure
    assert len(re.findall(r'"[^"]*/figures/[a-z0-9_]+\.png": \{', html)) == \
        N_SMOKE * (len(V.FIGURES) - len(V.GPU_ONLY_FIGURES)) + \
        len(V.SET_FIGURES) - len(V.GPU_ONLY_SET_FIGURES) + 1
    assert f"/figures/{V.set_figure_name(V.OVERVIEW_FIGURE, 'png')}" in html
    # the verdict's page opens on it, embedded
    assert desc.index("data:image/png;base64,") < desc.index("Bottom line.")
    assert "_memory.png" not in html and "_tensor_cores.png" not in html
    assert '"drawn": "yes"' in html and '"drawn": "no: only strict fp32 ran' in html
    assert not list((smoke_run / "figures").glob("*_memory.*"))
    assert len(re.findall(r'"[^"]*/tables/[a-z0-9_]+\.html": \{', html)) == N_SMOKE


def test_compare_target_on_the_smoke_study(smoke_run):
    wd = smoke_run.parents[1]
    snakemake(wd, "compare", "--cores", "2", *SMOKE)
    out = wd / "results" / "compare-smoke"
    md = (out / "comparison.md").read_text()
    assert "| T4 (seed) ‡ | bs 512 | amp-fp16 | 1/1 | 2.52 (1 run) |" in md
    assert "| AMD" in md or "| smoke" in md or re.search(r"\| [^|]+ \| bs 64 \| fp32 \|", md)
    assert (out / "figures" / "overview.png").exists()
    snakemake(wd, "all", "compare", "--report", "report-all.html", *SMOKE)
    assert "Cross-GPU comparison" in (wd / "report-all.html").read_text()


def test_compare_builds_from_a_committed_result_set_alone(workflow_copy):
    """results/nvidia-h200/metrics.csv as committed (the real one once it is in the
    repository, a synthetic stand-in until then), no records, no GPU: only the compare job
    runs, nothing is trained or re-aggregated."""
    h200 = workflow_copy / "results" / "nvidia-h200"
    h200.mkdir(parents=True)
    committed = REPO / "results" / "nvidia-h200" / "metrics.csv"
    if committed.exists():
        shutil.copy2(committed, h200 / "metrics.csv")
    else:
        metrics = gpu_like.write(workflow_copy / "tmp-gpu-like") / "metrics.csv"
        (h200 / "metrics.csv").write_text(metrics.read_text().replace("gpu-like", "nvidia-h200"))
    args = ("compare", "--cores", "2", "--config", "require_gpu=False")
    plan = snakemake(workflow_copy, *args, "-n").stdout
    jobs = re.findall(r"^(\w+)\s+\d+$", plan.split("Job stats:")[1], re.M)
    assert [j for j in jobs if j != "total"] == ["compare"]
    snakemake(workflow_copy, *args)
    out = workflow_copy / "results" / "compare"
    assert (out / "figures" / "overview.svg").exists()
    assert "T4 (seed) ‡" in (out / "comparison.md").read_text()
    assert not (h200 / "records").exists() and not (h200 / "summary.csv").exists()


def test_compare_names_a_missing_result_set(workflow_copy):
    proc = snakemake(workflow_copy, "compare", "-n", "--config", "require_gpu=False",
                     check=False)
    assert proc.returncode != 0
    assert "results/nvidia-h200/metrics.csv does not exist" in proc.stdout + proc.stderr
