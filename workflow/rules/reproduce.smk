# The reproduction check, `snakemake reproduce --config run=<rerun> reference=<set>`: this
# study's own result set (the rerun, built if needed) against a reference set of the same GPU
# model under results/ (read as committed, never rebuilt), quantity by quantity: throughputs,
# per-process and interleaved ratios against the reference's 95% intervals, and every claim.
# Written into the rerun's folder (tcbench.vocabulary.REPRODUCE_FILES, REPRODUCE_FIGURE).
# Another GPU model is compared, not reproduced: that is `snakemake compare`. The reference is
# checked when the rule's input is asked for, so a bad one stops the run before any job; no job
# of this rule measures, so no GPU is needed (measuring_checks holds only GPU jobs).
REFERENCE = config.get("reference")
REPRODUCE_FIGURES = [f"{RESULTS}/figures/{V.REPRODUCE_FIGURE}.{ext}" for ext in FIGURE_FORMATS]


def reproduce_reference(wildcards):
    """The reference set's tables, once they are known to be usable: they exist, the set is
    not the rerun itself, and, where the rerun's tables are there already, both sets ran on
    the same GPU model (the module checks that again when the rerun's are made first)."""
    from tcbench.analysis import reproduce as tcreproduce
    from tcbench.references import CompareError

    if not REFERENCE:
        raise WorkflowError(
            "snakemake reproduce needs the set to check against: --config reference=<name>, "
            "a result set under results/ of the same GPU model (e.g. reference=nvidia-h200), "
            f"with run=<name> the rerun's own set (now {RUN!r})"
        )
    if REFERENCE == RUN:
        raise WorkflowError(
            f"reference={REFERENCE!r} is the rerun's own set (run={RUN!r}): run the study "
            f"under another name (--config run=<rerun>) and check that one against it"
        )
    folder = Path("results") / REFERENCE
    try:
        ref = tcreproduce.load(folder)
    except CompareError as exc:
        raise WorkflowError(f"reference={REFERENCE!r}: {exc}") from None
    if all((Path(RESULTS) / V.SET_TABLES[t]).exists() for t in tcreproduce.TABLES):
        try:
            tcreproduce.same_gpu(ref, tcreproduce.load(RESULTS))
        except CompareError as exc:
            raise WorkflowError(str(exc)) from None
    interleaved = folder / V.SET_TABLES["interleaved"]
    return [str(folder / V.SET_TABLES[t]) for t in tcreproduce.TABLES] + \
        ([str(interleaved)] if interleaved.exists() else [])


rule reproduce:
    message:
        "reproduction check: {params.rerun}/ against {params.reference}/"
    input:
        rerun=[
            expand(getattr(rules.aggregate.output, name), run=RUN)[0]
            for name in ("metrics", "summary", "speedup", "interleaved")
        ],
        reference=reproduce_reference,
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
        src=TCBENCH_SRC,
        rerun=RESULTS,
        reference=lambda wildcards: f"results/{REFERENCE}",
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.reports.reproduce {params.rerun:q} "
        "--reference {params.reference:q} --md {output.md:q} --csv {output.csv:q} "
        "--figures {output.png:q} {output.other:q} > {log:q} 2>&1"
