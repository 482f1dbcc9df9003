# Paths and settings of the publication outputs (tables, verdict, cross-GPU comparison);
# the rules are in report.smk and compare.smk.


# Per result set: a table per experiment (Markdown, LaTeX, HTML) and the verdict.
def publication_paths(run=None):
    res = f"results/{run or RUN}"
    return [
        *expand(f"{res}/tables/{{experiment}}.{{ext}}", experiment=EXPERIMENTS,
                ext=["md", "tex", "html"]),
        f"{res}/tables.md",
        f"{res}/tables.tex",
        f"{res}/summary.md",
        f"{res}/summary.html",
    ]


# Cross-GPU comparison (`snakemake compare`): result sets named in config (results/<run>/metrics.csv)
# and published references (config/reference/*.csv) into results/<compare.name>/. A set other than
# this study's own is read as committed data, never rebuilt (see the run wildcard constraint).
COMPARE = config.get("compare") or {}
COMPARE_DIR = f"results/{COMPARE.get('name', 'compare')}"
# "auto" is this study's own result set, as in run: auto
COMPARE_RUNS = list(dict.fromkeys(RUN if r == "auto" else r for r in COMPARE.get("runs", ["auto"])))
COMPARE_REFERENCES = COMPARE.get("references", ["config/reference/seed_t4.csv"])
COMPARE_EXPERIMENTS = COMPARE.get("experiments") or EXPERIMENTS
COMPARE_KINDS = list(V.COMPARE_FIGURES)
mark_for_report = report  # Snakemake's parser reads a line starting with "report" as a directive

if COMPARE_DIR.removeprefix("results/") in {RUN, *COMPARE_RUNS}:
    raise WorkflowError(
        f"compare.name={COMPARE.get('name')!r} is also a result set's name; "
        "choose another, the comparison would overwrite that set"
    )


def compare_metrics(wildcards):
    """This study's own set is built if needed; any other set must already be there."""
    paths = []
    for run in COMPARE_RUNS:
        path = f"results/{run}/metrics.csv"
        if run != RUN and not Path(path).exists():
            raise WorkflowError(
                f"compare.runs: {path} does not exist. Run that study on its machine and "
                f"commit results/{run}/, or drop {run!r} from compare.runs."
            )
        paths.append(path)
    return paths


def compare_paths():
    figures = f"{COMPARE_DIR}/figures"
    return {
        "csv": f"{COMPARE_DIR}/comparison.csv",
        "tables": [
            *expand(f"{COMPARE_DIR}/tables/{{e}}.{{ext}}", e=COMPARE_EXPERIMENTS,
                    ext=["md", "tex"]),
            f"{COMPARE_DIR}/comparison.md",
            f"{COMPARE_DIR}/comparison.tex",
        ],
        "html": [
            mark_for_report(
                f"{COMPARE_DIR}/tables/{e}.html",
                caption="../report/compare_table.rst",
                category="Cross-GPU comparison",
                subcategory=e,
                labels={"experiment": e, "result": "table"},
            )
            for e in COMPARE_EXPERIMENTS
        ],
        "png": [
            mark_for_report(
                f"{figures}/{e}_{k}.png",
                caption=f"../report/compare_{k}.rst",
                category="Cross-GPU comparison",
                subcategory=e,
                labels={"experiment": e, "result": f"{k} figure"},
            )
            for e in COMPARE_EXPERIMENTS
            for k in COMPARE_KINDS
        ],
        "overview": mark_for_report(
            f"{figures}/overview.png",
            caption="../report/compare_overview.rst",
            category="Cross-GPU comparison",
            subcategory="overview",
            labels={"experiment": "all", "result": "overview figure"},
        ),
        "other": expand(
            f"{figures}/{{stem}}.{{ext}}",
            stem=[*(f"{e}_{k}" for e in COMPARE_EXPERIMENTS for k in COMPARE_KINDS), "overview"],
            ext=["pdf", "svg"],
        ),
    }
