"""The capacity report: ``capacity.csv`` (one row per search), ``capacity.md`` and
``figures/capacity.{pdf,png}`` and ``figures/capacity_memory.{pdf,png}`` (tcbench.capacity.figure).

Precision order and colours are the vocabulary's; the figure takes the study's figure style
and writer, and the table the study's Markdown writer. Those are its only calls into the
rest of the package: ``figures.style``, ``figures.save``, ``figures.ONE_COLUMN_IN`` /
``TWO_COLUMN_IN`` and ``tables`` (one table, rendered by the study's Markdown writer)."""

from __future__ import annotations

import json
from pathlib import Path

from .. import atomic, vocabulary as V
from .figure import figure, memory_figure
from .probe import RESULT_SCHEMA

# the study's tables in its result set's folder (the verdict's capacity section reads the csv)
FILES: dict[str, str] = {"csv": "capacity.csv", "md": "capacity.md"}
# capacity.csv's columns that hold whole numbers (batch sizes, tokens, bytes)
INTEGERS = ("largest_batch_size", "smallest_oom_batch_size", "largest_batch_tokens",
            "predicted_batch_size", "peak_memory_bytes", "budget_bytes", "memory_limit_bytes",
            "gpu_memory_total_bytes")


def load_results(paths) -> list[dict]:
    docs = []
    for p in paths:
        try:
            doc = json.loads(Path(p).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"{p}: not a readable capacity result ({exc})") from None
        if not isinstance(doc, dict) or doc.get("schema") != RESULT_SCHEMA:
            raise ValueError(f"{p}: not a capacity result (schema is not {RESULT_SCHEMA!r})")
        docs.append(doc)
    return docs


def _row(d: dict) -> dict:
    largest, pred = d["largest_ok"], d.get("prediction") or {}
    tokens = d.get("tokens_per_sample")
    return {
        "workload": d["workload"], "model": (d.get("params") or {}).get("model"),
        "shown_as": d["workload"] + (f" ({d['params']['model']})"
                                     if (d.get("params") or {}).get("model") else ""),
        "precision": d["precision"],
        "setting": f"cudnn_benchmark {d['cudnn_benchmark']}" if d.get("variant")
        else None, "status": d["status"],
        "largest_batch_size": largest, "smallest_oom_batch_size": d["smallest_oom"],
        "resolution": d["resolution"], "batch_unit": d.get("samples_unit") or "samples",
        "largest_batch_tokens": largest * tokens if largest and tokens else None,
        "predicted_batch_size": pred.get("predicted"),
        "prediction": pred.get("verdict") or pred.get("reason"),
        "prediction_basis": pred.get("basis"),
        "fit_bytes_per_sample": pred.get("bytes_per_sample"),
        "fit_intercept_bytes": pred.get("intercept_bytes"),
        "budget_bytes": pred.get("budget_bytes"), "budget_source": pred.get("budget_source"),
        "peak_memory_bytes": d["peak_memory_bytes"],
        "peak_memory_source": d["peak_memory_source"],
        "bytes_per_sample": d["peak_memory_bytes"] / largest
        if largest and d["peak_memory_bytes"] else None,
        "throughput_samples_per_s": d.get("throughput_samples_per_s"),
        "probes": len(d["probes"]),
        "probes_oom": sum(p["status"] == V.OOM for p in d["probes"]),
        "probe_process_start": ", ".join(d.get("probe_process_start") or []) or None,
        "cudnn_benchmark": d.get("cudnn_benchmark"),
        "search_wall_s": d.get("search_wall_s"),
        "memory_limit_bytes": d["memory_limit_bytes"],
        "gpu_memory_total_bytes": d.get("gpu_memory_total_bytes"),
        "device_name": d.get("device_name"), "status_reason": d["status_reason"]}


