"""Every relative link and embedded image in the repository's Markdown points at a file a clone
has: a newcomer once met links to ../shared/seeds/ (outside the repository) and a figure path
written relative to the wrong folder. And tests/README.md names every test file, and lists the
slow set as conftest's rule makes it."""

import ast
import re

import pytest

from conftest import REPO, SLOW_FIXTURES, SLOW_MODULES, snakemake

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"```.*?```", re.S)


def markdown_files():
    skip = {".git", ".venv", ".snakemake", ".pytest_cache", "logs", "resources"}
    return [p for p in sorted(REPO.rglob("*.md")) if not skip & set(p.relative_to(REPO).parts)]


def broken(path):
    text = FENCED.sub("", path.read_text())
    for m in LINK.finditer(text):
        target = m.group(1).split("#")[0]
        if not target or re.match(r"[a-z][a-z0-9+.-]*:", target):  # anchors, URLs, mailto
            continue
        if not (path.parent / target).exists():
            yield m.group(1)


def test_relative_links_resolve_inside_the_repository():
    found = {str(p.relative_to(REPO)): list(broken(p)) for p in markdown_files()}
    assert "README.md" in found and "docs/publication.md" in found
    assert {k: v for k, v in found.items() if v} == {}


def test_a_link_outside_the_clone_is_caught(tmp_path):
    (tmp_path / "a.md").write_text("see [the seeds](../shared/seeds/) and ![f](figs/x.svg)\n"
                                   "```\n[in code](nowhere.md)\n```\n[web](https://x.org/a)\n")
    assert list(broken(tmp_path / "a.md")) == ["../shared/seeds/", "figs/x.svg"]


def test_docs_index_names_every_test_file():
    """tests/README.md's table says what each test file covers: a new file must be named."""
    index = (REPO / "tests" / "README.md").read_text()
    missing = [p.name for p in sorted((REPO / "tests").glob("test_*.py")) if p.name not in index]
    assert not missing, f"tests/README.md does not name {missing}"


def slow_part(path) -> str:
    """How much of a test file conftest's rule makes slow: "all", "some" or "none"."""
    if path.name in SLOW_MODULES:
        return "all"
    tree = ast.parse(path.read_text())
    marked = any(isinstance(n, ast.Attribute) and n.attr == "slow"
                 and isinstance(n.value, ast.Attribute) and n.value.attr == "mark"
                 for n in ast.walk(tree))
    fixtures = any(SLOW_FIXTURES & {a.arg for a in n.args.args} for n in ast.walk(tree)
                   if isinstance(n, ast.FunctionDef))   # a test's, or a fixture's it uses
    return "some" if marked or fixtures else "none"


def test_docs_index_lists_the_slow_set_as_the_rule_makes_it():
    """tests/README.md's two lists of slow files are the files conftest's rule makes slow."""
    text = (REPO / "tests" / "README.md").read_text()
    section = text[text.index("## The slow set"):]
    section = section[:section.index("\n## ", 1)]
    every = section[section.index("Every test of these files"):]
    every = every[:every.index("\n\n")]
    table = [line for line in section.splitlines() if line.startswith("| `test_")]
    said = {"all": set(re.findall(r"`(test_\w+\.py)`", every)),
            "some": {re.match(r"\| `(test_\w+\.py)`", line).group(1) for line in table}}
    files = sorted((REPO / "tests").glob("test_*.py"))
    made = {kind: {p.name for p in files if slow_part(p) == kind} for kind in ("all", "some")}
    assert said == made


def test_the_slow_rule_sees_markers_parameters_and_fixtures(tmp_path):
    (tmp_path / "test_a.py").write_text("import pytest\n@pytest.mark.slow\ndef test_x(): pass\n")
    (tmp_path / "test_b.py").write_text("import pytest\n"
                                        "P = pytest.param(1, marks=pytest.mark.slow)\n")
    (tmp_path / "test_c.py").write_text("def test_x(smoke_run): pass\n")
    (tmp_path / "test_d.py").write_text("def test_x(tmp_path): pass  # mark.slow in a comment\n")
    assert [slow_part(tmp_path / f"test_{x}.py") for x in "abcd"] == ["some"] * 3 + ["none"]
    assert slow_part(REPO / "tests" / "test_workflow.py") == "all"


def test_a_test_of_the_default_run_cannot_start_snakemake(tmp_path):
    with pytest.raises(AssertionError, match="mark it slow"):
        snakemake(tmp_path, "--version")
    assert not list(tmp_path.iterdir())
