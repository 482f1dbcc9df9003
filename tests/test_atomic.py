import os

import pytest

from tcbench import atomic


def test_replaces_whole_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "a" / "t.json"
    atomic.write_json(path, {"x": 1})
    atomic.write_text(path, "second\n")
    assert path.read_text() == "second\n"
    assert [p.name for p in path.parent.iterdir()] == ["t.json"]


def test_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "t.txt"
    atomic.write_text(path, "old")

    def crash(*_):
        raise OSError("disk gone")
    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk gone"):
        atomic.write_text(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.txt"]


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_written_with_the_mode_of_any_new_file(tmp_path, mask):
    """Not mkstemp's private 0600: what open() would give under the process's umask."""
    old = os.umask(mask)
    try:
        assert atomic.umask() == mask
        path = atomic.write_text(tmp_path / "t.html", "<p>")
        plain = tmp_path / "plain.html"
        plain.write_text("<p>")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask == plain.stat().st_mode & 0o777
