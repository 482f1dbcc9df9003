"""The rule files' shape: common.smk holds the matrix and the helpers several files share, each
stage's own helpers sit beside its rules in <stage>_helpers.smk (snakemake --lint wants a
file's functions apart from its rules), and the package is found the same way by every job."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RULES = REPO / "workflow" / "rules"
SNAKEFILE = REPO / "Snakefile"
COMMON_MAX_LINES = 250


def texts():
    return {p.name: p.read_text() for p in [SNAKEFILE, *sorted(RULES.glob("*.smk"))]}


def defined(text):
    return re.findall(r"^def (\w+)\(", text, re.M)


def test_common_holds_only_what_several_files_need():
    files = texts()
    common = files.pop("common.smk")
    assert len(common.splitlines()) <= COMMON_MAX_LINES, \
        f"common.smk has {len(common.splitlines())} lines: move a helper to its stage's file"
    single = []
    for name in defined(common):
        users = [f for f, text in files.items() if re.search(rf"\b{name}\b", text)]
        used_here = len(re.findall(rf"\b{name}\b", common)) > 1
        if len(users) < 2 and not used_here and users != ["Snakefile"]:
            single.append(f"{name} (used by {users or 'nothing'})")
    assert not single, f"helpers of one stage in common.smk: {single}; move each to " \
        "<stage>_helpers.smk"


def test_each_stage_keeps_its_helpers_apart_from_its_rules():
    files = texts()
    for name, text in files.items():
        has_rules = re.search(r"^(rule|checkpoint) \w+:", text, re.M)
        assert not (has_rules and defined(text)), f"{name} mixes rules and functions"
    for helpers in RULES.glob("*_helpers.smk"):
        stage = helpers.name.removesuffix("_helpers.smk") + ".smk"
        assert f'include: "{helpers.name}"' in files.get(stage, ""), \
            f"{helpers.name} is not included by {stage}, the rules it serves"
        # a stage's helpers serve that stage: some rule of it uses one of them
        names = defined(helpers.read_text())
        assert any(re.search(rf"\b{n}\b", files[stage]) for n in names), helpers.name


def test_the_package_is_found_through_one_setting():
    files = texts()
    # every job's shell exports it (JOB_ENV, the Snakefile's shell prefix); no rule sets it
    setting = [name for name, text in files.items() if "PYTHONPATH" in text
               and re.search(r'JOB_ENV = \{"PYTHONPATH": ', text)]
    assert setting == ["common.smk"]
    assert not [name for name, text in files.items() if "PYTHONPATH=" in text
                or "params.src" in text]
    assert "shell.prefix(environment.shell_prefix(JOB_ENV))" in files["Snakefile"]
    # and the workflow's own process imports it through one sys.path entry
    assert sum(text.count("sys.path.insert") for text in files.values()) == 1
