# Containers. With --use-singularity (= --sdm apptainer) every job runs in config["container"];
# without it this file adds nothing, and the jobs run natively as they always did.
#
# Every job is told which image it runs in (Apptainer itself only tells the path of its cached
# copy), so that its record can say so: JOB_ENV is exported at the start of each job's shell
# command (Snakemake's shell prefix, set in the Snakefile), which runs inside the container;
# nothing is set in Snakemake's own environment. The default image, the official PyTorch one, lacks pandas,
# seaborn, scikit-learn, ...: one job completes it first, installing what is missing at the
# versions of containers/constraints.txt into a folder of its own that every later job sees as
# its Python user site. An image built from containers/ has everything: that job then only
# checks. docs/containers.md has the details.
from snakemake_interface_executor_plugins.settings import DeploymentMethod

from tcbench.host import container as tc_container  # noqa: E402

CONTAINERIZED = DeploymentMethod.APPTAINER in workflow.deployment_settings.deployment_method
IMAGE_PYTHON = f"resources/container-python/{tc_container.image_key(config['container'])}"

if CONTAINERIZED:
    JOB_ENV.update(tc_container.job_env(config["container"], Path(IMAGE_PYTHON).resolve()))
    # what Apptainer cannot tell a job: the local image's digest (hashed once, remembered by
    # size and mtime) and the runtime's version, from the host that starts the containers
    JOB_ENV.update(tc_container.image_identity(config["container"], Path("resources/image-digests")))
    if (runtime_version := tc_container.runtime_version()) is not None:
        JOB_ENV["TCBENCH_CONTAINER_RUNTIME_VERSION"] = runtime_version
# Jobs can be forked from one server only in a sandbox folder: a SIF (and what Snakemake pulls
# is one) is mounted by a squashfuse that Apptainer ends with the container that mounted it,
# so a server outliving the first job's container would see an empty image
# (train.smk's job_launcher). A local SIF is therefore unpacked once, by its digest, and its
# jobs run from that folder (their records name the SIF and its digest, and the folder as the
# image file Apptainer ran); an image Snakemake pulls is a SIF it names only later: fresh jobs.
RUN_IMAGE = config["container"]
if CONTAINERIZED and JOB_ENV.get("TCBENCH_IMAGE_KIND") == "file" and not config["fresh_interpreter"]:
    RUN_IMAGE = str(tc_container.sandbox_of(
        tc_container.local_image(config["container"]), JOB_ENV["TCBENCH_IMAGE_DIGEST"],
        Path("resources/image-sandboxes").resolve(), tc_container.runtime() or "apptainer"))
CONTAINER_FORKS = JOB_ENV.get("TCBENCH_IMAGE_KIND") == "sandbox" or RUN_IMAGE != config["container"]


container: RUN_IMAGE

# an input of every rule that runs tcbench: the image's Python is complete before they start
IMAGE_PYTHON_MANIFEST = f"{IMAGE_PYTHON}/{tc_container.OVERLAY_MANIFEST}"
IMAGE_PYTHON_READY = [IMAGE_PYTHON_MANIFEST] if CONTAINERIZED else []


rule image_python:
    message:
        "complete the Python of {params.image} (log: {log})"
    # made while missing (`snakemake --use-singularity image_python` checks the image again)
    output:
        while_missing([IMAGE_PYTHON_MANIFEST]),
    log:
        f"logs/image_python/{tc_container.image_key(config['container'])}.log",
    params:
        image=config["container"],
        requirements=str(Path(workflow.basedir) / "containers" / "requirements.txt"),
        constraints=str(Path(workflow.basedir) / "containers" / "constraints.txt"),
        # not from {output}: once the manifest is there the rule lists no output (while_missing)
        user_base=lambda wildcards: IMAGE_PYTHON,
        manifest=lambda wildcards: IMAGE_PYTHON_MANIFEST,
    shell:
        "python -m tcbench.host.imagedeps "
        "--requirements {params.requirements:q} --constraints {params.constraints:q} "
        "--user-base {params.user_base:q} --image {params.image:q} --out {params.manifest:q} "
        "> {log:q} 2>&1"

