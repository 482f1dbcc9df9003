"""The FP8 crossover map: measured FP8/bf16 throughput ratio per (width, tokens per step) of the
crossover study (config/fp8_crossover.yaml), beside the prediction from the device's ceilings
(tcbench.analysis.crossover) and the peak-memory ratio, and the sentence that says where FP8 starts to
pay. Reads records (their parameters hold the width, which metrics.csv has no column for).

    python -m tcbench.reports.crossover results/nvidia-h200/records \\
        --calibration results/nvidia-h200/calibration.json --out results/nvidia-h200
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.patches import Rectangle

from .. import atomic, resultset, stats
from ..analysis import crossover
from ..render import plot as FIG

PAYS = stats.GAIN    # the study's "pays off" threshold, as everywhere in tcbench
WORKLOAD = "amp_recipe"
PREFIX = "fp8_crossover"  # config/fp8_crossover.yaml's experiments, one per width


def cells(records: list[dict]) -> pd.DataFrame:
    """One row per record of the square recipe MLP: width, tokens (= batch size), layers,
    precision, status, throughput, peak memory."""
    rows = []
    for r in records:
        p, m = r["params"], r.get("metrics") or {}
        if r["workload"] != WORKLOAD or p.get("in_size") != p.get("out_size"):
            continue
        rows.append({"width": p["in_size"], "tokens": r["batch_size"],
                     "layers": p.get("num_layers"), "precision": r["precision"],
                     "repeat": r["repeat"], "status": r["status"],
                     "throughput": m.get("throughput_samples_per_s") if r["status"] == "ok"
                     else None,
                     "memory": m.get("max_memory_allocated_bytes") if r["status"] == "ok"
                     else None})
    return pd.DataFrame(rows)


def ratios(df: pd.DataFrame, roofs: crossover.Roofs | None = None) -> pd.DataFrame:
    """Per shape and FP8 mode: the measured throughput ratio over amp-bf16 with its interval
    (tcbench.stats.ratio), whether that interval clears 1.10, the peak-memory ratio (means),
    and the predicted speedup where ``roofs`` are given."""
    out = []
    for (width, tokens), shape in df.groupby(["width", "tokens"]):
        base = shape[shape["precision"] == crossover.BASELINE]
        for mode in crossover.FP8_MODES:
            fp8 = shape[shape["precision"] == mode]
            if fp8.empty or base.empty:
                continue
            e = stats.ratio(fp8["throughput"], base["throughput"])
            mem = stats.ratio(fp8["memory"], base["memory"])
            layers = int(shape["layers"].dropna().iloc[0]) if shape["layers"].notna().any() \
                else 1
            out.append({"width": width, "tokens": tokens, "mode": mode,
                        **e.as_dict("ratio"), "ratio_method": e.label,
                        "pays": stats.clears(e, PAYS), "memory_ratio": mem.value,
                        "statuses": ",".join(sorted(set(fp8["status"]))),
                        "predicted": crossover.speedup(mode, tokens, width, layers, roofs)
                        if roofs else None})
    return pd.DataFrame(out)


def starts_to_pay(table: pd.DataFrame, mode: str) -> str:
    """'FP8 (fp8-rowwise) starts to pay at ...': the smallest shape (fewest FLOPs a step,
    tokens x width^2) whose 95% interval lies wholly above 1.10, or why no shape does."""
    t = table[table["mode"] == mode]
    if t.empty:
        return f"{mode}: no shape of the crossover study has both {mode} and " \
               f"{crossover.BASELINE} records."
    paying = t[t["pays"] == True].assign(work=lambda d: d["tokens"] * d["width"] ** 2)  # noqa: E712
    if paying.empty:
        undecided = int(t["pays"].isna().sum())
        return (f"{mode} pays off (95% CI of the throughput ratio over {crossover.BASELINE} "
                f"wholly above {PAYS:.2f}x) at none of the {len(t)} shapes measured"
                + (f" ({undecided} with fewer than three repeats a side, undecided)"
                   if undecided else "") + f"; the largest ratio is {t['ratio'].max():.2f}x.")
    r = paying.sort_values(["work", "tokens"]).iloc[0]
    return (f"{mode} starts to pay at Linear width {int(r['width'])} with {int(r['tokens'])} "
            f"tokens a step: {r['ratio']:.2f}x [{r['ratio_low']:.2f}, {r['ratio_high']:.2f}] "
            f"(95% CI, n = {int(r['ratio_n'])}) the throughput of {crossover.BASELINE}, the "
            f"smallest of {len(paying)} of {len(t)} shapes whose interval clears {PAYS:.2f}x.")


def _grid(t: pd.DataFrame, column: str) -> pd.DataFrame:
    return t.pivot(index="width", columns="tokens", values=column).sort_index(ascending=False)


def figure(table: pd.DataFrame):
    """Per FP8 mode a row of three heatmaps over width x tokens: the measured ratio (its
    break-even contour at 1.0, cells whose interval clears 1.10 boxed), the predicted ratio on
    the same colour scale, and the peak-memory ratio."""
    FIG.style()
    modes = [m for m in crossover.FP8_MODES if (table["mode"] == m).any()]
    fig, axes = plt.subplots(len(modes), 3, figsize=(7.0, 2.4 * len(modes)), squeeze=False)
    values = table[["ratio", "predicted"]].to_numpy(dtype=float)
    spread = max(abs(np.log2(np.nanmax(values))), abs(np.log2(np.nanmin(values))), 0.1)
    scale = {"cmap": "vlag_r", "vmin": 2 ** -spread, "vmax": 2 ** spread, "center": 1.0}
    for row, mode in zip(axes, modes):
        t = table[table["mode"] == mode]
        measured = _grid(t, "ratio")
        for ax, column, title in ((row[0], "ratio", f"{mode}: measured"),
                                  (row[1], "predicted", "predicted from the roofs"),
                                  (row[2], "memory_ratio", "peak memory")):
            grid = _grid(t, column).astype(float)
            kw = scale if column != "memory_ratio" else {"cmap": "Greys", "vmin": 0.5,
                                                        "vmax": 1.5}
            sns.heatmap(grid, ax=ax, annot=True, fmt=".2f", cbar=False, linewidths=0.5,
                        annot_kws={"fontsize": 6}, **kw)
            ax.set_title(title + (" (x bf16)" if column != "ratio" else " (x bf16 throughput)"),
                         fontsize=7)
            ax.grid(False)
            ax.set_xlabel("tokens per step")
            ax.set_ylabel("Linear width" if ax is row[0] else "")
            if column in ("ratio", "predicted") and grid.notna().all().all() and \
                    grid.shape[0] > 1 and grid.shape[1] > 1:
                xs, ys = np.arange(grid.shape[1]) + 0.5, np.arange(grid.shape[0]) + 0.5
                ax.contour(xs, ys, grid.to_numpy(), levels=[1.0], colors="k",
                           linewidths=1.0, linestyles="--")
        pays = _grid(t, "pays").reindex_like(measured)
        for i, width in enumerate(measured.index):
            for j, tokens in enumerate(measured.columns):
                if pays.loc[width, tokens] == True:  # noqa: E712 - True, not None
                    row[0].add_patch(Rectangle((j, i), 1, 1, fill=False, lw=1.6, ec="k"))
    fig.text(0.01, -0.02, f"Dashed: break-even (1.0x). Boxed: 95% CI of the measured ratio "
             f"wholly above {PAYS:.2f}x. Prediction: GEMMs at the calibration's roofs plus the "
             f"bytes the casts and scales move at its copy bandwidth (tcbench.analysis.crossover).",
             fontsize=6, wrap=True)
    fig.tight_layout()
    return fig


def write(records_dir: Path, calibration: Path | None, out: Path,
          prefix: str = PREFIX) -> list[Path]:
    """The map's table (tables/fp8_crossover.csv), sentences (fp8_crossover.md) and figure
    (figures/fp8_crossover.*), from the records of the experiments named ``prefix*``."""
    records = [r for r in resultset.load(resultset.find_records(records_dir))
               if r["experiment"].startswith(prefix)]
    roofs = crossover.Roofs.from_calibration(json.loads(Path(calibration).read_text()),
                                             str(calibration)) if calibration else None
    table = ratios(cells(records), roofs)
    if table.empty:
        raise ValueError(f"{records_dir}: no pair of amp-bf16 and FP8 records of the square "
                         f"recipe MLP")
    out.mkdir(parents=True, exist_ok=True)
    paths = [atomic.write_text(out / "tables" / "fp8_crossover.csv", table.to_csv(index=False)),
             atomic.write_text(out / "fp8_crossover.md", "\n\n".join(
                 starts_to_pay(table, m) for m in crossover.FP8_MODES) + "\n")]
    return paths + FIG.save(figure(table), out / "figures", "fp8_crossover")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.reports.crossover", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records", type=Path)
    ap.add_argument("--calibration", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--prefix", default=PREFIX, help="the experiments' common name prefix")
    args = ap.parse_args(argv)
    for p in write(args.records, args.calibration, args.out, args.prefix):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
