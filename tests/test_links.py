"""Every relative link and embedded image in the repository's Markdown points at a file a clone
has: a newcomer once met links to ../shared/seeds/ (outside the repository) and a figure path
written relative to the wrong folder."""

import re

from conftest import REPO

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
