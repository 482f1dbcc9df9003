rule train:
    input:
        job_inputs,
        ancient(IMAGE_PYTHON_READY),
    output:
        "results/{run}/records/{experiment}/{cell}.json",
    log:
        "logs/{run}/train/{experiment}/{cell}.log",
    benchmark:
        "results/{run}/benchmarks/train/{experiment}/{cell}.tsv"
    params:
        spec=job_spec,
        src=TCBENCH_SRC,
    resources:
        gpu=1,
    shell:
        # one torch.compile cache per result set: its jobs compile the same graphs
        "PYTHONPATH={params.src:q} python -m tcbench.run --spec {params.spec:q} "
        "--compile-cache resources/compile-cache/{wildcards.run:q} --out {output:q} > {log:q} 2>&1"


rule calibrate:
    input:
        ancient(IMAGE_PYTHON_READY),
    output:
        "results/{run}/calibration.json",
    log:
        "logs/{run}/calibrate.log",
    params:
        size=config.get("calibrate", {}).get("size", 8192),
        iterations=config.get("calibrate", {}).get("iterations", 20),
        src=TCBENCH_SRC,
    resources:
        gpu=1,
    shell:
        "PYTHONPATH={params.src:q} python -m tcbench.calibrate --out {output:q} "
        "--size {params.size:q} --iterations {params.iterations:q} > {log:q} 2>&1"