def table(docs: list[dict]):
    """One row per search; ``capacity_vs_fp32`` is a precision's largest batch over fp32's, of
    the same workload and setting."""
    import pandas as pd

    df = pd.DataFrame([_row(d) for d in docs])
    df["precision"] = pd.Categorical(df["precision"], V.PRECISIONS, ordered=True)
    df = df.sort_values(["workload", "setting", "precision"], na_position="first") \
        .reset_index(drop=True)
    key = df["setting"].fillna("")
    base = {(w, k): v for w, k, p, v in zip(df["workload"], key, df["precision"],
                                             df["largest_batch_size"]) if p == V.BASELINE}
    df.insert(8, f"capacity_vs_{V.BASELINE}", [
        r.largest_batch_size / base[(r.workload, k)]
        if pd.notna(base.get((r.workload, k))) and base.get((r.workload, k))
        and pd.notna(r.largest_batch_size) else None for r, k in zip(df.itertuples(), key)])
    return _typed(df)


def _typed(df):
    """Counts as integers that may be missing (a CSV reads them as floats), the precisions in
    the vocabulary's order."""
    import pandas as pd

    for col in INTEGERS:
        df[col] = pd.to_numeric(df[col]).astype("Int64")
    df["precision"] = pd.Categorical(df["precision"].astype(str), V.PRECISIONS, ordered=True)
    return df


def read(path):
    """``capacity.csv`` as ``table`` made it, for a reader of the committed file (the README's
    generated docs): ``capacity_table`` of it is the one that wrote ``capacity.md``."""
    import pandas as pd

    try:
        df = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise ValueError(f"{path}: not a readable capacity table ({exc}); rebuild it with "
                         f"`snakemake capacity`") from None
    lacking = [c for c in (*INTEGERS, "precision", "shown_as", "status") if c not in df]
    if lacking:
        raise ValueError(f"{path}: no column {', '.join(lacking)}; rebuild it with "
                         f"`snakemake capacity` (python -m tcbench.capacity report)")
    return _typed(df)


def _largest(r, known) -> str:
    if not known(r.largest_batch_size):
        return f"as {V.BASELINE}" if r.status == "not_probed" else "—"
    size = f"{int(r.largest_batch_size):,}"
    text = f"≥ {size}" if r.status == "capped" else size
    return text + (f" ({r.largest_batch_tokens:,} tokens)" if known(r.largest_batch_tokens)
                   else "")


def _resolutions(df, known) -> str:
    """Each workload's search resolution, said once: '2,048 samples (mnist_cnn); 32 samples
    (resnet50)', or one for all."""
    from ..render.table import said_once

    return _each(said_once(
        (r.shown_as, f"{int(r.resolution):,} "
                     f"{r.batch_unit if isinstance(r.batch_unit, str) else 'samples'}")
        for r in df.itertuples() if known(r.resolution)))


def _budgets(df, known) -> str:
    """Each search's memory budget, one entry per distinct budget."""
    from ..render import numbers
    from ..render.table import said_once

    return _each(said_once((_search(r, known), numbers.memory(r.budget_bytes, "GiB"))
                           for r in df.itertuples() if known(r.budget_bytes)),
                 every=" for every search")


def _each(said: dict[str, list[str]], every: str = "") -> str:
    if len(said) == 1:
        return next(iter(said)) + every
    return "; ".join(f"{text} ({', '.join(names)})" for text, names in said.items())


def _search(r, known) -> str:
    return f"{r.shown_as} {r.precision}" + (f" ({r.setting})" if known(r.setting) else "")


def _reasons(df, known) -> list[str]:
    """Why a search has no limit or stopped, each reason once with the searches it holds for
    ('mnist_cnn tf32, resnet50 tf32 (not_probed): TF32 stores ...'), as the verdict says it."""
    from ..render.table import said_once

    said = said_once((_search(r, known), f"({r.status}): {r.status_reason}")
                     for r in df.itertuples() if isinstance(r.status_reason, str)
                     and r.status_reason)
    return [f"{', '.join(names)} {text}" for text, names in said.items()]


