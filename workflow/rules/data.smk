rule mnist_format_random:
    message:
        "write random MNIST-format files"
    input:
        ancient(IMAGE_PYTHON_READY),
    # written while missing (seed 0: the same bytes each time); `snakemake mnist_format_random`
    # writes them again
    output:
        while_missing(expand("resources/mnist-format-random/MNIST/raw/{f}", f=matrix.MNIST_RAW)),
    log:
        "logs/mnist_format_random.log",
    shell:
        "python -m tcbench.data.idxfiles random-mnist "
        "resources/mnist-format-random > {log:q} 2>&1"
