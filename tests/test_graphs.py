"""How a job decides its training step (tcbench.job.graphs): the plan says what the record
says of the step (its CUDA-graph facts, or why the cell cannot run), and the job writes it."""

from tcbench import vocabulary as V
from tcbench.job import graphs, run


def tiny(**params):
    return {"run": "t", "experiment": "tiny", "cell": "fp32_bs8_r1", "workload": "amp_recipe",
            "precision": "fp32", "batch_size": 8, "repeat": 1,
            "params": {"in_size": 16, "out_size": 16, "num_batches": 4, "epochs": 1,
                       "warmup_steps": 1, "seed": 7} | params}


def test_an_eager_step_is_recorded_as_not_asked_for_and_trains():
    rec = run.run_job(tiny())
    assert rec["status"] == V.OK, rec["status_reason"]
    assert rec["precision_flags"]["cuda_graphs"] == {"requested": False, "captured": False,
                                                     "reason": None}


def test_a_graph_asked_for_on_a_cpu_is_unsupported_and_the_record_says_why():
    rec = run.run_job(tiny(cuda_graphs="on"))
    assert rec["status"] == V.UNSUPPORTED
    assert rec["status_reason"] == "cuda_graphs=on: CUDA graphs need a CUDA device"
    assert rec["precision_flags"]["cuda_graphs"] == {"requested": True, "captured": False,
                                                     "reason": None}
    assert rec["metrics"] is None


def test_an_optimiser_with_no_fused_version_is_unsupported_before_any_graph_fact(monkeypatch):
    def no_fused(optimizer):
        raise ValueError("fused_optimizer=on: SGD has no fused implementation here (test)")

    monkeypatch.setattr(graphs, "fused", no_fused)
    rec = run.run_job(tiny(fused_optimizer="on", cuda_graphs="on"))
    assert rec["status"] == V.UNSUPPORTED
    assert rec["status_reason"].startswith("fused_optimizer=on: SGD has no fused")
    assert "cuda_graphs" not in rec["precision_flags"]


def test_the_fused_optimiser_keeps_the_class_and_hyperparameters_adamw_included():
    """torch's AdamW keeps a default its constructor does not take (Adam's
    decoupled_weight_decay): the fused copy is built from what the constructor takes."""
    import torch

    model = torch.nn.Linear(4, 4)
    for opt in (torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1,
                                  betas=(0.9, 0.95)),
                torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)):
        f = graphs.fused(opt)
        assert type(f) is type(opt) and f.defaults["fused"] is True
        for key in ("lr", "weight_decay", "betas", "momentum"):
            assert f.param_groups[0].get(key) == opt.param_groups[0].get(key)
        model(torch.randn(2, 4)).sum().backward()
        f.step()   # the fused update runs (on the CPU here)