def capacity_table(df):
    """The capacity study as a reader's table (tcbench.render: one number format, captions)."""
    import pandas as pd

    from ..render import numbers
    from ..render.table import Table

    def known(v):
        return v is not None and not pd.isna(v)

    def mem(v):
        return numbers.memory(v, "MiB") if known(v) else numbers.MISSING

    rows = [[r.shown_as, str(r.precision) + (f" ({r.setting})" if known(r.setting) else ""),
             r.status, _largest(r, known),
             f"{int(r.smallest_oom_batch_size):,}" if known(r.smallest_oom_batch_size)
             else numbers.MISSING,
             numbers.times(getattr(r, f"capacity_vs_{V.BASELINE}")),
             (f"{int(r.predicted_batch_size):,} ({r.prediction})"
              if known(r.predicted_batch_size)
              else numbers.MISSING),
             mem(r.fit_bytes_per_sample),
             numbers.memory(r.peak_memory_bytes, "GiB") if known(r.peak_memory_bytes)
             else numbers.MISSING,
             f"{r.probes} ({r.probes_oom} oom)",
             f"{r.search_wall_s:.0f} s" if known(r.search_wall_s) else numbers.MISSING]
            for r in df.itertuples()]
    device = ", ".join(sorted({str(v) for v in df["device_name"].dropna()})) or "unknown device"
    limits = sorted({int(v) for v in df["memory_limit_bytes"].dropna()})
    budgets = sorted({int(v) for v in df["budget_bytes"].dropna()})
    starts = ", ".join(sorted({str(v) for v in df["probe_process_start"].dropna()})) or "none"
    plain = df[df["setting"].isna()]   # the searches without a setting of their own
    notes = [f"Searched to within {_resolutions(df, known)}. Each probe is a "
             f"process of its own ({starts}), eager; cuDNN autotuning "
             f"{', '.join(sorted(set(plain['cudnn_benchmark'].dropna())))} "
             f"unless the row says otherwise. First out of memory is the smallest batch size "
             f"tried that ran out of memory. Predicted: the line peak = a + b·batch through "
             f"two small batch sizes (torch.cuda.max_memory_allocated) solved for the memory "
             f"the allocator can have (on a GPU its total memory less what the CUDA "
             f"context, the libraries and other processes hold: total − free − reserved, "
             f"measured at the end of the larger fit probe); memory per sample is its slope "
             f"b; peak memory is that of the largest batch that fit. Search time is each "
             f"search's wall time, probes included."]
    notes += [f"Budget: {_budgets(df, known)}."] if budgets else []
    notes += [f"{r.shown_as} {r.precision} ({r.setting}): predicted is "
              f"{numbers.separated(r.prediction_basis)}, checked first" for r in df.itertuples()
              if isinstance(getattr(r, "prediction_basis", None), str)]
    notes += _reasons(df, known)
    return Table(f"Largest batch size that trains without running out of memory on {device}"
                 + (f" (memory_limit_bytes={', '.join(map(str, limits))})" if limits else ""),
                 ["workload", "precision", "status", "largest batch", "first out of memory",
                  f"× {V.BASELINE}", "predicted", "memory per sample", "peak memory",
                  "probes", "search time"], rows, align="lllrrrrrrrr", notes=notes)


def markdown(df) -> str:
    from ..render.table import to_markdown

    return to_markdown(capacity_table(df), "##")


def report(paths, out_dir: Path, figures_dir: Path) -> dict:
    docs = load_results(paths)
    if not docs:
        raise ValueError("no capacity results to report")
    df = table(docs)
    out_dir = Path(out_dir)
    atomic.write_text(out_dir / FILES["csv"], df.to_csv(index=False))
    atomic.write_text(out_dir / FILES["md"], markdown(df))
    figure(df, figures_dir)
    memory_figure(df, figures_dir)
    return {"table": df}
