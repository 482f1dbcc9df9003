"""Timings say what they include: a step captured as one CUDA graph pays its capture in its
warm-up and its wall-to-wall time (the records time the capture outside the training loop),
and a warm-up median never leaves out the runs whose compile cache missed. Planted where the
old tables left them out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tcbench import resultset
from tcbench import vocabulary as V
from tcbench.reports import fp8_findings

RECORD = (Path(__file__).resolve().parents[1] / "results" / "nvidia-h200" / "records" /
          "mnist_fastest" /
          "amp-bf16_bs8192_gpu-resident_contiguous_compile-off_graphs-on_cudnn-on_r3.json")


@pytest.mark.skipif(not RECORD.exists(), reason="no committed H200 set")
def test_a_graphed_steps_warm_up_and_total_time_include_its_capture():
    r = json.loads(RECORD.read_text()) | {"_path": str(RECORD)}
    capture = r["harness"]["phases_s"]["capturing_cuda_graph"]
    row = resultset.tidy([r]).iloc[0]
    assert capture > 0.5
    assert row[V.WARMUP] == pytest.approx(r["metrics"]["time_to_steady_s"] + capture)
    assert row[V.SEED_METRIC] == pytest.approx(r["metrics"]["total_time_s"] + capture)
    eager = dict(r, params=dict(r["params"], cuda_graphs="off"))
    assert resultset.tidy([eager]).iloc[0][V.WARMUP] == r["metrics"]["time_to_steady_s"]


def test_a_warm_up_says_its_cache_misses():
    """The transformer table showed the median of the cache hits alone."""
    row = {"time_to_steady_s": 36.7, "time_to_steady_s_low": 36.4, "time_to_steady_s_high": 37.1,
           "time_to_steady_s_n": 2, "time_to_steady_s_interval": "median",
           "time_to_steady_miss_s": 95.8, "time_to_steady_miss_s_low": 95.8,
           "time_to_steady_miss_s_high": 95.8, "time_to_steady_miss_s_n": 1,
           "time_to_steady_miss_s_interval": "median"}
    said = fp8_findings._warmup(row)
    assert said.startswith("36.7") and said.endswith("; cache miss 95.8 (1 run)")
    assert "cache miss" not in fp8_findings._warmup(row | {"time_to_steady_miss_s_n": 0})
