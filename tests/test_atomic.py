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
