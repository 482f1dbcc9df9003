"""Summary tables: numbers rounded the same way in Markdown, LaTeX (booktabs) and HTML; cells
without a number say why; columns the device does not measure are named, not silently gone."""

from __future__ import annotations

import re

import pandas as pd
import pytest

import gpu_like
from tcbench import tables as T


@pytest.mark.parametrize("value,text", [(54372.25, "54,400"), (7.020, "7.02"), (107.228, "107"),
                                        (0.02195, "0.0220"), (0.99996, "1.00"), (9.996, "10.0"),
                                        (None, "–"), (float("nan"), "–")])
def test_significant_digits(value, text):
    assert T.num(value) == text


def test_units():
    assert T.times(2.7812) == "2.78×" and T.percent(0.934) == "93%"
    assert T.mib(417359872) == "398" and T.interval(1.0, 2.0) == "[1.00, 2.00]"


def test_latex_escapes_and_booktabs():
    t = T.Table("amp_recipe: 50% & more", ["setting", "speedup"], [["bs 512", "2.78×"],
                                                                   ["x_y", "–"]], notes=["†: a"])
    tex = T.to_latex(t)
    for part in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{tabular}{lr}",
                 r"amp\_recipe: 50\% \& more", r"2.78$\times$", r"x\_y & -- \\",
                 r"\textsuperscript{\dag}: a"):
        assert part in tex, part
    assert T.to_latex(t, float_env=False).startswith(r"\begin{tabular}")


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="2 cells, expected 3"):
        T.Table("t", ["a", "b", "c"], [["1", "2"]])


@pytest.fixture(scope="module")
def gpu_tables(tmp_path_factory):
    out = gpu_like.write(tmp_path_factory.mktemp("gpu-like"))
    return pd.read_csv(out / "summary.csv"), pd.read_csv(out / "speedup.csv"), out


def test_experiment_table_on_a_gpu_set(gpu_tables):
    s, sp, _ = gpu_tables
    t = T.experiment_table(s, sp, "resnet50")
    assert t.columns[:4] == ["setting", "precision", "time (s)", "95% CI"]
    assert "Tensor Core share" in t.columns and "peak memory (MiB)" in t.columns
    rows = {(r[0], r[1]): dict(zip(t.columns, r)) for r in t.rows}
    oom = rows[("bs 256", "fp32")]
    assert oom["status"] == "oom" and oom["time (s)"] == "–" and oom["repeats"] == "0/3"
    assert rows[("bs 256", "amp-fp16")]["speedup vs fp32"] == "n/a"    # no fp32 baseline
    assert rows[("bs 64", "fp32")]["speedup vs fp32"] == "1.00×"
    assert any("CUDA out of memory" in n for n in t.notes)
    md = T.to_markdown(t)
    assert len(re.findall(r"^\|", md, re.M)) == 2 + len(t.rows)
    assert all(line.count("|") == len(t.columns) + 1 for line in md.splitlines()
               if line.startswith("|"))


def test_varying_axes_only(gpu_tables):
    s, sp, _ = gpu_tables
    t = T.experiment_table(s, sp, "mnist_loaders")
    assert {r[0] for r in t.rows} == {"bs 512 gpu-resident", "bs 512 synthetic"}
    t = T.experiment_table(s, sp, "mnist_seed")
    assert {r[0] for r in t.rows} == {"bs 512", "bs 1024"}
    assert "95% CI" not in t.columns            # one repeat


def test_unmeasured_columns_are_named(gpu_tables):
    s, sp, _ = gpu_tables
    s = s.assign(max_memory_allocated_bytes=None, tensor_core_share=None, gpu_busy_share=None)
    sp = sp.assign(memory_ratio=None)
    t = T.experiment_table(s, sp, "amp_recipe")
    assert "peak memory (MiB)" not in t.columns
    note = next(n for n in t.notes if n.startswith("Not measured"))
    for name in ("peak memory (MiB)", "memory vs fp32", "Tensor Core share", "GPU busy"):
        assert name in note


def test_cli_writes_three_formats_and_combined(gpu_tables, tmp_path):
    *_, out = gpu_tables
    assert T.main(["--tables", str(out), "--out", str(tmp_path / "tables"), "--combined",
                   str(tmp_path / "tables"), "--experiments", "digits", "resnet50"]) == 0
    names = sorted(p.name for p in (tmp_path / "tables").iterdir())
    assert names == ["digits.html", "digits.md", "digits.tex", "resnet50.html", "resnet50.md",
                     "resnet50.tex"]
    tex = (tmp_path / "tables.tex").read_text()
    assert tex.count(r"\begin{table}") == 2 and tex.count(r"\bottomrule") == 2
    assert T.main(["--tables", str(out), "--out", str(tmp_path), "--experiments", "x"]) == 2
