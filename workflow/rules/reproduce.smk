# The reproduction check, `snakemake reproduce --config run=<rerun> reference=<set>`: this
# study's own result set (the rerun, built if needed) against a reference set of the same GPU
# model under results/ (read as committed, never rebuilt), or three or more runs of the study
# pooled (reference=a,b,c: tcbench.analysis.runs), quantity by quantity: throughputs,
# per-process and interleaved ratios against the reference's 95% intervals, and every claim.
# Written into the rerun's folder (tcbench.vocabulary.REPRODUCE_FILES, REPRODUCE_FIGURE).
# Another GPU model is compared, not reproduced: that is `snakemake compare`. The reference is
# checked (tcbench.analysis.reproduce.reference_tables) when the rule's input is asked for, so
# a bad one stops the run before any job; no job of this rule measures, so no GPU is needed
# (measuring_checks holds only GPU jobs).
import importlib

REFERENCE = config.get("reference")
REPRODUCE_FIGURES = [f"{RESULTS}/figures/{V.REPRODUCE_FIGURE}.{ext}" for ext in FIGURE_FORMATS]
# the check's module, imported only when the rule is asked for: it reads tables with pandas,
# which nothing needs while the workflow is read
reproduce_module = lambda: importlib.import_module("tcbench.analysis.reproduce")  # noqa: E731


rule reproduce:
    message:
        "reproduction check: {params.rerun}/ against {params.reference}"
    input:
        rerun=[
            expand(getattr(rules.aggregate.output, name), run=RUN)[0]
            for name in ("metrics", "summary", "speedup", "interleaved")
        ],
        reference=lambda wildcards: reproduce_module().reference_tables(REFERENCE, RUN),
    output:
        md=f"{RESULTS}/{V.REPRODUCE_FILES['md']}",
        csv=f"{RESULTS}/{V.REPRODUCE_FILES['csv']}",
        png=report(
            REPRODUCE_FIGURES[FIGURE_FORMATS.index("png")],
            caption="../report/reproduce.rst",
            category="Reproduction check",
            labels={"rerun": RUN, "figure": "rerun against its reference"},
        ),
        other=[f for f in REPRODUCE_FIGURES if not f.endswith(".png")],
    log:
        f"logs/{RUN}/reproduce.log",
    params:
        rerun=lambda wildcards, output: str(Path(output.md).parent),
        # each reference run's folder, once, in the order given
        reference=lambda wildcards, input: list(
            dict.fromkeys(str(Path(t).parent) for t in input.reference)
        ),
    shell:
        "python -m tcbench.reports.reproduce {params.rerun:q} "
        "--reference {params.reference:q} --md {output.md:q} --csv {output.csv:q} "
        "--figures {output.png:q} {output.other:q} > {log:q} 2>&1"
